package engine

import (
	"fmt"
	"sync/atomic"

	"github.com/trochilus-llm/trochilus/experts"
	"github.com/trochilus-llm/trochilus/gguf"
	"github.com/trochilus-llm/trochilus/kernels"
)

// moe is the weights of a mixture-of-experts transformer: OLMoE's layer, which Qwen3-MoE runs
// too with the flags of its Config (per-head q/k norms, grouped-query attention, renormalised
// top-k). Matrices are slices of the mapped file, norms decoded float32, routers narrowed to
// BF16 where that is exact.
type moe struct {
	cfg Config
	// mutant's methods are the hooks the mutation tests plant bugs through: in a normal build
	// an empty struct whose hooks are the correct steps (mutant_none.go), inlined away.
	mutant  mutant
	embd    kernels.Matrix // vocab rows of hidden
	layers  []moeLayer
	outNorm []float32
	out     kernels.Matrix // vocab rows of hidden
	head    headState      // the head's argmax by a bound (headbound.go)
	// trace, when set (Model.TraceRoutes), records every pass's routings: a pass reads it
	// once, so that a run without a trace pays one nil check.
	trace atomic.Pointer[experts.TraceWriter]
}

// moeLayer is one transformer block's weights: attention, then the routed experts.
type moeLayer struct {
	attnNorm, qNorm, kNorm, ffnNorm []float32
	q, k, v, o                      kernels.Matrix
	router                          kernels.Matrix   // experts rows of hidden
	gate, up, down                  []kernels.Matrix // one per expert
}

// olmoeConfig reads the olmoe.* metadata; the vocabulary comes from token_embd's shape.
func olmoeConfig(f *gguf.File) (Config, error) { return moeConfig(f, "olmoe") }

// qwen3moeConfig reads the qwen3moe.* metadata. Qwen3-MoE is OLMoE's layer with q and k normed
// per head, grouped-query attention, a head width of its own (attention.key_length) and the
// chosen experts' weights always renormalised (transformers' norm_topk_prob, which llama.cpp
// hard-codes for the architecture); its expert width is expert_feed_forward_length.
func qwen3moeConfig(f *gguf.File) (Config, error) { return moeConfig(f, "qwen3moe") }

// moeConfig reads arch's metadata into a Config. It reads every field it can and returns the
// first problem with the Config, so that Describe can list a file the loader refuses with as
// much of its shape as the header gives (a field whose key is missing or invalid stays 0). An
// architecture the loader does not know is read by the same keys (the llama.cpp names every
// MoE architecture shares), the expert width from expert_feed_forward_length when present.
func moeConfig(f *gguf.File, arch string) (Config, error) {
	r := metaReader{f: f, prefix: arch + "."}
	ffnKey := "feed_forward_length" // OLMoE's; Qwen3-MoE's expert width has a key of its own
	if _, ok := f.Get(r.prefix + "expert_feed_forward_length"); arch == "qwen3moe" || (ok && arch != "olmoe") {
		ffnKey = "expert_feed_forward_length"
	}
	c := Config{
		Layers:      r.count("block_count"),
		Hidden:      r.count("embedding_length"),
		ExpertFFN:   r.count(ffnKey),
		Heads:       r.count("attention.head_count"),
		Experts:     r.count("expert_count"),
		ExpertsUsed: r.count("expert_used_count"),
		Context:     r.countOr("context_length", 4096),
		RMSEps:      r.positive("attention.layer_norm_rms_epsilon", 0),
		RopeTheta:   r.positive("rope.freq_base", 10000),
	}
	c.KVHeads = r.countOr("attention.head_count_kv", c.Heads)
	if c.Heads > 0 {
		c.HeadDim = r.countOr("attention.key_length", c.Hidden/c.Heads)
		if v := r.countOr("attention.value_length", c.HeadDim); v != c.HeadDim && r.err == nil {
			r.fail(fmt.Errorf("value head width %d differs from key head width %d", v, c.HeadDim))
		}
	}
	if arch == "qwen3moe" {
		c.NormTopKProb, c.QKNormPerHead = true, true
	} else {
		c.NormTopKProb = r.flag("expert_weights_norm")
		if _, ok := f.Get(r.prefix + "attention.clamp_kqv"); ok {
			c.ClipQKV = r.positive("attention.clamp_kqv", 0)
		}
	}
	emb, ok := f.Tensor("token_embd.weight")
	switch {
	case !ok:
		r.fail(fmt.Errorf("tensor %q is missing", "token_embd.weight"))
	case len(emb.Dims) != 2 || emb.Dims[1] == 0 || emb.Dims[1] > 1<<31-1:
		r.fail(fmt.Errorf("tensor %q has dims %v, want [%d vocab]", "token_embd.weight", emb.Dims, c.Hidden))
	default:
		// The vocabulary is the embedding's rows (the token list may be shorter or absent).
		c.Vocab = int(emb.Dims[1])
		if emb.Dims[0] != uint64(c.Hidden) {
			r.fail(fmt.Errorf("tensor %q has dims %v, want [%d vocab]", "token_embd.weight", emb.Dims, c.Hidden))
		}
	}
	if r.err == nil {
		r.fail(c.check())
	}
	return c, r.err
}

