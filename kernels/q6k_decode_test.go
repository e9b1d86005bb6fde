package kernels

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// q6KDecodeCase is one corpus case of the Q6_K decode kernels: four rows of nb blocks and four
// inputs, and the scalar definition's dot of every row with every input.
type q6KDecodeCase struct {
	nb   int
	rows [4][]byte
	xs   []float32 // four inputs of 256·nb floats, one after another
	want [4][4]float32
}

// q6KSpecialHalves are the f16 d values the corpus mixes in: zeros, the smallest and largest
// subnormals, the smallest normal, the largest finite values, infinities and a NaN.
var q6KSpecialHalves = []uint16{0x0000, 0x8000, 0x0001, 0x8001, 0x03ff, 0x0400, 0x7bff, 0xfbff, 0x3c00, 0x7c00, 0xfc00, 0x7e00}

// q6KDecodeCorpus returns the cases: nb from 1 to 16 blocks, cases for each. Blocks have random
// quants; their d is a random normal half or, in special rows, one of q6KSpecialHalves; their
// scales are random or, in special rows, often -128, 127, -1 or 0. Inputs are random, with special
// values (signed zeros, subnormals, extremes, infinities), NaNs or magnitudes near overflow
// in some cases.
func q6KDecodeCorpus(cases int) []q6KDecodeCase {
	rng := rand.New(rand.NewPCG(26, 6))
	var corpus []q6KDecodeCase
	for nb := 1; nb <= 16; nb++ {
		for i := range cases {
			c := q6KDecodeCase{nb: nb}
			n := nb * kElems
			for r := range c.rows {
				special := (i+r)%2 == 1
				row := make([]byte, nb*q6KBytes)
				for k := range row {
					row[k] = byte(rng.Uint32())
				}
				for b := 0; b < len(row); b += q6KBytes {
					d := uint16(5+rng.IntN(16))<<10 | uint16(rng.IntN(1024))
					if special && rng.IntN(3) == 0 {
						d = q6KSpecialHalves[rng.IntN(len(q6KSpecialHalves))]
					}
					binary.LittleEndian.PutUint16(row[b+208:], d)
					if special {
						for s := range 16 {
							if rng.IntN(3) == 0 {
								row[b+192+s] = []byte{0x80, 0x7f, 0xff, 0x00}[rng.IntN(4)]
							}
						}
					}
				}
				c.rows[r] = row
			}
			c.xs = randFloats(rng, 4*n, i%3 == 1, i%5 == 2)
			if i%4 == 3 { // products and sums near the float32 limits
				for k := range c.xs {
					c.xs[k] *= 0x1p90
				}
			}
			for r := range 4 {
				for t := range 4 {
					c.want[r][t] = DotRowQ6K(c.rows[r], c.xs[t*n:(t+1)*n])
				}
			}
			corpus = append(corpus, c)
		}
	}
	return corpus
}

// q6KDecodeForms are the ways a tier's Q6_K kernels compute the dots of a case: each returns
// got[r][t] for the rows r and inputs t it covers, and which it covered.
type q6KDecodeForm struct {
	name string
	dots func(c *q6KDecodeCase) (got [4][4]float32, covered [4][4]bool)
}

func q6KDecodeForms(a *asmKernels) []q6KDecodeForm {
	forms := []q6KDecodeForm{
		{"one row", func(c *q6KDecodeCase) (got [4][4]float32, cov [4][4]bool) {
			n := c.nb * kElems
			for r := range 4 {
				for t := range 4 {
					got[r][t], cov[r][t] = a.dotRowQ6K(c.rows[r], c.xs[t*n:(t+1)*n]), true
				}
			}
			return got, cov
		}},
		{"two rows", func(c *q6KDecodeCase) (got [4][4]float32, cov [4][4]bool) {
			n := c.nb * kElems
			for r := 0; r < 4; r += 2 {
				for t := range 4 {
					l := a.q6Kx2(c.rows[r], c.rows[r+1], c.xs[t*n:(t+1)*n])
					got[r][t], got[r+1][t] = (*Lanes)(&l[0]).Sum(), (*Lanes)(&l[1]).Sum()
					cov[r][t], cov[r+1][t] = true, true
				}
			}
			return got, cov
		}},
		{"four tokens", func(c *q6KDecodeCase) (got [4][4]float32, cov [4][4]bool) {
			n := c.nb * kElems
			for r := range 4 {
				l := a.q6Kx4(c.rows[r], c.xs, n)
				for t := range 4 {
					got[r][t], cov[r][t] = (*Lanes)(&l[t]).Sum(), true
				}
			}
			return got, cov
		}},
	}
	if a.q6Kr4 != nil {
		forms = append(forms, q6KDecodeForm{"four rows", func(c *q6KDecodeCase) (got [4][4]float32, cov [4][4]bool) {
			n := c.nb * kElems
			w := make([]byte, 0, 4*len(c.rows[0]))
			for _, row := range c.rows {
				w = append(w, row...)
			}
			for t := range 4 {
				l := a.q6Kr4(w, c.xs[t*n:(t+1)*n])
				for r := range 4 {
					got[r][t], cov[r][t] = (*Lanes)(&l[r]).Sum(), true
				}
			}
			return got, cov
		}})
	}
	return forms
}

