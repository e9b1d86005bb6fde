//go:build !trochilus_mutants

package engine

import "github.com/trochilus-llm/trochilus/kernels"

// mutant is, in a normal build, nothing: the hooks through which the mutation tests plant
// deliberate bugs (mutant.go, built only with the trochilus_mutants tag) are here the correct
// engine's steps, each small enough to inline, so that the hot path compiles to exactly the
// code it would be without them. Keep each one the step it names and nothing more: the oracle
// tests check this file's engine, the mutation tests mutant.go's.
type mutant struct{}

// clipQKV returns the magnitude q, k and v are clamped to (0: none): the model's clip.
func (mutant) clipQKV(clip float32) float32 { return clip }

// rope rotates the heads of x for position p.
func (mutant) rope(rt *kernels.RopeTable, x []float32, p int) error { return rt.Apply(x, p) }

// normTopK reports whether the chosen experts' weights are renormalised: the model's flag.
func (mutant) normTopK(norm bool) bool { return norm }

// carried returns the weights the sort by expert id moves along with the ids: w.
func (mutant) carried(w []float32) []float32 { return w }

// causal returns how many positions a token attends to: npos, its own and those before it.
func (mutant) causal(npos, _ int) int { return npos }

// kvHead returns the kv head a query head reads: kv, head / group.
func (mutant) kvHead(kv, _, _ int) int { return kv }

// attend runs the tier's attention of one query.
func (mutant) attend(t *kernels.Tier, _ int, out, q, keys, values []float32, npos, stride int, scale float32, scores []float32) {
	t.Attend(out, q, keys, values, npos, stride, scale, scores)
}
