package main

import (
	"math"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	"github.com/mmcloughlin/avo/reg"
)

// q4KPrepKernel emits
//
//	func q4KPrep<suffix>(x []float32, X []int32, sums []int64, scale []float64, digits []int16, wsums []float64) int
//
// the Q4_K input preparation (PrepareQ4K and q4KWide.prepare of package kernels) of the whole
// 256-element blocks of x, in order: per block the largest magnitude m (an unsigned max of the
// bits with the sign cleared), sh, X = round_half_even(x·2^sh), the sub-block sums of X, the
// scale 2^-sh, and the wide layout (per 32 elements the 32 low words of X, sign-extended
// digits, then the 32 high words, and the sums as float64). It stops before the first block
// holding a NaN or an infinity (the bits of m above those of MaxFloat32), which the Go side
// does, and returns the number of blocks it wrote.
//
// sh comes from float64(m) = 1.f·2^(E−1023) (exact, float32 subnormals included): m lies in
// [2^(E−1023), 2^(E−1022)), so Frexp's exponent is E−1022 and sh = 31 − (E−1022) = 1053 − E;
// m·2^sh has the bits of float64(m) with the exponent replaced by 1053, so it exceeds XMAX
// exactly when the mantissa bits of float64(m) exceed those of XMAX (both in [2^30, 2^31)),
// and then sh is one less. 2^sh and 2^-sh are built from their exponents (sh in [-98, 180]).
// x·2^sh is exact in float64 and within ±XMAX, so VCVTPD2DQ with embedded round-to-nearest-
// even gives the definition's X whatever MXCSR holds. The high digit is (X + 32768) >> 16
// (arithmetic): with X = lo + 65536·hi and lo in [−32768, 32767], X + 32768 = (lo + 32768) +
// 65536·hi with the first term in [0, 65535], and X + 32768 cannot overflow since
// |X| ≤ XMAX. The sums of 32 X (below 2^36 in magnitude) are exact in int64 and in float64.
//
// The AVX2 form runs the same algorithm in ymm registers 0-15. VCVTPD2DQ has no embedded
// rounding in VEX form and rounds as MXCSR says: to nearest even, which Go never changes. The
// words are packed by VPACKUSDW (the low halves, masked to [0, 65535]) and VPACKSSDW (the high
// digits, within int16), exact both, which interleave the 128-bit lanes of their two sources;
// VPERMQ puts them back in order.
func q4KPrepKernel(s isa) {
	name := "q4KPrep" + s.suffix
	label := "q4kprep"
	if s.parts == 2 {
		label = "q4kprep2" // as it was when the tiers had a generator each
	}
	declare(name, NOSPLIT, "func(x []float32, X []int32, sums []int64, scale []float64, digits []int16, wsums []float64) int",
		name+" prepares the whole blocks of x for Q4_K up to the first one holding a NaN or an infinity; it returns how many it prepared.")
	k := q4KPrep{s: s}
	k.x = Load(Param("x").Base(), GP64())
	n := Load(Param("x").Len(), GP64())
	k.X = Load(Param("X").Base(), GP64())
	k.sums = Load(Param("sums").Base(), GP64())
	k.scale = Load(Param("scale").Base(), GP64())
	k.digits = Load(Param("digits").Base(), GP64())
	k.wsums = Load(Param("wsums").Base(), GP64())
	SHRQ(U8(8), n) // blocks
	done := GP64()
	XORQ(done, done)

	ones := s.vec()
	if s.parts == 1 {
		VPTERNLOGD(U8(0xff), ones, ones, ones)
	} else {
		VPCMPEQD(ones, ones, ones)
	}
	abs := s.vec()
	VPSRLD(U8(1), ones, abs) // 0x7fffffff
	if s.parts == 2 {
		k.low = s.vec()
		VPSRLD(U8(16), ones, k.low) // 0x0000ffff
	}
	k.half = s.vec()
	VPSRLD(U8(31), ones, k.half)
	VPSLLD(U8(15), k.half, k.half) // 0x8000
	xmant := q4KPrepConst()

	Label(label + "_block")
	CMPQ(done, n)
	JAE(LabelRef(label + "_done"))
	hx, mb := k.maxBits(abs)
	CMPL(mb, U32(math.Float32bits(math.MaxFloat32)))
	JA(LabelRef(label + "_done"))
	var up Op = q4KPrepShift(hx, mb, k.scale, xmant)
	if s.parts == 2 { // VEX broadcasts only from a vector register
		upx := XMM()
		VMOVQ(up, upx)
		up = upx
	}
	k.up = s.vec()
	VPBROADCASTQ(up, k.up)

	for j := range 8 { // sub-blocks of 32
		if s.parts == 1 {
			k.storeSums(k.wordsAVX512(j), j)
		} else {
			k.storeSums(k.wordsAVX2(j), j)
		}
	}

	ADDQ(U32(1024), k.x)
	ADDQ(U32(1024), k.X)
	ADDQ(U8(64), k.sums)
	ADDQ(U8(8), k.scale)
	ADDQ(U32(1024), k.digits)
	ADDQ(U8(64), k.wsums)
	INCQ(done)
	JMP(LabelRef(label + "_block"))

	Label(label + "_done")
	VZEROUPPER()
	Store(done, ReturnIndex(0))
	RET()
}