// checkQ6KDecode runs a form over the corpus and counts the dots compared and those whose bits
// differ from the definition's (NaNs match any NaN).
func checkQ6KDecode(corpus []q6KDecodeCase, f q6KDecodeForm) (checked, bad int, first string) {
	for ci := range corpus {
		c := &corpus[ci]
		got, cov := f.dots(c)
		for r := range 4 {
			for t := range 4 {
				if !cov[r][t] {
					continue
				}
				checked++
				if !sameBits(got[r][t], c.want[r][t]) {
					if bad == 0 {
						first = fmt.Sprintf("%d blocks, row %d, input %d: got %g (%#08x), definition %g (%#08x)",
							c.nb, r, t, got[r][t], math.Float32bits(got[r][t]), c.want[r][t], math.Float32bits(c.want[r][t]))
					}
					bad++
				}
			}
		}
	}
	return checked, bad, first
}

// TestQ6KDecodeKernels: every Q6_K lanes kernel of every usable SIMD tier (one row, two rows,
// four rows where the tier has them, one row against four inputs) gives the bits of DotRowQ6K
// on 1-16 blocks with special d (zeros, subnormals, extremes, infinities, NaN), scales -128 and
// 127, and special inputs.
func TestQ6KDecodeKernels(t *testing.T) {
	corpus := q6KDecodeCorpus(12)
	tiers := usableSIMD()
	if len(tiers) == 0 {
		t.Skip("no SIMD tier on this CPU")
	}
	finite := 0
	for _, c := range corpus {
		for r := range 4 {
			for t := range 4 {
				if v := float64(c.want[r][t]); !math.IsNaN(v) && !math.IsInf(v, 0) {
					finite++
				}
			}
		}
	}
	t.Logf("%d cases of 1-16 blocks, %d of their %d definition dots finite", len(corpus), finite, 16*len(corpus))
	for _, st := range tiers {
		for _, f := range q6KDecodeForms(&st.asm) {
			checked, bad, first := checkQ6KDecode(corpus, f)
			t.Logf("%s, %s: %d dots against the definition, %d differ", st.name, f.name, checked, bad)
			if checked == 0 {
				t.Errorf("%s, %s: nothing compared", st.name, f.name)
			}
			if bad != 0 {
				t.Errorf("%s, %s: %d of %d dots differ; first: %s", st.name, f.name, bad, checked, first)
			}
		}
	}
}

// TestQ6KDecodeCatchesBrokenKernels: the corpus and comparison of TestQ6KDecodeKernels must
// catch decodes that are wrong in small ways: the lane update fused into one multiply-add, the
// sub-block scales of each pair of sub-blocks exchanged, the quants read with bias 31, and the
// fastest tier's real two-row kernel with its second row's lanes 3 and 12 exchanged.
func TestQ6KDecodeCatchesBrokenKernels(t *testing.T) {
	corpus := q6KDecodeCorpus(12)
	type mutation struct {
		fused bool // the lane update as one float64 multiply-add, then rounded to float32
		swap  bool // sub-block s takes the scale of s^1
		bias  int
	}
	goForm := func(m mutation) q6KDecodeForm {
		return q6KDecodeForm{fmt.Sprintf("%+v", m), func(c *q6KDecodeCase) (got [4][4]float32, cov [4][4]bool) {
			n := c.nb * kElems
			for r := range 4 {
				for tk := range 4 {
					got[r][tk], cov[r][tk] = q6KMutantDot(c.rows[r], c.xs[tk*n:(tk+1)*n], m.fused, m.swap, m.bias), true
				}
			}
			return got, cov
		}}
	}
	// The unmutated Go decode must pass, or the mutants below prove nothing.
	if checked, bad, first := checkQ6KDecode(corpus, goForm(mutation{bias: 32})); bad != 0 {
		t.Fatalf("the test's own decode differs from the definition in %d of %d dots; first: %s", bad, checked, first)
	}
	forms := []q6KDecodeForm{
		goForm(mutation{fused: true, bias: 32}),
		goForm(mutation{swap: true, bias: 32}),
		goForm(mutation{bias: 31}),
	}
	if tiers := usableSIMD(); len(tiers) > 0 {
		a := tiers[len(tiers)-1].asm
		a.q6Kx2 = mutantLanes2Swapped(a.q6Kx2)
		for _, f := range q6KDecodeForms(&a) {
			if f.name == "two rows" {
				f.name = tiers[len(tiers)-1].name + " two rows, second row's lanes 3 and 12 exchanged"
				forms = append(forms, f)
			}
		}
	}
	for _, f := range forms {
		checked, bad, _ := checkQ6KDecode(corpus, f)
		t.Logf("broken %s: %d of %d dots differ", f.name, bad, checked)
		if bad == 0 {
			t.Errorf("broken %s: no dot of %d differs; the corpus cannot see it", f.name, checked)
		}
	}
}

// q6KMutantDot is DotRowQ6K written out with its decode, optionally broken: fused rounds the
// lane update as one float64 multiply-add (then float32), swap gives sub-block s the scale of s^1, bias replaces 32.
func q6KMutantDot(row []byte, x []float32, fused, swap bool, bias int) float32 {
	var l Lanes
	for b, k := 0, 0; b+q6KBytes <= len(row); b, k = b+q6KBytes, k+kElems {
		blk := row[b : b+q6KBytes]
		d := half(blk[208:])
		for i := range kElems {
			h, rest := i/128, i%128
			c, e := rest/32, rest%32
			q := int(blk[64*h+32*(c&1)+e]>>(4*(c>>1))&15) | int(blk[128+32*h+e]>>(2*c)&3)<<4
			s := i / 16
			if swap {
				s ^= 1
			}
			w := float32(float32(d*float32(int8(blk[192+s]))) * float32(q-bias))
			if fused {
				l[i%16] = float32(math.FMA(float64(w), float64(x[k+i]), float64(l[i%16])))
			} else {
				l[i%16] += float32(w * x[k+i])
			}
		}
	}
	return l.Sum()
}
