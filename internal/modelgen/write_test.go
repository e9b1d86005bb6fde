package modelgen

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	ggufparser "github.com/gpustack/gguf-parser-go"

	"github.com/trochilus-llm/trochilus/gguf"
)

// mini is a small model that still has every feature: grouped-query attention, K-quant-sized
// rows, several experts. Its vocabulary is too small for the real tokenizer, so it has none.
func mini(w Weights) Config {
	return Config{Layers: 2, Hidden: 256, Heads: 4, KVHeads: 2, Experts: 4, ExpertsUsed: 2,
		ExpertFFN: 256, Vocab: 512, Context: 128, RopeTheta: 10000, RMSEps: 1e-5, Weights: w, Seed: 9}
}

func digest(t *testing.T, cfg Config) string {
	t.Helper()
	h := sha256.New()
	if _, err := WriteTo(context.Background(), h, cfg); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}

// TestGolden pins the bytes written for each weight mix: the generator must give the same file
// on every machine, architecture and GOAMD64 level, and for any number of worker goroutines. A
// deliberate change to the output must change Version and these digests together.
func TestGolden(t *testing.T) {
	golden := map[string]string{
		"f32": "41e44ace826449de", "f16": "c8abf04e510b73a7", "bf16": "e3984acf6d465b4e",
		"q8_0": "fd83321b1724ce6e", "q4_0": "8629127a128d2d17", "q2_k": "8badd61efdc5b8cf",
		"q3_k": "5770a864db3de659", "q4_k": "4365790f2dd723d9", "q5_k": "581a6433af7749df",
		"q6_k": "ca91c1125db0913b", "q4_k_m": "71cbde7771929954",
		"variants":  "da9f45dfcbbd57ad", // q8_0 with norm_topk_prob and clip_qkv
		"tiny-q8_0": "5c790e3d2e0721ce", // several chunks per tensor: the parallel path
	}
	configs := map[string]Config{}
	for _, name := range MixNames() {
		w, err := ParseWeights(name)
		if err != nil {
			t.Fatal(err)
		}
		configs[name] = mini(w)
	}
	v := mini(Uniform(gguf.TypeQ8_0))
	v.NormTopKProb, v.ClipQKV = true, 8
	configs["variants"] = v
	configs["tiny-q8_0"] = Tiny(Uniform(gguf.TypeQ8_0))

	names := make([]string, 0, len(configs))
	for n := range configs {
		names = append(names, n)
	}
	slices.Sort(names)
	seen := map[string]string{}
	for _, name := range names {
		got := digest(t, configs[name])
		t.Logf("%-10s %s", name, got)
		if want, ok := golden[name]; !ok || got != want {
			t.Errorf("%s: digest %s, want %q", name, got, want)
		}
		if prev, dup := seen[got]; dup {
			t.Errorf("%s and %s wrote the same bytes", prev, name)
		}
		seen[got] = name
	}

	// The same bytes with one worker and with many, and different bytes for another seed.
	tiny := configs["tiny-q8_0"]
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	one := digest(t, tiny)
	runtime.GOMAXPROCS(7)
	seven := digest(t, tiny)
	if one != golden["tiny-q8_0"] || seven != golden["tiny-q8_0"] {
		t.Errorf("tiny q8_0: digest %s with 1 worker, %s with 7, want %s", one, seven, golden["tiny-q8_0"])
	}
	tiny.Seed++
	if other := digest(t, tiny); other == one {
		t.Errorf("seeds %d and %d wrote the same bytes", tiny.Seed-1, tiny.Seed)
	}
}

// wantTensor is one row of llama.cpp's OLMoE tensor table.
type wantTensor struct {
	name string
	typ  gguf.Type
	dims []uint64
}

