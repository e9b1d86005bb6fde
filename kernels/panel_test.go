package kernels

import (
	"fmt"
	"math/rand/v2"

	"github.com/trochilus-llm/trochilus/gguf"
)

// checkPanelRows runs the float-lane rows kernels of a tier's panel (the rows kernel the tier
// builds, with prompt-sized batches) over matrices of 1 to 136 rows in two calls, the second
// range starting inside a 16-row panel, and batches of 16 to 53 tokens (token chunks of 1 to
// 24 cut evenly) with special values, and compares every output with the scalar row dot; then
// again after changing the inputs in place (a panel must not reuse inputs it interleaved
// before). Without panel tiles the same batches go through the lanes kernels.
func checkPanelRows(a *asmKernels) (checked, bad int, first string) {
	var c counts
	rng := rand.New(rand.NewPCG(23, 5))
	err := forFloatRowsKernels(a, func(typ gguf.Type, k rowsKernel) {
		for i := range 10 {
			rows := []int{1, 80, 81, 136, 97}[i%5]
			ntok := []int{16, 24, 25, 49, 53}[(i+i/5)%5]
			cols := 256 * (1 + i%2)
			if typ.BlockElems() == 1 && i%4 == 3 {
				cols += 16*(i%2) + 7 // a ragged tail: the lanes kernels take it
			}
			m := randMatrixOf(rng, typ, rows, cols, i%2 == 1)
			x := caseInput(rng, ntok*cols, i)
			in := Batch{X: x, Ntok: ntok, Cols: cols}
			for pass := range 1 + i%2 {
				if pass == 1 { // the same memory, other values
					for j := 0; j < len(x); j += 7 {
						x[j] = -x[j] * 0.75
					}
				}
				got := make([]float32, rows*ntok)
				r0 := min(i%3*5, rows-1) // a range starting inside a panel
				if rows == 136 {
					r0 = 69 // two ranges that each take the panel
				}
				k(got, m, &in, 0, r0)
				k(got, m, &in, r0, rows)
				compareOutputs(&c, got, rows, ntok, scalarRows(m, x), "scalar", func(r, t int) string {
					return fmt.Sprintf("%v panel case %d, row %d of %d, token %d of %d", typ, i, r, rows, t, ntok)
				})
			}
		}
	})
	if err != nil {
		return c.checked, c.bad + 1, err.Error()
	}
	c.add(checkPanelWidths(a))
	return c.result()
}

// scalarRows returns the scalar row dot of row r of m with input row t of x, as
// compareOutputs takes it.
func scalarRows(m *Matrix, x []float32) func(r, t int) float32 {
	return func(r, t int) float32 { return rowDots[m.Type](m.Row(r), x[t*m.Cols:(t+1)*m.Cols]) }
}

// checkPanelWidths runs every tile width 1 to panelMaxTokens, one chunk each, and two chunks
// of every width up to 24 (batches of 1 to 48 tokens, the panel taken from one token on), on
// Q8_0 and F32 rows of 17 and 16 rows, against the scalar row dot.
func checkPanelWidths(a *asmKernels) (checked, bad int, first string) {
	var c counts
	if a.panel == nil {
		return c.result()
	}
	rng := rand.New(rand.NewPCG(29, 6))
	scratch := newPanelScratch()
	for _, typ := range []gguf.Type{gguf.TypeQ8_0, gguf.TypeF32} {
		k := panelRows{laneRows{a.q8_0x4, a.q8_0r4, a.q8_0x2, a.dotRowQ8_0, q8_0Bytes}, q8_0Elems, a.panelQ8_0, a.panelPack, a.panel, scratch, 1, 1}
		if typ == gguf.TypeF32 {
			k = panelRows{laneRows{a.f32x4, a.f32r4, a.f32x2, a.dotRowF32, 64}, 16, a.panelF32, a.panelPack, a.panel, scratch, 1, 1}
		}
		for ntok := 1; ntok <= 2*panelMaxTokens; ntok++ {
			rows, cols := 16+ntok%2, 64*(1+ntok%3)
			m := &Matrix{Type: typ, Rows: rows, Cols: cols}
			for range rows {
				m.Data = append(m.Data, randRow(rng, typ, cols, ntok%4 == 1)...)
			}
			x := randFloats(rng, ntok*cols, ntok%5 == 2, ntok%7 == 3)
			in := Batch{X: x, Ntok: ntok, Cols: cols}
			got := make([]float32, rows*ntok)
			k.kernel(got, m, &in, 0, rows)
			compareOutputs(&c, got, rows, ntok, scalarRows(m, x), "scalar", func(r, t int) string {
				return fmt.Sprintf("%v panel of %d tokens, row %d of %d, token %d", typ, ntok, r, rows, t)
			})
		}
	}
	return c.result()
}
