package quant

import (
	"math/rand/v2"
	"testing"

	"github.com/trochilus-llm/trochilus/gguf"
)

// BenchmarkDequantize decodes 1 Mi elements of each supported type from random bytes; the MB/s
// figure is of encoded input.
func BenchmarkDequantize(b *testing.B) {
	const n = 1 << 20
	types := []gguf.Type{gguf.TypeF32, gguf.TypeF16, gguf.TypeBF16, gguf.TypeQ8_0, gguf.TypeQ4_0,
		gguf.TypeQ2_K, gguf.TypeQ3_K, gguf.TypeQ4_K, gguf.TypeQ5_K, gguf.TypeQ6_K, gguf.TypeIQ2_XXS,
		gguf.TypeIQ2_XS, gguf.TypeIQ2_S, gguf.TypeIQ3_XXS, gguf.TypeIQ3_S, gguf.TypeIQ1_S, gguf.TypeIQ1_M,
		gguf.TypeNVFP4, gguf.TypeQ1_0, gguf.TypeQ2_0}
	for _, typ := range types {
		b.Run(typ.String(), func(b *testing.B) {
			rb, _ := typ.RowBytes(n)
			src := make([]byte, rb)
			_, _ = rand.NewChaCha8([32]byte{}).Read(src)
			dst := make([]float32, n)
			b.SetBytes(rb)
			b.ReportAllocs()
			for b.Loop() {
				if err := Dequantize(typ, src, dst); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds()/1e6, "Melem/s")
		})
	}
}

// BenchmarkQuantize encodes 1 Mi Gaussian values.
func BenchmarkQuantize(b *testing.B) {
	const n = 1 << 20
	r := rand.New(rand.NewPCG(1, 1))
	x := make([]float32, n)
	for i := range x {
		x[i] = float32(r.NormFloat64())
	}
	for _, typ := range []gguf.Type{gguf.TypeQ8_0, gguf.TypeQ4_K, gguf.TypeQ6_K} {
		b.Run(typ.String(), func(b *testing.B) {
			rb, _ := typ.RowBytes(n)
			dst := make([]byte, rb)
			b.SetBytes(4 * n)
			b.ReportAllocs()
			for b.Loop() {
				if err := Quantize(typ, x, dst); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
