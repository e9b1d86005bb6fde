package kernels

import (
	"fmt"
	"math"

	"github.com/trochilus-llm/trochilus/gguf"
)

// q4kXMax bounds the fixed-point inputs of the Q4_K definition: 32295 + 64591·32295, the
// largest value whose balanced base-64591 digits both fit in int16 (which is what the SIMD
// tiers multiply).
const q4kXMax = 2085998640

// q4KInput is one float32 input row prepared for Q4_K dots: each 256-element block scaled by
// the largest power of two 2^sh that keeps its largest magnitude within q4kXMax and rounded to
// integers X (nearest, ties to even). It is computed once per input row and shared by every
// Q4_K matrix that reads the row. The zero value is empty; prepareQ4K fills it, reusing its
// memory when it is large enough.
type q4KInput struct {
	n     int
	x     []int32   // X_k
	sums  []int64   // sum of X over each 32-element sub-block
	scale []float64 // 2^-sh per block; NaN for a block holding a NaN or an infinity

	wide q4KWide // the same numbers laid out for the SIMD tiers (see q4KWide)
}

// Len returns the number of elements of the prepared row.
func (in *q4KInput) Len() int { return in.n }

// prepareQ4K prepares x for Q4_K dots into dst. len(x) must be a multiple of 256. It is the
// definition: a tier's vector preparation (see prepareQ4KWith) writes the same bits.
func prepareQ4K(dst *q4KInput, x []float32) error { return prepareQ4KWith(dst, x, nil) }

// q4KPrepKernel is a tier's vector Q4_K preparation: it prepares the whole blocks of x into
// the fields of a q4KInput (X, sums, scale) and its q4KWide (digits, sums), in order, exactly
// as prepareQ4KBlock and q4KWide.prepare do, and stops before the first block holding a NaN or
// an infinity, returning the number of blocks it prepared.
type q4KPrepKernel func(x []float32, X []int32, sums []int64, scale []float64, digits []int16, wsums []float64) int

// prepareQ4KWith is prepareQ4K through kern where it is not nil: the blocks holding a NaN or an
// infinity, which kern leaves, go through the definition.
func prepareQ4KWith(dst *q4KInput, x []float32, kern q4KPrepKernel) error {
	n := len(x)
	if n%kElems != 0 {
		return fmt.Errorf("kernels: Q4_K input of %d floats is not a whole number of %d-element blocks", n, kElems)
	}
	if cap(dst.x) < n {
		dst.x = make([]int32, n)
		dst.sums = make([]int64, n/32)
		dst.scale = make([]float64, n/kElems)
	}
	dst.n = n
	dst.x, dst.sums, dst.scale = dst.x[:n], dst.sums[:n/32], dst.scale[:n/kElems]
	if kern == nil {
		for b := range n / kElems {
			prepareQ4KBlock(dst, b, x[b*kElems:(b+1)*kElems])
		}
		dst.wide.prepare(dst)
		return nil
	}
	w := &dst.wide
	w.resize(n)
	nb := n / kElems
	for b := 0; b < nb; {
		b += kern(x[b*kElems:], dst.x[b*kElems:], dst.sums[8*b:], dst.scale[b:], w.digits[2*kElems*b:], w.sums[8*b:])
		if b < nb { // block b holds a NaN or an infinity
			prepareQ4KBlock(dst, b, x[b*kElems:(b+1)*kElems])
			w.fill(dst, 8*b, 8*b+8)
			b++
		}
	}
	return nil
}

