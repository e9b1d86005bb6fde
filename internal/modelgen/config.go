// Package modelgen writes deterministic OLMoE- and Qwen3-MoE-shaped GGUF files with random
// weights, for tests,
// benchmarks and races against llama.cpp where the real model cannot be had.
//
// A file is laid out as llama.cpp's convert_hf_to_gguf.py and llama-quantize lay out
// OLMoE-1B-7B and Qwen3-30B-A3B: the same tensor names, ggml shapes, metadata keys and value types, and the same
// choice of types per tensor for the named mixes (Q4_K_M included). Only the numbers are random.
// Quantized tensors are written as random but well-formed blocks, not by quantizing floats: each
// block's quants are uniform and its scales are chosen so the weights have the magnitude a
// trained projection of that width would have (root mean square 1/√fan_in), which keeps
// activations from vanishing or exploding over the layers and is fast enough to write the
// full-size model in minutes.
//
// The same Config gives the same bytes on every machine: the random numbers come from this
// package's own generator (xoshiro256**, seeded through splitmix64), every float is made by
// integer arithmetic and single IEEE operations, and each tensor is cut into chunks of a fixed
// number of blocks whose seeds depend only on the Config's seed, the tensor's name and the
// chunk's index, so chunks can be made in parallel in any order.
package modelgen

import (
	"fmt"
	"math"
	"strings"

	"github.com/trochilus-llm/trochilus/gguf"
)

// Config describes one model to write.
//
// Grouped-query attention (KVHeads < Heads) is written as transformers' OLMoE defines it, with
// attn_k_norm as wide as the keys (KVHeads·head dim); llama.cpp's OLMoE loader refuses such a
// file, since it expects attn_k_norm as wide as the hidden state. A file without a tokenizer is
// refused by llama.cpp too.
type Config struct {
	Name string // general.name; empty means one is made from the shape and weights

	// Arch is the architecture written: "olmoe" (the zero value means it) or "qwen3moe"
	// (Qwen3-MoE: q and k normed per head with weights of one head's width, the chosen
	// experts' weights renormalised, head dim in attention.key_length). The ARCH.* keys
	// below are under its name.
	Arch string
	// HeadDimension is the width of one attention head; 0 means Hidden/Heads (OLMoE's).
	HeadDimension int

	Layers      int     // olmoe.block_count
	Hidden      int     // olmoe.embedding_length
	Heads       int     // olmoe.attention.head_count; head dim is Hidden/Heads
	KVHeads     int     // olmoe.attention.head_count_kv; fewer than Heads is grouped-query attention (see above)
	Experts     int     // olmoe.expert_count
	ExpertsUsed int     // olmoe.expert_used_count
	ExpertFFN   int     // olmoe.feed_forward_length: the width of one expert's hidden layer
	Vocab       int     // embedding and output rows; at least the tokenizer's size
	Context     int     // olmoe.context_length
	RopeTheta   float32 // olmoe.rope.freq_base
	RMSEps      float32 // olmoe.attention.layer_norm_rms_epsilon

	// Variants that OLMoE-1B-7B does not use, for exercising the engine's other branches.
	NormTopKProb bool    // renormalise the chosen experts' weights: writes olmoe.expert_weights_norm = true
	ClipQKV      float32 // when > 0, clamp q, k and v to ±ClipQKV: writes olmoe.attention.clamp_kqv

	Weights Weights // the type of each tensor
	Seed    uint64

	// Tokenizer is the tokenizer written into the file's metadata; nil writes none (a file
	// the engine can run on token ids but not on text).
	Tokenizer *Tokenizer

	// Values, when not nil, gives every tensor's weights (trained ones, tools/train) in place
	// of random numbers: called with a tensor's name and element count, it returns the values
	// in ggml order (ne0 fastest), which are quantized to the tensor's type by gguf/quant.
	// Seed is then unused.
	Values func(name string, elems int) ([]float32, error)
	// Description is written as general.description; empty means the random weights' one.
	Description string
}

// HeadDim returns the width of one attention head: HeadDimension, or Hidden/Heads.
func (c *Config) HeadDim() int {
	if c.HeadDimension > 0 {
		return c.HeadDimension
	}
	if c.Heads <= 0 {
		return 0
	}
	return c.Hidden / c.Heads
}

// arch returns the architecture's name, "olmoe" for the zero value.
func (c *Config) arch() string {
	if c.Arch == "" {
		return "olmoe"
	}
	return c.Arch
}

// perHeadNorm reports whether q and k are normed per head (Qwen3) rather than over the whole
// projection (OLMoE).
func (c *Config) perHeadNorm() bool { return c.arch() == "qwen3moe" }

