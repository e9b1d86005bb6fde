package kernels

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/trochilus-llm/trochilus/gguf"
)

// BenchmarkTierRows4 puts two weight rows a call ("pairs") beside four ("rows4", run twice as an
// A/A control) for one token on one thread, on the fastest tier, for Q8_0 and F16 (Q6_K has its
// own, BenchmarkQ6KIntDecode): "cache" is a 256×2048 matrix that stays in L2 (the kernel's own speed), "stream" walks 1024×2048
// matrices through 512 MiB so the weights come from RAM as in decode. It reports GB/s of
// weights per second of the thread's CPU time (other processes' time on a shared core left out).
func BenchmarkTierRows4(b *testing.B) {
	tiers := needSIMD(b)
	a := tiers[len(tiers)-1].asm
	rng := rand.New(rand.NewPCG(11, 12))
	const cols = 2048
	x := randFloats(rng, cols, false, false)
	for _, typ := range []gguf.Type{gguf.TypeQ8_0, gguf.TypeF16} {
		k := map[gguf.Type]laneRows{
			gguf.TypeQ8_0: {a.q8_0x4, a.q8_0r4, a.q8_0x2, a.dotRowQ8_0, q8_0Bytes},
			gguf.TypeF16:  {a.f16x4, a.f16r4, a.f16x2, a.dotRowF16, 32},
		}[typ]
		pairs := k
		pairs.fourRows = nil
		for _, where := range []struct {
			name       string
			rows, span int
		}{{"cache", 256, 1}, {"stream", 1024, 512 << 20}} {
			one := randMatrix(rng, typ, where.rows, cols)
			n := max(where.span/len(one.Data), 1)
			buf := repeat(one.Data, n)
			dst := make([]float32, where.rows)
			in := Batch{X: x, Ntok: 1, Cols: cols}
			for _, v := range []struct {
				name string
				k    rowsKernel
			}{{"pairs", pairs.kernel}, {"rows4", k.kernel}, {"rows4-again", k.kernel}} {
				b.Run(fmt.Sprintf("%v/%s/%s", typ, where.name, v.name), func(b *testing.B) {
					i := 0
					if cpu := cpuLoop(b, func() {
						m := Matrix{Type: typ, Rows: where.rows, Cols: cols, Data: buf[i*len(one.Data) : (i+1)*len(one.Data)]}
						v.k(dst, &m, &in, 0, where.rows)
						i = (i + 1) % n
					}); cpu > 0 {
						b.ReportMetric(float64(len(one.Data))*float64(b.N)/float64(cpu), "cpuGB/s")
					}
				})
			}
		}
	}
}
