package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/trochilus-llm/trochilus/gguf"
)

// tierRowDots returns the row dots of a SIMD tier's kernels by type (Q4_K apart).
func tierRowDots(a *asmKernels) map[gguf.Type]func(row []byte, x []float32) float32 {
	return map[gguf.Type]func(row []byte, x []float32) float32{
		gguf.TypeF32: a.dotRowF32, gguf.TypeF16: a.dotRowF16, gguf.TypeBF16: a.dotRowBF16,
		gguf.TypeQ8_0: a.dotRowQ8_0, gguf.TypeQ5_K: a.dotRowQ5K,
	}
}

// checkTier runs every contract check of the package on the kernels a: the dot corpus, the
// row dots of every type (ragged float rows, special values, NaNs, special scales), Q4_K,
// RMSNorm, softmax, attention, and long rows against the
// scalar functions. It returns the number of cases and of differences, and the first.
func checkTier(a *asmKernels) (checked, bad int, first string) {
	var c counts
	c.add(checkDot(a.dotF32))
	dots := tierRowDots(a)
	for _, typ := range supportedTypes {
		if dot, ok := dots[typ]; ok {
			c.add(checkRowDot(typ, dot, 300))
		}
	}
	c.add(checkQ4K(a.dotQ4K))
	c.add(checkPreparedRows(gguf.TypeQ4_K, a.q4KRows))
	c.add(checkPreparedRows(gguf.TypeQ6_K, a.q6KRows))
	c.add(checkExpVec(a))
	c.add(checkPairRows(a))
	c.add(checkPanelRows(a))
	c.add(checkVectorOp(rmsNormOp(a.rmsNorm), refRMSNormOp))
	c.add(checkVectorOp(softmaxOp(a.softmax), func(x []float32) []float32 { return refSoftmax(x) }))
	c.add(checkAttend(a.attend))
	c.add(checkAttendValues(a))
	c.add(checkScores(a))
	c.add(checkLongRows(a))
	return c.result()
}

// checkLongRows compares the row dots with the scalar ones on OLMoE-sized rows (1024, 2048),
// with inputs of large magnitudes (products near overflow) and special values.
func checkLongRows(a *asmKernels) (checked, bad int, first string) {
	var c counts
	rng := rand.New(rand.NewPCG(31, 4))
	dots := tierRowDots(a)
	for _, typ := range supportedTypes {
		dot, ok := dots[typ]
		if !ok {
			continue
		}
		for i := range 24 {
			n := []int{1024, 2048, 2048 + 16*(i%5)}[i%3]
			if typ.BlockElems() > 1 {
				n = n / typ.BlockElems() * typ.BlockElems()
			}
			row := randRow(rng, typ, n, i%2 == 1)
			x := caseInput(rng, n, i)
			got, want := dot(row, x), rowDots[typ](row, x)
			c.note(got, want, func() string {
				return fmt.Sprintf("%v row of %d (case %d): got %g (%#08x), scalar %g (%#08x)", typ, n, i, got, math.Float32bits(got), want, math.Float32bits(want))
			})
		}
	}
	return c.result()
}

// TestTierBitIdentity: every kernel of every usable SIMD tier gives the scalar definition's
// bits on every case of the package's contract checks.
func TestTierBitIdentity(t *testing.T) {
	checkEachTier(t, "cases (dots, 7 row types, Q4_K, RMSNorm, softmax, attention, long rows) against the definition", checkTier)
}

// checkEachTier runs check on the kernels of every usable SIMD tier, logs its counts (what
// names the cases) and fails the test on any difference.
func checkEachTier(t *testing.T, what string, check func(a *asmKernels) (checked, bad int, first string)) {
	for _, st := range usableSIMD() {
		checked, bad, first := check(&st.asm)
		t.Logf("%s: %d %s, %d differ", st.name, checked, what, bad)
		if bad != 0 {
			t.Errorf("%s: %d of %d differ; first: %s", st.name, bad, checked, first)
		}
	}
}

