//go:build amd64

package kernels

import (
	"math"
	"math/rand/v2"
	"testing"
	"unsafe"

	"github.com/trochilus-llm/trochilus/gguf"
)

// q6KTileSet is one row and eight prepared inputs of as many elements, for the tile checks.
type q6KTileSet struct {
	row []byte
	ins [8]q4KInput
}

// q6KTileInput returns an input of blocks blocks of kind k: random floats (with blocks of very
// different magnitudes and zero blocks when k is odd), a NaN or an infinity in one block, or
// the edges of the digits: every X with the low digit −32768 (x = ±(1 − 2^-15), scaled by
// 2^30), or high digits near ±31831 (x near the largest magnitude), mixed with small values.
func q6KTileInput(rng *rand.Rand, blocks, k int) []float32 {
	_, x := randQ6KCase(rng, blocks, k%2 == 1, false)
	switch k % 6 {
	case 2:
		x[rng.IntN(len(x))] = []float32{float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1))}[rng.IntN(3)]
	case 3:
		for i := range x {
			x[i] = float32(1-2*rng.IntN(2)) * (1 - 0x1p-15)
		}
	case 4:
		for i := range x {
			switch rng.IntN(3) {
			case 0:
				x[i] = float32(1-2*rng.IntN(2)) * 1.9427
			case 1:
				x[i] = float32(2*rng.IntN(32768)-32767) * 0x1p-15 // the low digit −32768
			}
		}
	case 5:
		for i := range x {
			x[i] = -(1 - 0x1p-15) // with rows of every q 0 and scale −128: lanes of exactly −2^31
		}
	}
	return x
}

// q6KTileRow returns a Q6_K row of blocks blocks of kind k: randQ6KCase's rows (special f16
// scales when k is odd), rows with random int8 scales of which many are −128 or 127, and the
// extremes of the weight words (every q 0 or 63, every scale −128 or 127).
func q6KTileRow(rng *rand.Rand, blocks, k int) []byte {
	row, _ := randQ6KCase(rng, blocks, false, k%2 == 1)
	for b := 0; b < len(row); b += q6KBytes {
		blk := row[b : b+q6KBytes]
		switch k % 5 {
		case 2:
			for j := range 16 {
				blk[192+j] = []byte{0x80, 0x7f, byte(rng.Uint32())}[rng.IntN(3)]
			}
		case 3, 4:
			fill := byte(0)
			if k%5 == 4 && rng.IntN(2) == 0 {
				fill = 0xff
			}
			for i := range 192 {
				blk[i] = fill
			}
			sc := byte(0x80)
			if rng.IntN(4) == 0 {
				sc = 0x7f
			}
			for j := range 16 {
				blk[192+j] = sc
			}
		}
	}
	return row
}

// q6KTileSets builds 120 rows of 1 to 6 blocks, each with eight inputs of different kinds.
func q6KTileSets(t *testing.T) []q6KTileSet {
	rng := rand.New(rand.NewPCG(61, 62))
	sets := make([]q6KTileSet, 120)
	for i := range sets {
		blocks := 1 + i%6
		s := &sets[i]
		s.row = q6KTileRow(rng, blocks, i/6)
		for u := range s.ins {
			if err := prepareQ4K(&s.ins[u], q6KTileInput(rng, blocks, i+u)); err != nil {
				t.Fatal(err)
			}
		}
	}
	return sets
}

// q6KTile8Spans runs the eight-input kernel over the row of s a span of blocks at a time (the
// spans' sizes cycling through span, span+1, ...), carrying the float64 sums as the driver does.
func q6KTile8Spans(k func(w []byte, in [8]*byte, scales []float64, y [8]float64) [8]float64, s *q6KTileSet, span int) [8]float32 {
	nb := len(s.row) / q6KBytes
	var y [8]float64
	for s0 := 0; s0 < nb; {
		n := min(span, nb-s0)
		var args [8]*byte
		scales := make([]float64, 8*n)
		for i := range 8 {
			args[i] = (*byte)(unsafe.Pointer(&s.ins[i].wide.digits[s0*2*kElems]))
			for b := range n {
				scales[8*b+i] = s.ins[i].scale[s0+b]
			}
		}
		y = k(s.row[s0*q6KBytes:], args, scales, y)
		s0 += n
		span++
	}
	var out [8]float32
	for i, v := range y {
		out[i] = float32(v)
	}
	return out
}