// Limits on a Config, far above any real OLMoE-family model, so that a mistyped flag is an error
// rather than an attempt to write petabytes.
const (
	maxLayers = 1024
	maxWidth  = 1 << 17 // Hidden, ExpertFFN
	maxHeads  = 1024
	maxExpert = 4096
	maxVocab  = 1 << 22
	maxCtx    = 1 << 24
	maxBytes  = 1 << 40 // the whole file
)

// Validate reports the first thing wrong with c: a size out of range, a shape the architecture
// cannot have, or a row width that is not a whole number of its type's blocks.
func (c *Config) Validate() error {
	for _, f := range []struct {
		name   string
		v, max int
	}{
		{"layers", c.Layers, maxLayers}, {"hidden", c.Hidden, maxWidth}, {"heads", c.Heads, maxHeads},
		{"kv heads", c.KVHeads, maxHeads}, {"experts", c.Experts, maxExpert},
		{"experts used", c.ExpertsUsed, maxExpert}, {"expert FFN width", c.ExpertFFN, maxWidth},
		{"vocab", c.Vocab, maxVocab}, {"context", c.Context, maxCtx},
	} {
		if f.v < 1 || f.v > f.max {
			return fmt.Errorf("modelgen: %s %d out of range [1, %d]", f.name, f.v, f.max)
		}
	}
	switch {
	case c.arch() != "olmoe" && c.arch() != "qwen3moe":
		return fmt.Errorf("modelgen: architecture %q (want olmoe or qwen3moe)", c.Arch)
	case c.arch() == "qwen3moe" && (!c.NormTopKProb || c.ClipQKV != 0):
		return fmt.Errorf("modelgen: qwen3moe always renormalises the chosen experts' weights and clamps nothing")
	case c.HeadDimension < 0 || c.HeadDimension > maxWidth:
		return fmt.Errorf("modelgen: head dimension %d out of range [0, %d]", c.HeadDimension, maxWidth)
	case c.HeadDimension == 0 && c.Hidden%c.Heads != 0:
		return fmt.Errorf("modelgen: hidden %d is not a multiple of heads %d", c.Hidden, c.Heads)
	case c.HeadDim()%2 != 0:
		return fmt.Errorf("modelgen: head dim %d is odd; RoPE rotates pairs", c.HeadDim())
	case c.KVHeads > c.Heads || c.Heads%c.KVHeads != 0:
		return fmt.Errorf("modelgen: heads %d is not a multiple of kv heads %d", c.Heads, c.KVHeads)
	case c.ExpertsUsed > c.Experts:
		return fmt.Errorf("modelgen: %d experts used of %d", c.ExpertsUsed, c.Experts)
	case !(c.RopeTheta > 0) || c.RopeTheta > 1e12:
		return fmt.Errorf("modelgen: rope theta %g out of range (0, 1e12]", c.RopeTheta)
	case !(c.RMSEps > 0) || c.RMSEps > 1:
		return fmt.Errorf("modelgen: rms eps %g out of range (0, 1]", c.RMSEps)
	case !(c.ClipQKV >= 0) || c.ClipQKV > 1e30:
		return fmt.Errorf("modelgen: clip_qkv %g out of range [0, 1e30]", c.ClipQKV)
	}
	if err := c.Weights.validate(); err != nil {
		return err
	}
	var total int64
	for _, t := range c.tensors() {
		size, err := t.typ.RowBytes(int64(t.dims[0]))
		if err != nil {
			return fmt.Errorf("modelgen: tensor %s (%v): rows of %d: %w", t.name, t.typ, t.dims[0], err)
		}
		for _, d := range t.dims[1:] {
			size *= int64(d)
		}
		total += size
	}
	if total > maxBytes {
		return fmt.Errorf("modelgen: the tensors would take %d bytes (at most %d)", total, int64(maxBytes))
	}
	return nil
}

// Weights chooses the ggml type of each weight matrix. Norm weights are always F32 and the
// router (ffn_gate_inp) is always F32 holding bfloat16-representable values, as in every
// llama.cpp conversion and quantization of OLMoE.
type Weights struct {
	Name     string // what the mix is called: "q8_0", "q4_k_m", ...
	FileType uint32 // general.file_type: llama.cpp's llama_ftype for the mix

	Embedding    gguf.Type // token_embd
	Output       gguf.Type // output (the untied LM head)
	Attention    gguf.Type // attn_q, attn_k, attn_output
	AttnV        gguf.Type // attn_v
	ExpertGateUp gguf.Type // ffn_gate_exps, ffn_up_exps
	ExpertDown   gguf.Type // ffn_down_exps

	// MoreBits, unless it is the zero Type (F32), replaces AttnV and ExpertDown in the layers llama-quantize gives
	// more bits to (its use_more_bits: the first and last eighth of the layers and every third
	// between), as Q4_K_M does with Q6_K.
	MoreBits gguf.Type
}

