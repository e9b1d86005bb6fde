package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/trochilus-llm/trochilus/gguf"
)

// The checks shared by the Q4_K and Q6_K kernels, which run on the same prepared inputs.

// rows4Case is one input of the four-row kernel checks: fourteen contiguous Q4_K or Q6_K rows
// (the kernels take runs of one to three groups of four starting at rows 0, 1 and 2) and two
// prepared inputs.
type rows4Case struct {
	blocks int
	m      *Matrix
	ins    [2]q4KInput
}

// prepareRows4Inputs prepares the two inputs of case i for rows of typ: random floats (blocks
// of very different magnitudes and zero blocks when i is odd) with, where largest is set,
// every element at |X| = 31829·65536 + 32768: both digits at their extremes (the low one
// −32768 whatever the sign, the high one ±31830 or so), so every partial sum sits at the bound
// of its fold; or, in every sixth case, a NaN or an infinity in one block.
func prepareRows4Inputs(t *testing.T, rng *rand.Rand, c *rows4Case, typ gguf.Type, i int, largest bool) {
	n := c.blocks * kElems
	for j := range c.ins {
		_, x := randPreparedCase(rng, typ, c.blocks, i%2 == 1, false)
		switch {
		case largest:
			for k := range x {
				x[k] = float32(1-2*(k/kElems%2)) * float32(math.Ldexp(31829*65536+32768, -30))
			}
		case i%6 == 5 && n > 0:
			x[rng.IntN(n)] = []float32{float32(math.NaN()), float32(math.Inf(-1))}[j]
		}
		if err := prepareQ4K(&c.ins[j], x); err != nil {
			t.Fatal(err)
		}
	}
}

// checkRows4 runs a four-row kernel (run: len(dst) rows of w, rb bytes each, against in) on
// every run of one to three groups of four rows starting at rows 0, 1 and 2 of every case
// against each input, and compares each result with dot, the definition, bit for bit; the
// call's dst sits inside a larger slice whose other elements must stay untouched. It returns
// the results compared, how many differ, and the first difference.
func checkRows4(cases []rows4Case, run func(w []byte, rb int, in *q4KInput, dst []float32), dot func(row []byte, in *q4KInput) float32) (checked, bad int, first string) {
	var c counts
	sentinel := float32(math.Inf(1))
	for i, cs := range cases {
		rb := cs.m.RowBytes()
		for j := range cs.ins {
			in := &cs.ins[j]
			for groups := 1; groups <= 3; groups++ {
				for s := range 3 {
					n := 4 * groups
					out := infs(n + 2)
					run(cs.m.Data[s*rb:(s+n)*rb], rb, in, out[1:1+n])
					for r := range out {
						want := sentinel
						if r >= 1 && r <= n {
							want = dot(cs.m.Row(s+r-1), in)
						}
						c.note(out[r], want, func() string {
							return fmt.Sprintf("case %d (%d blocks), input %d, %d groups from row %d, dst[%d] (around a dst of %d): got %g (%#08x), want %g (%#08x)",
								i, cs.blocks, j, groups, s, r-1, n, out[r], math.Float32bits(out[r]), want, math.Float32bits(want))
						})
					}
				}
			}
		}
	}
	return c.result()
}

// rows4Mutants runs the four-row checks (check) on each mutant of a four-row kernel and fails
// the test on a mutant they pass: they must tell it from the definition.
func rows4Mutants[K any](t *testing.T, mutants []struct {
	name string
	k    K
}, check func(k K) (checked, bad int, first string)) {
	for _, m := range mutants {
		checked, bad, first := check(m.k)
		t.Logf("mutant %-28s caught on %4d of %4d results (first: %s)", m.name+":", bad, checked, first)
		if bad == 0 {
			t.Errorf("mutant %q passes the four-row checks: they cannot tell it from the definition", m.name)
		}
	}
}

// tileCase is a Q4_K or Q6_K matrix and a prepared batch for the rows kernels.
type tileCase struct {
	m    *Matrix
	in   *Batch
	want []float32 // the definition's result of every row and token, dst's layout
}

// newTileCase makes the case of m against the ntok inputs x, with want from dot, the
// definition.
func newTileCase(t *testing.T, m *Matrix, x []float32, ntok int, dot func(row []byte, in *q4KInput) float32) tileCase {
	c := tileCase{m: m, in: preparedBatch(t, x, ntok, m.Cols), want: make([]float32, ntok*m.Rows)}
	for tok := range ntok {
		for r := range m.Rows {
			c.want[tok*m.Rows+r] = dot(m.Row(r), &c.in.q4k[tok])
		}
	}
	return c
}

// checkHalves runs the rows kernel k over every case in two row ranges, split at half the rows
// (made odd when odd is set, so that the second range starts at an odd row), and returns how
// many results it compared and how many differ from the case's want.
func checkHalves(cases []tileCase, odd bool, k rowsKernel) (checked, bad int) {
	for _, c := range cases {
		dst := make([]float32, len(c.want))
		for i := range dst {
			dst[i] = float32(math.NaN())
		}
		mid := c.m.Rows / 2
		if odd {
			mid |= 1
		}
		k(dst, c.m, c.in, 0, mid)
		k(dst, c.m, c.in, mid, c.m.Rows)
		for i, v := range dst {
			checked++
			if !sameBits(v, c.want[i]) {
				bad++
			}
		}
	}
	return checked, bad
}

// infs returns n floats, all +Inf: a dst whose untouched elements show.
func infs(n int) []float32 {
	dst := make([]float32, n)
	for i := range dst {
		dst[i] = float32(math.Inf(1))
	}
	return dst
}

// checkRange fails the test unless dst, a rows kernel's output of rows [r0, r1) (of rows rows,
// for ntok tokens) into infs, holds want(r, tok) in the range and +Inf elsewhere; name starts
// the message. It returns the outputs compared.
func checkRange(t *testing.T, name string, dst []float32, rows, ntok, r0, r1 int, want func(r, tok int) float32) (checked int) {
	t.Helper()
	for tok := range ntok {
		for r := range rows {
			got, w := dst[tok*rows+r], float32(math.Inf(1))
			if r >= r0 && r < r1 {
				w = want(r, tok)
			}
			checked++
			if !sameBits(got, w) {
				t.Fatalf("%s, rows [%d, %d): token %d row %d = %g, want %g", name, r0, r1, tok, r, got, w)
			}
		}
	}
	return checked
}
