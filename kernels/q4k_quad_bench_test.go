package kernels

import (
	"fmt"
	"math/rand/v2"
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
		in := preparedBatch(b, randFloats(rng, cols, false, false), 1, cols)
		dst := make([]float32, rows)
		for _, stream := range []bool{false, true} {
			data, where := weightsFrom(m.Data, stream, (1<<30)/len(m.Data))
			for _, st := range usableSIMD() {
				if st.asm.q4Kr4 == nil {
					continue
				}
				pair := st.asm
				pair.q4Kr4 = nil
				variants := []*asmKernels{&pair, &st.asm, &pair}
				b.Run(fmt.Sprintf("%dx%d/%s/%s", rows, cols, where, st.name), func(b *testing.B) {
					times := timeRounds(b, m, data, len(variants), false, func(v int, mat *Matrix) {
						variants[v].q4KRows(dst, mat, in, 0, rows)
					})
					reportRatios(b, times, []string{"pair", "four", "again"}, float64(len(m.Data)), "GB/s")
				})
			}
			data = nil
		}
	}
}