// q4KPrep holds the registers of q4KPrepKernel.
type q4KPrep struct {
	s                                isa
	x, X, sums, scale, digits, wsums reg.Register   // the current block's
	up                               reg.VecVirtual // 2^sh in every float64 lane
	half                             reg.VecVirtual // 0x8000 in every dword
	low                              reg.VecVirtual // 0xffff in every dword (AVX2)
}

// maxBits returns the bits of the largest magnitude of the block at k.x, in the low dword of
// an xmm register and in a general register: four independent running unsigned maxima of
// the bits with the sign cleared (abs), then across the lanes.
func (k *q4KPrep) maxBits(abs reg.VecVirtual) (hx reg.VecVirtual, mb reg.GPVirtual) {
	s := k.s
	size := 4 * s.width() // bytes a register
	mx := make([]reg.VecVirtual, 4)
	for i := range mx {
		mx[i] = s.vec()
		s.and(Mem{Base: k.x, Disp: size * i}, abs, mx[i])
	}
	for i := 4; i < 1024/size; i++ {
		t := s.vec()
		s.and(Mem{Base: k.x, Disp: size * i}, abs, t)
		VPMAXUD(t, mx[i%4], mx[i%4])
	}
	VPMAXUD(mx[1], mx[0], mx[0])
	VPMAXUD(mx[3], mx[2], mx[2])
	VPMAXUD(mx[2], mx[0], mx[0])
	hx = reduceLanes(mx[0], VPMAXUD, 0x4e, 0xb1)
	mb = GP32()
	VMOVD(hx, mb)
	return hx, mb
}

// wordsAVX512 converts sub-block j (32 elements) of the block to X, stores X and its digit
// words, and returns a register of qword partial sums of its X.
func (k *q4KPrep) wordsAVX512(j int) (sum reg.VecVirtual) {
	var xs [2]reg.Register
	for h := range 2 { // halves of 16
		var y [2]reg.VecVirtual
		for i := range 2 { // groups of 8
			g := 4*j + 2*h + i
			d := ZMM()
			VCVTPS2PD(Mem{Base: k.x, Disp: 32 * g}, d)
			VMULPD(k.up, d, d)
			y[i] = YMM()
			VCVTPD2DQ_RN_SAE(d, y[i])
			q := ZMM()
			VPMOVSXDQ(y[i], q)
			sum = addQwords(sum, q)
		}
		z := y[0].AsZ()
		VINSERTI64X4(U8(1), y[1], z, z)
		VMOVDQU32(z, Mem{Base: k.X, Disp: 128*j + 64*h})
		xs[h] = z
	}
	for h, z := range xs {
		lo := YMM()
		VPMOVDW(z, lo)
		VMOVDQU(lo, Mem{Base: k.digits, Disp: 128*j + 32*h})
		hi := ZMM()
		VPADDD(k.half, z, hi)
		VPSRAD(U8(16), hi, hi)
		hw := YMM()
		VPMOVDW(hi, hw)
		VMOVDQU(hw, Mem{Base: k.digits, Disp: 128*j + 64 + 32*h})
	}
	return sum
}

