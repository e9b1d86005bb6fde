//go:build amd64

package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"unsafe"

	"github.com/klauspost/cpuid/v2"
	"github.com/trochilus-llm/trochilus/gguf"
)

// needAVX2 skips a test of the AVX2 kernels on a CPU that cannot run them.
func needAVX2(t testing.TB) {
	if !cpuid.CPU.Supports(cpuid.AVX2, cpuid.F16C) {
		t.Skipf("CPU %q lacks AVX2 or F16C: the AVX2 Q6_K kernels cannot run", cpuid.CPU.BrandName)
	}
}

// q6KAVX2Edge returns an input of blocks blocks whose X all sit at the bound of the kernels'
// dword accumulators: |X| = 31829·65536 + 32768, so the low digit is -32768 and the high one
// ±31830 in every element, with the sign of each block alternating.
func q6KAVX2Edge(blocks int) []float32 {
	x := make([]float32, blocks*kElems)
	for k := range x {
		x[k] = float32(1-2*(k/kElems%2)) * float32(math.Ldexp(31829*65536+32768, -30))
	}
	return x
}

// q6KAVX2Extreme overwrites every block of row with the weights of largest magnitude: every
// q = 0 and every scale sc (so each weight is -32·sc: 4096 for sc = -128, -4064 for 127), d
// kept. Against q6KAVX2Edge (low digit -32768 in every element) each low-digit dword
// accumulator of a half block reaches -2^31 (sc = -128) or 2^31 − 2^26 (sc = 127).
func q6KAVX2Extreme(row []byte, sc byte) {
	for b := 0; b+q6KBytes <= len(row); b += q6KBytes {
		clear(row[b : b+192])
		for j := range 16 {
			row[b+192+j] = sc
		}
	}
}

// q6KAVX2Input returns input kind of blocks blocks: random floats (0), blocks of very
// different magnitudes and zero blocks (1), a NaN or an infinity in one block (2), the
// accumulator edge (3), or random floats with one block all zero (4).
func q6KAVX2Input(rng *rand.Rand, kind, blocks int) []float32 {
	switch kind {
	case 1:
		_, x := randQ6KCase(rng, blocks, true, false)
		return x
	case 2:
		x := randFloats(rng, blocks*kElems, false, false)
		x[rng.IntN(len(x))] = []float32{float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1))}[rng.IntN(3)]
		return x
	case 3:
		return q6KAVX2Edge(blocks)
	case 4:
		x := randFloats(rng, blocks*kElems, false, false)
		b := rng.IntN(blocks)
		clear(x[b*kElems : (b+1)*kElems])
		return x
	}
	return randFloats(rng, blocks*kElems, rng.IntN(4) == 0, false)
}

// q6KAVX2Row returns a Q6_K row of blocks blocks: random (ggml's quantization or random bytes,
// with special d — zero, subnormal, negative, infinite, NaN — when special), or with every
// weight at the largest magnitude (extreme: scales -128 or 127).
func q6KAVX2Row(rng *rand.Rand, blocks int, special, extreme bool) []byte {
	row := randRow(rng, gguf.TypeQ6_K, blocks*kElems, special)
	if extreme {
		q6KAVX2Extreme(row, []byte{0x80, 0x7f}[rng.IntN(2)])
	}
	return row
}

// TestQ6KPairAVX2 compares q6KPairAVX2 with the math/big evaluation of dotQ6K (checkQ6K's 300
// rows, one row passed twice), and then row against row with a different second row on either
// side, so that the rows cannot borrow from each other: each result must equal dotQ6K's bits.
func TestQ6KPairAVX2(t *testing.T) {
	needAVX2(t)
	checked, bad, first := checkQ6K(func(row []byte, in *q4KInput) float32 {
		return q6KPairAVX2(row, row, in.wide.digits, in.scale)[0]
	})
	t.Logf("one row: %d rows checked against the math/big evaluation, %d differ", checked, bad)
	if bad != 0 {
		t.Errorf("one row: %d of %d rows differ; first: %s", bad, checked, first)
	}
	checked, bad, first = checkQ6KPairs(q6KPairAVX2)
	t.Logf("two rows: %d results checked against dotQ6K, %d differ", checked, bad)
	if bad != 0 {
		t.Errorf("two rows: %d of %d results differ; first: %s", bad, checked, first)
	}
	mutants := map[string]func(w0, w1 []byte, digits []int16, scale []float64) [2]float32{
		"rows swapped": func(w0, w1 []byte, digits []int16, scale []float64) [2]float32 {
			y := q6KPairAVX2(w0, w1, digits, scale)
			return [2]float32{y[1], y[0]}
		},
		"first row twice": func(w0, w1 []byte, digits []int16, scale []float64) [2]float32 {
			return q6KPairAVX2(w0, w0, digits, scale)
		},
		"last block left out": func(w0, w1 []byte, digits []int16, scale []float64) [2]float32 {
			return q6KPairAVX2(w0, w1, digits, scale[:len(scale)-1])
		},
	}
	for name, m := range mutants {
		_, bad, _ := checkQ6KPairs(m)
		t.Logf("mutant %q: %d of %d results differ", name, bad, checked)
		if bad == 0 {
			t.Errorf("mutant %q not caught", name)
		}
	}
}

