package kernels

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/trochilus-llm/trochilus/gguf"
)

// The tier benchmarks put every usable tier side by side, the tier name last, so that with
// -count N the tiers alternate through the run and a load change on a shared machine hits them
// alike (compare medians, benchstat-style).

// BenchmarkTierDotRow is one row dot of 2048 columns per type and tier.
func BenchmarkTierDotRow(b *testing.B) {
	const cols = 2048
	x, rows, in := dotRowBench(b, cols)
	for i, typ := range supportedTypes {
		row := rows[i]
		for _, tier := range Tiers() {
			b.Run(fmt.Sprintf("%v/%s", typ, tier.Name), func(b *testing.B) {
				dst := make([]float32, 1)
				m := &Matrix{Type: typ, Rows: 1, Cols: cols, Data: row}
				var batch Batch
				if err := batch.Set(x, 1, cols); err != nil {
					b.Fatal(err)
				}
				if typ == gguf.TypeQ4_K {
					batch.q4k, batch.q4kReady = []q4KInput{*in}, true
				}
				k, err := tier.kernel(typ)
				if err != nil {
					b.Fatal(err)
				}
				b.SetBytes(int64(len(row)))
				for b.Loop() {
					k(dst, m, &batch, 0, 1)
				}
				report(b, len(row), cols)
			})
		}
	}
}

// BenchmarkTierMatMul runs OLMoE's shapes for one token (decode) per type and tier on a pool of
// TROCHILUS_BENCH_THREADS threads (default 1: the per-core kernel speed, which a shared machine
// measures more steadily than a parallel one).
func BenchmarkTierMatMul(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 2))
	p := NewPool(max(benchThreads(), 1))
	defer p.Close()
	shapes := []struct {
		name       string
		rows, cols int
	}{{"1024x2048", 1024, 2048}, {"2048x1024", 2048, 1024}, {"2048x2048", 2048, 2048}}
	for _, typ := range []gguf.Type{gguf.TypeQ4_K, gguf.TypeQ6_K, gguf.TypeQ8_0, gguf.TypeF16, gguf.TypeBF16, gguf.TypeF32} {
		for _, s := range shapes {
			m := randMatrix(rng, typ, s.rows, s.cols)
			x := randFloats(rng, s.cols, false, false)
			dst := make([]float32, s.rows)
			for _, tier := range Tiers() {
				b.Run(fmt.Sprintf("%v/%s/threads%d/%s", typ, s.name, p.Threads(), tier.Name), func(b *testing.B) {
					var in Batch
					b.SetBytes(int64(len(m.Data)))
					for b.Loop() {
						if err := in.Set(x, 1, s.cols); err != nil {
							b.Fatal(err)
						}
						if err := tier.MatMul(p, dst, m, &in); err != nil {
							b.Fatal(err)
						}
					}
					report(b, len(m.Data), s.rows*s.cols)
				})
			}
		}
	}
}

// BenchmarkTierPairs puts one weight row a call (the single-row dots) beside two rows a call
// (the tier's rows kernels) for one token on one thread, per SIMD tier, with the pair run twice
// under two names as an A/A control: "one", "pair", "pair-again".
func BenchmarkTierPairs(b *testing.B) {
	rng := rand.New(rand.NewPCG(3, 4))
	p := NewPool(1)
	defer p.Close()
	const rows, cols = 2048, 2048
	for _, typ := range []gguf.Type{gguf.TypeQ8_0, gguf.TypeF32, gguf.TypeF16} {
		m := randMatrix(rng, typ, rows, cols)
		x := randFloats(rng, cols, false, false)
		dst := make([]float32, rows)
		for _, st := range usableSIMD() {
			one := map[gguf.Type]func([]byte, []float32) float32{
				gguf.TypeQ8_0: st.asm.dotRowQ8_0, gguf.TypeF32: st.asm.dotRowF32, gguf.TypeF16: st.asm.dotRowF16,
			}[typ]
			pair, err := st.tier().kernel(typ)
			if err != nil {
				b.Fatal(err)
			}
			for _, v := range []struct {
				name string
				k    rowsKernel
			}{{"one", floatRows(one)}, {"pair", pair}, {"pair-again", pair}} {
				b.Run(fmt.Sprintf("%v/%s/%s", typ, st.name, v.name), func(b *testing.B) {
					in := Batch{X: x, Ntok: 1, Cols: cols}
					b.SetBytes(int64(len(m.Data)))
					for b.Loop() {
						v.k(dst, m, &in, 0, rows)
					}
					report(b, len(m.Data), rows*cols)
				})
			}
		}
	}
}

