package engine

import "testing"

// BenchmarkDecodeWeights times one-thread decode passes of the model file named by
// TROCHILUS_BENCH_MODEL (it skips without one) with its weights mapped from the file and
// resident in the engine's own memory, the variants taking turns token by token, each twice
// (the second of each pair is an A/A control). It reports median and fastest milliseconds a
// token.
func BenchmarkDecodeWeights(b *testing.B) {
	path := benchModel(b)
	mapped := loadBench(b, path, Options{Threads: 1, Weights: WeightsMapped})
	res := loadBench(b, path, Options{Threads: 1, Weights: WeightsResident})
	prompt := benchPrompt()
	var vs []*decodeVariant
	for _, v := range []struct {
		name string
		m    *Model
	}{{"mapped", mapped}, {"resident", res}, {"mapped-again", mapped}, {"resident-again", res}} {
		vs = append(vs, newDecodeVariant(b, v.name, v.m, prompt, nil))
	}
	decodeInTurns(b, vs, len(prompt), false)
}
