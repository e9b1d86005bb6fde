package kernels

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"testing"

	"github.com/trochilus-llm/trochilus/gguf"
)

// BenchmarkQ4KRows4 runs one token through OLMoE's expert shapes (1024×2048 and 2048×1024)
// with the Q4_K rows kernel of each AVX-512 tier on one thread, in three variants interleaved
// call by call: "pair" (two rows a call: the four-row kernel switched off), "four" (as the tier
// runs it: four rows at a time, the whole run in one call) and "pair-again" (an A/A control).
// "cache" reuses one matrix (it stays in L2/L3); "stream" takes the next matrix of a 1 GiB
// buffer each call, so the weights come from RAM as in decode. On a shared machine the load changes from one run to the next;
// here each round times the variants back to back in thread CPU time, and the report gives the
// median over rounds of each variant's speed-up over "pair" (its time over the variant's) and
// each variant's median GB/s of weights.
func BenchmarkQ4KRows4(b *testing.B) {
	rng := rand.New(rand.NewPCG(31, 32))
	for _, shape := range [][2]int{{1024, 2048}, {2048, 1024}} {
		rows, cols := shape[0], shape[1]
		m := randMatrix(rng, gguf.TypeQ4_K, rows, cols)
		var in Batch
		if err := in.Set(randFloats(rng, cols, false, false), 1, cols); err != nil {
			b.Fatal(err)
		}
		if err := in.prepareAll(NewPool(1)); err != nil {
			b.Fatal(err)
		}
		dst := make([]float32, rows)
		for _, stream := range []bool{false, true} {
			data, where := m.Data, "cache"
			if stream {
				data, where = make([]byte, (1<<30)/len(m.Data)*len(m.Data)), "stream"
				for i := 0; i < len(data); i += len(m.Data) {
					copy(data[i:], m.Data)
				}
			}
			for _, st := range usableSIMD() {
				if st.asm.q4Kr4 == nil {
					continue
				}
				pair := st.asm
				pair.q4Kr4 = nil
				variants := []*asmKernels{&pair, &st.asm, &pair}
				b.Run(fmt.Sprintf("%dx%d/%s/%s", rows, cols, where, st.name), func(b *testing.B) {
					runtime.LockOSThread()
					defer runtime.UnlockOSThread()
					var times [3][]float64
					off := 0
					for b.Loop() {
						for v, a := range variants {
							mat := *m
							mat.Data = data[off : off+len(m.Data)]
							off = (off + len(m.Data)) % len(data)
							start := threadCPUTime()
							a.q4KRows(dst, &mat, &in, 0, rows)
							times[v] = append(times[v], float64(threadCPUTime()-start))
						}
					}
					reportRatios(b, times[:], []string{"pair", "four", "again"}, float64(len(m.Data)), "GB/s")
				})
			}
			data = nil
		}
	}
}

// reportRatios reports, for variants timed round by round (times[v][round], in ns), the median
// over rounds of each variant's speed-up over variant 0 (as "<name>/<name 0>") and each
// variant's work per median time (as "<name><unit>", work per ns).
func reportRatios(b *testing.B, times [][]float64, names []string, work float64, unit string) {
	median := func(x []float64) float64 {
		x = slices.Clone(x)
		slices.Sort(x)
		return x[len(x)/2]
	}
	for v := 1; v < len(times); v++ {
		r := make([]float64, len(times[0]))
		for i := range r {
			r[i] = times[0][i] / times[v][i]
		}
		b.ReportMetric(median(r), names[v]+"/"+names[0])
	}
	for v, name := range names {
		b.ReportMetric(work/median(times[v]), name+unit)
	}
}
