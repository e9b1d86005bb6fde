//go:build trochilus_mutants

package engine

import (
	"slices"

	"github.com/trochilus-llm/trochilus/kernels"
)

// A mutant is a deliberate bug that the mutation tests (mutant_test.go) plant, through
// Options.mutant, which only this package can set, to show that the oracle and determinism
// checks catch each kind of broken contract. The zero value is the correct engine.
//
// This file and the tests exist only in a build with the trochilus_mutants tag
// (go test -tags trochilus_mutants -run Mutant ./engine). A normal build takes mutant_none.go
// instead, where mutant is an empty struct and every hook below is the correct engine's step,
// which the compiler inlines: the production hot path carries no mutant branches. Each hook
// here is that same step unless its mutant is planted.
type mutant int

const (
	mutantNone            mutant = iota
	mutantRopePairs              // RoPE rotates adjacent pairs (GPT-J layout) instead of halves
	mutantUnsortedWeights        // experts sorted by id without carrying their weights along
	mutantFlipNormTopK           // top-k weights renormalised exactly when the model says not to
	mutantNoClip                 // clip_qkv ignored
	mutantGQAModulo              // query head h reads kv head h mod kv heads, not h / group
	mutantNoCausalInPass         // a token attends to the later tokens of its own pass
	mutantSplitAttention         // with several threads, the attention sum is split in two
)

func (m mutant) String() string {
	switch m {
	case mutantNone:
		return "none"
	case mutantRopePairs:
		return "rope-adjacent-pairs"
	case mutantUnsortedWeights:
		return "unsorted-expert-weights"
	case mutantFlipNormTopK:
		return "flipped-norm-topk-prob"
	case mutantNoClip:
		return "clip-qkv-ignored"
	case mutantGQAModulo:
		return "gqa-head-modulo"
	case mutantNoCausalInPass:
		return "no-causal-mask-in-pass"
	case mutantSplitAttention:
		return "split-attention-sum"
	}
	return "unknown"
}

// clipQKV returns the magnitude q, k and v are clamped to (0: none), given the model's clip.
func (m mutant) clipQKV(clip float32) float32 {
	if m == mutantNoClip {
		return 0
	}
	return clip
}

// rope rotates the heads of x for position p.
func (m mutant) rope(rt *kernels.RopeTable, x []float32, p int) error {
	if m == mutantRopePairs {
		ropeAdjacentPairs(rt, x, p)
		return nil
	}
	return rt.Apply(x, p)
}

// normTopK reports whether the chosen experts' weights are renormalised, given the model's
// flag.
func (m mutant) normTopK(norm bool) bool { return norm != (m == mutantFlipNormTopK) }

// carried returns the weights the sort by expert id moves along with the ids: w itself, or,
// for mutantUnsortedWeights, a copy, so that w stays in rank order.
func (m mutant) carried(w []float32) []float32 {
	if m == mutantUnsortedWeights {
		return slices.Clone(w)
	}
	return w
}

// causal returns how many positions a token attends to: npos, its own and those before it,
// or, for mutantNoCausalInPass, pass: every position up to the end of its pass.
func (m mutant) causal(npos, pass int) int {
	if m == mutantNoCausalInPass {
		return pass
	}
	return npos
}

// kvHead returns the kv head query head head reads, given the right one, kv.
func (m mutant) kvHead(kv, head, kvHeads int) int {
	if m == mutantGQAModulo {
		return head % kvHeads
	}
	return kv
}

// attend runs the tier's attention of one query; with several threads, mutantSplitAttention
// cuts its sum over positions in two.
func (m mutant) attend(t *kernels.Tier, threads int, out, q, keys, values []float32, npos, stride int, scale float32, scores []float32) {
	if m == mutantSplitAttention && threads > 1 {
		attendSplit(out, q, keys, values, npos, stride, scale, scores)
		return
	}
	t.Attend(out, q, keys, values, npos, stride, scale, scores)
}

// ropeAdjacentPairs is the wrong RoPE layout: pair (x_2i, x_2i+1) instead of (x_i, x_i+half).
func ropeAdjacentPairs(rt *kernels.RopeTable, x []float32, p int) {
	cos, sin := rt.CosSin(p)
	d := rt.HeadDim()
	for h := 0; h+d <= len(x); h += d {
		for i := range cos {
			a, b := x[h+2*i], x[h+2*i+1]
			x[h+2*i] = float32(a*cos[i]) - float32(b*sin[i])
			x[h+2*i+1] = float32(b*cos[i]) + float32(a*sin[i])
		}
	}
}

// attendSplit is attention with its weighted sum over positions cut in two halves, each summed
// serially and then added: a reduction split the way a thread split would cut it.
func attendSplit(out, q, keys, values []float32, npos, stride int, scale float32, scores []float32) {
	scores = scores[:npos]
	for t := range scores {
		scores[t] = float32(kernels.DotF32(q, keys[t*stride:t*stride+len(q)]) * scale)
	}
	kernels.Softmax(scores)
	half := npos / 2
	for i := range out {
		var a, b float32
		for t := 0; t < half; t++ {
			a += float32(scores[t] * values[t*stride+i])
		}
		for t := half; t < npos; t++ {
			b += float32(scores[t] * values[t*stride+i])
		}
		out[i] = a + b
	}
}