// llama.cpp's llama_ftype values for the mixes this package names.
const (
	ftypeF32   = 0
	ftypeF16   = 1
	ftypeQ4_0  = 2
	ftypeQ8_0  = 7
	ftypeQ2_K  = 10
	ftypeQ3_KS = 11
	ftypeQ4_KS = 14
	ftypeQ4_KM = 15
	ftypeQ5_KS = 16
	ftypeQ6_K  = 18
	ftypeBF16  = 32
)

// uniformTypes maps each type a whole model may be written in to its name and llama_ftype.
// A uniform K-quant file is what llama.cpp calls the "_S" (small) mix of that type, except that
// here output and token_embd are not promoted.
var uniformTypes = []struct {
	typ   gguf.Type
	name  string
	ftype uint32
}{
	{gguf.TypeF32, "f32", ftypeF32},
	{gguf.TypeF16, "f16", ftypeF16},
	{gguf.TypeBF16, "bf16", ftypeBF16},
	{gguf.TypeQ8_0, "q8_0", ftypeQ8_0},
	{gguf.TypeQ4_0, "q4_0", ftypeQ4_0},
	{gguf.TypeQ2_K, "q2_k", ftypeQ2_K},
	{gguf.TypeQ3_K, "q3_k", ftypeQ3_KS},
	{gguf.TypeQ4_K, "q4_k", ftypeQ4_KS},
	{gguf.TypeQ5_K, "q5_k", ftypeQ5_KS},
	{gguf.TypeQ6_K, "q6_k", ftypeQ6_K},
}

// Uniform returns the weights where every matrix has type t. Write refuses a type this package
// cannot make blocks of (see MixNames).
func Uniform(t gguf.Type) Weights {
	w := Weights{Name: strings.ToLower(t.String()), Embedding: t, Output: t, Attention: t, AttnV: t,
		ExpertGateUp: t, ExpertDown: t}
	for _, u := range uniformTypes {
		if u.typ == t {
			w.Name, w.FileType = u.name, u.ftype
		}
	}
	return w
}

// Q4KM returns llama-quantize's Q4_K_M mix as it comes out for OLMoE: Q4_K everywhere but the
// output (Q6_K) and, in the layers use_more_bits picks, attn_v and ffn_down_exps (Q6_K).
//
// llama-quantize has one more rule this mix leaves out on purpose: for a model of exactly 8
// experts (Mixtral) it raises attn_v to Q8_0. OLMoE has 64, and the tiny preset's 8 are a
// stand-in, not a Mixtral.
func Q4KM() Weights {
	return Weights{Name: "q4_k_m", FileType: ftypeQ4_KM, Embedding: gguf.TypeQ4_K, Output: gguf.TypeQ6_K,
		Attention: gguf.TypeQ4_K, AttnV: gguf.TypeQ4_K, ExpertGateUp: gguf.TypeQ4_K,
		ExpertDown: gguf.TypeQ4_K, MoreBits: gguf.TypeQ6_K}
}

// MixNames lists the names ParseWeights accepts.
func MixNames() []string {
	names := make([]string, 0, len(uniformTypes)+1)
	for _, u := range uniformTypes {
		names = append(names, u.name)
	}
	return append(names, "q4_k_m")
}

// ParseWeights returns the mix called name (case-insensitive): a type name for a uniform mix
// ("q8_0", "f16", ...) or "q4_k_m".
func ParseWeights(name string) (Weights, error) {
	n := strings.ToLower(name)
	if n == "q4_k_m" {
		return Q4KM(), nil
	}
	for _, u := range uniformTypes {
		if u.name == n {
			return Uniform(u.typ), nil
		}
	}
	return Weights{}, fmt.Errorf("modelgen: unknown weight type %q (want one of %s)", name, strings.Join(MixNames(), ", "))
}

func (w *Weights) validate() error {
	for _, r := range []struct {
		role string
		t    gguf.Type
		zero bool // may be left unset
	}{
		{"embedding", w.Embedding, false}, {"output", w.Output, false}, {"attention", w.Attention, false},
		{"attn_v", w.AttnV, false}, {"expert gate/up", w.ExpertGateUp, false},
		{"expert down", w.ExpertDown, false}, {"more-bits", w.MoreBits, true},
	} {
		if r.zero && r.t == 0 {
			continue
		}
		if _, ok := fillers[r.t]; !ok {
			return fmt.Errorf("modelgen: %s weights: cannot write type %v", r.role, r.t)
		}
	}
	return nil
}

