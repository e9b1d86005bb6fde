package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/trochilus-llm/trochilus/gguf"
)

// The benchmarks report the weights read per second (MB/s from SetBytes, and GB/s) and the
// arithmetic rate (GFLOP/s, two operations per weight and token): the scalar baseline that the
// SIMD tiers will be measured against.

func BenchmarkDotRow(b *testing.B) {
	const cols = 2048
	x, rows, in := dotRowBench(b, cols)
	for i, typ := range supportedTypes {
		row := rows[i]
		b.Run(typ.String(), func(b *testing.B) {
			var dot func() float32
			if prepared, ok := preparedDots[typ]; ok {
				dot = func() float32 { return prepared(row, in) }
			} else {
				f := rowDots[typ]
				dot = func() float32 { return f(row, x) }
			}
			b.SetBytes(int64(len(row)))
			var sink float32
			for b.Loop() {
				sink += dot()
			}
			report(b, len(row), cols)
			_ = sink
		})
	}
}

func report(b *testing.B, bytes, flopPairs int) {
	ns := float64(b.Elapsed().Nanoseconds()) / float64(b.N)
	b.ReportMetric(float64(bytes)/ns, "GB/s")
	b.ReportMetric(2*float64(flopPairs)/ns, "GFLOP/s")
}

// BenchmarkMatMul runs OLMoE's shapes: an expert's gate or up projection (1024×2048), its down
// projection (2048×1024) and an attention projection (2048×2048), for one token (decode) and
// for 16 (a slice of a prompt), on the default pool (TROCHILUS_BENCH_THREADS sets another size).
func BenchmarkMatMul(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 2))
	p := NewPool(benchThreads()) // 0: the default
	defer p.Close()
	tier := Scalar()
	shapes := []struct {
		name       string
		rows, cols int
	}{{"gate_up_1024x2048", 1024, 2048}, {"down_2048x1024", 2048, 1024}, {"attn_2048x2048", 2048, 2048}}
	for _, typ := range []gguf.Type{gguf.TypeQ4_K, gguf.TypeQ6_K, gguf.TypeQ8_0, gguf.TypeF16, gguf.TypeF32} {
		for _, s := range shapes {
			m := randMatrix(rng, typ, s.rows, s.cols)
			for _, ntok := range []int{1, 16} {
				b.Run(fmt.Sprintf("%v/%s/tok%d/threads%d", typ, s.name, ntok, p.Threads()), func(b *testing.B) {
					x := randFloats(rng, ntok*s.cols, false, false)
					dst := make([]float32, ntok*s.rows)
					var in Batch
					b.SetBytes(int64(len(m.Data)))
					for b.Loop() {
						if err := in.Set(x, ntok, s.cols); err != nil {
							b.Fatal(err)
						}
						if err := tier.MatMul(p, dst, m, &in); err != nil {
							b.Fatal(err)
						}
					}
					report(b, len(m.Data), s.rows*s.cols*ntok)
				})
			}
		}
	}
}

func BenchmarkExp(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 3))
	x := make([]float32, 1024)
	for i := range x {
		x[i] = float32(rng.Float64()*40 - 20)
	}
	var s float32
	for b.Loop() {
		for _, v := range x {
			s += Exp(v)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(x)), "ns/exp")
	_ = s
}

// BenchmarkTierExp times ExpShifted over a vocabulary of logits (σ 3.75, as a sampler at
// temperature 0.8 sees them) in every tier against the scalar Exp a value: the vector kernel
// must beat the loop it replaces (a legacy-SSE load in its loop once made it 3× slower, LESSONS
// 46).
func BenchmarkTierExp(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 2))
	src := make([]float32, 50304)
	top := float32(math.Inf(-1))
	for i := range src {
		src[i] = float32(rng.NormFloat64() * 3 / 0.8)
		top = max(top, src[i])
	}
	dst := make([]float32, len(src))
	for _, t := range Tiers() {
		b.Run(t.Name, func(b *testing.B) {
			for b.Loop() {
				t.ExpShifted(dst, src, top)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(src)), "ns/exp")
		})
	}
	b.Run("scalar-loop", func(b *testing.B) {
		for b.Loop() {
			for i, v := range src {
				dst[i] = Exp(v - top)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(src)), "ns/exp")
	})
}

func BenchmarkPrepareQ4K(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 4))
	x := randFloats(rng, 2048, false, false)
	var in q4KInput
	for b.Loop() {
		_ = prepareQ4K(&in, x)
	}
}

func BenchmarkPoolFor(b *testing.B) {
	p := NewPool(0)
	defer p.Close()
	fn := func(lo, hi int) {}
	for b.Loop() {
		p.For(64, fn)
	}
}

func BenchmarkRopeTable(b *testing.B) {
	for b.Loop() {
		if _, err := NewRopeTable(10000, 128, 4096); err != nil {
			b.Fatal(err)
		}
	}
}
