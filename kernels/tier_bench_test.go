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
	x, rows := dotRowBench(cols)
	var in q4KInput
	if err := prepareQ4K(&in, x); err != nil {
		b.Fatal(err)
	}
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
					batch.q4k, batch.q4kReady = []q4KInput{in}, true
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
