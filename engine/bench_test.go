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
	wide, narrow := loadBench(b, path, Options{Threads: threads}), loadBench(b, path, Options{Threads: 1})
	prompt := benchPrompt()
	var vs []*decodeVariant
	for _, v := range []struct {
		name  string
		m     *Model
		split bool
	}{{"grouped", wide, false}, {"per-matrix", wide, true}, {"grouped-again", wide, false}, {"1-thread", narrow, false}} {
		vs = append(vs, newDecodeVariant(b, v.name, v.m, prompt, func(s *Session) { s.r.(*moeRunner).splitProducts = v.split }))
	}
	decodeInTurns(b, vs, len(prompt), true)
}

// benchPrompt is the prompt the decode benchmarks evaluate before they time passes.
func benchPrompt() []int32 {
	prompt := make([]int32, 20)
	for i := range prompt {
		prompt[i] = int32(100 + i)
	}
	return prompt
}

// decodeVariant is one way of running the engine that a decode benchmark times: a session that
// has evaluated the benchmark's prompt, and what its passes took.
type decodeVariant struct {
	name       string
	m          *Model
	s          *Session
	times      []time.Duration
	dispatches uint64
}

// newDecodeVariant opens a session on m for a decode benchmark, lets setup adjust it (when not
// nil) and evaluates prompt.
func newDecodeVariant(b *testing.B, name string, m *Model, prompt []int32, setup func(*Session)) *decodeVariant {
	s, err := m.NewSession(SessionOptions{Context: 256, PassSize: 32})
	if err != nil {
		b.Fatal(err)
	}
	if setup != nil {
		setup(s)
	}
	if _, err := s.Eval(context.Background(), prompt); err != nil {
		b.Fatal(err)
	}
	return &decodeVariant{name: name, m: m, s: s}
}

// decodeInTurns times one-token decode passes of the variants, which take turns token by token
// so that the load of a shared machine falls on all of them alike. It reports each variant's
// median and fastest milliseconds a token and, with dispatches, its pool dispatches a token.
func decodeInTurns(b *testing.B, vs []*decodeVariant, promptLen int, dispatches bool) {
	ctx := context.Background()
	token := []int32{1000}
	for i := 0; b.Loop(); i++ {
		// The order rotates, so that no variant always follows the same one (the one after
		// a 1-thread variant finds the other pool's workers parked).
		for k := range vs {
			v := vs[(i+k)%len(vs)]
			// Decode positions promptLen to promptLen+63 over and over, so that every variant
			// attends over the same lengths.
			if v.s.Pos() >= promptLen+64 {
				if err := v.s.Rewind(promptLen); err != nil {
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
		if dispatches {
			b.ReportMetric(float64(v.dispatches)/float64(len(v.times)), "dispatches/tok-"+v.name)
		}
	}
}

// loadBench loads the benchmark's model file at path with opts, closed when the benchmark ends.
func loadBench(b *testing.B, path string, opts Options) *Model {
	m, err := Load(context.Background(), path, opts)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { m.Close() })
	return m
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