// olmoeTensors lists, independently of Config.tensors, what llama.cpp's converter writes for
// OLMoE with the given sizes and per-layer types.
func olmoeTensors(layers, h, q, kv, ffn, e, vocab uint64, embd, out, attn, gateUp gguf.Type, attnV, down func(l int) gguf.Type) []wantTensor {
	f32 := gguf.TypeF32
	ts := []wantTensor{{"token_embd.weight", embd, []uint64{h, vocab}}}
	for l := range int(layers) {
		p := fmt.Sprintf("blk.%d.", l)
		ts = append(ts,
			wantTensor{p + "attn_norm.weight", f32, []uint64{h}},
			wantTensor{p + "attn_q.weight", attn, []uint64{h, q}},
			wantTensor{p + "attn_k.weight", attn, []uint64{h, kv}},
			wantTensor{p + "attn_v.weight", attnV(l), []uint64{h, kv}},
			wantTensor{p + "attn_output.weight", attn, []uint64{q, h}},
			wantTensor{p + "attn_q_norm.weight", f32, []uint64{q}},
			wantTensor{p + "attn_k_norm.weight", f32, []uint64{kv}},
			wantTensor{p + "ffn_norm.weight", f32, []uint64{h}},
			wantTensor{p + "ffn_gate_inp.weight", f32, []uint64{h, e}},
			wantTensor{p + "ffn_gate_exps.weight", gateUp, []uint64{h, ffn, e}},
			wantTensor{p + "ffn_down_exps.weight", down(l), []uint64{ffn, h, e}},
			wantTensor{p + "ffn_up_exps.weight", gateUp, []uint64{h, ffn, e}},
		)
	}
	return append(ts, wantTensor{"output_norm.weight", f32, []uint64{h}}, wantTensor{"output.weight", out, []uint64{h, vocab}})
}

func checkTensors(t *testing.T, what string, got []tensorSpec, want []wantTensor) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d tensors, want %d", what, len(got), len(want))
	}
	for i, w := range want {
		g := got[i]
		if g.name != w.name || g.typ != w.typ || !slices.Equal(g.dims, w.dims) {
			t.Errorf("%s: tensor %d is %s %v %v, want %s %v %v", what, i, g.name, g.typ, g.dims, w.name, w.typ, w.dims)
		}
	}
}

func totalBytes(t *testing.T, specs []tensorSpec) int64 {
	t.Helper()
	var n int64
	for _, s := range specs {
		b, err := s.typ.RowBytes(int64(s.dims[0]))
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range s.dims[1:] {
			b *= int64(d)
		}
		n += b
	}
	return n
}

// TestFullShapes checks the full-size presets without writing them: the tensor table of
// OLMoE-1B-7B, Q4_K_M's Q6_K layers (0, 1, 4, 7, 10, 13, 14, 15), and the tensor bytes (4.21 GB
// for Q4_K_M, as a downloaded Q4_K_M of OLMoE-1B-7B has).
func TestFullShapes(t *testing.T) {
	q4, q6 := gguf.TypeQ4_K, gguf.TypeQ6_K
	more := map[int]bool{0: true, 1: true, 4: true, 7: true, 10: true, 13: true, 14: true, 15: true}
	pick := func(l int) gguf.Type {
		if more[l] {
			return q6
		}
		return q4
	}
	cfg := Full(Q4KM())
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	specs := cfg.tensors()
	checkTensors(t, "full q4_k_m", specs, olmoeTensors(16, 2048, 2048, 2048, 1024, 64, 50304, q4, q6, q4, q4, pick, pick))
	if got, want := totalBytes(t, specs), int64(4_211_730_432); got != want {
		t.Errorf("full q4_k_m: %d tensor bytes, want %d", got, want)
	}

	q8 := gguf.TypeQ8_0
	all8 := func(int) gguf.Type { return q8 }
	cfg = Full(Uniform(q8))
	specs = cfg.tensors()
	checkTensors(t, "full q8_0", specs, olmoeTensors(16, 2048, 2048, 2048, 1024, 64, 50304, q8, q8, q8, q8, all8, all8))
	if got, want := totalBytes(t, specs), int64(7_358_160_896); got != want {
		t.Errorf("full q8_0: %d tensor bytes, want %d", got, want)
	}

	// use_more_bits scaled to other depths, as llama-quantize computes it.
	for _, c := range []struct {
		layers int
		want   []int
	}{{2, []int{1}}, {4, []int{2, 3}}, {8, []int{0, 3, 6, 7}}, {16, []int{0, 1, 4, 7, 10, 13, 14, 15}}} {
		var got []int
		for l := range c.layers {
			if useMoreBits(l, c.layers) {
				got = append(got, l)
			}
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("use_more_bits over %d layers picks %v, want %v", c.layers, got, c.want)
		}
	}
}

