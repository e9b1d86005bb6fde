//go:build trochilus_mutants

package engine

import (
	"strings"
	"testing"
)

// TestMutantsCaughtByOracle plants one deliberate bug at a time and checks that the oracle
// comparison that the correct engine passes (TestOracleOLMoE) fails on it: the tolerance is
// tight enough, and the variant model really exercises renormalised top-k, clip_qkv and
// grouped-query attention.
func TestMutantsCaughtByOracle(t *testing.T) {
	cases := referenceCases(t)
	for _, tc := range []struct {
		mutant mutant
		model  string
	}{
		{mutantRopePairs, "q8_0"},
		{mutantUnsortedWeights, "q4_k"},
		{mutantFlipNormTopK, "q8_0"},
		{mutantFlipNormTopK, "variant-q8_0"},
		{mutantNoClip, "variant-q8_0"},
		{mutantGQAModulo, "variant-q8_0"},
		{mutantNoCausalInPass, "f16"},
	} {
		t.Run(tc.mutant.String()+"/"+tc.model, func(t *testing.T) {
			var m *Model
			var worst float64
			mismatches, compared := 0, 0
			for i := range cases {
				c := &cases[i]
				if c.model.name != tc.model {
					continue
				}
				if m == nil {
					m = c.model.load(t, Options{Threads: 2, mutant: tc.mutant})
				}
				cmp := compareCase(t, m, c)
				compared++
				worst = max(worst, cmp.maxDiff)
				if cmp.mismatch {
					mismatches++
				}
			}
			if compared == 0 {
				t.Fatalf("no reference case for model %q", tc.model)
			}
			if worst <= oracleTol && mismatches == 0 {
				t.Fatalf("mutant %s not caught: max |logit diff| %.3g, greedy tokens all identical", tc.mutant, worst)
			}
			t.Logf("caught: max |logit diff| %.3g, %d of %d prompts with a different greedy token", worst, mismatches, compared)
		})
	}
}

// TestMutantsCaughtByDeterminism checks that the determinism matrix fails on bugs that make a
// token's logits depend on the thread count or on the other tokens of its pass. A split
// reduction moves the logits by rounding only, far inside the oracle's tolerance: this matrix
// is what catches it.
func TestMutantsCaughtByDeterminism(t *testing.T) {
	var q80 testModel
	for _, tm := range testModels() {
		if tm.name == "q8_0" {
			q80 = tm
		}
	}
	for _, mu := range []mutant{mutantSplitAttention, mutantNoCausalInPass} {
		t.Run(mu.String(), func(t *testing.T) {
			bad := determinismMismatches(t, q80, Options{mutant: mu})
			if len(bad) == 0 {
				t.Fatalf("mutant %s not caught by the determinism matrix", mu)
			}
			t.Logf("caught by %d of 10 comparisons, e.g. %s", len(bad), strings.Join(bad[:1], ""))
		})
	}
}
