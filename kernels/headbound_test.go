package kernels

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/trochilus-llm/trochilus/gguf"
)

// headTypes are the head types the bound supports.
var headTypes = []gguf.Type{gguf.TypeQ8_0, gguf.TypeQ4_K, gguf.TypeQ6_K}

// headMatrix returns a matrix of rows random rows of typ (random bytes or quantized random
// values, finite scales of widely varying size, so row norms differ) of cols elements.
func headMatrix(rng *rand.Rand, typ gguf.Type, rows, cols int) *Matrix {
	rb, _ := typ.RowBytes(int64(cols))
	data := make([]byte, 0, rows*int(rb))
	for range rows {
		data = append(data, randRow(rng, typ, cols, false)...)
	}
	return &Matrix{Type: typ, Rows: rows, Cols: cols, Data: data}
}

// packScaleMinK4 packs sub-block scales and mins as gguf.ScaleMinK4 reads them.
func packScaleMinK4(s []byte, sc, m [8]uint8) {
	for j := range 4 {
		s[j] = sc[j]&63 | sc[j+4]>>4<<6
		s[j+4] = m[j]&63 | m[j+4]>>4<<6
		s[j+8] = sc[j+4]&15 | m[j+4]&15<<4
	}
}

// alignedRow returns a row of typ whose every weight has the largest magnitude of its group,
// with the sign of x there times sign(k) (0: the weight is zero; for Q4_K a whole group of 32
// must be): where sign is 1 throughout, the Hölder bound is the exact dot and only the margins
// keep it above the kernel's rounded value. d is every block's f16 scale.
func alignedRow(typ gguf.Type, x []float32, d uint16, sign func(k int) int) []byte {
	rb, _ := typ.RowBytes(int64(len(x)))
	row := make([]byte, rb)
	pos := func(k int) bool { return (x[k] >= 0) == (sign(k) > 0) }
	switch typ {
	case gguf.TypeQ8_0:
		for b := 0; b < len(x)/32; b++ {
			blk := row[b*q8_0Bytes:]
			binary.LittleEndian.PutUint16(blk, d)
			for l := range 32 {
				q := int8(127)
				if !pos(32*b + l) {
					q = -127
				}
				if sign(32*b+l) == 0 {
					q = 0
				}
				blk[2+l] = byte(q)
			}
		}
	case gguf.TypeQ4_K:
		// sc 4, m 30, dmin = d: w = 4d·q − 30d is ±30d at q = 15 and q = 0; a group that is all
		// zero takes sc = m = 0.
		for b := 0; b < len(x)/256; b++ {
			blk := row[b*q4KBytes:]
			binary.LittleEndian.PutUint16(blk, d)
			binary.LittleEndian.PutUint16(blk[2:], d)
			var sc, m [8]uint8
			for j := range 8 {
				if sign(256*b+32*j) != 0 {
					sc[j], m[j] = 4, 30
				}
			}
			packScaleMinK4(blk[4:16], sc, m)
			for j := range 8 {
				for l := range 32 {
					q := byte(0)
					if pos(256*b + 32*j + l) {
						q = 15
					}
					blk[16+32*(j/2)+l] |= q << (4 * (j % 2))
				}
			}
		}
	case gguf.TypeQ6_K:
		for b := 0; b < len(x)/256; b++ {
			blk := row[b*q6KBytes:]
			binary.LittleEndian.PutUint16(blk[208:], d)
			for j := range 16 {
				blk[192+j] = 127
			}
			for k := range 256 {
				q := 1 // −31
				if pos(256*b + k) {
					q = 63
				}
				if sign(256*b+k) == 0 {
					q = 32
				}
				h, c, l := k/128, k%128/32, k%32
				blk[64*h+32*(c&1)+l] |= byte(q&15) << (4 * (c >> 1))
				blk[128+32*h+l] |= byte(q>>4) << (2 * c)
			}
		}
	}
	return row
}

// randScale returns a random f16 block scale between 2^-7 and 2^3.
func randScale(rng *rand.Rand) uint16 { return uint16(8+rng.IntN(10))<<10 | uint16(rng.IntN(1024)) }

