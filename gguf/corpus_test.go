package gguf

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/trochilus-llm/trochilus/gguf/internal/corpus"
)

// corpusDir holds the committed malformed files (written by gguf/internal/corpus/gencorpus).
const corpusDir = "../testdata/gguf"

// TestCorpus opens every file of the corpus and checks each is refused with a FormatError
// whose text names the fault, and that the committed files are what the generator makes.
func TestCorpus(t *testing.T) {
	want := map[string]corpus.Case{}
	for _, c := range corpus.Cases() {
		want[c.Name+".gguf"] = c
	}
	paths, err := filepath.Glob(filepath.Join(corpusDir, "*.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	if len(paths) != len(want) {
		t.Errorf("%d files in %s, the generator makes %d: run go run ./gguf/internal/corpus/gencorpus testdata/gguf", len(paths), corpusDir, len(want))
	}
	for _, p := range paths {
		name := filepath.Base(p)
		c, ok := want[name]
		if !ok {
			t.Errorf("%s: not a corpus case", name)
			continue
		}
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(data, c.Data) {
			t.Errorf("%s: differs from what the generator makes", name)
		}
		f, err := Open(p)
		if err == nil {
			f.Close()
			t.Errorf("%s: opened without error", name)
			continue
		}
		var fe *FormatError
		if !errors.As(err, &fe) {
			t.Errorf("%s: %v is not a FormatError", name, err)
			continue
		}
		if fe.Path != p || fe.Offset < 0 || fe.Offset > int64(len(data)) {
			t.Errorf("%s: error path %q offset %d", name, fe.Path, fe.Offset)
		}
		if !strings.Contains(err.Error(), c.Want) {
			t.Errorf("%s: error %q does not say %q", name, err, c.Want)
		}
	}
	t.Logf("%d malformed files refused with the expected error", len(paths))
}

// TestErrorText checks the whole text of a few errors, offsets and all.
func TestErrorText(t *testing.T) {
	cases := map[string]corpus.Case{}
	for _, c := range corpus.Cases() {
		cases[c.Name] = c
	}
	for name, want := range map[string]string{
		"bad-magic":          `gguf: header at offset 0: magic "GGML" is not "GGUF": not a GGUF file`,
		"version-4":          "gguf: header at offset 4: version 4 unsupported (want 2 or 3)",
		"huge-tensor-count":  "gguf: header at offset 8: tensor count 1152921504606846976 too large (at most 1048576)",
		"huge-kv-count":      "gguf: header at offset 16: key-value count 1152921504606846976 too large (at most 1048576)",
		"unknown-value-type": `gguf: key 1 ("olmoe.block_count") at offset 94: value type 99 unknown`,
		"truncated-0030":     "gguf: header at offset 8: tensor count 2 needs at least 64 bytes, only 14 left before end of file",
		"huge-string-length": `gguf: key 0 ("general.name") at offset 48: string length 1099511627776 too large (at most 67108864)`,
	} {
		c := cases[name]
		_, err := Read(bytes.NewReader(c.Data), int64(len(c.Data)))
		if err == nil || err.Error() != want {
			t.Errorf("%s:\n got %v\nwant %s", name, err, want)
		}
	}
}
