package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"unsafe"
)

// TestQ4KKernelsLongRows calls each SIMD tier's two-row, four- and eight-input Q4_K kernels directly on
// rows of 1 to 16 blocks (the AVX-512 two-row kernel is software-pipelined: its loop runs the
// end of one block inside the next, so long rows exercise the steady state, short ones its
// edges) and compares every result with dotQ4K bit for bit. The cases mix random blocks, mixed
// block magnitudes and zero blocks, special scales (subnormal, infinite and NaN d and dmin), a
// NaN or infinite input block, and the largest integer sums (every q 15, every scale and min
// 63, |X| at its bound), where a fold that left the int32 range would show.
func TestQ4KKernelsLongRows(t *testing.T) {
	tiers := needSIMD(t)
	rng := rand.New(rand.NewPCG(21, 22))
	type testCase struct {
		rows [4][]byte
		ins  [8]q4KInput
	}
	var cases []testCase
	for i := range 48 {
		blocks := 1 + i%16
		var c testCase
		for r := range 8 {
			if r < 4 {
				c.rows[r], _ = randQ4KCase(rng, blocks, false, i%3 == 1)
			}
			_, x := randQ4KCase(rng, blocks, i%2 == 1, false)
			switch {
			case i%8 == 7:
				for b := 0; r < 4 && b < len(c.rows[r]); b += q4KBytes {
					for k := 4; k < q4KBytes; k++ {
						c.rows[r][b+k] = 0xff
					}
				}
				for k := range x {
					x[k] = float32(1-2*(k/kElems%2)) * 1.9427
				}
			case i%6 == 5:
				x[rng.IntN(len(x))] = []float32{float32(math.NaN()), float32(math.Inf(1))}[r%2]
			}
			if err := prepareQ4K(&c.ins[r], x); err != nil {
				t.Fatal(err)
			}
		}
		cases = append(cases, c)
	}
	for _, st := range tiers {
		checked, checked8, bad := 0, 0, 0
		fail := func(format string, args ...any) {
			if bad < 5 {
				t.Errorf("%s: %s", st.name, fmt.Sprintf(format, args...))
			}
			bad++
		}
		for i, c := range cases {
			// Two rows against one input: rows 0 and 1 against input r.
			for r := range 8 {
				in := &c.ins[r]
				y := st.asm.q4K(c.rows[0], c.rows[1], in.wide.digits, in.wide.sums, in.scale)
				for j := range 2 {
					checked++
					if want := dotQ4K(c.rows[j], in); !sameBits(y[j], want) {
						fail("case %d (%d blocks), pair row %d, input %d: got %g, dotQ4K %g", i, in.n/kElems, j, r, y[j], want)
					}
				}
			}
			// One row against four inputs (0-3 and 4-7), and against all eight.
			for g := 0; g < 8; g += 4 {
				args := q4KArgs4(c.ins[g : g+4])
				for w := range 4 {
					y := st.asm.q4K4(c.rows[w], args, c.ins[0].n/kElems)
					for r := range 4 {
						checked++
						if want := dotQ4K(c.rows[w], &c.ins[g+r]); !sameBits(y[r], want) {
							fail("case %d (%d blocks), tile row %d, input %d: got %g, dotQ4K %g", i, c.ins[0].n/kElems, w, g+r, y[r], want)
						}
					}
				}
			}
			if st.asm.q4K8 == nil {
				continue
			}
			var args [24]*byte
			for r := range 8 {
				in := &c.ins[r]
				args[r] = (*byte)(unsafe.Pointer(unsafe.SliceData(in.wide.digits)))
				args[8+r] = (*byte)(unsafe.Pointer(unsafe.SliceData(in.wide.sums)))
				args[16+r] = (*byte)(unsafe.Pointer(unsafe.SliceData(in.scale)))
			}
			for w := range 4 {
				var y [8]float32
				for i, v := range st.asm.q4K8(c.rows[w], args, c.ins[0].n/kElems, [8]float64{}) {
					y[i] = float32(v)
				}
				for r := range 8 {
					checked8++
					if want := dotQ4K(c.rows[w], &c.ins[r]); !sameBits(y[r], want) {
						fail("case %d (%d blocks), eight-input row %d, input %d: got %g, dotQ4K %g", i, c.ins[0].n/kElems, w, r, y[r], want)
					}
				}
			}
		}
		if st.name != "avx2" && checked8 == 0 {
			t.Errorf("%s: the eight-input Q4_K kernel is missing", st.name)
		}
		t.Logf("%s: %d Q4_K kernel results (%d of them eight-input) on rows of 1-16 blocks against dotQ4K, %d differ", st.name, checked+checked8, checked8, bad)
	}
}