// headInputs returns inputs that stress the bound: ordinary values, one huge element among
// small ones, values near the smallest normals, sparse rows, all-equal magnitudes, and the
// rounding case of the K-quants' fixed point (one block maximum of 1 beside elements just
// above half a unit of 2^-30, which round up to a whole unit).
func headInputs(rng *rand.Rand, cols int) [][]float32 {
	var xs [][]float32
	for i := range 6 {
		x := make([]float32, cols)
		for k := range x {
			switch i {
			case 0, 1:
				x[k] = float32(rng.NormFloat64())
			case 2:
				x[k] = float32(rng.NormFloat64() * 1e-3)
				if k == cols/3 {
					x[k] = 1e4
				}
			case 3:
				x[k] = float32(rng.NormFloat64() * 0x1p-120)
			case 4:
				if rng.IntN(16) == 0 {
					x[k] = float32(rng.NormFloat64() * 100)
				}
			case 5:
				x[k] = float32(1 - 2*float64(rng.IntN(2)))
			}
		}
		xs = append(xs, x)
	}
	x := make([]float32, cols)
	for k := range x {
		x[k] = float32(0x1p-31 * (1 + 0x1p-20))
		if k%256 == 0 {
			x[k] = 1
		}
	}
	// Magnitudes 1 on 32 elements (the bound's P) and 0.75 elsewhere: for the aligned rows the
	// Cauchy–Schwarz part is tight too, and the fixed point exact, so only the margin covers
	// the rounding of the result.
	y := make([]float32, cols)
	for k := range y {
		y[k] = 0.75
		if k%(cols/32) == 0 {
			y[k] = 1
		}
		if rng.IntN(2) == 0 {
			y[k] = -y[k]
		}
	}
	return append(xs, x, y)
}

// headBoundCases returns, per input, the matrix to bound: random rows, then rows aligned with
// the input (the Hölder bound tight), and rows whose first group of each block of 256 is zero
// (where the input's maximum sits in the fixed-point case) and the rest aligned.
func headBoundCases(rng *rand.Rand, typ gguf.Type, cols int) (ms []*Matrix, xs [][]float32) {
	for _, x := range headInputs(rng, cols) {
		m := headMatrix(rng, typ, 48, cols)
		for range 48 {
			m.Data = append(m.Data, alignedRow(typ, x, randScale(rng), func(int) int { return 1 })...)
			m.Data = append(m.Data, alignedRow(typ, x, randScale(rng), func(k int) int { return min(k%256/32, 1) })...)
		}
		m.Rows += 96
		ms, xs = append(ms, m), append(xs, x)
	}
	return ms, xs
}

// boundViolations computes the bounds hb gives each input (mutate, when set, changes the
// search's input side after it is prepared) and counts the rows whose kernel value (the
// scalar tier's) is above its bound.
func boundViolations(t *testing.T, hb *HeadBound, m *Matrix, x []float32, mutate func(s *HeadSearch)) (checked, bad int, first string) {
	t.Helper()
	p := testPool(t, 2)
	s := NewHeadSearch(Scalar(), p, hb)
	if !s.prepare(x) {
		t.Fatalf("input not finite")
	}
	if mutate != nil {
		mutate(s)
	}
	p.For(s.threads, s.fn)
	in := new(Batch)
	if err := in.Set(x, 1, len(x)); err != nil {
		t.Fatal(err)
	}
	want := make([]float32, m.Rows)
	if err := Scalar().MatMul(p, want, m, in); err != nil {
		t.Fatal(err)
	}
	for r, v := range want {
		checked++
		if !(float64(v) <= s.u[r]) {
			if bad++; bad == 1 {
				first = fmt.Sprintf("row %d: value %g above its bound %g", r, v, s.u[r])
			}
		}
	}
	return checked, bad, first
}