// largestBlock returns the most elements a block of any of w's types holds: a row width must
// be a multiple of it.
func (w *Weights) largestBlock() int {
	n := 1
	for _, t := range []gguf.Type{w.Embedding, w.Output, w.Attention, w.AttnV, w.ExpertGateUp, w.ExpertDown, w.MoreBits} {
		n = max(n, t.BlockElems())
	}
	return n
}

// useMoreBits is llama-quantize's rule for the layers a _M mix quantizes with more bits.
func useMoreBits(layer, layers int) bool {
	return layer < layers/8 || layer >= 7*layers/8 || (layer-layers/8)%3 == 2
}

// OLMoE's tokenizer: 50280 entries, padded to 50304 embedding rows.
const (
	olmoeVocab = 50304
	olmoeCtx   = 4096
)

// Tiny returns a small model with OLMoE's structure and real vocabulary: 2 layers, 4 heads,
// 8 experts of which 2 are used, context 4096, seed 1. Its widths are the smallest the weights'
// types allow: hidden 64 and expert width 32 when every type has blocks of at most 32 elements
// (about 7 MB in Q8_0), hidden and expert width 256 when a K-quant is among them (about
// 20 MB in Q4_K_M). Tokenizer is left nil.
func Tiny(w Weights) Config {
	c := Config{
		Layers: 2, Hidden: 64, Heads: 4, KVHeads: 4, Experts: 8, ExpertsUsed: 2, ExpertFFN: 32,
		Vocab: olmoeVocab, Context: olmoeCtx, RopeTheta: 10000, RMSEps: 1e-5, Weights: w, Seed: 1,
	}
	if b := w.largestBlock(); b > 32 {
		c.Hidden, c.ExpertFFN = b, b
	}
	c.Name = fmt.Sprintf("OLMoE tiny random %s", w.Name)
	return c
}

// Full returns the shape of OLMoE-1B-7B: 16 layers, hidden 2048, 16 heads of 128 (no
// grouping), 64 experts of width 1024 with 8 used, vocab 50304, context 4096, RoPE theta 10000,
// RMS eps 1e-5, seed 1. Tokenizer is left nil.
func Full(w Weights) Config {
	return Config{
		Name:   fmt.Sprintf("OLMoE-1B-7B shape random %s", w.Name),
		Layers: 16, Hidden: 2048, Heads: 16, KVHeads: 16, Experts: 64, ExpertsUsed: 8, ExpertFFN: 1024,
		Vocab: olmoeVocab, Context: olmoeCtx, RopeTheta: 10000, RMSEps: 1e-5, Weights: w, Seed: 1,
	}
}

// TinyQwen3 returns a small Qwen3-MoE-shaped model: 2 layers, 4 heads of 32 sharing 2 key/value
// heads (grouped-query attention, head width apart from hidden/heads as Qwen3's), 8 experts of
// which 2 are used, per-head q/k norms, renormalised expert weights, RoPE theta 1e6, RMS eps
// 1e-6, vocab 151936 (Qwen3's), seed 1. Widths grow to 256 for K-quants as in Tiny (heads of 64).
// Tokenizer is left nil.
func TinyQwen3(w Weights) Config {
	c := Config{Arch: "qwen3moe", Layers: 2, Hidden: 64, Heads: 4, KVHeads: 2, HeadDimension: 32,
		Experts: 8, ExpertsUsed: 2, ExpertFFN: 32, Vocab: qwen3Vocab, Context: 4096, RopeTheta: 1e6,
		RMSEps: 1e-6, NormTopKProb: true, Weights: w, Seed: 1}
	if b := w.largestBlock(); b > 32 {
		// attn_output's rows are the heads' width: a whole number of blocks too.
		c.Hidden, c.ExpertFFN, c.HeadDimension = b, b, b/c.Heads
	}
	c.Name = fmt.Sprintf("Qwen3-MoE tiny random %s", w.Name)
	return c
}

// FullQwen3 returns the shape of Qwen3-30B-A3B: 48 layers, hidden 2048, 32 heads of 128 with 4
// key/value heads, 128 experts of width 768 with 8 used, vocab 151936, context 40960, RoPE theta
// 1e6, RMS eps 1e-6, seed 1 (about 17 GB in Q4_K_M). Tokenizer is left nil.
func FullQwen3(w Weights) Config {
	return Config{Name: fmt.Sprintf("Qwen3-30B-A3B shape random %s", w.Name), Arch: "qwen3moe",
		Layers: 48, Hidden: 2048, Heads: 32, KVHeads: 4, HeadDimension: 128, Experts: 128, ExpertsUsed: 8,
		ExpertFFN: 768, Vocab: qwen3Vocab, Context: 40960, RopeTheta: 1e6, RMSEps: 1e-6, NormTopKProb: true,
		Weights: w, Seed: 1}
}

