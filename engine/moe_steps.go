package engine

import (
	"github.com/trochilus-llm/trochilus/gguf/quant"
	"github.com/trochilus-llm/trochilus/kernels"
)

// tokenStep runs the step in flight over rows [lo, hi): tokens of the pass, or sorted expert
// rows for stepGather and stepSwiGLU. Each row writes only its own slices.
func (r *moeRunner) tokenStep(lo, hi int) {
	c, ly := r.c, r.layer
	hd := c.Hidden
	for t := lo; t < hi; t++ {
		var x, h []float32
		if r.step != stepGather && r.step != stepSwiGLU {
			x, h = r.x[t*hd:(t+1)*hd], r.h[t*hd:(t+1)*hd]
		}
		switch r.step {
		case stepEmbed:
			if err := quant.Dequantize(r.w.embd.Type, r.w.embd.Row(int(r.tokens[t])), x); err != nil {
				r.stepErr[t] = err
			}
		case stepAttnNorm:
			r.tier.RMSNorm(h, x, ly.attnNorm, c.RMSEps)
		case stepQK:
			if err := r.qk(t); err != nil {
				r.stepErr[t] = err
			}
		case stepFFNNorm:
			for i, v := range r.tmp[t*hd : (t+1)*hd] {
				x[i] += v
			}
			r.tier.RMSNorm(h, x, ly.ffnNorm, c.RMSEps)
		case stepRoute:
			r.route(t)
		case stepGather:
			copy(r.xe[t*hd:(t+1)*hd], r.h[int(r.order[t])/c.ExpertsUsed*hd:])
		case stepSwiGLU:
			f := c.ExpertFFN
			g := r.ge[t*f : (t+1)*f]
			r.tier.SwiGLU(g, g, r.ue[t*f:(t+1)*f])
		case stepCombine:
			r.combine(t)
		case stepOutNorm:
			r.tier.RMSNorm(h, x, r.w.outNorm, c.RMSEps)
		}
	}
}

// qk finishes token t's query and key: the RMSNorms over the whole projections (OLMoE norms
// before splitting into heads) or over each head (Qwen3), the optional clamp of q, k and v, RoPE at the token's
// position; then it stores k and v in the cache.
func (r *moeRunner) qk(t int) error {
	c, ly := r.c, r.layer
	q := r.q[t*r.qDim : (t+1)*r.qDim]
	k := r.k[t*r.kvDim : (t+1)*r.kvDim]
	v := r.v[t*r.kvDim : (t+1)*r.kvDim]
	if c.QKNormPerHead {
		d := c.HeadDim
		for h := range c.Heads {
			r.tier.RMSNorm(q[h*d:(h+1)*d], q[h*d:(h+1)*d], ly.qNorm, c.RMSEps)
		}
		for h := range c.KVHeads {
			r.tier.RMSNorm(k[h*d:(h+1)*d], k[h*d:(h+1)*d], ly.kNorm, c.RMSEps)
		}
	} else {
		r.tier.RMSNorm(q, q, ly.qNorm, c.RMSEps)
		r.tier.RMSNorm(k, k, ly.kNorm, c.RMSEps)
	}
	if clip := r.w.mutant.clipQKV(c.ClipQKV); clip > 0 {
		clamp(q, clip)
		clamp(k, clip)
		clamp(v, clip)
	}
	kv, p, _ := r.row(t)
	if err := r.w.mutant.rope(r.rope, q, p); err != nil {
		return err
	}
	if err := r.w.mutant.rope(r.rope, k, p); err != nil {
		return err
	}
	kv.put(r.layerIndex, p, k, v)
	return nil
}

// clamp limits every element of x to [-c, c]; a NaN stays NaN, as in torch.clamp.
func clamp(x []float32, c float32) {
	for i, v := range x {
		if v > c {
			x[i] = c
		} else if v < -c {
			x[i] = -c
		}
	}
}

// route turns token t's router logits into its experts: softmax over all experts, the top k
// (ties to the lower id), renormalised only when the model says so, then ordered by expert
// id with their weights (the order transformers' index_add_ adds them in).
func (r *moeRunner) route(t int) {
	c := r.c
	k := c.ExpertsUsed
	probs := r.router[t*c.Experts : (t+1)*c.Experts]
	r.tier.Softmax(probs)
	sel := r.sel[t*k : (t+1)*k]
	w := r.selW[t*k : (t+1)*k]
	kernels.TopK(sel, probs)
	for j, e := range sel {
		w[j] = probs[e]
	}
	if r.w.mutant.normTopK(c.NormTopKProb) {
		s := kernels.SumF32(w) // the weights in rank order, as torch's sum sees them
		for j := range w {
			w[j] /= s
		}
	}
	sortByExpert(sel, r.w.mutant.carried(w))
}

// sortByExpert sorts the expert ids sel into increasing order by insertion (k is small),
// moving each weight of w along with its id.
func sortByExpert(sel []int, w []float32) {
	for j := 1; j < len(sel); j++ {
		e, v := sel[j], w[j]
		i := j
		for ; i > 0 && sel[i-1] > e; i-- {
			sel[i], w[i] = sel[i-1], w[i-1]
		}
		sel[i], w[i] = e, v
	}
}

// combine adds token t's experts back into its residual: acc = +0, then acc += w_j·y_j for its
// experts in increasing id (each product rounded, as torch multiplies y by its weight before
// index_add_), then x += acc.
func (r *moeRunner) combine(t int) {
	c := r.c
	hd, k := c.Hidden, c.ExpertsUsed
	acc := r.tmp[t*hd : (t+1)*hd]
	clear(acc)
	for j := range k {
		wj := r.selW[t*k+j]
		at := int(r.where[t*k+j]) * hd
		y := r.ye[at : at+hd]
		for i, v := range y {
			acc[i] += float32(wj * v)
		}
	}
	x := r.x[t*hd : (t+1)*hd]
	for i, v := range acc {
		x[i] += v
	}
}

// attendItems runs worker slots [lo, hi) of the attention: the items (head, token), heads
// outermost, are cut into one contiguous run per worker, each with its own scores buffer.
func (r *moeRunner) attendItems(lo, hi int) {
	c := r.c
	d := c.HeadDim
	items := c.Heads * r.n
	group := c.Heads / c.KVHeads
	threads := r.mul.threads
	for w := lo; w < hi; w++ {
		scores := r.scores[w]
		for i := w * items / threads; i < (w+1)*items/threads; i++ {
			head, t := i/r.n, i%r.n
			kv, p, end := r.row(t)
			npos := r.w.mutant.causal(p+1, end) // its own position and those before
			kvHead := r.w.mutant.kvHead(head/group, head, c.KVHeads)
			keys, values := kv.head(r.layerIndex, kvHead)
			q := r.q[t*r.qDim+head*d : t*r.qDim+(head+1)*d]
			out := r.att[t*r.qDim+head*d : t*r.qDim+(head+1)*d]
			r.w.mutant.attend(r.tier, threads, out, q, keys, values, npos, d, r.scale, scores)
		}
	}
}