// TestTinyFile writes the tiny Q8_0 and Q4_K_M models with the OLMoE tokenizer and reads them
// back: metadata keys, types and values as llama.cpp writes them, the tensor table, and the
// sizes the preset promises.
func TestTinyFile(t *testing.T) {
	tok := testTokenizer(t)
	for _, c := range []struct {
		w        Weights
		h, ffn   uint64
		maxBytes int64
	}{
		{Uniform(gguf.TypeQ8_0), 64, 32, 10 << 20},
		{Q4KM(), 256, 256, 24 << 20},
	} {
		cfg := Tiny(c.w)
		cfg.Tokenizer = tok
		path := filepath.Join(t.TempDir(), "tiny.gguf")
		if err := Write(context.Background(), path, cfg); err != nil {
			t.Fatal(err)
		}
		f, err := gguf.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		t.Logf("%s: %d bytes, %d keys, %d tensors", c.w.Name, f.Size(), len(f.KVs), len(f.Tensors))
		if f.Size() > c.maxBytes {
			t.Errorf("%s: %d bytes, want at most %d", c.w.Name, f.Size(), c.maxBytes)
		}

		want := []struct {
			key, typ, value string
		}{
			{"general.architecture", "string", `"olmoe"`},
			{"general.type", "string", `"model"`},
			{"general.name", "string", fmt.Sprintf("%q", cfg.Name)},
			{"general.description", "string", fmt.Sprintf(`"random weights written by trochilus modelgen version %d, seed 1"`, Version)},
			{"olmoe.block_count", "uint32", "2"},
			{"olmoe.context_length", "uint32", "4096"},
			{"olmoe.embedding_length", "uint32", fmt.Sprint(c.h)},
			{"olmoe.feed_forward_length", "uint32", fmt.Sprint(c.ffn)},
			{"olmoe.attention.head_count", "uint32", "4"},
			{"olmoe.attention.head_count_kv", "uint32", "4"},
			{"olmoe.rope.freq_base", "float32", "10000"},
			{"olmoe.attention.layer_norm_rms_epsilon", "float32", "1e-05"},
			{"olmoe.expert_used_count", "uint32", "2"},
			{"olmoe.expert_count", "uint32", "8"},
			{"general.file_type", "uint32", fmt.Sprint(c.w.FileType)},
			{"general.quantization_version", "uint32", "2"},
			{"tokenizer.ggml.model", "string", `"gpt2"`},
			{"tokenizer.ggml.pre", "string", `"olmo"`},
			{"tokenizer.ggml.tokens", "array", ""},
			{"tokenizer.ggml.token_type", "array", ""},
			{"tokenizer.ggml.merges", "array", ""},
			{"tokenizer.ggml.bos_token_id", "uint32", "50279"},
			{"tokenizer.ggml.eos_token_id", "uint32", "50279"},
			{"tokenizer.ggml.unknown_token_id", "uint32", "50279"},
			{"tokenizer.ggml.padding_token_id", "uint32", "1"},
			{"tokenizer.ggml.add_bos_token", "bool", "false"},
			{"tokenizer.ggml.add_eos_token", "bool", "false"},
			{"tokenizer.chat_template", "string", ""},
		}
		if len(f.KVs) != len(want) {
			t.Errorf("%s: %d keys, want %d", c.w.Name, len(f.KVs), len(want))
		}
		for i, w := range want {
			if i >= len(f.KVs) {
				break
			}
			kv := f.KVs[i]
			if kv.Key != w.key || kv.Value.Type().String() != w.typ || (w.value != "" && kv.Value.String() != w.value) {
				t.Errorf("%s: key %d is %s %s %s, want %s %s %s", c.w.Name, i, kv.Key, kv.Value.Type(), kv.Value, w.key, w.typ, w.value)
			}
		}
		if tokens, err := f.Strings("tokenizer.ggml.tokens"); err != nil || len(tokens) != 50304 || tokens[50279] != "<|endoftext|>" || tokens[50303] != "[PAD50303]" {
			t.Errorf("%s: tokens: %d of them (want 50304), err %v", c.w.Name, len(tokens), err)
		}
		if tmpl, err := f.Str("tokenizer.chat_template"); err != nil || !strings.HasPrefix(tmpl, "{{ bos_token }}") {
			t.Errorf("%s: chat template %.40q, err %v", c.w.Name, tmpl, err)
		}

		// The file's tensor table, as read back, is the preset's.
		var got []tensorSpec
		for _, ti := range f.Tensors {
			got = append(got, tensorSpec{name: ti.Name, typ: ti.Type, dims: ti.Dims})
		}
		w := c.w
		layerType := func(base gguf.Type) func(int) gguf.Type {
			return func(l int) gguf.Type {
				if w.MoreBits != 0 && l == 1 { // use_more_bits(l, 2) picks layer 1 only
					return w.MoreBits
				}
				return base
			}
		}
		checkTensors(t, c.w.Name, got, olmoeTensors(2, c.h, c.h, c.h, c.ffn, 8, 50304, w.Embedding, w.Output,
			w.Attention, w.ExpertGateUp, layerType(w.AttnV), layerType(w.ExpertDown)))
	}
}