// checkQ6KPairs runs pair on 400 pairs of different rows of 1 to 6 blocks (random, special
// scales, the largest weights) against inputs of every q6KAVX2Input kind and compares both
// results with dotQ6K.
func checkQ6KPairs(pair func(w0, w1 []byte, digits []int16, scale []float64) [2]float32) (checked, bad int, first string) {
	rng := rand.New(rand.NewPCG(61, 62))
	var in q4KInput
	for i := range 400 {
		blocks := 1 + i%6
		w0 := q6KAVX2Row(rng, blocks, i%3 == 1, i%7 == 3)
		w1 := q6KAVX2Row(rng, blocks, i%4 == 2, i%5 == 4)
		if err := prepareQ4K(&in, q6KAVX2Input(rng, i%5, blocks)); err != nil {
			return checked, bad + 1, err.Error()
		}
		got := pair(w0, w1, in.wide.digits, in.scale)
		for r, w := range [][]byte{w0, w1} {
			want := dotQ6K(w, &in)
			checked++
			if !sameBits(got[r], want) {
				if bad == 0 {
					first = fmt.Sprintf("pair %d (%d blocks), row %d: got %g (%#08x), dotQ6K %g (%#08x)",
						i, blocks, r, got[r], math.Float32bits(got[r]), want, math.Float32bits(want))
				}
				bad++
			}
		}
	}
	return checked, bad, first
}

// q6KTileCall is one call of a four-input kernel: a row and four prepared inputs.
type q6KTileCall struct {
	row    []byte
	blocks int
	ins    [4]q4KInput
}

// args returns the kernel's pointer arguments for c.
func (c *q6KTileCall) args() [8]*byte { return q6KArgs4(c.ins[:]) }

// q6KTileCalls builds 300 calls: rows of 1 to 6 blocks (random, special scales, the largest
// weights), each against four different inputs of the q6KAVX2Input kinds.
func q6KTileCalls(t *testing.T) []*q6KTileCall {
	rng := rand.New(rand.NewPCG(63, 64))
	calls := make([]*q6KTileCall, 300)
	for i := range calls {
		c := &q6KTileCall{blocks: 1 + i%6}
		c.row = q6KAVX2Row(rng, c.blocks, i%3 == 1, i%7 == 3)
		for k := range c.ins {
			if err := prepareQ4K(&c.ins[k], q6KAVX2Input(rng, (i+k)%5, c.blocks)); err != nil {
				t.Fatal(err)
			}
		}
		calls[i] = c
	}
	return calls
}

// runQ6KTiles runs tile over calls and counts the results that differ from dotQ6K.
func runQ6KTiles(calls []*q6KTileCall, tile func(w []byte, in [8]*byte, nb int) [4]float32) (checked, bad int, first string) {
	for i, c := range calls {
		got := tile(c.row, c.args(), c.blocks)
		for k := range c.ins {
			want := dotQ6K(c.row, &c.ins[k])
			checked++
			if !sameBits(got[k], want) {
				if bad == 0 {
					first = fmt.Sprintf("call %d (%d blocks), input %d: got %g (%#08x), dotQ6K %g (%#08x)",
						i, c.blocks, k, got[k], math.Float32bits(got[k]), want, math.Float32bits(want))
				}
				bad++
			}
		}
	}
	return checked, bad, first
}

// TestQ6KTile4AVX2 compares q6KTile4AVX2 with dotQ6K on 300 rows against four different
// inputs each (1200 results), bit for bit, and makes sure the comparison catches broken
// variants: two inputs' results swapped, every input given input 0's block scales, and the
// blocks' sums added in float32.
func TestQ6KTile4AVX2(t *testing.T) {
	needAVX2(t)
	calls := q6KTileCalls(t)
	checked, bad, first := runQ6KTiles(calls, q6KTile4AVX2)
	t.Logf("%d results checked against dotQ6K, %d differ", checked, bad)
	if bad != 0 {
		t.Errorf("%d of %d results differ; first: %s", bad, checked, first)
	}
	mutants := map[string]func(w []byte, in [8]*byte, nb int) [4]float32{
		"inputs 1 and 2 swapped": swapTile4(q6KTile4AVX2, 1, 2),
		"input 0's scales for all": func(w []byte, in [8]*byte, nb int) [4]float32 {
			in[5], in[6], in[7] = in[4], in[4], in[4]
			return q6KTile4AVX2(w, in, nb)
		},
		"blocks added in float32": func(w []byte, in [8]*byte, nb int) [4]float32 {
			var y [4]float32
			for b := range nb {
				var a [8]*byte
				for i := range 4 {
					a[i] = (*byte)(unsafe.Add(unsafe.Pointer(in[i]), 2*2*kElems*b))
					a[4+i] = (*byte)(unsafe.Add(unsafe.Pointer(in[4+i]), 8*b))
				}
				v := q6KTile4AVX2(w[b*q6KBytes:], a, 1)
				for i := range y {
					y[i] += v[i]
				}
			}
			return y
		},
	}
	for name, m := range mutants {
		_, bad, _ := runQ6KTiles(calls, m)
		t.Logf("mutant %q: %d of %d results differ", name, bad, checked)
		if bad == 0 {
			t.Errorf("mutant %q not caught", name)
		}
	}
}

