package kernels

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/trochilus-llm/trochilus/gguf"
)

// BenchmarkTierStream runs one token through expert-shaped matrices (1024 rows of 2048 columns)
// that sit one after another in a buffer far larger than the caches, one matrix per op, so
// the weights stream from RAM as they do in decode; compare the GB/s with the bandwidth probe
// (tools/race/bandwidth). TROCHILUS_BENCH_THREADS sets the pool (default 1).
func BenchmarkTierStream(b *testing.B) {
	p := NewPool(max(benchThreads(), 1))
	defer p.Close()
	const rows, cols, total = 1024, 2048, 1 << 30
	rng := rand.New(rand.NewPCG(5, 6))
	x := randFloats(rng, cols, false, false)
	dst := make([]float32, rows)
	for _, typ := range []gguf.Type{gguf.TypeQ4_K, gguf.TypeQ6_K, gguf.TypeQ8_0} {
		one := randMatrix(rng, typ, rows, cols)
		n := total / len(one.Data)
		buf := repeat(one.Data, n)
		for _, tier := range Tiers()[1:] {
			b.Run(fmt.Sprintf("%v/%s", typ, tier.Name), func(b *testing.B) {
				var in Batch
				if err := in.Set(x, 1, cols); err != nil {
					b.Fatal(err)
				}
				b.SetBytes(int64(len(one.Data)))
				i := 0
				for b.Loop() {
					m := Matrix{Type: typ, Rows: rows, Cols: cols, Data: buf[i*len(one.Data) : (i+1)*len(one.Data)]}
					if err := tier.MatMul(p, dst, &m, &in); err != nil {
						b.Fatal(err)
					}
					in.q4kReady = true
					i = (i + 1) % n
				}
			})
		}
		buf = nil
	}
}