// buildMoE checks and collects every tensor of an OLMoE or Qwen3-MoE model.
func buildMoE(c *Config, ts *tensorSet, opts *Options) (network, error) {
	h, q, kv := c.Hidden, c.Heads*c.HeadDim, c.KVHeads*c.HeadDim
	qNorm, kNorm := q, kv
	if c.QKNormPerHead {
		qNorm, kNorm = c.HeadDim, c.HeadDim
	}
	w := &moe{cfg: *c, layers: make([]moeLayer, c.Layers), mutant: opts.mutant}
	w.head.off.Store(h < minBoundHidden)
	var err error
	if w.embd, err = ts.matrix("token_embd.weight", c.Vocab, h); err != nil {
		return nil, err
	}
	if w.outNorm, err = ts.vector("output_norm.weight", h); err != nil {
		return nil, err
	}
	if w.out, err = ts.matrix("output.weight", c.Vocab, h); err != nil {
		return nil, err
	}
	for l := range w.layers {
		ly := &w.layers[l]
		p := fmt.Sprintf("blk.%d.", l)
		for _, v := range []struct {
			dst  *[]float32
			name string
			n    int
		}{
			{&ly.attnNorm, "attn_norm", h}, {&ly.qNorm, "attn_q_norm", qNorm}, {&ly.kNorm, "attn_k_norm", kNorm},
			{&ly.ffnNorm, "ffn_norm", h},
		} {
			if *v.dst, err = ts.vector(p+v.name+".weight", v.n); err != nil {
				return nil, err
			}
		}
		for _, m := range []struct {
			dst        *kernels.Matrix
			name       string
			rows, cols int
		}{
			{&ly.q, "attn_q", q, h}, {&ly.k, "attn_k", kv, h}, {&ly.v, "attn_v", kv, h},
			{&ly.o, "attn_output", h, q}, {&ly.router, "ffn_gate_inp", c.Experts, h},
		} {
			if *m.dst, err = ts.matrix(p+m.name+".weight", m.rows, m.cols); err != nil {
				return nil, err
			}
		}
		if !opts.KeepF32Routers {
			ly.router = narrowBF16(ly.router)
		}
		for _, x := range []struct {
			dst        *[]kernels.Matrix
			name       string
			rows, cols int
		}{
			{&ly.gate, "ffn_gate_exps", c.ExpertFFN, h}, {&ly.up, "ffn_up_exps", c.ExpertFFN, h},
			{&ly.down, "ffn_down_exps", h, c.ExpertFFN},
		} {
			if *x.dst, err = ts.experts(p+x.name+".weight", c.Experts, x.rows, x.cols); err != nil {
				return nil, err
			}
		}
	}
	return w, nil
}

// maxCols returns the widest row any matrix of the model has (for dequantized-row scratch).
func (w *moe) maxCols() int { return widestRow(&w.cfg) }
