package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/trochilus-llm/trochilus/internal/modelgen/modelgentest"
)

func TestMain(m *testing.M) { os.Exit(modelgentest.RunTests(m)) }

// runCLI runs the command line and returns its exit code and outputs.
func runCLI(args ...string) (int, string, string) {
	var out, errOut bytes.Buffer
	code := run(args, &out, &errOut)
	return code, out.String(), errOut.String()
}

// TestGenThenInspect writes models with gen (presets, overrides, variants) and reads them back
// with inspect -json: the configuration, the tensor count and the byte totals must be what gen
// was asked for.
func TestGenThenInspect(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		args []string
		want string // the config as inspect reports it
		n    int    // tensors
		ft   string
	}{
		{[]string{"-type", "q4_k_m", "-seed", "3"},
			"layers 2 hidden 256 heads 4/4 hd 64 ffn 256 experts 2/8 vocab 50304 ctx 4096 theta 10000 eps 1e-05 norm <nil> clamp <nil>",
			27, "MOSTLY_Q4_K_M"},
		{[]string{"-type", "f16", "-layers", "3", "-hidden", "128", "-heads", "2", "-kv-heads", "1", "-experts", "4",
			"-experts-used", "3", "-ffn", "64", "-vocab", "1000", "-context", "512", "-rope-theta", "500000",
			"-rms-eps", "1e-6", "-norm-topk-prob", "-clip-qkv", "8"},
			"layers 3 hidden 128 heads 2/1 hd 64 ffn 64 experts 3/4 vocab 1000 ctx 512 theta 500000 eps 1e-06 norm true clamp 8",
			39, "MOSTLY_F16"},
	} {
		path := filepath.Join(dir, "m.gguf")
		code, out, errOut := runCLI(append([]string{"gen", "-o", path, "-no-tokenizer"}, c.args...)...)
		if code != 0 || !strings.HasPrefix(out, "wrote "+path) {
			t.Fatalf("gen %v: exit %d\n%s%s", c.args, code, out, errOut)
		}
		t.Logf("gen %v:\n%s", c.args, out)

		code, out, errOut = runCLI("inspect", "-json", path)
		if code != 0 {
			t.Fatalf("inspect: exit %d: %s", code, errOut)
		}
		var d description
		if err := json.Unmarshal([]byte(out), &d); err != nil {
			t.Fatalf("inspect -json: %v", err)
		}
		cf := d.Config
		v := func(p *uint64) any {
			if p == nil {
				return nil
			}
			return *p
		}
		f := func(p *float64) any {
			if p == nil {
				return nil
			}
			return shortFloat(*p)
		}
		var norm any
		if cf.ExpertWeightsNorm != nil {
			norm = *cf.ExpertWeightsNorm
		}
		got := strings.Join([]string{
			"layers", fmt3(v(cf.Layers)), "hidden", fmt3(v(cf.Hidden)), "heads", fmt3(v(cf.Heads)) + "/" + fmt3(v(cf.KVHeads)),
			"hd", fmt3(v(cf.HeadDim)), "ffn", fmt3(v(cf.FFN)), "experts", fmt3(v(cf.ExpertsUsed)) + "/" + fmt3(v(cf.Experts)),
			"vocab", fmt3(v(cf.Vocab)), "ctx", fmt3(v(cf.Context)), "theta", fmt3(f(cf.RopeTheta)), "eps", fmt3(f(cf.RMSEps)),
			"norm", fmt3(norm), "clamp", fmt3(f(cf.ClampKQV)),
		}, " ")
		if got != c.want {
			t.Errorf("gen %v, inspect:\n got %s\nwant %s", c.args, got, c.want)
		}
		if len(d.Tensors) != c.n || cf.FileTypeName != c.ft || cf.Architecture != "olmoe" {
			t.Errorf("gen %v: %d tensors, file type %q, arch %q; want %d, %q, olmoe", c.args, len(d.Tensors), cf.FileTypeName, cf.Architecture, c.n, c.ft)
		}
		st, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		var sum int64
		for _, tt := range d.Totals {
			sum += tt.Bytes
		}
		last := d.Tensors[len(d.Tensors)-1]
		if d.FileBytes != st.Size() || sum != d.Sum.Bytes || last.Offset+last.Bytes != st.Size() {
			t.Errorf("gen %v: file %d bytes (stat %d), totals %d vs sum %d, last tensor ends at %d",
				c.args, d.FileBytes, st.Size(), sum, d.Sum.Bytes, last.Offset+last.Bytes)
		}
	}
}

