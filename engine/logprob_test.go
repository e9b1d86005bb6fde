package engine

import (
	"cmp"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestLogprobs compares Logprobs with log-softmax computed in float64 by math.Exp and math.Log
// (within 2e-6, the float32 result's own rounding near the small values), checks the top list
// against a sort, and the special values.
func TestLogprobs(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for trial := range 200 {
		n := 1 + r.IntN(5000)
		logits := make([]float32, n)
		for i := range logits {
			logits[i] = float32(r.NormFloat64() * float64(1+trial%7))
			if trial%5 == 0 {
				logits[i] = float32(r.IntN(6)) // ties
			}
		}
		m := float64(slices.Max(logits))
		var s float64
		for _, l := range logits {
			s += math.Exp(float64(l) - m)
		}
		top := r.IntN(21)
		tok := int32(r.IntN(n))
		got, tops := Logprobs(logits, tok, top, nil)
		want := float64(logits[tok]) - m - math.Log(s)
		if math.Abs(float64(got)-want) > 2e-6*max(1, math.Abs(want)) {
			t.Fatalf("trial %d: logprob %v, log-softmax %v", trial, got, want)
		}
		ids := make([]int32, n)
		for i := range ids {
			ids[i] = int32(i)
		}
		slices.SortStableFunc(ids, func(a, b int32) int { return cmp.Compare(logits[b], logits[a]) })
		if len(tops) != min(top, n) {
			t.Fatalf("trial %d: %d top tokens, want %d", trial, len(tops), min(top, n))
		}
		for i, tp := range tops {
			if tp.ID != ids[i] {
				t.Fatalf("trial %d: top %d is %d, want %d", trial, i, tp.ID, ids[i])
			}
			if _, again := Logprobs(logits, tp.ID, 0, nil); again != nil {
				t.Fatal("top 0 returned a list")
			}
			if lp, _ := Logprobs(logits, tp.ID, 0, nil); lp != tp.Logprob {
				t.Fatalf("trial %d: top %d's logprob %v, its own %v", trial, i, tp.Logprob, lp)
			}
		}
	}
	nan, inf := float32(math.NaN()), float32(math.Inf(1))
	if lp, _ := Logprobs([]float32{1, nan, 1}, 1, 0, nil); !math.IsInf(float64(lp), -1) {
		t.Errorf("a NaN logit: %v, want -Inf", lp)
	}
	if lp, _ := Logprobs([]float32{1, nan, 1}, 0, 0, nil); lp != float32(-math.Ln2) {
		t.Errorf("two equal logits: %v, want -ln 2", lp)
	}
	if lp, tops := Logprobs([]float32{inf, 3, inf}, 2, 3, nil); lp != float32(-math.Ln2) || len(tops) != 3 ||
		tops[0].ID != 0 || tops[1].ID != 2 || !math.IsInf(float64(tops[2].Logprob), -1) {
		t.Errorf("+Inf logits: %v %v", lp, tops)
	}
}