// BenchmarkTierCPU runs one token through a 256×2048 matrix of each type (small enough to stay
// in a core's L2, so the kernel's own speed shows rather than the memory's) per tier on one
// thread, and reports GB/s of weights per second of the thread's CPU time as well as of wall
// time: on a shared machine the CPU time leaves out the time other processes held the core.
func BenchmarkTierCPU(b *testing.B) {
	rng := rand.New(rand.NewPCG(5, 6))
	p := NewPool(1)
	defer p.Close()
	const rows, cols = 256, 2048
	for _, typ := range []gguf.Type{gguf.TypeQ4_K, gguf.TypeQ6_K, gguf.TypeQ8_0, gguf.TypeF32, gguf.TypeF16} {
		m := randMatrix(rng, typ, rows, cols)
		x := randFloats(rng, cols, false, false)
		dst := make([]float32, rows)
		for _, tier := range Tiers() {
			b.Run(fmt.Sprintf("%v/%s", typ, tier.Name), func(b *testing.B) {
				var in Batch
				b.SetBytes(int64(len(m.Data)))
				if cpu := cpuLoop(b, func() {
					if err := in.Set(x, 1, cols); err != nil {
						b.Fatal(err)
					}
					if err := tier.MatMul(p, dst, m, &in); err != nil {
						b.Fatal(err)
					}
				}); cpu > 0 {
					b.ReportMetric(float64(len(m.Data))*float64(b.N)/float64(cpu), "cpuGB/s")
				}
			})
		}
	}
}

// BenchmarkTierTiles puts a 16-token batch through a 256×2048 matrix on one thread in two ways
// per type on the fastest tier: "pairs" runs the tokens one at a time (two weight rows a call),
// "tiles" the whole batch (one weight row against four tokens a call), run twice as an A/A
// control. It reports GB/s of weights read (once per token) per second of thread CPU time.
func BenchmarkTierTiles(b *testing.B) {
	rng := rand.New(rand.NewPCG(7, 8))
	const rows, cols, ntok = 256, 2048, 16
	tiers := Tiers()
	tier := tiers[len(tiers)-1]
	for _, typ := range []gguf.Type{gguf.TypeQ8_0, gguf.TypeQ6_K, gguf.TypeF32, gguf.TypeF16, gguf.TypeQ4_K} {
		m := randMatrix(rng, typ, rows, cols)
		x := randFloats(rng, ntok*cols, false, false)
		dst := make([]float32, rows*ntok)
		k, err := tier.kernel(typ)
		if err != nil {
			b.Fatal(err)
		}
		whole := preparedBatch(b, x, ntok, cols)
		single := make([]Batch, ntok)
		for t := range single {
			single[t] = Batch{X: x[t*cols : (t+1)*cols], Ntok: 1, Cols: cols, q4k: whole.q4k[t : t+1], q4kReady: true}
		}
		for _, v := range []string{"pairs", "tiles", "tiles-again"} {
			b.Run(fmt.Sprintf("%v/%s/%s", typ, tier.Name, v), func(b *testing.B) {
				if cpu := cpuLoop(b, func() {
					if v == "pairs" {
						for t := range single {
							k(dst[t*rows:], m, &single[t], 0, rows)
						}
					} else {
						k(dst, m, whole, 0, rows)
					}
				}); cpu > 0 {
					b.ReportMetric(float64(len(m.Data))*ntok*float64(b.N)/float64(cpu), "cpuGB/s")
				}
			})
		}
	}
}

// BenchmarkTierSwiGLU puts the scalar SwiGLU and Softmax beside the fastest tier's vector ones
// (8192 elements: eight experts of 1024; the vector run twice as an A/A control), reporting
// nanoseconds of thread CPU time per element.
func BenchmarkTierSwiGLU(b *testing.B) {
	rng := rand.New(rand.NewPCG(9, 10))
	const n = 8192
	gate, up := randFloats(rng, n, false, false), randFloats(rng, n, false, false)
	dst := make([]float32, n)
	tiers := Tiers()
	tier := tiers[len(tiers)-1]
	for _, op := range []string{"SwiGLU", "Softmax"} {
		for _, v := range []struct {
			name string
			t    *Tier
		}{{"scalar", Scalar()}, {"vector", tier}, {"vector-again", tier}} {
			b.Run(fmt.Sprintf("%s/%s", op, v.name), func(b *testing.B) {
				if cpu := cpuLoop(b, func() {
					if op == "SwiGLU" {
						v.t.SwiGLU(dst, gate, up)
					} else {
						copy(dst, gate)
						v.t.Softmax(dst)
					}
				}); cpu > 0 {
					b.ReportMetric(float64(cpu)/float64(b.N*n), "cpu-ns/elem")
				}
			})
		}
	}
}

// BenchmarkTierAttend puts the scalar Attend beside the fastest tier's (one head of 128 over
// 256 positions, keys and values in L2; the tier run twice as an A/A control), in microseconds
// of thread CPU time a head.
func BenchmarkTierAttend(b *testing.B) {
	rng := rand.New(rand.NewPCG(11, 12))
	const npos, dim, stride = 256, 128, 256
	q := randFloats(rng, dim, false, false)
	kv := randFloats(rng, npos*stride, false, false)
	out, scores := make([]float32, dim), make([]float32, npos)
	tiers := Tiers()
	tier := tiers[len(tiers)-1]
	for _, v := range []struct {
		name string
		t    *Tier
	}{{"scalar", Scalar()}, {"vector", tier}, {"vector-again", tier}} {
		b.Run(v.name, func(b *testing.B) {
			if cpu := cpuLoop(b, func() {
				v.t.Attend(out, q, kv, kv[dim:], npos, stride, 0.0884, scores)
			}); cpu > 0 {
				b.ReportMetric(float64(cpu)/float64(b.N)/1e3, "cpu-µs/head")
			}
		})
	}
}
