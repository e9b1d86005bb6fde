package engine

import (
	"context"
	"fmt"
	"os"
	"slices"
	"testing"
	"time"
)

// BenchmarkDecode times decode passes of the model file named by TROCHILUS_BENCH_MODEL (it
// skips without one), the variants taking turns token by token so that the load of a shared
// machine falls on all of them alike: "grouped" is the engine as it is (the products of a
// layer in a few pool passes), "per-matrix" runs every matrix in a pass of its own (the engine
// before MatMulMany), "grouped-again" repeats the first as an A/A control, and "1-thread" is
// the engine on a pool of one thread. TROCHILUS_BENCH_THREADS sets the other variants'
// threads (default 2). It reports each variant's median and fastest milliseconds a token and
// its pool dispatches a token.
func BenchmarkDecode(b *testing.B) {
	path := benchModel(b)
	threads := 2
	if v := os.Getenv("TROCHILUS_BENCH_THREADS"); v != "" {
		if _, err := fmt.Sscan(v, &threads); err != nil {
			b.Fatalf("TROCHILUS_BENCH_THREADS=%q: %v", v, err)
		}
	}
	ctx := context.Background()
	load := func(threads int) *Model {
		m, err := Load(ctx, path, Options{Threads: threads})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { m.Close() })
		return m
	}
	wide, narrow := load(threads), load(1)
	prompt := make([]int32, 20)
	for i := range prompt {
		prompt[i] = int32(100 + i)
	}
	type variant struct {
		name       string
		m          *Model
		s          *Session
		times      []time.Duration
		dispatches uint64
	}
	var vs []*variant
	for _, v := range []struct {
		name  string
		m     *Model
		split bool
	}{{"grouped", wide, false}, {"per-matrix", wide, true}, {"grouped-again", wide, false}, {"1-thread", narrow, false}} {
		s, err := v.m.NewSession(SessionOptions{Context: 256, PassSize: 32})
		if err != nil {
			b.Fatal(err)
		}
		s.r.(*moeRunner).splitProducts = v.split
		if _, err := s.Eval(ctx, prompt); err != nil {
			b.Fatal(err)
		}
		vs = append(vs, &variant{name: v.name, m: v.m, s: s})
	}
	token := []int32{1000}
	for i := 0; b.Loop(); i++ {
		// The order rotates, so that no variant always follows the same one (the one after
		// the 1-thread variant finds the other pool's workers parked).
		for k := range vs {
			v := vs[(i+k)%len(vs)]
			// Decode positions 20 to 83 over and over, so that every variant attends over
			// the same lengths.
			if v.s.Pos() >= len(prompt)+64 {
				if err := v.s.Rewind(len(prompt)); err != nil {
					b.Fatal(err)
				}
			}
			d, start := v.m.pool.Dispatches(), time.Now()
			if _, err := v.s.Eval(ctx, token); err != nil {
				b.Fatal(err)
			}
			v.times = append(v.times, time.Since(start))
			v.dispatches += v.m.pool.Dispatches() - d
		}
	}
	for _, v := range vs {
		slices.Sort(v.times)
		b.ReportMetric(float64(v.times[len(v.times)/2])/1e6, "ms/tok-"+v.name)
		// On a shared machine the fastest pass is the one least disturbed (noise only adds).
		b.ReportMetric(float64(v.times[0])/1e6, "best-ms/tok-"+v.name)
		b.ReportMetric(float64(v.dispatches)/float64(len(v.times)), "dispatches/tok-"+v.name)
	}
}

// benchModel returns the model file the benchmarks run, named by TROCHILUS_BENCH_MODEL (a
// full-size file is too large to generate for every run); it skips the benchmark without one.
func benchModel(b *testing.B) string {
	path := os.Getenv("TROCHILUS_BENCH_MODEL")
	if path == "" {
		b.Skip("TROCHILUS_BENCH_MODEL names no model file")
	}
	return path
}
