package kernels

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/trochilus-llm/trochilus/gguf"
)

// BenchmarkQ6KIntDecode runs one token through OLMoE's Q6_K shapes (the 2048×1024 expert down
// projection, 1024×2048, and the 50304×2048 output head) on one locked thread with each
// AVX-512 tier, in three variants interleaved call by call, each round starting one variant
// later than the one before: "pair" is the tier's rows kernel without its four-row kernel
// (q6KRows with q6KQuad nil: q6KPair two rows a call), "int" the tier's own (q6KRows:
// q6KRows4 over the whole run in one call), and "again" the pairs once more (the A/A control).
// "cache" reuses one matrix; "stream"
// takes the next copy of the matrix from a buffer of at least 256 MiB each call, so the
// weights come from RAM as in decode (the head, 84 MB, only streams). Each call is timed in
// the thread's CPU time; the report gives the median over rounds of each variant's speed-up
// over "pair" (its time over the variant's) and each variant's median ns a row.
func BenchmarkQ6KIntDecode(b *testing.B) {
	rng := rand.New(rand.NewPCG(71, 72))
	for _, shape := range [][2]int{{2048, 1024}, {1024, 2048}, {50304, 2048}} {
		rows, cols := shape[0], shape[1]
		m := randMatrix(rng, gguf.TypeQ6_K, rows, cols)
		in := preparedBatch(b, randFloats(rng, cols, false, false), 1, cols)
		dst := make([]float32, rows)
		for _, where := range []string{"cache", "stream"} {
			if where == "cache" && rows > 4096 {
				continue
			}
			data := m.Data
			if where == "stream" {
				data = repeat(m.Data, max((256<<20)/len(m.Data), 3))
			}
			for _, st := range usableSIMD() {
				a := &st.asm
				if a.q6KQuad == nil {
					continue
				}
				pairs := *a
				pairs.q6KQuad = nil
				variants := []rowsKernel{pairs.q6KRows, a.q6KRows, pairs.q6KRows}
				names := []string{"pair", "int", "again"}
				b.Run(fmt.Sprintf("%dx%d/%s/%s", rows, cols, where, st.name), func(b *testing.B) {
					times := timeRounds(b, m, data, len(variants), true, func(v int, mat *Matrix) {
						variants[v](dst, mat, in, 0, rows)
					})
					reportRatios(b, times, names, float64(len(m.Data)), "GB/s")
					for v, name := range names {
						b.ReportMetric(medianOf(times[v])/float64(rows), name+"ns/row")
					}
				})
			}
		}
	}
}
