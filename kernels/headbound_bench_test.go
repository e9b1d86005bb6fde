package kernels

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/trochilus-llm/trochilus/gguf"
)

// BenchmarkHeadArgmax times the greedy choice from a full-width head (hidden 2048, OLMoE's
// 50,304 rows) of random Q8_0 and Q6_K rows: the whole head and Argmax (full), against the
// search by the bound (bound), for a flat random input (the bound cannot help: the search ends
// in the whole head) and for an input whose weight sits in 32 dimensions, as a trained model's
// hidden state does (tools/train's model: 0.7% of its head computed, TestHeadBoundSameTokens).
// exact/op is the fraction of the head's rows the search computed exactly.
//
//	go test ./kernels -run XXX -bench HeadArgmax -benchtime 20x
func BenchmarkHeadArgmax(b *testing.B) {
	const rows, cols = 50304, 2048
	rng := rand.New(rand.NewPCG(9, 10))
	p := NewPool(benchThreads())
	defer p.Close()
	tier, err := Best()
	if err != nil {
		b.Fatal(err)
	}
	for _, typ := range []gguf.Type{gguf.TypeQ8_0, gguf.TypeQ6_K} {
		rb, _ := typ.RowBytes(cols)
		m := &Matrix{Type: typ, Rows: rows, Cols: cols, Data: make([]byte, rows*int(rb))}
		for i := range m.Data {
			m.Data[i] = byte(rng.Uint32())
		}
		for b0 := 0; b0 < len(m.Data); b0 += typ.BlockBytes() {
			// Every block's scale near 2^-8, so rows have like norms (a trained head's do).
			binary.LittleEndian.PutUint16(m.Data[b0+scaleOffsets(typ)[0]:], uint16(7<<10|rng.IntN(1024)))
		}
		flat, heavy := make([]float32, cols), make([]float32, cols)
		for k := range flat {
			flat[k] = float32(rng.NormFloat64())
			heavy[k] = float32(rng.NormFloat64() * 0.05)
			if k%64 == 5 {
				heavy[k] = float32(rng.NormFloat64() * 8)
			}
		}
		hb, err := NewHeadBound(p, m, heavy)
		if err != nil {
			b.Fatal(err)
		}
		s := NewHeadSearch(tier, p, hb)
		logits := make([]float32, rows)
		in := new(Batch)
		for _, x := range []struct {
			name string
			x    []float32
		}{{"flat", flat}, {"heavy", heavy}} {
			b.Run(fmt.Sprintf("%v/%s/full", typ, x.name), func(b *testing.B) {
				for b.Loop() {
					_ = in.Set(x.x, 1, cols)
					if err := tier.MatMul(p, logits, m, in); err != nil {
						b.Fatal(err)
					}
					_ = Argmax(logits)
				}
			})
			b.Run(fmt.Sprintf("%v/%s/bound", typ, x.name), func(b *testing.B) {
				exact := 0
				for b.Loop() {
					_ = in.Set(x.x, 1, cols)
					c, err := s.Argmax(m, in, logits)
					if err != nil {
						b.Fatal(err)
					}
					exact += c.Exact
				}
				b.ReportMetric(float64(exact)/float64(b.N)/rows, "exact/op")
			})
		}
	}
}
