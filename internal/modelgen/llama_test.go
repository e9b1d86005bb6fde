package modelgen

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/trochilus-llm/trochilus/gguf"
	"github.com/trochilus-llm/trochilus/internal/oracle"
)

// llamaLoad is what testdata/llama_load.cjs reports for one file.
type llamaLoad struct {
	File        string   `json:"file"`
	Loaded      bool     `json:"loaded"`
	Errors      []string `json:"errors"`
	Description string   `json:"description"`
	Parameters  int64    `json:"parameters"`
	Bytes       int64    `json:"bytes"`
	Context     int      `json:"context"`
	Embedding   int      `json:"embedding"`
	BOS, EOS    int      `json:"-"`
	Tokens      []int    `json:"tokens"`
}

// TestLlamaCppLoads has llama.cpp itself (the prebuilt library of @node-llama-cpp/linux-x64)
// load generated models with tensor validation on: it checks every tensor name, shape and type
// against its OLMoE loader and reads the metadata with its own code. Two files must be refused:
// one missing its hyperparameters (the control), and one with grouped-query attention, which
// transformers' OLMoE allows (k_norm as wide as the keys) but llama.cpp's OLMoE loader does not
// (it sizes attn_k_norm as the hidden width).
func TestLlamaCppLoads(t *testing.T) {
	if runtime.GOOS != "linux" || runtime.GOARCH != "amd64" {
		t.Skipf("llama.cpp's prebuilt libraries here are for linux/amd64, not %s/%s", runtime.GOOS, runtime.GOARCH)
	}
	node := oracle.Node(t)
	libs := filepath.Join(oracle.NPM(t, "@node-llama-cpp/linux-x64"), "bins", "linux-x64")

	variants := Tiny(Uniform(gguf.TypeQ4_0))
	variants.Tokenizer = testTokenizer(t)
	variants.NormTopKProb, variants.ClipQKV = true, 4
	gqa := Tiny(Uniform(gguf.TypeQ8_0))
	gqa.Tokenizer, gqa.KVHeads = variants.Tokenizer, 2
	broken := filepath.Join(t.TempDir(), "broken.gguf")
	w := gguf.NewWriter()
	if err := w.Set("general.architecture", gguf.String("olmoe")); err != nil {
		t.Fatal(err)
	}
	if err := w.WriteFile(broken); err != nil {
		t.Fatal(err)
	}
	type want struct {
		cfg  Config
		desc string
	}
	cases := []want{
		{Tiny(Uniform(gguf.TypeQ8_0)), "olmoe ?B Q8_0"},
		{Tiny(Q4KM()), "olmoe ?B Q4_K - Medium"},
		{variants, "olmoe ?B Q4_0"},
	}
	files := make([]string, 0, len(cases)+2)
	dir := t.TempDir()
	write := func(cfg Config) string {
		p := filepath.Join(dir, fmt.Sprintf("model-%d.gguf", len(files)))
		if err := Write(context.Background(), p, cfg); err != nil {
			t.Fatal(err)
		}
		return p
	}
	for _, c := range cases {
		cfg := c.cfg
		if cfg.Tokenizer == nil {
			cfg.Tokenizer = testTokenizer(t)
		}
		files = append(files, write(cfg))
	}
	files = append(files, write(gqa), broken)

	out, err := exec.CommandContext(context.Background(), node,
		append([]string{filepath.Join("testdata", "llama_load.cjs"), libs}, files...)...).Output()
	if err != nil {
		t.Fatalf("llama_load.cjs: %v\n%s", err, errOutput(err))
	}
	var got []llamaLoad
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var l llamaLoad
		var ids struct{ Bos, Eos int }
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatalf("llama_load.cjs printed %q: %v", sc.Text(), err)
		}
		_ = json.Unmarshal(sc.Bytes(), &ids)
		l.BOS, l.EOS = ids.Bos, ids.Eos
		got = append(got, l)
	}
	if len(got) != len(files) {
		t.Fatalf("llama.cpp reported on %d files, want %d:\n%s", len(got), len(files), out)
	}

	// "Hello world, about   spaces." as OLMoE's tokenizer (Rust tokenizers) splits it: three
	// spaces are the added token 50275.
	wantTokens := []int{12092, 1533, 13, 670, 50275, 31748, 15}
	for i, c := range cases {
		l := got[i]
		specs := c.cfg.tensors()
		var params int64
		for _, s := range specs {
			n := int64(1)
			for _, d := range s.dims {
				n *= int64(d)
			}
			params += n
		}
		t.Logf("llama.cpp loaded %s: %q, %d parameters, %d bytes, tokens %v", c.cfg.Weights.Name, l.Description, l.Parameters, l.Bytes, l.Tokens)
		switch {
		case !l.Loaded:
			t.Errorf("%s: llama.cpp refused it: %s", c.cfg.Weights.Name, strings.Join(l.Errors, "; "))
		case l.Description != c.desc || l.Parameters != params || l.Bytes != totalBytes(t, specs) ||
			l.Context != c.cfg.Context || l.Embedding != c.cfg.Hidden || l.BOS != 50279 || l.EOS != 50279:
			t.Errorf("%s: llama.cpp read %+v; want %q, %d parameters, %d bytes, context %d, embedding %d, bos = eos = 50279",
				c.cfg.Weights.Name, l, c.desc, params, totalBytes(t, specs), c.cfg.Context, c.cfg.Hidden)
		case !slices.Equal(l.Tokens, wantTokens):
			t.Errorf("%s: llama.cpp tokenized to %v, want %v", c.cfg.Weights.Name, l.Tokens, wantTokens)
		}
	}
	if l := got[len(got)-2]; l.Loaded || !strings.Contains(strings.Join(l.Errors, " "), "attn_k_norm") {
		t.Errorf("grouped-query attention: llama.cpp loaded %v, errors %q; want it refused for attn_k_norm's shape", l.Loaded, l.Errors)
	}
	if l := got[len(got)-1]; l.Loaded {
		t.Errorf("llama.cpp loaded a file with no hyperparameters: the check cannot fail")
	} else {
		t.Logf("control refused as it should be: %s", strings.Join(l.Errors, "; "))
	}
}

func errOutput(err error) string {
	if ee, ok := err.(*exec.ExitError); ok {
		return string(ee.Stderr)
	}
	return ""
}