// checkQ6KTiles runs the tile kernels of a on every set (the four-input kernel on inputs 0-3
// and 4-7, the eight-input one whole and in spans of 1, 2, ... blocks) and compares every
// result with dotQ6K; it returns how many it compared and how many differ.
func checkQ6KTiles(a *asmKernels, sets []q6KTileSet) (checked, bad int) {
	for si := range sets {
		s := &sets[si]
		nb := len(s.row) / q6KBytes
		want := make([]float32, 8)
		for i := range want {
			want[i] = dotQ6K(s.row, &s.ins[i])
		}
		var got [][8]float32
		if a.q6KTile4 != nil {
			lo, hi := a.q6KTile4(s.row, q6KArgs4(s.ins[:4]), nb), a.q6KTile4(s.row, q6KArgs4(s.ins[4:]), nb)
			got = append(got, [8]float32{lo[0], lo[1], lo[2], lo[3], hi[0], hi[1], hi[2], hi[3]})
		}
		if a.q6KTile8 != nil {
			got = append(got, q6KTile8Spans(a.q6KTile8, s, nb), q6KTile8Spans(a.q6KTile8, s, 1))
		}
		for _, g := range got {
			for i := range g {
				checked++
				if !sameBits(g[i], want[i]) {
					bad++
				}
			}
		}
	}
	return checked, bad
}

// q6KAVX512Tiers returns the usable tiers with integer Q6_K tiles among the AVX-512 ones.
func q6KAVX512Tiers(t *testing.T) []*simdTier {
	var tiers []*simdTier
	for _, st := range usableSIMD() {
		if st.name == "avx512" || st.name == "avx512vnni" {
			tiers = append(tiers, st)
		}
	}
	if len(tiers) == 0 {
		t.Skip("this CPU runs neither AVX-512 tier (F/BW/VL/DQ, and VNNI with VBMI)")
	}
	return tiers
}

// TestQ6KTilesMatchDefinition runs each AVX-512 tier's integer Q6_K tiles (four and eight
// inputs, the eight whole and in spans) against dotQ6K bit for bit: rows of 1 to 6 blocks with
// special f16 scales, scales of −128 and 127 and the extreme weight words, against inputs with
// NaN and infinite blocks, zero blocks, mixed magnitudes and both digits at their edges
// (including lanes whose low-digit sums are exactly −2^31).
func TestQ6KTilesMatchDefinition(t *testing.T) {
	tiers := q6KAVX512Tiers(t)
	sets := q6KTileSets(t)
	for _, st := range tiers {
		a := st.asm
		if a.q6KTile4 == nil || a.q6KTile8 == nil {
			t.Fatalf("%s: a Q6_K tile kernel is missing", st.name)
		}
		checked, bad := checkQ6KTiles(&a, sets)
		t.Logf("%s: %d Q6_K tile results against dotQ6K (%d rows, four and eight inputs, eight whole and in spans), %d differ", st.name, checked, len(sets), bad)
		if bad != 0 {
			t.Errorf("%s: %d of %d results differ from dotQ6K", st.name, bad, checked)
		}
	}
}