// TestHeadBoundCoversKernel: for every supported type, the bound of every row is at or above
// the value the kernel computes, on random rows, rows aligned with the input (where only the
// rounding margin separates them) and the fixed-point rounding case, for ordinary, huge, tiny,
// sparse and uniform inputs.
func TestHeadBoundCoversKernel(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	p := testPool(t, 2)
	for _, typ := range headTypes {
		for _, cols := range []int{256, 2048} {
			ms, xs := headBoundCases(rng, typ, cols)
			var c counts
			for i, m := range ms {
				hb, err := NewHeadBound(p, m, xs[i])
				if err != nil {
					t.Fatal(err)
				}
				c.add(boundViolations(t, hb, m, xs[i], nil))
			}
			checked, bad, first := c.result()
			expectAgree(t, checked, bad, first, fmt.Sprintf("%v cols %d: %%d rows, %%d above their bounds", typ, cols),
				fmt.Sprintf("%v cols %d: %%d of %%d rows above their bounds; first: %%s", typ, cols))
		}
	}
}

// TestHeadBoundMutantsDetected: the checks above reject a bound halved, a bound without its
// rounding margin, and (for the K-quants) a bound that ignores the rounding of the fixed-point
// input; and the search with a halved bound gives a wrong answer on a head built for it.
func TestHeadBoundMutantsDetected(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	p := testPool(t, 2)
	mutants := []struct {
		name  string
		table func(hb *HeadBound)
		input func(s *HeadSearch, x []float32)
		skip  gguf.Type // a type the mutant does not apply to
	}{
		{name: "halved", table: func(hb *HeadBound) {
			for i := range hb.w {
				hb.w[i] *= 0.5
			}
			for i := range hb.rest {
				hb.rest[i] *= 0.5
			}
		}},
		// Not for Q4_K: no input here brings its value within the margin of the bound (the
		// rest's norm rounded up to float32, an ulp, seems to cover the final rounding there).
		{name: "no margin", skip: gguf.TypeQ4_K, table: func(hb *HeadBound) { hb.scale, hb.alpha = 1, 0 }},
		{name: "no fixed-point rounding", skip: gguf.TypeQ8_0, input: func(s *HeadSearch, x []float32) {
			var sq float64
			for i, v := range x {
				if !s.hb.in[i] {
					sq += float64(v) * float64(v)
				}
			}
			for j := range s.dp {
				s.dp[j], s.ap[j] = 0, math.Abs(s.xp[j])
			}
			s.xRest = math.Sqrt(sq)
		}},
	}
	for _, typ := range headTypes {
		ms, xs := headBoundCases(rng, typ, 512)
		for _, mu := range mutants {
			if typ == mu.skip {
				continue
			}
			bad := 0
			for i, m := range ms {
				hb, err := NewHeadBound(p, m, xs[i])
				if err != nil {
					t.Fatal(err)
				}
				if mu.table != nil {
					mu.table(hb)
				}
				var input func(s *HeadSearch)
				if mu.input != nil {
					x := xs[i]
					input = func(s *HeadSearch) { mu.input(s, x) }
				}
				_, b, _ := boundViolations(t, hb, m, xs[i], input)
				bad += b
			}
			t.Logf("%v mutant %q: %d rows above their bounds", typ, mu.name, bad)
			if bad == 0 {
				t.Errorf("%v: the bound check does not catch mutant %q", typ, mu.name)
			}
		}
		// The halved bound through the search: twelve rows of a larger bound (scale 1.0625
		// against 1) but a smaller value (an eighth of their groups against the input's signs)
		// are computed first and set the best near 0.8 of the winner's value, above half its
		// bound; the other rows are small.
		x := headInputs(rng, 512)[0]
		m := &Matrix{Type: typ, Rows: 64, Cols: 512}
		probe := &Matrix{Type: typ, Rows: 1, Cols: 512, Data: alignedRow(typ, x, 0x3c00, func(int) int { return 1 })}
		hb0, err := NewHeadBound(p, probe, x)
		if err != nil {
			t.Fatal(err)
		}
		// Against the signs only off the bound's dimensions P (for Q4_K, whole groups holding
		// none of P), so that these rows' bounds are 1.0625 times the winner's.
		// (Q4_K's signs go by whole groups of 32, every one of which may hold some of P: its
		// rows take an eighth of the groups against the signs, and scale 1.125.)
		anti := func(k int) int {
			if k/32%8 != 7 || typ != gguf.TypeQ4_K && hb0.in[k] {
				return 1
			}
			return -1
		}
		scale := uint16(0x3c40)
		if typ == gguf.TypeQ4_K {
			scale = 0x3c80
		}
		for r := range m.Rows {
			switch {
			case r < 12:
				m.Data = append(m.Data, alignedRow(typ, x, scale, anti)...)
			case r == 12:
				m.Data = append(m.Data, alignedRow(typ, x, 0x3c00, func(int) int { return 1 })...)
			default:
				m.Data = append(m.Data, alignedRow(typ, x, 0x1c00, func(k int) int { return 1 - 2*(k%2) })...)
			}
		}
		for _, halved := range []bool{false, true} {
			hb, err := NewHeadBound(p, m, x)
			if err != nil {
				t.Fatal(err)
			}
			if halved {
				mutants[0].table(hb)
			}
			got, want := searchOnce(t, Scalar(), p, hb, m, x)
			if want != 12 {
				t.Fatalf("%v: the constructed head's argmax is %d, not 12", typ, want)
			}
			if halved && got.Index == want {
				t.Errorf("%v: a halved bound still finds the argmax: the search cannot be caught with a too-small bound", typ)
			}
			if !halved && (got.Index != want || got.Full) {
				t.Errorf("%v: the search chose %d (full %v), want 12 without the full head", typ, got.Index, got.Full)
			}
		}
	}
}

