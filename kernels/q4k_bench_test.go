package kernels

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/trochilus-llm/trochilus/gguf"
)

// BenchmarkQ4KPairs runs the two-row Q4_K kernel of each SIMD tier for one prepared input on
// one thread over a 256×2048 matrix (in a core's L2), a 1024×2048 one (L3) and 1024×2048
// matrices streamed from a 1 GiB buffer (RAM, as in decode), twice under two names ("pair",
// "pair-again": an A/A control), and reports GB/s of weights per second of thread CPU time.
func BenchmarkQ4KPairs(b *testing.B) {
	rng := rand.New(rand.NewPCG(9, 10))
	const cols = 2048
	x := randFloats(rng, cols, false, false)
	var in q4KInput
	if err := prepareQ4K(&in, x); err != nil {
		b.Fatal(err)
	}
	for _, rows := range []int{256, 1024, -1024} {
		stream := rows < 0
		rows = max(rows, -rows)
		m := randMatrix(rng, gguf.TypeQ4_K, rows, cols)
		data, where := weightsFrom(m.Data, stream, (1<<30)/len(m.Data))
		for _, st := range usableSIMD() {
			for _, name := range []string{"pair", "pair-again"} {
				b.Run(fmt.Sprintf("%dx%d/%s/%s/%s", rows, cols, where, st.name, name), func(b *testing.B) {
					var sink float32
					rowBytes, off := len(m.Data)/rows, 0
					if cpu := cpuLoop(b, func() {
						mat := data[off : off+len(m.Data)]
						for r := 0; r < rows; r += 2 {
							y := st.asm.q4K(mat[r*rowBytes:(r+1)*rowBytes], mat[(r+1)*rowBytes:(r+2)*rowBytes], in.wide.digits, in.wide.sums, in.scale)
							sink += y[0] + y[1]
						}
						off = (off + len(m.Data)) % len(data)
					}); cpu > 0 {
						b.ReportMetric(float64(len(m.Data))*float64(b.N)/float64(cpu), "cpuGB/s")
					}
					_ = sink
				})
			}
		}
	}
}

// BenchmarkQ4KTiles runs 64- and 256-token prompt batches through OLMoE's expert shapes
// (1024×2048 and 2048×1024) with the Q4_K rows kernel of each SIMD tier on one thread: "pairs"
// a token at a time (two weight rows a call; 64 tokens only), "tiles4" the whole batch with one
// weight row against four tokens a call, "tiles" as the tier runs it (sixteen-row panels, or
// eight tokens a call, where it has the kernels), run twice as an A/A control. It reports GFLOP/s (two per weight
// and token) per second of thread CPU time.
func BenchmarkQ4KTiles(b *testing.B) {
	rng := rand.New(rand.NewPCG(11, 12))
	for _, shape := range [][3]int{{1024, 2048, 64}, {2048, 1024, 64}, {1024, 2048, 256}, {2048, 1024, 256}} {
		ntok := shape[2]
		rows, cols := shape[0], shape[1]
		m := randMatrix(rng, gguf.TypeQ4_K, rows, cols)
		in := preparedBatch(b, randFloats(rng, ntok*cols, false, false), ntok, cols)
		dst := make([]float32, ntok*rows)
		single := make([]Batch, ntok)
		for t := range single {
			single[t] = Batch{X: in.X[t*cols : (t+1)*cols], Ntok: 1, Cols: cols, q4k: in.q4k[t : t+1], q4kReady: true}
		}
		for _, st := range usableSIMD() {
			four := st.asm
			four.q4K8 = nil
			for _, v := range []string{"pairs", "tiles4", "tiles", "tiles-again"} {
				if v == "pairs" && ntok > 64 {
					continue
				}
				b.Run(fmt.Sprintf("%dx%d/tok%d/%s/%s", rows, cols, ntok, st.name, v), func(b *testing.B) {
					if cpu := cpuLoop(b, func() {
						switch v {
						case "pairs":
							for t := range single {
								st.asm.q4KRows(dst[t*rows:], m, &single[t], 0, rows)
							}
						case "tiles4":
							four.q4KRows(dst, m, in, 0, rows)
						default:
							st.asm.q4KRows(dst, m, in, 0, rows)
						}
					}); cpu > 0 {
						b.ReportMetric(2*float64(rows*cols*ntok)*float64(b.N)/float64(cpu), "cpuGFLOP/s")
					}
				})
			}
		}
	}
}

// BenchmarkQ4KTileRatio runs the Q4_K rows kernel of the fastest SIMD tier on one thread over
// OLMoE's expert shapes with 4 to 256 tokens in four variants interleaved call by call:
// "four" (four-input tiles only), "eight" (eight-input tiles), "panel" (as the tier runs it:
// sixteen-row panels where it has them) and "four-again" (an A/A control). On a shared machine the load changes between runs of separate benchmarks; here
// each round times the three back to back in thread CPU time, and the report gives the
// median over rounds of each variant's speed-up over "four" (its time over the variant's),
// and each variant's median GFLOP/s.
func BenchmarkQ4KTileRatio(b *testing.B) {
	tiers := needSIMD(b)
	st := tiers[len(tiers)-1]
	rng := rand.New(rand.NewPCG(11, 13))
	for _, shape := range [][3]int{{1024, 2048, 4}, {1024, 2048, 8}, {1024, 2048, 16}, {1024, 2048, 64}, {2048, 1024, 64}, {1024, 2048, 256}, {2048, 1024, 256}} {
		rows, cols, ntok := shape[0], shape[1], shape[2]
		m := randMatrix(rng, gguf.TypeQ4_K, rows, cols)
		in := preparedBatch(b, randFloats(rng, ntok*cols, false, false), ntok, cols)
		dst := make([]float32, ntok*rows)
		four := st.asm
		four.q4K8, four.q4KPanel4 = nil, nil
		eight := st.asm
		eight.q4KPanel4 = nil
		variants := []*asmKernels{&four, &eight, &st.asm, &four}
		b.Run(fmt.Sprintf("%dx%d/tok%d/%s", rows, cols, ntok, st.name), func(b *testing.B) {
			times := timeRounds(b, m, m.Data, len(variants), false, func(v int, mat *Matrix) {
				variants[v].q4KRows(dst, mat, in, 0, rows)
			})
			reportRatios(b, times, []string{"four", "eight", "panel", "again"}, 2*float64(rows*cols*ntok), "GFLOP/s")
		})
	}
}

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
