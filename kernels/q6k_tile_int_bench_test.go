//go:build amd64

package kernels

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"testing"

	"github.com/trochilus-llm/trochilus/gguf"
)

// BenchmarkQ6KTileInt measures the prompt cost of a Q6_K matrix of OLMoE's expert shapes on
// one thread, per token-row, for each AVX-512 tier, in variants interleaved round by round in
// thread CPU time:
//
//   - "tier": the tier's Tier.Q6K (q6KRows: panels from q6KPanelMinTokens tokens where the
//     tier has them, tiles otherwise) through MatMul on a one-thread pool;
//   - "tiles": the integer Q6_K tiles of q6KRows (eight inputs a call in spans, then four) on
//     the prepared batch;
//   - "tiles4": the same with only the four-input tiles;
//   - "tier-again": the A/A control;
//   - "panel" (avx512vnni only): the integer Q6_K panel (q6KPanelRows), sixteen rows in
//     sixteen dword lanes, at every token count.
//
// It reports each variant's median speed-up over "tier" and its median ns per token-row.
// The input preparation (prepareQ4K through the tier's kernel), done once per token and
// shared by every matrix reading the same input, is timed on its own and reported as ns per
// token ("prep-ns/token") and as a share of the tiles' cost of this matrix for one token
// ("prep/tiles").
func BenchmarkQ6KTileInt(b *testing.B) {
	rng := rand.New(rand.NewPCG(65, 66))
	pool := NewPool(1)
	defer pool.Close()
	for _, shape := range [][2]int{{2048, 1024}, {1024, 2048}} {
		rows, cols := shape[0], shape[1]
		m := randMatrix(rng, gguf.TypeQ6_K, rows, cols)
		for _, ntok := range []int{8, 16, 64, 128} {
			x := randFloats(rng, ntok*cols, false, false)
			in := preparedBatch(b, x, ntok, cols)
			dst := make([]float32, ntok*rows)
			for _, st := range usableSIMD() {
				if st.asm.q6KTile4 == nil || st.name == "avx2" {
					continue
				}
				tier := st.tier()
				tiles, four := st.asm, st.asm
				four.q6KTile8 = nil
				names := []string{"tier", "tiles", "tiles4", "tier-again"}
				run := []func(){
					func() { _ = tier.MatMul(pool, dst, m, in) },
					func() { tiles.q6KRows(dst, m, in, 0, rows) },
					func() { four.q6KRows(dst, m, in, 0, rows) },
					func() { _ = tier.MatMul(pool, dst, m, in) },
				}
				if st.name == "avx512vnni" {
					names = append(names, "panel")
					run = append(run, func() {
						(&asmKernels{q6KPanelBuild: q6KPanelBuildAVX512VNNI, q6KPanel4: q6KPanel4AVX512VNNI, q6KMemory: newQ6KMemory()}).q6KPanelRows(dst, m, in, 0, rows)
					})
				}
				var prep q4KInput
				b.Run(fmt.Sprintf("%dx%d/tok%d/%s", rows, cols, ntok, st.name), func(b *testing.B) {
					runtime.LockOSThread()
					defer runtime.UnlockOSThread()
					times := make([][]float64, len(run))
					var preps []float64
					for b.Loop() {
						for v, f := range run {
							start := threadCPUTime()
							f()
							times[v] = append(times[v], float64(threadCPUTime()-start))
						}
						start := threadCPUTime()
						for t := range ntok {
							_ = prepareQ4KWith(&prep, x[t*cols:(t+1)*cols], st.asm.q4KPrep)
						}
						preps = append(preps, float64(threadCPUTime()-start))
					}
					reportSpeedups(b, times, names)
					for v, name := range names {
						b.ReportMetric(medianOf(times[v])/float64(rows*ntok), name+"-ns/tokrow")
					}
					b.ReportMetric(medianOf(preps)/float64(ntok), "prep-ns/token")
					b.ReportMetric(medianOf(preps)/medianOf(times[1]), "prep/tiles")
				})
			}
		}
	}
}