// TestQ6KAVX2Accumulators checks that the test inputs reach the bound the kernels' dword
// accumulators are sized for: a Go model of their lanes (weight words times digit words, two
// products a dword as VPMADDWD adds them, int32 sums that wrap as VPADDD does) equals dotQ6K
// on every tile result when each dword takes 16 products (a half block per accumulator, as the
// kernels do), and must differ when it takes 32 (one accumulator per digit a block).
func TestQ6KAVX2Accumulators(t *testing.T) {
	calls := q6KTileCalls(t)
	for _, perDword := range []int{16, 32} {
		checked, bad := 0, 0
		for _, c := range calls {
			for k := range c.ins {
				checked++
				if !sameBits(q6KLaneModel(c.row, &c.ins[k], perDword), dotQ6K(c.row, &c.ins[k])) {
					bad++
				}
			}
		}
		t.Logf("%d products a dword: %d of %d results differ from dotQ6K", perDword, bad, checked)
		if perDword == 16 && bad != 0 || perDword == 32 && bad == 0 {
			t.Errorf("%d products a dword: %d of %d results differ", perDword, bad, checked)
		}
	}
}

// q6KLaneModel is dotQ6K computed as the AVX2 kernels lay it out, with dword accumulators of
// eight lanes that each take perDword products before they are widened.
func q6KLaneModel(row []byte, in *q4KInput, perDword int) float32 {
	var y float64
	for b := range in.n / kElems {
		blk := row[b*q6KBytes : (b+1)*q6KBytes]
		var T int64
		var acc [2][8]int32 // low and high digit
		count := 0
		for i := 0; i < kElems; i += 16 { // one register of 16 weight words
			for k := i; k < i+16; k += 2 {
				for dg := range 2 {
					p := int32(0)
					for e := k; e < k+2; e++ {
						g := 64*(b*8+e/32) + 32*dg + e%32
						p += int32(q6KWord(blk, e)) * int32(in.wide.digits[g])
					}
					acc[dg][k%16/2] += p
				}
			}
			if count += 2; count == perDword {
				for l := range 8 {
					T += int64(acc[0][l]) + 65536*int64(acc[1][l])
				}
				acc, count = [2][8]int32{}, 0
			}
		}
		d := float64(gguf.F16ToF32(uint16(blk[208]) | uint16(blk[209])<<8))
		y += float64(d*float64(T)) * in.scale[b]
	}
	return float32(y)
}

// q6KWord returns the weight word sc·(q−32) of element e of a Q6_K block.
func q6KWord(blk []byte, e int) int16 {
	h, c, l := e/128, e%128/32, e%32
	q := int(blk[64*h+32*(c&1)+l]>>(4*(c>>1))&15) | int(blk[128+32*h+l]>>(2*c)&3)<<4
	return int16(int(int8(blk[192+e/16])) * (q - 32))
}

// TestQ6KRowsAVX2 runs the AVX2 tier's Q6_K rows kernel (simd_q6k.go: four-input tiles, then
// pairs, then one row) over ragged shapes and token counts, in two row ranges, and compares
// every output with dotQ6K.
func TestQ6KRowsAVX2(t *testing.T) {
	needAVX2(t)
	var a *asmKernels
	for _, st := range simdTiers() {
		if st.name == "avx2" {
			a = &st.asm
		}
	}
	rng := rand.New(rand.NewPCG(65, 66))
	checked, bad := 0, 0
	for _, shape := range [][3]int{{7, 1, 9}, {21, 4, 6}, {5, 6, 3}, {18, 2, 13}, {3, 3, 1}} {
		rows, blocks, ntok := shape[0], shape[1], shape[2]
		cols := blocks * kElems
		m := &Matrix{Type: gguf.TypeQ6_K, Rows: rows, Cols: cols}
		for r := range rows {
			m.Data = append(m.Data, q6KAVX2Row(rng, blocks, r%3 == 1, r%5 == 4)...)
		}
		var x []float32
		for tok := range ntok {
			x = append(x, q6KAVX2Input(rng, tok%5, blocks)...)
		}
		var in Batch
		if err := in.Set(x, ntok, cols); err != nil {
			t.Fatal(err)
		}
		if err := in.prepareAll(NewPool(1)); err != nil {
			t.Fatal(err)
		}
		dst := make([]float32, ntok*rows)
		a.q6KRows(dst, m, &in, 0, rows/2)
		a.q6KRows(dst, m, &in, rows/2, rows)
		for tok := range ntok {
			for r := range rows {
				checked++
				if !sameBits(dst[tok*rows+r], dotQ6K(m.Row(r), &in.q4k[tok])) {
					bad++
				}
			}
		}
	}
	t.Logf("%d rows-kernel results checked against dotQ6K, %d differ", checked, bad)
	if bad != 0 {
		t.Errorf("%d of %d results differ", bad, checked)
	}
}