// TestQ6KTilesCatchMutants makes sure checkQ6KTiles and the rows-kernel check can fail: each
// variant breaks one thing a tile must get right.
func TestQ6KTilesCatchMutants(t *testing.T) {
	tiers := q6KAVX512Tiers(t)
	sets := q6KTileSets(t)
	for _, st := range tiers {
		k4, k8 := st.asm.q6KTile4, st.asm.q6KTile8
		unsigned := func(w []byte) []byte {
			w = append([]byte(nil), w...)
			for b := 0; b+q6KBytes <= len(w); b += q6KBytes {
				for j := range 16 {
					w[b+192+j] &= 0x7f
				}
			}
			return w
		}
		for _, m := range []struct {
			name   string
			k4     func(w []byte, in [8]*byte, nb int) [4]float32
			k8     func(w []byte, in [8]*byte, scales []float64, y [8]float64) [8]float64
			driver bool // checked through q6KRows, where the sums carry across spans
		}{
			{name: "inputs 1 and 2 swapped", k4: swapTile4(k4, 1, 2)},
			{name: "scales read as unsigned", k4: func(w []byte, in [8]*byte, nb int) [4]float32 {
				return k4(unsigned(w), in, nb)
			}},
			{name: "scales of the wrong block", k8: func(w []byte, in [8]*byte, scales []float64, y [8]float64) [8]float64 {
				s := append([]float64(nil), scales...)
				if len(s) >= 16 {
					copy(s[:8], scales[8:16])
				}
				return k8(w, in, s, y)
			}},
			{name: "sums not carried across spans", driver: true, k8: func(w []byte, in [8]*byte, scales []float64, y [8]float64) [8]float64 {
				return k8(w, in, scales, [8]float64{})
			}},
			{name: "sums rounded to float32 between spans", driver: true, k8: func(w []byte, in [8]*byte, scales []float64, y [8]float64) [8]float64 {
				y = k8(w, in, scales, y)
				for i := range y {
					y[i] = float64(float32(y[i]))
				}
				return y
			}},
		} {
			a := st.asm
			if m.k4 != nil {
				a.q6KTile4, a.q6KTile8 = m.k4, nil
			} else {
				a.q6KTile8 = m.k8
			}
			var checked, bad int
			if m.driver {
				checked, bad = checkHalves(q6KRowsTileCases(t), true, a.q6KRows)
			} else {
				checked, bad = checkQ6KTiles(&a, sets)
			}
			t.Logf("%s: mutant %q: %d of %d results differ", st.name, m.name, bad, checked)
			if bad == 0 {
				t.Errorf("%s: mutant %q not caught", st.name, m.name)
			}
		}
	}
}

// TestQ6KRowsTiles runs each AVX-512 tier's Q6_K rows kernel on batches of whole groups of
// four tokens, with and without the eight-input tiles, and compares every output with dotQ6K
// bit for bit; it counts the block dots each tile computed, so a tier whose driver stopped
// using one fails.
func TestQ6KRowsTiles(t *testing.T) {
	tiers := q6KAVX512Tiers(t)
	cases := q6KRowsTileCases(t)
	for _, st := range tiers {
		for _, wide := range []bool{true, false} {
			a := st.asm
			var four, eight int
			k4, k8 := a.q6KTile4, a.q6KTile8
			a.q6KTile4 = func(w []byte, in [8]*byte, nb int) [4]float32 {
				four += 4 * nb
				return k4(w, in, nb)
			}
			a.q6KTile8 = nil
			if wide {
				a.q6KTile8 = func(w []byte, in [8]*byte, scales []float64, y [8]float64) [8]float64 {
					eight += len(scales)
					return k8(w, in, scales, y)
				}
			}
			checked, bad := checkHalves(cases, true, a.q6KRows)
			t.Logf("%s, eight-input tiles %v: %d Q6_K rows-kernel results against dotQ6K (block dots: %d by four-input tiles, %d by eight-input), %d differ", st.name, wide, checked, four, eight, bad)
			if bad != 0 {
				t.Errorf("%s: %d of %d results differ from dotQ6K", st.name, bad, checked)
			}
			if four == 0 || wide && eight == 0 {
				t.Errorf("%s: a tile kernel never ran", st.name)
			}
		}
	}
}