// wordsAVX2 is wordsAVX512 in ymm registers.
func (k *q4KPrep) wordsAVX2(j int) (sum reg.VecVirtual) {
	var y [4]reg.VecVirtual // X of the sub-block, eight a register
	for i := range 4 {
		q := [2]reg.VecVirtual{XMM(), XMM()}
		for h := range 2 { // groups of 4
			g := 8*j + 2*i + h
			d := YMM()
			VCVTPS2PD(Mem{Base: k.x, Disp: 16 * g}, d)
			VMULPD(k.up, d, d)
			VCVTPD2DQY(d, q[h])
			w := YMM()
			VPMOVSXDQ(q[h], w)
			sum = addQwords(sum, w)
		}
		y[i] = YMM()
		VINSERTI128(U8(1), q[1], q[0].AsY(), y[i])
		VMOVDQU(y[i], Mem{Base: k.X, Disp: 128*j + 32*i})
	}
	for h := range 2 { // words 16h to 16h+15
		a, b := YMM(), YMM()
		VPAND(k.low, y[2*h], a)
		VPAND(k.low, y[2*h+1], b)
		VPACKUSDW(b, a, a)
		VPERMQ(U8(0xd8), a, a)
		VMOVDQU(a, Mem{Base: k.digits, Disp: 128*j + 32*h})
		VPADDD(k.half, y[2*h], a)
		VPSRAD(U8(16), a, a)
		VPADDD(k.half, y[2*h+1], b)
		VPSRAD(U8(16), b, b)
		VPACKSSDW(b, a, a)
		VPERMQ(U8(0xd8), a, a)
		VMOVDQU(a, Mem{Base: k.digits, Disp: 128*j + 64 + 32*h})
	}
	return sum
}

// addQwords returns sum + q (qword lanes), or q for the first term (sum nil).
func addQwords(sum, q reg.VecVirtual) reg.VecVirtual {
	if sum == nil {
		return q
	}
	VPADDQ(q, sum, sum)
	return sum
}

// storeSums adds the qword partial sums of sub-block j up and stores the sum as an int64 and
// as a float64.
func (k *q4KPrep) storeSums(sum reg.VecVirtual, j int) {
	sx := reduceLanes(sum, VPADDQ, 0x4e)
	VMOVQ(sx, Mem{Base: k.sums, Disp: 8 * j})
	if k.s.parts == 1 {
		VCVTQQ2PD(sx, sx)
	} else { // VEX has no VCVTQQ2PD
		g := GP64()
		VMOVQ(sx, g)
		VCVTSI2SDQ(g, sx, sx)
	}
	VMOVSD(sx, Mem{Base: k.wsums, Disp: 8 * j})
}

// reduceLanes folds the lanes of v into the lowest with op (VPMAXUD, VPADDQ, ...) and returns
// the xmm register holding it: a zmm's 256-bit halves, a ymm's 128-bit halves, then within
// the xmm by the VPSHUFD orders shuffles (0x4e swaps the qwords, 0xb1 the dwords of each).
func reduceLanes(v reg.VecVirtual, op func(...Op), shuffles ...uint8) reg.VecVirtual {
	for v.Size() > 16 {
		hi := halfOf(v, 1)
		op(hi, halfOf(v, 0), hi)
		v = hi
	}
	t := XMM()
	for _, sh := range shuffles {
		VPSHUFD(U8(sh), v, t)
		op(t, v, v)
	}
	return v
}

// q4KPrepConst loads the constant of q4KPrepShift: XMAX's float64 mantissa bits, shifted to
// the top of the register.
func q4KPrepConst() reg.GPVirtual {
	xmant := GP64()
	MOVQ(U64(math.Float64bits(2085998640)<<12), xmant)
	return xmant
}

// q4KPrepShift emits sh for a block whose largest magnitude m is in the low lane of hx and
// in mb (its bits): sh = 1053 − E (E the biased exponent of float64(m)), one less when
// float64(m)'s mantissa bits exceed XMAX's (xmant, as q4KPrepConst loads it), 0 for an
// all-zero block. It stores the block's
// scale 2^-sh at scp and returns a register holding the bits of 2^sh.
func q4KPrepShift(hx reg.VecVirtual, mb reg.GPVirtual, scp, xmant reg.Register) reg.GPVirtual {
	md := XMM()
	VCVTSS2SD(hx, hx, md)
	bits := GP64()
	VMOVQ(md, bits)
	e := GP64()
	MOVQ(bits, e)
	SHRQ(U8(52), e)
	SHLQ(U8(12), bits) // the mantissa, compared at the top of the register
	sh := GP64()
	MOVQ(U32(1053), sh)
	SUBQ(e, sh)
	shm := GP64()
	LEAQ(Mem{Base: sh, Disp: -1}, shm)
	CMPQ(bits, xmant)
	CMOVQHI(shm, sh)
	TESTL(mb, mb)
	CMOVQEQ(mb.As64(), sh) // mb is 0 (VMOVD zeroed the upper half)
	up, down := GP64(), GP64()
	LEAQ(Mem{Base: sh, Disp: 1023}, up)
	SHLQ(U8(52), up)
	MOVQ(U32(1023), down)
	SUBQ(sh, down)
	SHLQ(U8(52), down)
	MOVQ(down, Mem{Base: scp})
	return up
}
