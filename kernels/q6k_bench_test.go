package kernels

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"testing"

	"github.com/trochilus-llm/trochilus/gguf"
)

// BenchmarkQ6KDecode runs the Q6_K decode kernels (one token, rows against one input) of each
// SIMD tier on one thread: two rows a call ("pairs") and, where the tier has them, four
// ("rows4", run twice as an A/A control). "cache" is a 256×2048 matrix that stays in L2 (the
// kernel's own speed); "stream" walks 1024×2048 matrices through 512 MiB so the weights come
// from RAM as in decode. It reports GB/s of weights per second of the thread's CPU time (other
// processes' time on a shared core left out).
func BenchmarkQ6KDecode(b *testing.B) {
	rng := rand.New(rand.NewPCG(11, 12))
	const cols = 2048
	x := randFloats(rng, cols, false, false)
	for _, where := range []struct {
		name       string
		rows, span int
	}{{"cache", 256, 1}, {"stream", 1024, 512 << 20}} {
		one := randMatrix(rng, gguf.TypeQ6_K, where.rows, cols)
		n := max(where.span/len(one.Data), 1)
		buf := make([]byte, n*len(one.Data))
		for i := range n {
			copy(buf[i*len(one.Data):], one.Data)
		}
		dst := make([]float32, where.rows)
		in := Batch{X: x, Ntok: 1, Cols: cols}
		for _, st := range usableSIMD() {
			a := st.asm
			rows4 := laneRows{a.q6Kx4, a.q6Kr4, a.q6Kx2, a.dotRowQ6K, q6KBytes}
			pairs := rows4
			pairs.fourRows = nil
			type variant struct {
				name string
				k    RowsKernel
			}
			variants := []variant{{"pairs", pairs.kernel}}
			if a.q6Kr4 != nil {
				variants = append(variants, variant{"rows4", rows4.kernel}, variant{"rows4-again", rows4.kernel})
			}
			for _, v := range variants {
				b.Run(fmt.Sprintf("%s/%s/%s", where.name, st.name, v.name), func(b *testing.B) {
					runtime.LockOSThread()
					defer runtime.UnlockOSThread()
					start := threadCPUTime()
					i := 0
					for b.Loop() {
						m := Matrix{Type: gguf.TypeQ6_K, Rows: where.rows, Cols: cols, Data: buf[i*len(one.Data) : (i+1)*len(one.Data)]}
						v.k(dst, &m, &in, 0, where.rows)
						i = (i + 1) % n
					}
					if cpu := threadCPUTime() - start; cpu > 0 {
						b.ReportMetric(float64(len(one.Data))*float64(b.N)/float64(cpu), "cpuGB/s")
					}
				})
			}
		}
	}
}