// TestTierMatMulMatrix: MatMul of every type through every usable tier, with 1, 2 and 3
// threads and batches of 1, 2 and 5 tokens, equals the scalar tier's single-thread product.
func TestTierMatMulMatrix(t *testing.T) {
	rng := rand.New(rand.NewPCG(41, 3))
	const rows, cols = 19, 768
	pools := map[int]*Pool{}
	for _, n := range []int{1, 2, 3} {
		pools[n] = NewPool(n)
		defer pools[n].Close()
	}
	checked, bad := 0, 0
	for _, typ := range supportedTypes {
		m := randMatrix(rng, typ, rows, cols)
		for _, ntok := range []int{1, 2, 5} {
			x := randFloats(rng, ntok*cols, ntok == 2, false)
			var sb Batch
			if err := sb.Set(x, ntok, cols); err != nil {
				t.Fatal(err)
			}
			want := make([]float32, ntok*rows)
			if err := Scalar().MatMul(pools[1], want, m, &sb); err != nil {
				t.Fatal(err)
			}
			for _, tier := range Tiers()[1:] {
				for threads, p := range pools {
					var b Batch
					if err := b.Set(x, ntok, cols); err != nil {
						t.Fatal(err)
					}
					got := make([]float32, ntok*rows)
					if err := tier.MatMul(p, got, m, &b); err != nil {
						t.Fatal(err)
					}
					for i := range got {
						checked++
						if !sameBits(got[i], want[i]) {
							if bad == 0 {
								t.Errorf("%s %v, %d threads, %d tokens: output %d = %g, scalar %g", tier.Name, typ, threads, ntok, i, got[i], want[i])
							}
							bad++
						}
					}
				}
			}
		}
	}
	t.Logf("MatMul: %d tiers × 7 types × threads 1, 2, 3 × batches 1, 2, 5: %d outputs against scalar, %d differ", len(Tiers())-1, checked, bad)
	if bad != 0 {
		t.Errorf("%d of %d outputs differ", bad, checked)
	}
}

// checkPreparedRows runs the rows kernel k of typ (Q4_K or Q6_K: tiles of four and eight tokens,
// panels, four rows and two rows a call, an odd row alone) over matrices of 1 to 9 rows against
// batches of 1 to 20 prepared inputs (special magnitudes, NaN and infinity blocks, special
// scales) and compares every output with the definition.
func checkPreparedRows(typ gguf.Type, k rowsKernel) (checked, bad int, first string) {
	var c counts
	rng := rand.New(rand.NewPCG(13, 7))
	randCase := map[gguf.Type]func(*rand.Rand, int, bool, bool) ([]byte, []float32){gguf.TypeQ4_K: randQ4KCase, gguf.TypeQ6_K: randQ6KCase}[typ]
	for i := range 36 {
		rows, ntok, blocks := 1+i%9, []int{1, 2, 3, 4, 5, 9, 16, 20}[i%8], 1+i%5
		m := &Matrix{Type: typ, Rows: rows, Cols: blocks * kElems}
		for range rows {
			row, _ := randCase(rng, blocks, false, i%2 == 1)
			m.Data = append(m.Data, row...)
		}
		var x []float32
		for range ntok {
			_, xt := randQ4KCase(rng, blocks, i%3 != 0, false)
			x = append(x, xt...)
		}
		if i%6 == 5 {
			x[rng.IntN(len(x))] = float32(math.Inf(1))
		}
		if i%8 == 7 && typ == gguf.TypeQ6_K { // the largest integer sums: every weight word 4096 (q 0, scale −128), |X| at its bound
			for b := 0; b < len(m.Data); b += q6KBytes {
				for k := range 192 {
					m.Data[b+k] = 0
				}
				for k := 192; k < 208; k++ {
					m.Data[b+k] = 0x80
				}
			}
			for k := range x {
				x[k] = float32(1-2*(k/kElems%2)) * 1.9427
			}
		}
		if i%8 == 7 && typ == gguf.TypeQ4_K { // the largest integer sums: every q 15, every scale and min 63, |X| at its bound
			for b := 0; b < len(m.Data); b += q4KBytes {
				for k := 4; k < q4KBytes; k++ {
					m.Data[b+k] = 0xff
				}
			}
			for k := range x {
				x[k] = float32(1-2*(k/kElems%2)) * 1.9427
			}
		}
		var in Batch
		if err := in.Set(x, ntok, m.Cols); err != nil {
			return c.checked, c.bad + 1, err.Error()
		}
		if err := in.prepareAll(NewPool(1)); err != nil {
			return c.checked, c.bad + 1, err.Error()
		}
		got := make([]float32, rows*ntok)
		k(got, m, &in, 0, rows)
		compareOutputs(&c, got, rows, ntok, func(r, t int) float32 { return preparedDots[typ](m.Row(r), &in.q4k[t]) }, "definition", func(r, t int) string {
			return fmt.Sprintf("%v rows case %d, row %d of %d, token %d", typ, i, r, rows, t)
		})
	}
	return c.result()
}

