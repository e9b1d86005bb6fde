package engine

import (
	"math"

	"github.com/trochilus-llm/trochilus/kernels"
)

// TokenProb is a token and its log probability.
type TokenProb struct {
	ID      int32
	Logprob float32
}

// Logprobs returns the log probability of token tok under the distribution logits give at
// temperature 1, and the top most likely tokens (most likely first, lower ids first among
// equals) with theirs, appended to into. The same bits on every machine:
//
//	m = the largest logit that is not NaN
//	S = Σ float64(kernels.Exp(l − m)) over the logits l that are not NaN, in index order
//	logprob(i) = float32(float64(l_i − m) − kernels.Log64(S))
//
// with NaN logits at −Inf, and when m is +Inf the +Inf logits sharing all the probability.
func Logprobs(logits []float32, tok int32, top int, into []TokenProb) (float32, []TokenProb) {
	m := float32(math.Inf(-1))
	for _, l := range logits {
		if l == l {
			m = max(m, l)
		}
	}
	inf := math.IsInf(float64(m), 1)
	var sum float64
	for _, l := range logits {
		switch {
		case l != l:
		case inf:
			if l == m {
				sum++
			}
		default:
			sum += float64(kernels.Exp(l - m))
		}
	}
	logS := kernels.Log64(sum)
	lp := func(l float32) float32 {
		switch {
		case l != l:
			return float32(math.Inf(-1))
		case inf && l == m:
			return float32(-logS)
		case inf:
			return float32(math.Inf(-1))
		}
		return float32(float64(l-m) - logS)
	}
	chosen := float32(math.NaN())
	if tok >= 0 && int(tok) < len(logits) {
		chosen = lp(logits[tok])
	}
	// The top: an insertion into a short sorted list, for the few (≤ 20) that are asked for.
	start := len(into)
	for id, l := range logits {
		if top <= 0 || l != l {
			continue
		}
		n := len(into) - start
		if n == top && !(l > logits[into[len(into)-1].ID]) {
			continue
		}
		if n < top {
			into = append(into, TokenProb{})
		}
		i := len(into) - 1
		for i > start && l > logits[into[i-1].ID] {
			into[i] = into[i-1]
			i--
		}
		into[i] = TokenProb{ID: int32(id)}
	}
	for i := start; i < len(into); i++ {
		into[i].Logprob = lp(logits[into[i].ID])
	}
	return chosen, into
}
