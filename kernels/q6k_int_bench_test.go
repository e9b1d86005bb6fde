package kernels

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
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
		var in Batch
		if err := in.Set(randFloats(rng, cols, false, false), 1, cols); err != nil {
			b.Fatal(err)
		}
		p := NewPool(1)
		err := in.prepareAll(p)
		p.Close()
		if err != nil {
			b.Fatal(err)
		}
		dst := make([]float32, rows)
		for _, where := range []string{"cache", "stream"} {
			if where == "cache" && rows > 4096 {
				continue
			}
			data := m.Data
			if where == "stream" {
				copies := max((256<<20)/len(m.Data), 3)
				data = make([]byte, copies*len(m.Data))
				for i := 0; i < len(data); i += len(m.Data) {
					copy(data[i:], m.Data)
				}
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
					runtime.LockOSThread()
					defer runtime.UnlockOSThread()
					times := make([][]float64, len(variants))
					off, round := 0, 0
					for b.Loop() {
						round++
						for i := range variants {
							v := (round + i) % len(variants)
							mat := *m
							mat.Data = data[off : off+len(m.Data)]
							off = (off + len(m.Data)) % len(data)
							start := threadCPUTime()
							variants[v](dst, &mat, &in, 0, rows)
							times[v] = append(times[v], float64(threadCPUTime()-start))
						}
					}
					reportRatios(b, times, names, float64(len(m.Data)), "GB/s")
					for v, name := range names {
						t := slices.Clone(times[v])
						slices.Sort(t)
						b.ReportMetric(t[len(t)/2]/float64(rows), name+"ns/row")
					}
				})
			}
		}
	}
}