// checkPairRows runs the rows kernels of the float and Q8_0 types (tiles of four tokens,
// two rows a call, an odd row alone, ragged float rows by one row) over matrices of 1 to 7
// rows and batches of 1 to 9 tokens with special values, and compares every output with the
// scalar row dot.
func checkPairRows(a *asmKernels) (checked, bad int, first string) {
	var c counts
	rng := rand.New(rand.NewPCG(17, 9))
	if err := forFloatRowsKernels(a, func(typ gguf.Type, k rowsKernel) {
		for i := range 36 {
			rows, ntok := 1+i%7, []int{1, 2, 3, 4, 5, 9}[i%6]
			cols := 256 * (1 + i%4)
			if typ.BlockElems() == 1 && i%3 == 2 {
				cols += 16*(i%2) + 7 // a ragged tail
			}
			m := randMatrixOf(rng, typ, rows, cols, i%2 == 1)
			x := caseInput(rng, ntok*cols, i)
			in := Batch{X: x, Ntok: ntok, Cols: cols}
			got := make([]float32, rows*ntok)
			k(got, m, &in, 0, rows)
			compareOutputs(&c, got, rows, ntok, scalarRows(m, x), "scalar", func(r, t int) string {
				return fmt.Sprintf("%v rows case %d, row %d of %d, token %d", typ, i, r, rows, t)
			})
		}
	}); err != nil {
		return c.checked, c.bad + 1, err.Error()
	}
	return c.result()
}

// forFloatRowsKernels calls run with the rows kernel of each of the F32, F16, BF16 and Q8_0
// types of the tier with kernels a, in turn; where the tier has no kernel for a type, it stops
// there with the error.
func forFloatRowsKernels(a *asmKernels, run func(typ gguf.Type, k rowsKernel)) error {
	tier := (&simdTier{asm: *a}).tier()
	for _, typ := range []gguf.Type{gguf.TypeF32, gguf.TypeF16, gguf.TypeBF16, gguf.TypeQ8_0} {
		k, err := tier.kernel(typ)
		if err != nil {
			return err
		}
		run(typ, k)
	}
	return nil
}

// caseInput is the input of n floats of case i of the rows checks: special values where
// i%4 == 1, NaNs too where i%8 == 3, and large magnitudes (products and sums near the float32
// limits) where i%4 == 2.
func caseInput(rng *rand.Rand, n, i int) []float32 {
	x := randFloats(rng, n, i%4 == 1, i%8 == 3)
	if i%4 == 2 {
		for j := range x {
			x[j] *= 0x1p100
		}
	}
	return x
}

// checkAttendValues compares the tier's weighted value sums with attendValues, every output of
// heads of 1 to 300 positions and 1 to 520 outputs, weights and values with special values.
func checkAttendValues(a *asmKernels) (checked, bad int, first string) {
	var c counts
	rng := rand.New(rand.NewPCG(19, 3))
	for _, npos := range []int{1, 7, 16, 17, 33, 300} {
		for _, dim := range []int{1, 8, 16, 24, 128, 160, 264, 520} { // 264, 520: more than one call of attendCols
			stride := dim + npos%5
			w := randFloats(rng, npos, npos == 33, false)
			values := randFloats(rng, npos*stride, dim == 24, dim == 160)
			got, want := make([]float32, dim), make([]float32, dim)
			a.attendValues(got, values, w, stride)
			attendValues(want, values, w, stride)
			for i := range got {
				c.note(got[i], want[i], func() string {
					return fmt.Sprintf("attention values, %d positions, %d outputs, output %d: got %g, want %g", npos, dim, i, got[i], want[i])
				})
			}
		}
	}
	return c.result()
}