func prepareQ4KBlock(dst *q4KInput, b int, xb []float32) {
	// The largest magnitude, found on the bits: for non-negative floats their order is the
	// order of the bit patterns, so an integer max (no branches, no NaN rules) finds it; a NaN
	// or an infinity has the largest patterns of all.
	var mb uint32
	for _, v := range xb {
		mb = max(mb, math.Float32bits(v)&^(1<<31))
	}
	if mb > math.Float32bits(math.MaxFloat32) { // NaN or ±Inf: the whole block's result is NaN
		clear(dst.x[b*kElems : (b+1)*kElems])
		clear(dst.sums[b*8 : b*8+8])
		dst.scale[b] = math.NaN()
		return
	}
	m := math.Float32frombits(mb)
	sh := 0
	if m != 0 {
		// m = f·2^e with f in [1/2, 1), so m·2^(31−e) lies in [2^30, 2^31); one step down
		// when that exceeds q4kXMax.
		_, e := math.Frexp(float64(m))
		sh = 31 - e
		if math.Ldexp(float64(m), sh) > q4kXMax {
			sh--
		}
	}
	// Both scalings are exact: x·2^sh stays within float64's normal range for every float32 x
	// and every sh in [-98, 180].
	up := math.Ldexp(1, sh)
	dst.scale[b] = math.Ldexp(1, -sh)
	X := dst.x[b*kElems : (b+1)*kElems]
	for k, v := range xb {
		X[k] = int32(math.RoundToEven(float64(v) * up))
	}
	for j := range 8 {
		var s int64
		for _, v := range X[32*j : 32*j+32] {
			s += int64(v)
		}
		dst.sums[b*8+j] = s
	}
}

// dotQ4K is the Q4_K row dot, defined in exact integers: for each 256-element block with
// fixed-point inputs X and scale 2^-sh (see q4KInput),
//
//	T = Σ_j sc_j · Σ_{k in sub-block j} q_k·X_k    (exact int64)
//	M = Σ_j m_j · Σ_{k in sub-block j} X_k         (exact int64)
//	v = fl64(fl64(d·T) − fl64(dmin·M))             (d, dmin the block's f16 values)
//
// then y = +0 and y = fl64(y + v·2^-sh) over the blocks in order (the scaling is exact), and
// the result is float32(y), one rounding. Every sum inside a block is an exact integer, so a
// tier may add them in any order or width and give the same bits. A block of x holding a NaN or
// an infinity makes the result NaN. in must have been prepared from as many floats as row holds
// elements.
func dotQ4K(row []byte, in *q4KInput) float32 { return dotBlocks(row, in, q4KBytes, q4KBlock) }

// dotBlocks is the end of the definitions on prepared inputs (dotQ4K, dotQ6K): y = +0, then
// y = fl64(y + v·2^-sh) over the blocks of row (blockBytes each) in order, v = block(...) the
// block's value, and the result float32(y).
func dotBlocks(row []byte, in *q4KInput, blockBytes int, block func(blk []byte, in *q4KInput, b int) float64) float32 {
	var y float64
	for b := range in.n / kElems {
		blk := row[b*blockBytes : (b+1)*blockBytes]
		y += float64(block(blk, in, b) * in.scale[b])
	}
	return float32(y)
}

// q4KBlock returns v for block b of a Q4_K row (see dotQ4K).
func q4KBlock(blk []byte, in *q4KInput, b int) float64 {
	d, dmin := float64(half(blk[0:])), float64(half(blk[2:]))
	scales := (*[12]byte)(blk[4:16])
	var t, m int64
	for c := range 4 {
		sc0, m0 := gguf.ScaleMinK4(2*c, scales)
		sc1, m1 := gguf.ScaleMinK4(2*c+1, scales)
		q := blk[16+32*c : 16+32*c+32]
		X := in.x[b*kElems+64*c : b*kElems+64*c+64]
		var s0, s1 int64
		for l := range 32 {
			s0 += int64(q[l]&15) * int64(X[l])
			s1 += int64(q[l]>>4) * int64(X[32+l])
		}
		t += int64(sc0)*s0 + int64(sc1)*s1
		m += int64(m0)*in.sums[b*8+2*c] + int64(m1)*in.sums[b*8+2*c+1]
	}
	return float64(d*float64(t)) - float64(dmin*float64(m))
}
