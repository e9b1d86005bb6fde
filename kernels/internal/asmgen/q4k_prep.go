package main

import (
	"math"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	"github.com/mmcloughlin/avo/reg"
)

// q4KPrepKernel emits
//
//	func q4KPrepAVX512(x []float32, X []int32, sums []int64, scale []float64, digits []int16, wsums []float64) int
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
func q4KPrepKernel() {
	const name = "q4KPrepAVX512"
	TEXT(name, NOSPLIT, "func(x []float32, X []int32, sums []int64, scale []float64, digits []int16, wsums []float64) int")
	Pragma("noescape")
	Doc(name + " prepares the whole blocks of x for Q4_K up to the first one holding a NaN or an infinity; it returns how many it prepared.")
	xp := Load(Param("x").Base(), GP64())
	n := Load(Param("x").Len(), GP64())
	Xp := Load(Param("X").Base(), GP64())
	sp := Load(Param("sums").Base(), GP64())
	scp := Load(Param("scale").Base(), GP64())
	dp := Load(Param("digits").Base(), GP64())
	wp := Load(Param("wsums").Base(), GP64())
	SHRQ(U8(8), n) // blocks
	done := GP64()
	XORQ(done, done)

	ones := ZMM()
	VPTERNLOGD(U8(0xff), ones, ones, ones)
	abs := ZMM()
	VPSRLD(U8(1), ones, abs) // 0x7fffffff
	half := ZMM()
	VPSRLD(U8(31), ones, half)
	VPSLLD(U8(15), half, half) // 0x8000

	xmant := q4KPrepConst()

	Label("q4kprep_block")
	CMPQ(done, n)
	JAE(LabelRef("q4kprep_done"))

	// The largest magnitude's bits: four running unsigned maxima, then across the lanes.
	mx := make([]reg.VecVirtual, 4)
	for i := range mx {
		mx[i] = ZMM()
		VPANDD(Mem{Base: xp, Disp: 64 * i}, abs, mx[i])
	}
	for i := 4; i < 16; i++ {
		t := ZMM()
		VPANDD(Mem{Base: xp, Disp: 64 * i}, abs, t)
		VPMAXUD(t, mx[i%4], mx[i%4])
	}
	VPMAXUD(mx[1], mx[0], mx[0])
	VPMAXUD(mx[3], mx[2], mx[2])
	VPMAXUD(mx[2], mx[0], mx[0])
	hy := YMM()
	VEXTRACTI64X4(U8(1), mx[0], hy)
	VPMAXUD(hy, mx[0].AsY(), hy)
	hx := XMM()
	VEXTRACTI128(U8(1), hy, hx)
	VPMAXUD(hx, hy.AsX(), hx)
	t1 := XMM()
	VPSHUFD(U8(0x4e), hx, t1)
	VPMAXUD(t1, hx, hx)
	VPSHUFD(U8(0xb1), hx, t1)
	VPMAXUD(t1, hx, hx)
	mb := GP32()
	VMOVD(hx, mb)
	CMPL(mb, U32(math.Float32bits(math.MaxFloat32)))
	JA(LabelRef("q4kprep_done"))

	up := q4KPrepShift(hx, mb, scp, xmant)
	upv := ZMM()
	VPBROADCASTQ(up, upv)

	for j := range 8 { // sub-blocks of 32
		var s reg.VecVirtual
		var xs [2]reg.Register
		for h := range 2 { // halves of 16
			var y [2]reg.VecVirtual
			for i := range 2 { // groups of 8
				g := 4*j + 2*h + i
				d := ZMM()
				VCVTPS2PD(Mem{Base: xp, Disp: 32 * g}, d)
				VMULPD(upv, d, d)
				y[i] = YMM()
				VCVTPD2DQ_RN_SAE(d, y[i])
				q := ZMM()
				VPMOVSXDQ(y[i], q)
				if s == nil {
					s = q
				} else {
					VPADDQ(q, s, s)
				}
			}
			z := y[0].AsZ()
			VINSERTI64X4(U8(1), y[1], z, z)
			VMOVDQU32(z, Mem{Base: Xp, Disp: 128*j + 64*h})
			xs[h] = z
		}
		for h, z := range xs {
			lo := YMM()
			VPMOVDW(z, lo)
			VMOVDQU(lo, Mem{Base: dp, Disp: 128*j + 32*h})
			hi := ZMM()
			VPADDD(half, z, hi)
			VPSRAD(U8(16), hi, hi)
			hw := YMM()
			VPMOVDW(hi, hw)
			VMOVDQU(hw, Mem{Base: dp, Disp: 128*j + 64 + 32*h})
		}
		sy := YMM()
		VEXTRACTI64X4(U8(1), s, sy)
		VPADDQ(sy, s.AsY(), sy)
		sx := XMM()
		VEXTRACTI128(U8(1), sy, sx)
		VPADDQ(sx, sy.AsX(), sx)
		t := XMM()
		VPSHUFD(U8(0x4e), sx, t)
		VPADDQ(t, sx, sx)
		VMOVQ(sx, Mem{Base: sp, Disp: 8 * j})
		VCVTQQ2PD(sx, sx)
		VMOVSD(sx, Mem{Base: wp, Disp: 8 * j})
	}

	ADDQ(U32(1024), xp)
	ADDQ(U32(1024), Xp)
	ADDQ(U8(64), sp)
	ADDQ(U8(8), scp)
	ADDQ(U32(1024), dp)
	ADDQ(U8(64), wp)
	INCQ(done)
	JMP(LabelRef("q4kprep_block"))

	Label("q4kprep_done")
	VZEROUPPER()
	Store(done, ReturnIndex(0))
	RET()
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

// q4KPrepKernelAVX2 emits q4KPrepAVX2, q4KPrepAVX512's AVX2 counterpart: the same algorithm in
// ymm registers 0-15. VCVTPD2DQ has no embedded rounding in VEX form and rounds as MXCSR says:
// to nearest even, which Go never changes. The words are packed by VPACKUSDW (the low halves,
// masked to [0, 65535]) and VPACKSSDW (the high digits, within int16), exact both, which
// interleave the 128-bit lanes of their two sources; VPERMQ puts them back in order.
func q4KPrepKernelAVX2() {
	const name = "q4KPrepAVX2"
	TEXT(name, NOSPLIT, "func(x []float32, X []int32, sums []int64, scale []float64, digits []int16, wsums []float64) int")
	Pragma("noescape")
	Doc(name + " prepares the whole blocks of x for Q4_K up to the first one holding a NaN or an infinity; it returns how many it prepared.")
	xp := Load(Param("x").Base(), GP64())
	n := Load(Param("x").Len(), GP64())
	Xp := Load(Param("X").Base(), GP64())
	sp := Load(Param("sums").Base(), GP64())
	scp := Load(Param("scale").Base(), GP64())
	dp := Load(Param("digits").Base(), GP64())
	wp := Load(Param("wsums").Base(), GP64())
	SHRQ(U8(8), n) // blocks
	done := GP64()
	XORQ(done, done)

	ones := YMM()
	VPCMPEQD(ones, ones, ones)
	abs := YMM()
	VPSRLD(U8(1), ones, abs) // 0x7fffffff
	low := YMM()
	VPSRLD(U8(16), ones, low) // 0x0000ffff
	half := YMM()
	VPSRLD(U8(31), ones, half)
	VPSLLD(U8(15), half, half) // 0x8000
	xmant := q4KPrepConst()

	Label("q4kprep2_block")
	CMPQ(done, n)
	JAE(LabelRef("q4kprep2_done"))

	mx := make([]reg.VecVirtual, 4)
	for i := range mx {
		mx[i] = YMM()
		VPAND(Mem{Base: xp, Disp: 32 * i}, abs, mx[i])
	}
	for i := 4; i < 32; i++ {
		t := YMM()
		VPAND(Mem{Base: xp, Disp: 32 * i}, abs, t)
		VPMAXUD(t, mx[i%4], mx[i%4])
	}
	VPMAXUD(mx[1], mx[0], mx[0])
	VPMAXUD(mx[3], mx[2], mx[2])
	VPMAXUD(mx[2], mx[0], mx[0])
	hx := XMM()
	VEXTRACTI128(U8(1), mx[0], hx)
	VPMAXUD(hx, mx[0].AsX(), hx)
	t1 := XMM()
	VPSHUFD(U8(0x4e), hx, t1)
	VPMAXUD(t1, hx, hx)
	VPSHUFD(U8(0xb1), hx, t1)
	VPMAXUD(t1, hx, hx)
	mb := GP32()
	VMOVD(hx, mb)
	CMPL(mb, U32(math.Float32bits(math.MaxFloat32)))
	JA(LabelRef("q4kprep2_done"))
	up := q4KPrepShift(hx, mb, scp, xmant)
	upx := XMM()
	VMOVQ(up, upx)
	upv := YMM()
	VPBROADCASTQ(upx, upv)

	for j := range 8 { // sub-blocks of 32
		var s reg.VecVirtual
		var y [4]reg.VecVirtual // X of the sub-block, eight a register
		for i := range 4 {
			q := [2]reg.VecVirtual{XMM(), XMM()}
			for h := range 2 { // groups of 4
				g := 8*j + 2*i + h
				d := YMM()
				VCVTPS2PD(Mem{Base: xp, Disp: 16 * g}, d)
				VMULPD(upv, d, d)
				VCVTPD2DQY(d, q[h])
				w := YMM()
				VPMOVSXDQ(q[h], w)
				if s == nil {
					s = w
				} else {
					VPADDQ(w, s, s)
				}
			}
			y[i] = YMM()
			VINSERTI128(U8(1), q[1], q[0].AsY(), y[i])
			VMOVDQU(y[i], Mem{Base: Xp, Disp: 128*j + 32*i})
		}
		for h := range 2 { // words 16h to 16h+15
			a, b := YMM(), YMM()
			VPAND(low, y[2*h], a)
			VPAND(low, y[2*h+1], b)
			VPACKUSDW(b, a, a)
			VPERMQ(U8(0xd8), a, a)
			VMOVDQU(a, Mem{Base: dp, Disp: 128*j + 32*h})
			VPADDD(half, y[2*h], a)
			VPSRAD(U8(16), a, a)
			VPADDD(half, y[2*h+1], b)
			VPSRAD(U8(16), b, b)
			VPACKSSDW(b, a, a)
			VPERMQ(U8(0xd8), a, a)
			VMOVDQU(a, Mem{Base: dp, Disp: 128*j + 64 + 32*h})
		}
		sx := XMM()
		VEXTRACTI128(U8(1), s, sx)
		VPADDQ(sx, s.AsX(), sx)
		t := XMM()
		VPSHUFD(U8(0x4e), sx, t)
		VPADDQ(t, sx, sx)
		VMOVQ(sx, Mem{Base: sp, Disp: 8 * j})
		g := GP64()
		VMOVQ(sx, g)
		VCVTSI2SDQ(g, sx, sx)
		VMOVSD(sx, Mem{Base: wp, Disp: 8 * j})
	}

	ADDQ(U32(1024), xp)
	ADDQ(U32(1024), Xp)
	ADDQ(U8(64), sp)
	ADDQ(U8(8), scp)
	ADDQ(U32(1024), dp)
	ADDQ(U8(64), wp)
	INCQ(done)
	JMP(LabelRef("q4kprep2_block"))

	Label("q4kprep2_done")
	VZEROUPPER()
	Store(done, ReturnIndex(0))
	RET()
}