// TestIndependentReader reads a tiny model with gguf-parser-go, which interprets llama.cpp's
// metadata keys itself: the architecture, hyperparameters and tokenizer it finds must be ours.
func TestIndependentReader(t *testing.T) {
	cfg := Tiny(Uniform(gguf.TypeQ8_0))
	cfg.Tokenizer = testTokenizer(t)
	cfg.ClipQKV = 6
	path := filepath.Join(t.TempDir(), "tiny.gguf")
	if err := Write(context.Background(), path, cfg); err != nil {
		t.Fatal(err)
	}
	gf, err := ggufparser.ParseGGUFFile(path)
	if err != nil {
		t.Fatalf("gguf-parser-go: %v", err)
	}
	a := gf.Architecture()
	got := fmt.Sprintf("%s layers %d hidden %d ffn %v heads %d/%d experts %d/%d ctx %d eps %g clamp %g vocab %d",
		a.Architecture, a.BlockCount, a.EmbeddingLength, a.FeedForwardLength, a.AttentionHeadCount,
		a.AttentionHeadCountKV, a.ExpertUsedCount, a.ExpertCount, a.MaximumContextLength,
		a.AttentionLayerNormRMSEpsilon, a.AttentionClampKQV, a.VocabularyLength)
	want := "olmoe layers 2 hidden 64 ffn [32 32] heads 4/4 experts 2/8 ctx 4096 eps 1e-05 clamp 6 vocab 50304"
	if got != want {
		t.Errorf("gguf-parser-go architecture:\n got %s\nwant %s", got, want)
	}
	tk := gf.Tokenizer()
	if tk.Model != "gpt2" || tk.TokensLength != 50304 || tk.MergesLength != 50009 || tk.BOSTokenID != 50279 ||
		tk.EOSTokenID != 50279 || tk.PaddingTokenID != 1 {
		t.Errorf("gguf-parser-go tokenizer: %+v", tk)
	}
	if len(gf.TensorInfos) != 27 {
		t.Errorf("gguf-parser-go: %d tensors, want 27", len(gf.TensorInfos))
	}
	t.Logf("gguf-parser-go: %s; tokenizer %s, %d tokens, %d merges", got, tk.Model, tk.TokensLength, tk.MergesLength)
}

