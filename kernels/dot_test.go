package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/trochilus-llm/trochilus/gguf"
)

// dotCorpus returns pairs of vectors of every length 0..80 and some long ones, plain and with
// special values mixed in.
func dotCorpus() [][2][]float32 {
	rng := rand.New(rand.NewPCG(7, 7))
	var c [][2][]float32
	for n := 0; n <= 80; n++ {
		for _, special := range []bool{false, true} {
			c = append(c, [2][]float32{randFloats(rng, n, special, special), randFloats(rng, n, special, special)})
		}
	}
	for _, n := range []int{128, 1000, 2048} {
		c = append(c, [2][]float32{randFloats(rng, n, false, false), randFloats(rng, n, false, false)})
	}
	// Products that cancel: the result depends on which lane each term lands in.
	a := make([]float32, 64)
	b := make([]float32, 64)
	for k := range a {
		a[k] = float32(k%7) * 1e7
		b[k] = float32(1 - 2*(k%3&1))
	}
	a[5], a[21] = 1, -1e8
	c = append(c, [2][]float32{a, b})
	return c
}

// checkDot compares dot with the reference on the corpus and returns how many pairs it checked
// and how many differ (NaN equals NaN).
func checkDot(dot func(a, b []float32) float32) (checked, bad int, first string) {
	var c counts
	for _, p := range dotCorpus() {
		got, want := dot(p[0], p[1]), refDot(p[0], p[1])
		c.note(got, want, func() string {
			return fmt.Sprintf("n=%d: got %g (%#08x), want %g (%#08x)", len(p[0]), got, math.Float32bits(got), want, math.Float32bits(want))
		})
	}
	return c.result()
}

func TestDotF32(t *testing.T) {
	checked, bad, first := checkDot(DotF32)
	expectAgree(t, checked, bad, first, "DotF32: %d vector pairs (lengths 0..80, 128, 1000, 2048) against the plain 16-lane reference, %d differ", "DotF32 differs from the reference on %d of %d pairs; first: %s")
	sumChecked := 0
	for _, p := range dotCorpus() {
		got := SumF32(p[0])
		want := refLaneSum(len(p[0]), func(k int) float32 { return p[0][k] })
		sumChecked++
		if !sameBits(got, want) {
			t.Errorf("SumF32 of %d values: got %g, want %g", len(p[0]), got, want)
		}
	}
	t.Logf("SumF32: %d vectors checked", sumChecked)
}

// TestDotKnownValues pins down the lane assignment and the join with hand-computed sums.
func TestDotKnownValues(t *testing.T) {
	ones := func(n int) []float32 {
		v := make([]float32, n)
		for i := range v {
			v[i] = 1
		}
		return v
	}
	// At 2^24 the float32 spacing is 2, so adding a single 1 is a tie that rounds back to 2^24
	// (even) while adding 2 is exact: which 1s meet first decides the sum.
	cases := []struct {
		vals map[int]float32
		n    int
		want float32
	}{
		// l0 = 2^24, l1 = 1, l2 = 1: (l0+l1) loses its 1, then (l2+l3) = 1 is lost too.
		{map[int]float32{0: 0x1p24, 1: 1, 2: 1}, 3, 0x1p24},
		// l0 = 2^24, l2 = l3 = 1: (l2+l3) = 2 survives.
		{map[int]float32{0: 0x1p24, 2: 1, 3: 1}, 4, 0x1p24 + 2},
		// Elements 16 and 32 land in lane 0 one at a time and are both lost.
		{map[int]float32{0: 0x1p24, 16: 1, 32: 1}, 33, 0x1p24},
		// Elements 8 and 24 land in lane 8 (the hi half): hi = 2, lo = 2^24, lo + hi exact.
		{map[int]float32{0: 0x1p24, 8: 1, 24: 1}, 25, 0x1p24 + 2},
		// A tail element (k = 18 of 19) still goes to lane 2, next to lane 3's 1.
		{map[int]float32{0: 0x1p24, 3: 1, 18: 1}, 19, 0x1p24 + 2},
	}
	for _, c := range cases {
		a := make([]float32, c.n)
		for k, v := range c.vals {
			a[k] = v
		}
		if got := DotF32(a, ones(c.n)); got != c.want {
			t.Errorf("dot of %v (n=%d) with ones = %v, want %v", c.vals, c.n, got, c.want)
		}
	}
	if got := DotF32(nil, nil); math.Float32bits(got) != 0 {
		t.Errorf("empty dot = %g, want +0", got)
	}
	negZero := []float32{float32(math.Copysign(0, -1))}
	if got := DotF32(negZero, []float32{1}); math.Float32bits(got) != 0 {
		t.Errorf("dot of -0 starts from +0 lanes: got %g (%#08x), want +0", got, math.Float32bits(got))
	}
}

// checkRowDot compares a row dot of typ with the reference (the 16-lane dot of quant's
// dequantization of the row) on rows of 1..9 blocks, plain and special, and returns counts.
func checkRowDot(typ gguf.Type, dot func(row []byte, x []float32) float32, rows int) (checked, bad int, first string) {
	var c counts
	rng := rand.New(rand.NewPCG(uint64(typ), 11))
	be := typ.BlockElems()
	for i := range rows {
		blocks := 1 + i%9
		n := blocks * max(be, 1)
		if be == 1 {
			n = 1 + i%300 // float rows: every ragged length
		}
		special := i%3 == 0
		row := randRow(rng, typ, n, special)
		x := randFloats(rng, n, special, special && i%6 == 0)
		got := dot(row, x)
		want := refDot(dequantRow(typ, row, n), x)
		c.note(got, want, func() string {
			return fmt.Sprintf("%v row of %d: got %g (%#08x), want %g (%#08x)", typ, n, got, math.Float32bits(got), want, math.Float32bits(want))
		})
	}
	return c.result()
}

func TestRowDots(t *testing.T) {
	for _, typ := range supportedTypes {
		dot, ok := rowDots[typ]
		if !ok {
			continue
		}
		checked, bad, first := checkRowDot(typ, dot, 600)
		t.Logf("%v: %d rows against the 16-lane dot of quant.Dequantize, %d differ", typ, checked, bad)
		if bad != 0 {
			t.Errorf("%v: %d of %d rows differ; first: %s", typ, bad, checked, first)
		}
	}
}

// TestBF16MatchesF32 checks that a float32 row whose values have zero low halves gives the
// same bits from its BF16 form.
func TestBF16MatchesF32(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for range 200 {
		n := 1 + rng.IntN(600)
		bf := randRow(rng, gguf.TypeBF16, n, true)
		f := make([]byte, 4*n)
		for i := range n {
			f[4*i+2], f[4*i+3] = bf[2*i], bf[2*i+1]
		}
		x := randFloats(rng, n, true, false)
		if a, b := dotRowBF16(bf, x), dotRowF32(f, x); !sameBits(a, b) {
			t.Fatalf("BF16 row %g, same row as F32 %g", a, b)
		}
	}
}
