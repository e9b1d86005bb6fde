package kernels

import (
	"fmt"
	"math/rand/v2"
	"runtime"
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
	var in Q4KInput
	if err := PrepareQ4K(&in, x); err != nil {
		b.Fatal(err)
	}
	for _, rows := range []int{256, 1024, -1024} {
		stream := rows < 0
		rows = max(rows, -rows)
		m := randMatrix(rng, gguf.TypeQ4_K, rows, cols)
		data := m.Data
		if stream {
			data = make([]byte, (1<<30)/len(m.Data)*len(m.Data))
			for i := 0; i < len(data); i += len(m.Data) {
				copy(data[i:], m.Data)
			}
		}
		for _, st := range usableSIMD() {
			for _, name := range []string{"pair", "pair-again"} {
				where := "cache"
				if stream {
					where = "stream"
				}
				b.Run(fmt.Sprintf("%dx%d/%s/%s/%s", rows, cols, where, st.name, name), func(b *testing.B) {
					runtime.LockOSThread()
					defer runtime.UnlockOSThread()
					start := threadCPUTime()
					var sink float32
					rowBytes, off := len(m.Data)/rows, 0
					for b.Loop() {
						mat := data[off : off+len(m.Data)]
						for r := 0; r < rows; r += 2 {
							y := st.asm.q4K(mat[r*rowBytes:(r+1)*rowBytes], mat[(r+1)*rowBytes:(r+2)*rowBytes], in.wide.digits, in.wide.sums, in.scale)
							sink += y[0] + y[1]
						}
						off = (off + len(m.Data)) % len(data)
					}
					if cpu := threadCPUTime() - start; cpu > 0 {
						b.ReportMetric(float64(len(m.Data))*float64(b.N)/float64(cpu), "cpuGB/s")
					}
					_ = sink
				})
			}
		}
	}
}

// BenchmarkQ4KTiles runs a 64-token prompt batch through OLMoE's expert shapes (1024×2048 and
// 2048×1024) with the Q4_K rows kernel of each SIMD tier on one thread: "pairs" a token at a
// time (two weight rows a call), "tiles" the whole batch (one weight row against four tokens a
// call), run twice as an A/A control. It reports GFLOP/s (two per weight and token) per second
// of thread CPU time.
func BenchmarkQ4KTiles(b *testing.B) {
	rng := rand.New(rand.NewPCG(11, 12))
	const ntok = 64
	for _, shape := range [][2]int{{1024, 2048}, {2048, 1024}} {
		rows, cols := shape[0], shape[1]
		m := randMatrix(rng, gguf.TypeQ4_K, rows, cols)
		var in Batch
		if err := in.Set(randFloats(rng, ntok*cols, false, false), ntok, cols); err != nil {
			b.Fatal(err)
		}
		if err := in.prepareAll(NewPool(1)); err != nil {
			b.Fatal(err)
		}
		dst := make([]float32, ntok*rows)
		single := make([]Batch, ntok)
		for t := range single {
			single[t] = Batch{X: in.X[t*cols : (t+1)*cols], Ntok: 1, Cols: cols, q4k: in.q4k[t : t+1], q4kReady: true}
		}
		for _, st := range usableSIMD() {
			for _, v := range []string{"pairs", "tiles", "tiles-again"} {
				b.Run(fmt.Sprintf("%dx%d/tok%d/%s/%s", rows, cols, ntok, st.name, v), func(b *testing.B) {
					runtime.LockOSThread()
					defer runtime.UnlockOSThread()
					start := threadCPUTime()
					for b.Loop() {
						if v == "pairs" {
							for t := range single {
								st.asm.q4KRows(dst[t*rows:], m, &single[t], 0, rows)
							}
						} else {
							st.asm.q4KRows(dst, m, &in, 0, rows)
						}
					}
					if cpu := threadCPUTime() - start; cpu > 0 {
						b.ReportMetric(2*float64(rows*cols*ntok)*float64(b.N)/float64(cpu), "cpuGFLOP/s")
					}
				})
			}
		}
	}
}
