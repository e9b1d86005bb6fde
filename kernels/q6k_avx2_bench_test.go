//go:build amd64

package kernels

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"testing"

	"github.com/trochilus-llm/trochilus/gguf"
)

// BenchmarkQ6KAVX2 times the AVX2 kernels of the integer Q6_K definition (dotQ6K) on OLMoE's
// expert shapes (2048×1024 and 1024×2048), on one locked thread, in thread CPU time:
//
//   - "pair": one token, every row pair of the matrix (q6KPairAVX2).
//   - "tile4": four tokens, every row (q6KTile4AVX2).
//
// Each round times the kernel twice back to back ("int" and "again", an A/A control); the
// report gives the median over rounds of again/int (the first's time over the second's: 1
// where the measurement is steady) and each run's weight GB/s. "cache" reuses one matrix (1.7 MB: L2/L3);
// "stream" walks a 256 MiB buffer so the weights come from RAM, as in decode. The inputs are
// prepared beforehand (a token's preparation is shared by every matrix that reads it).
func BenchmarkQ6KAVX2(b *testing.B) {
	needAVX2(b)
	rng := rand.New(rand.NewPCG(67, 68))
	for _, shape := range [][2]int{{2048, 1024}, {1024, 2048}} {
		rows, cols := shape[0], shape[1]
		m := randMatrix(rng, gguf.TypeQ6_K, rows, cols)
		rb := m.RowBytes()
		x := randFloats(rng, 4*cols, false, false)
		in := preparedBatch(b, x, 4, cols)
		args := q6KArgs4(in.q4k[:4])
		nb := cols / kElems
		dst := make([]float32, 4*rows)
		one := &in.q4k[0]
		pairInt := func(w []byte) {
			for r := 0; r < rows; r += 2 {
				y := q6KPairAVX2(w[r*rb:(r+1)*rb], w[(r+1)*rb:(r+2)*rb], one.wide.digits, one.scale)
				dst[r], dst[r+1] = y[0], y[1]
			}
		}
		tileInt := func(w []byte) {
			for r := range rows {
				y := q6KTile4AVX2(w[r*rb:(r+1)*rb], args, nb)
				for i := range 4 {
					dst[i*rows+r] = y[i]
				}
			}
		}
		for _, stream := range []bool{false, true} {
			data, where := weightsFrom(m.Data, stream, (256<<20)/len(m.Data))
			for _, k := range []struct {
				name string
				in   func([]byte)
			}{{"pair", pairInt}, {"tile4", tileInt}} {
				b.Run(fmt.Sprintf("%dx%d/%s/%s", rows, cols, where, k.name), func(b *testing.B) {
					times := timeRounds(b, m, data, 2, false, func(_ int, mat *Matrix) { k.in(mat.Data) })
					reportRatios(b, times, []string{"int", "again"}, float64(len(m.Data)), "GB/s")
				})
			}
		}
	}
}

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