// Qwen3's embedding rows (its tokenizer has 151669 entries).
const qwen3Vocab = 151936

// tensorKind says how a tensor's values are drawn.
type tensorKind int

const (
	kindMatrix tensorKind = iota // a weight matrix: random blocks of its type
	kindNorm                     // an RMSNorm weight: F32 near 1
	kindRouter                   // ffn_gate_inp: F32 whose values are bfloat16-representable
)

// tensorSpec is one tensor of the file.
type tensorSpec struct {
	name  string
	typ   gguf.Type
	dims  []uint64 // ggml order: the row (ne0) first
	kind  tensorKind
	sigma float32 // the root mean square of its weights (matrices and routers)
}

// Magnitudes. A matrix with fan-in n gets weights of root mean square 1/√n, so each output has
// about the magnitude of its normalised input; the router gets twice that, so its softmax is
// neither flat nor one-hot; the embedding gets a larger scale so that each position's own token
// stays visible in the residual stream next to what attention adds.
const (
	embeddingRMS = 1.0
	routerGain   = 2.0
)

// tensors returns the file's tensors in the order llama.cpp writes OLMoE: token_embd, then
// each block's tensors, then output_norm and output.
func (c *Config) tensors() []tensorSpec {
	h, ffn, e := uint64(c.Hidden), uint64(c.ExpertFFN), uint64(c.Experts)
	q, kv := uint64(c.Heads*c.HeadDim()), uint64(c.KVHeads*c.HeadDim())
	w := &c.Weights
	inv := func(n uint64) float32 { return float32(1 / math.Sqrt(float64(n))) }
	qNorm, kvNorm := q, kv
	if c.perHeadNorm() {
		qNorm, kvNorm = uint64(c.HeadDim()), uint64(c.HeadDim())
	}

	specs := []tensorSpec{{"token_embd.weight", w.Embedding, []uint64{h, uint64(c.Vocab)}, kindMatrix, embeddingRMS}}
	for l := range c.Layers {
		attnV, down := w.AttnV, w.ExpertDown
		if w.MoreBits != 0 && useMoreBits(l, c.Layers) {
			attnV, down = w.MoreBits, w.MoreBits
		}
		p := fmt.Sprintf("blk.%d.", l)
		specs = append(specs,
			tensorSpec{p + "attn_norm.weight", gguf.TypeF32, []uint64{h}, kindNorm, 0},
			tensorSpec{p + "attn_q.weight", w.Attention, []uint64{h, q}, kindMatrix, inv(h)},
			tensorSpec{p + "attn_k.weight", w.Attention, []uint64{h, kv}, kindMatrix, inv(h)},
			tensorSpec{p + "attn_v.weight", attnV, []uint64{h, kv}, kindMatrix, inv(h)},
			tensorSpec{p + "attn_output.weight", w.Attention, []uint64{q, h}, kindMatrix, inv(q)},
			tensorSpec{p + "attn_q_norm.weight", gguf.TypeF32, []uint64{qNorm}, kindNorm, 0},
			tensorSpec{p + "attn_k_norm.weight", gguf.TypeF32, []uint64{kvNorm}, kindNorm, 0},
			tensorSpec{p + "ffn_norm.weight", gguf.TypeF32, []uint64{h}, kindNorm, 0},
			tensorSpec{p + "ffn_gate_inp.weight", gguf.TypeF32, []uint64{h, e}, kindRouter, routerGain * inv(h)},
			tensorSpec{p + "ffn_gate_exps.weight", w.ExpertGateUp, []uint64{h, ffn, e}, kindMatrix, inv(h)},
			tensorSpec{p + "ffn_down_exps.weight", down, []uint64{ffn, h, e}, kindMatrix, inv(ffn)},
			tensorSpec{p + "ffn_up_exps.weight", w.ExpertGateUp, []uint64{h, ffn, e}, kindMatrix, inv(h)},
		)
	}
	return append(specs,
		tensorSpec{"output_norm.weight", gguf.TypeF32, []uint64{h}, kindNorm, 0},
		tensorSpec{"output.weight", w.Output, []uint64{h, uint64(c.Vocab)}, kindMatrix, inv(h)},
	)
}
