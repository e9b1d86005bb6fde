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
		gguf.TypeQ8_0: a.dotRowQ8_0, gguf.TypeQ5_K: a.dotRowQ5K, gguf.TypeQ6_K: a.dotRowQ6K,
	}
}

// checkTier runs every contract check of the package on the kernels a: the dot corpus, the
// row dots of every type (ragged float rows, special values, NaNs, special scales), Q4_K,
// RMSNorm, softmax, attention, and long rows against the
// scalar functions. It returns the number of cases and of differences, and the first.
func checkTier(a *asmKernels) (checked, bad int, first string) {
	add := func(c, b int, f string) {
		checked += c
		if bad == 0 && b > 0 {
			first = f
		}
		bad += b
	}
	add(checkDot(a.dotF32))
	dots := tierRowDots(a)
	for _, typ := range supportedTypes {
		if dot, ok := dots[typ]; ok {
			add(checkRowDot(typ, dot, 300))
		}
	}
	add(checkQ4K(a.dotQ4K))
	add(checkVectorOp(rmsNormOp(a.rmsNorm), refRMSNormOp))
	add(checkVectorOp(softmaxOp(a.softmax), func(x []float32) []float32 { return refSoftmax(x) }))
	add(checkAttend(a.attend))
	add(checkLongRows(a))
	return checked, bad, first
}

// checkLongRows compares the row dots with the scalar ones on OLMoE-sized rows (1024, 2048),
// with inputs of large magnitudes (products near overflow) and special values.
func checkLongRows(a *asmKernels) (checked, bad int, first string) {
	rng := rand.New(rand.NewPCG(31, 4))
	scalar := map[gguf.Type]func(row []byte, x []float32) float32{
		gguf.TypeF32: DotRowF32, gguf.TypeF16: DotRowF16, gguf.TypeBF16: DotRowBF16,
		gguf.TypeQ8_0: DotRowQ8_0, gguf.TypeQ5_K: DotRowQ5K, gguf.TypeQ6_K: DotRowQ6K,
	}
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
			x := randFloats(rng, n, i%4 == 1, i%8 == 3)
			if i%4 == 2 { // large magnitudes: products and sums near the float32 limits
				for k := range x {
					x[k] *= 0x1p100
				}
			}
			got, want := dot(row, x), scalar[typ](row, x)
			checked++
			if !sameBits(got, want) {
				if bad == 0 {
					first = fmt.Sprintf("%v row of %d (case %d): got %g (%#08x), scalar %g (%#08x)", typ, n, i, got, math.Float32bits(got), want, math.Float32bits(want))
				}
				bad++
			}
		}
	}
	return checked, bad, first
}

// TestTierBitIdentity: every kernel of every usable SIMD tier gives the scalar definition's
// bits on every case of the package's contract checks.
func TestTierBitIdentity(t *testing.T) {
	for _, st := range usableSIMD() {
		checked, bad, first := checkTier(&st.asm)
		t.Logf("%s: %d cases (dots, 7 row types, Q4_K, RMSNorm, softmax, attention, long rows) against the definition, %d differ", st.name, checked, bad)
		if bad != 0 {
			t.Errorf("%s: %d of %d cases differ; first: %s", st.name, bad, checked, first)
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
