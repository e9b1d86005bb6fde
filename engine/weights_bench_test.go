package engine

import (
	"context"
	"slices"
	"testing"
	"time"
)

// BenchmarkDecodeWeights times one-thread decode passes of the model file named by
// TROCHILUS_BENCH_MODEL (it skips without one) with its weights mapped from the file and
// resident in the engine's own memory, the variants taking turns token by token, each twice
// (the second of each pair is an A/A control). It reports median and fastest milliseconds a
// token.
func BenchmarkDecodeWeights(b *testing.B) {
	path := benchModel(b)
	ctx := context.Background()
	load := func(w Weights) *Model {
		m, err := Load(ctx, path, Options{Threads: 1, Weights: w})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { m.Close() })
		return m
	}
	mapped, res := load(WeightsMapped), load(WeightsResident)
	prompt := make([]int32, 20)
	for i := range prompt {
		prompt[i] = int32(100 + i)
	}
	type variant struct {
		name  string
		s     *Session
		times []time.Duration
	}
	var vs []*variant
	for _, v := range []struct {
		name string
		m    *Model
	}{{"mapped", mapped}, {"resident", res}, {"mapped-again", mapped}, {"resident-again", res}} {
		s, err := v.m.NewSession(SessionOptions{Context: 256, PassSize: 32})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := s.Eval(ctx, prompt); err != nil {
			b.Fatal(err)
		}
		vs = append(vs, &variant{name: v.name, s: s})
	}
	token := []int32{1000}
	for i := 0; b.Loop(); i++ {
		for k := range vs {
			v := vs[(i+k)%len(vs)]
			if v.s.Pos() >= len(prompt)+64 {
				if err := v.s.Rewind(len(prompt)); err != nil {
					b.Fatal(err)
				}
			}
			start := time.Now()
			if _, err := v.s.Eval(ctx, token); err != nil {
				b.Fatal(err)
			}
			v.times = append(v.times, time.Since(start))
		}
	}
	for _, v := range vs {
		slices.Sort(v.times)
		b.ReportMetric(float64(v.times[len(v.times)/2])/1e6, "ms/tok-"+v.name)
		b.ReportMetric(float64(v.times[0])/1e6, "best-ms/tok-"+v.name)
	}
}
