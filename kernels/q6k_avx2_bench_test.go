//go:build amd64

package kernels

import (
	"fmt"
	"math/rand/v2"
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