func TestValidate(t *testing.T) {
	ok := mini(Uniform(gguf.TypeQ8_0))
	if err := ok.Validate(); err != nil {
		t.Fatalf("mini: %v", err)
	}
	for _, c := range []struct {
		change func(*Config)
		want   string
	}{
		{func(c *Config) { c.Layers = 0 }, "layers 0 out of range"},
		{func(c *Config) { c.Hidden = 1 << 20 }, "hidden 1048576 out of range"},
		{func(c *Config) { c.Heads = 3 }, "not a multiple of heads"},
		{func(c *Config) { c.KVHeads = 3 }, "not a multiple of kv heads"},
		{func(c *Config) { c.Hidden, c.Heads, c.KVHeads = 96, 32, 32 }, "head dim 3 is odd"},
		{func(c *Config) { c.ExpertsUsed = 5 }, "5 experts used of 4"},
		{func(c *Config) { c.RopeTheta = 0 }, "rope theta"},
		{func(c *Config) { c.RMSEps = -1 }, "rms eps"},
		{func(c *Config) { c.ClipQKV = -1 }, "clip_qkv"},
		{func(c *Config) { c.Weights = Q4KM(); c.Hidden = 128 }, "rows of 128"},
		{func(c *Config) { c.Weights = Uniform(gguf.TypeQ8_0); c.ExpertFFN = 48 }, "rows of 48"},
		{func(c *Config) { c.Weights = Uniform(gguf.TypeIQ4_XS) }, "cannot write type IQ4_XS"},
		{func(c *Config) { c.Weights = Q4KM(); c.Weights.MoreBits = gguf.TypeQ4_1 }, "more-bits weights: cannot write type Q4_1"},
		{func(c *Config) { c.Layers, c.Experts, c.ExpertFFN, c.Hidden = 1024, 4096, 1<<17, 1<<17 }, "would take"},
	} {
		c0 := ok
		c.change(&c0)
		err := c0.Validate()
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: error %v, want one containing %q", c0, err, c.want)
		}
	}
	if _, err := ParseWeights("q9_k"); err == nil || !strings.Contains(err.Error(), "q4_k_m") {
		t.Errorf("ParseWeights(q9_k): %v, want an error listing the names", err)
	}
	if w, err := ParseWeights("Q4_K_M"); err != nil || w != Q4KM() {
		t.Errorf("ParseWeights(Q4_K_M) = %+v, %v", w, err)
	}
}

// TestCancel stops a write part way: the error says why and no file is left behind.
func TestCancel(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "cancelled.gguf")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := Write(ctx, path, Tiny(Uniform(gguf.TypeQ8_0)))
	if !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled write: %v, want context.Canceled", err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("cancelled write left %v", entries)
	}

	// A writer that fails part way fails the write.
	_, err = WriteTo(context.Background(), &failingWriter{left: 3 << 20}, Tiny(Uniform(gguf.TypeQ8_0)))
	if err == nil || !strings.Contains(err.Error(), "disk full") {
		t.Errorf("write to a failing writer: %v, want the writer's error", err)
	}
}

type failingWriter struct{ left int }

func (w *failingWriter) Write(p []byte) (int, error) {
	if len(p) > w.left {
		return 0, errors.New("disk full")
	}
	w.left -= len(p)
	return len(p), nil
}

var _ io.Writer = (*failingWriter)(nil)

// testTokenizer returns the OLMoE tokenizer the binaries carry.
func testTokenizer(t *testing.T) *Tokenizer {
	t.Helper()
	tok, err := FindOLMoETokenizer("")
	if err != nil {
		t.Fatal(err)
	}
	return tok
}