// searchCase is a head and an input for the search: the input near one row's direction, so
// that the bound prunes, or flat.
type searchCase struct {
	m    *Matrix
	x    []float32
	name string
}

// searchCases returns heads of rows rows with inputs that make the search prune (the input a
// row's weights times a constant plus a little noise: the row of largest norm, a random row, a
// row copied to a lower index so that two rows tie for the largest value), flat random inputs
// (the full head), and inputs holding a NaN or an infinity (the full head).
func searchCases(t *testing.T, rng *rand.Rand, typ gguf.Type, rows, cols int) []searchCase {
	t.Helper()
	var cs []searchCase
	m := headMatrix(rng, typ, rows, cols)
	w := make([][]float32, rows)
	top := 0
	for r := range rows {
		w[r] = dequantRow(typ, m.Row(r), cols)
		if norm2(w[r]) > norm2(w[top]) {
			top = r
		}
	}
	near := func(j int, noise float64) []float32 {
		x := make([]float32, cols)
		for k := range x {
			x[k] = float32(float64(w[j][k])*0.75 + noise*rng.NormFloat64())
		}
		return x
	}
	for i := range 6 {
		cs = append(cs, searchCase{m, near(top, 1e-3*float64(i)), "largest row"})
		cs = append(cs, searchCase{m, near(rng.IntN(rows), 1e-3*float64(i)), "random row"})
	}
	// Ties: row top copied to a lower index and to a higher one.
	tied := &Matrix{Type: typ, Rows: rows, Cols: cols, Data: append([]byte(nil), m.Data...)}
	lo := rng.IntN(max(top, 1))
	copy(tied.Row(lo), m.Row(top))
	copy(tied.Row(rows-1), m.Row(top))
	for i := range 3 {
		cs = append(cs, searchCase{tied, near(top, 1e-3*float64(i)), "tie"})
	}
	for range 3 {
		x := make([]float32, cols)
		for k := range x {
			x[k] = float32(rng.NormFloat64())
		}
		cs = append(cs, searchCase{m, x, "flat"})
	}
	for _, v := range []float32{float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1))} {
		x := near(top, 0)
		x[rng.IntN(cols)] = v
		cs = append(cs, searchCase{m, x, fmt.Sprintf("input holding %v", v)})
	}
	return cs
}

func norm2(w []float32) float64 {
	var s float64
	for _, v := range w {
		s += float64(v) * float64(v)
	}
	return s
}

// searchOnce runs the search of hb over m for x through tier and returns its choice and the
// full head's Argmax.
func searchOnce(t *testing.T, tier *Tier, p *Pool, hb *HeadBound, m *Matrix, x []float32) (HeadChoice, int) {
	t.Helper()
	in := new(Batch)
	if err := in.Set(x, 1, len(x)); err != nil {
		t.Fatal(err)
	}
	logits := make([]float32, m.Rows)
	got, err := NewHeadSearch(tier, p, hb).Argmax(m, in, logits)
	if err != nil {
		t.Fatal(err)
	}
	in2 := new(Batch)
	if err := in2.Set(x, 1, len(x)); err != nil {
		t.Fatal(err)
	}
	full := make([]float32, m.Rows)
	if err := tier.MatMul(p, full, m, in2); err != nil {
		t.Fatal(err)
	}
	return got, Argmax(full)
}