// fmt3 renders a config field: nil (absent) as <nil>, anything else as fmt does.
func fmt3(v any) string { return fmt.Sprint(v) }

// TestInspectText checks the text report of a tiny model with its tokenizer: each section is
// there, long arrays are elided with their length, and the totals add up.
func TestInspectText(t *testing.T) {
	path := modelgentest.TinyQ8(t)
	code, out, errOut := runCLI("inspect", path)
	if code != 0 {
		t.Fatalf("inspect: exit %d: %s", code, errOut)
	}
	for _, want := range []string{
		"format:  GGUF v3, alignment 32",
		"  architecture  olmoe\n",
		"  file type     7 MOSTLY_Q8_0\n",
		"  parameters    6.57 M\n",
		"metadata (28 keys)\n",
		`tokenizer.ggml.tokens                   []string  ["|||IP_ADDRESS|||" "<|padding|>" "!"`,
		"(50304 string in all)]",
		"(50009 string in all)]",
		"tensors (27)\n",
		"  blk.1.ffn_down_exps.weight  Q8_0  32x64x8   17408    ",
		"  Q8_0  16       6.57 M      6980608  6.66 MiB\n", // 6569984 weights × 34/32
		"  F32   11       1.60 K      6400     6.25 KiB\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("inspect output lacks %q", want)
		}
	}
	if t.Failed() {
		t.Logf("output:\n%s", out)
	}
}

func TestGenInspectErrors(t *testing.T) {
	dir := t.TempDir()
	junk := filepath.Join(dir, "junk.gguf")
	if err := os.WriteFile(junk, []byte("GGUF\x03\x00\x00\x00 not really"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"gen"}, 2, "-o FILE is required"},
		{[]string{"gen", "-o", filepath.Join(dir, "x.gguf"), "-type", "q9_9"}, 2, `unknown weight type "q9_9"`},
		{[]string{"gen", "-o", filepath.Join(dir, "x.gguf"), "-preset", "huge"}, 2, `unknown preset "huge"`},
		{[]string{"gen", "-o", filepath.Join(dir, "x.gguf"), "-type", "q4_k", "-hidden", "64", "-no-tokenizer"}, 2, "rows of 64"},
		{[]string{"gen", "-o", filepath.Join(dir, "x.gguf"), "-layers", "-1"}, 2, "layers -1 out of range"},
		{[]string{"gen", "-o", filepath.Join(dir, "x.gguf"), "-tokenizer", dir}, 1, "tokenizer.json not found"},
		{[]string{"gen", "-o", filepath.Join(dir, "no", "such", "dir.gguf"), "-no-tokenizer"}, 1, "no such file or directory"},
		{[]string{"gen", "-o", filepath.Join(dir, "x.gguf"), "extra"}, 2, `unexpected argument "extra"`},
		{[]string{"inspect"}, 2, "want one FILE"},
		{[]string{"inspect", filepath.Join(dir, "missing.gguf")}, 1, "no such file"},
		{[]string{"inspect", junk}, 1, junk},
		{[]string{"cpu", "now"}, 2, `unexpected argument "now"`},
	} {
		code, out, errOut := runCLI(c.args...)
		if code != c.code || !strings.Contains(errOut, c.msg) {
			t.Errorf("%v: exit %d, stderr %q; want exit %d and %q (stdout %q)", c.args, code, errOut, c.code, c.msg, out)
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("failed gens left files behind: %v", entries)
	}
}