// q6KRowsTileCases builds Q6_K matrices of 1, 5 and 6 blocks a row (one span, and spans with
// a short last one) and 7, 16 and 37 rows (short tiles, a whole one, two and a short one),
// with batches of 4, 8, 12 and 20 tokens (four-input tiles, eight-input ones, both): whole
// groups of four tokens, so that only the tiles run.
func q6KRowsTileCases(t *testing.T) []tileCase {
	rng := rand.New(rand.NewPCG(63, 64))
	var cases []tileCase
	for i, shape := range [][3]int{{7, 1, 12}, {37, 6, 20}, {16, 5, 8}, {37, 5, 4}, {7, 6, 12}} {
		rows, blocks, ntok := shape[0], shape[1], shape[2]
		cols := blocks * kElems
		m := &Matrix{Type: gguf.TypeQ6_K, Rows: rows, Cols: cols}
		for r := range rows {
			m.Data = append(m.Data, q6KTileRow(rng, blocks, r+i)...)
		}
		x := make([]float32, 0, ntok*cols)
		for tok := range ntok {
			x = append(x, q6KTileInput(rng, blocks, tok+i)...)
		}
		cases = append(cases, newTileCase(t, m, x, ntok, dotQ6K))
	}
	return cases
}

// TestQ6KPanelRows runs the integer Q6_K panel (VNNI tier) on ragged row counts (panels with
// padding lanes, ranges starting inside a panel) and batches of whole groups of four tokens,
// against dotQ6K bit for bit, including lanes whose low-digit window sums are exactly −2^31.
// Mutants of the build (two rows' lanes swapped, a row's d cleared) and of the tile (two
// inputs' results swapped) must be caught.
func TestQ6KPanelRows(t *testing.T) {
	if !hasQ6KPanel() {
		t.Skip("this CPU lacks the avx512vnni tier (VNNI and VBMI) the integer Q6_K panel needs")
	}
	cases := q6KRowsTileCases(t)
	type buildKernel = func(panel []byte, rows [16]*byte, nb int)
	type tileKernel = func(panel []byte, in [8]*byte, nb int, y []float32)
	run := func(build buildKernel, tile tileKernel) (checked, bad int) {
		a := &asmKernels{q6KPanelBuild: build, q6KPanel4: tile, q6KMemory: newQ6KMemory()}
		return checkHalves(cases, true, a.q6KPanelRows)
	}
	checked, bad := run(q6KPanelBuildAVX512VNNI, q6KPanel4AVX512VNNI)
	t.Logf("%d Q6_K panel results against dotQ6K, %d differ", checked, bad)
	if bad != 0 {
		t.Errorf("%d of %d results differ from dotQ6K", bad, checked)
	}
	for _, m := range []struct {
		name  string
		build buildKernel
		tile  tileKernel
	}{
		{"rows 1 and 2 swapped", func(panel []byte, rows [16]*byte, nb int) {
			rows[1], rows[2] = rows[2], rows[1]
			q6KPanelBuildAVX512VNNI(panel, rows, nb)
		}, q6KPanel4AVX512VNNI},
		{"d of row 3 cleared", func(panel []byte, rows [16]*byte, nb int) {
			q6KPanelBuildAVX512VNNI(panel, rows, nb)
			for b := range nb {
				clear(panel[b*q6KPanelBlock+8192+8*3:][:8])
			}
		}, q6KPanel4AVX512VNNI},
		{"inputs 1 and 3 swapped", q6KPanelBuildAVX512VNNI, func(panel []byte, in [8]*byte, nb int, y []float32) {
			q6KPanel4AVX512VNNI(panel, in, nb, y)
			for r := range 16 {
				y[16+r], y[48+r] = y[48+r], y[16+r]
			}
		}},
	} {
		checked, bad := run(m.build, m.tile)
		t.Logf("panel mutant %q: %d of %d results differ", m.name, bad, checked)
		if bad == 0 {
			t.Errorf("panel mutant %q not caught", m.name)
		}
	}
}

// hasQ6KPanel reports whether this CPU runs the avx512vnni tier, whose kernels the integer
// Q6_K panel uses.
func hasQ6KPanel() bool {
	for _, st := range usableSIMD() {
		if st.name == "avx512vnni" {
			return true
		}
	}
	return false
}
