package kernels

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"testing"

	"github.com/trochilus-llm/trochilus/gguf"
)

// BenchmarkTierPanel puts a prompt batch through OLMoE's expert shapes on one thread, on the
// fastest tier, in two ways per type: "lanes" is the lanes kernels' tiles of one row against
// four tokens, "panel" the sixteen-rows-in-sixteen-lanes tiles (run twice as an A/A control).
// It reports GFLOP/s (two per product) of the thread's CPU time.
func BenchmarkTierPanel(b *testing.B) {
	tiers := usableSIMD()
	if len(tiers) == 0 || tiers[len(tiers)-1].asm.panel == nil {
		b.Skip("no panel tiles on this CPU")
	}
	st := tiers[len(tiers)-1]
	a := st.asm
	tier := st.tier()
	rng := rand.New(rand.NewPCG(13, 14))
	// Q8_0 is the one quantized type the float-lane panels serve (Q4_K and Q6_K rows are integer
	// definitions on prepared inputs, with panels of their own).
	typ := gguf.TypeQ8_0
	lanes := laneRows{a.q8_0x4, a.q8_0r4, a.q8_0x2, a.dotRowQ8_0, q8_0Bytes}
	panel, err := tier.kernel(typ)
	if err != nil {
		b.Fatal(err)
	}
	for _, shape := range []struct{ rows, cols int }{{1024, 2048}, {2048, 1024}} {
		m := randMatrix(rng, typ, shape.rows, shape.cols)
		for _, ntok := range []int{8, 16, 64, 512} {
			x := randFloats(rng, ntok*shape.cols, false, false)
			in := Batch{X: x, Ntok: ntok, Cols: shape.cols}
			dst := make([]float32, ntok*shape.rows)
			for _, v := range []struct {
				name string
				k    rowsKernel
			}{{"lanes", lanes.kernel}, {"panel", panel}, {"panel-again", panel}} {
				b.Run(fmt.Sprintf("%v/%dx%d/tok%d/%s", typ, shape.rows, shape.cols, ntok, v.name), func(b *testing.B) {
					runtime.LockOSThread()
					defer runtime.UnlockOSThread()
					start := threadCPUTime()
					for b.Loop() {
						v.k(dst, m, &in, 0, shape.rows)
					}
					if cpu := threadCPUTime() - start; cpu > 0 {
						b.ReportMetric(2*float64(shape.rows*shape.cols*ntok)*float64(b.N)/float64(cpu), "cpuGFLOP/s")
					}
				})
			}
		}
	}
}