// TestHeadSearchArgmax: on every tier and several thread counts, the search's index is the
// full head's Argmax for inputs that prune (the exact rows a fraction of the head), flat ones
// and non-finite ones (the full head computed); of two rows tied for the largest value the
// lower index wins, and the test fails unless both the pruned and the full path ran.
func TestHeadSearchArgmax(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, typ := range headTypes {
		cases := searchCases(t, rng, typ, 700, 512)
		for _, tier := range Tiers() {
			for _, threads := range []int{1, 3} {
				p := testPool(t, threads)
				pruned, full, exact, total := 0, 0, 0, 0
				var hb *HeadBound
				var hm *Matrix
				for _, c := range cases {
					if c.m != hm {
						var err error
						if hb, err = NewHeadBound(p, c.m, c.x); err != nil {
							t.Fatal(err)
						}
						hm = c.m
					}
					got, want := searchOnce(t, tier, p, hb, c.m, c.x)
					if got.Index != want {
						t.Errorf("%v %s %d threads, %s: index %d, the full head's %d", typ, tier.Name, threads, c.name, got.Index, want)
					}
					finite := c.name[0] != 'i'
					if !finite && !got.Full {
						t.Errorf("%v %s, %s: not the full head", typ, tier.Name, c.name)
					}
					if got.Full {
						full++
					} else {
						pruned++
						exact += got.Exact
						total += c.m.Rows
					}
				}
				if pruned == 0 || full == 0 {
					t.Errorf("%v %s %d threads: %d pruned searches, %d full: both paths must run", typ, tier.Name, threads, pruned, full)
				} else if threads == 1 {
					t.Logf("%v %s: %d searches pruned (%d of %d rows exact), %d full", typ, tier.Name, pruned, exact, total, full)
				}
			}
		}
	}
}

// TestHeadSearchTieRule: the rule that decides whether a row may still win is Argmax's: a
// bound equal to the best value keeps a row only at a lower index, a computed row (NaN bound)
// never, and before any value every row.
func TestHeadSearchTieRule(t *testing.T) {
	s := &HeadSearch{}
	if !s.keep(-1e30, 9) {
		t.Errorf("no best yet: a row must be kept")
	}
	s.have, s.best, s.at = true, 2, 5
	for _, c := range []struct {
		u    float64
		r    int
		want bool
	}{{2, 3, true}, {2, 7, false}, {2, 5, false}, {math.Nextafter(2, 0), 0, false}, {math.Nextafter(2, 3), 9, true}, {math.NaN(), 0, false}} {
		if got := s.keep(c.u, c.r); got != c.want {
			t.Errorf("bound %v at row %d, best 2 at row 5: keep %v, want %v", c.u, c.r, got, c.want)
		}
	}
	s.best = float32(math.Copysign(0, -1)) // −0 equals +0: the lower index decides
	if !s.keep(0, 1) || s.keep(0, 6) {
		t.Errorf("bound +0 against a best of −0: the lower index must decide")
	}
}

// TestHeadBoundRefuses: types without a bound and non-finite scales are refused (the engine
// then computes the whole head).
func TestHeadBoundRefuses(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	p := testPool(t, 1)
	x := make([]float32, 256)
	if _, err := NewHeadBound(p, headMatrix(rng, gguf.TypeQ5_K, 4, 256), x); err == nil {
		t.Errorf("Q5_K: no error")
	}
	for _, typ := range headTypes {
		m := headMatrix(rng, typ, 4, 256)
		binary.LittleEndian.PutUint16(m.Row(2)[scaleOffsets(typ)[0]:], 0x7c00) // +Inf
		if _, err := NewHeadBound(p, m, x); err == nil {
			t.Errorf("%v with an infinite scale: no error", typ)
		}
	}
}
