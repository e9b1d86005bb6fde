package main

import (
	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	"github.com/mmcloughlin/avo/reg"
)

// The slots of the table the exp kernels read (see expTable in package kernels): 64 powers
// 2^(j/64), then the constants of expFloat64 and Exp, float64 unless noted.
const (
	expInvLn2By64 = 64 + iota
	expShifter    // also read as its bits: k = bits(x·64/ln2 + shifter) − bits(shifter)
	expLn2Hi
	expLn2Lo
	expC120
	expC24
	expC6
	expHalf
	expBelow        // 1 − 2^-50
	expAbove        // 1 + 2^-50
	expOverflowF32  // float32 bits in the low half
	expUnderflowF32 // float32 bits in the low half
	expBiasK        // int64 1023·64: (k + 1023·64) >> 6 is the biased exponent of 2^(k>>6)
	expInfF32       // float32 +Inf bits in the low half
	expSignF32      // float32 sign bit in the low half
	expOneF32       // float32 1 in the low half
)

// expKernel emits one of the vector Exp kernels (AVX2 encodings, so every SIMD tier can use
// them):
//
//	func expShiftAVX2(dst, src []float32, shift float32, tab *[80]float64) int
//	func swiGLUAVX2(dst, gate, up []float32, tab *[80]float64) int
//
// expShift writes dst[i] = Exp(src[i] − shift) (the difference rounded to float32, as Softmax
// computes it); swiGLU writes dst[i] = (g/(1 + Exp(−g)))·up[i] with g = gate[i], each
// operation rounded to float32 (SiLU and SwiGLU). Both run groups of 8 over the whole groups of
// their first slice and return how many elements they wrote: all whole groups, or fewer when a
// group holds an element they leave to the scalar Exp (a NaN, or one of the arguments whose
// float64 value lies too near a float32 rounding boundary); the caller computes that group
// with the scalar code and calls again after it.
//
// Each lane computes expFloat64 step for step (the same float64 operations, each rounded, no
// FMA, the table 2^(j/64) gathered by j = k & 63) and Exp's rounding test; arguments above
// expOverflow give +Inf and below expUnderflow +0, as in Exp.
func expKernel(swiglu bool) {
	name := "expShiftAVX2"
	sig := "func(dst, src []float32, shift float32, tab *[80]float64) int"
	doc := "expShiftAVX2 writes Exp(src[i] − shift) into dst for the whole groups of 8 of src up to the first it leaves to the scalar Exp, and returns how many it wrote."
	if swiglu {
		name = "swiGLUAVX2"
		sig = "func(dst, gate, up []float32, tab *[80]float64) int"
		doc = "swiGLUAVX2 writes SiLU(gate[i])·up[i] into dst for the whole groups of 8 of gate up to the first it leaves to the scalar code, and returns how many it wrote."
	}
	declare(name, NOSPLIT, sig,
		doc)
	dst := Load(Param("dst").Base(), GP64())
	var src, up reg.Register
	var n reg.Register
	if swiglu {
		src = Load(Param("gate").Base(), GP64())
		n = Load(Param("gate").Len(), GP64())
		up = Load(Param("up").Base(), GP64())
	} else {
		src = Load(Param("src").Base(), GP64())
		n = Load(Param("src").Len(), GP64())
	}
	tab := Load(Param("tab"), GP64())
	slot := func(i int) Mem { return Mem{Base: tab, Disp: 8 * i} }
	var shift reg.VecVirtual
	if !swiglu {
		// Broadcast from memory once, before the loop: a legacy-SSE load (what Load emits for
		// a float32) in the loop, with the upper halves dirty, cost an SSE/AVX transition a
		// group on Intel and made the kernel 3× slower than the scalar Exp (LESSONS 46).
		shift = YMM()
		VBROADCASTSS(paramAddr("shift"), shift)
	}
	SHRQ(U8(3), n) // whole groups
	done := GP64()
	XORQ(done, done)
	Label("group")
	TESTQ(n, n)
	JZ(LabelRef("out"))
	g := YMM() // the gate (SwiGLU) or the argument
	VMOVUPS(Mem{Base: src, Index: done, Scale: 4}, g)
	xs := YMM()
	if swiglu {
		VBROADCASTSS(slot(expSignF32), xs)
		VXORPS(g, xs, xs) // −g, exactly
	} else {
		VSUBPS(shift, g, xs) // src − shift, rounded
	}
	lim, over, under := YMM(), YMM(), YMM()
	VBROADCASTSS(slot(expOverflowF32), lim)
	VCMPPS(U8(0x1e), lim, xs, over) // xs > expOverflow (ordered)
	VBROADCASTSS(slot(expUnderflowF32), lim)
	VCMPPS(U8(0x11), lim, xs, under) // xs < expUnderflow (ordered)
	inr := YMM()
	VCMPPS(U8(0x07), xs, xs, inr) // ordered: not a NaN
	VORPS(under, over, lim)
	VANDNPS(inr, lim, inr) // in range: not NaN, not over, not under
	xc := YMM()
	VANDPS(inr, xs, xc) // out-of-range lanes become +0, harmless below
	lo, hi := YMM(), YMM()
	for h := range 2 {
		xh := XMM()
		if h == 0 {
			VMOVAPS(xc.AsX(), xh)
		} else {
			VEXTRACTF128(U8(1), xc, xh)
		}
		l, u := expCore(xh, slot, tab)
		if h == 0 {
			VMOVAPS(l, lo.AsX())
			VMOVAPS(u, hi.AsX())
		} else {
			VINSERTF128(U8(1), l, lo, lo)
			VINSERTF128(U8(1), u, hi, hi)
		}
	}
	eq := YMM()
	VCMPPS(U8(0x00), hi, lo, eq) // the error interval rounds to one float32
	VANDPS(inr, eq, eq)
	// Lanes left to the scalar code: neither decided here nor out of range.
	all := YMM()
	VORPS(over, eq, all)
	VORPS(under, all, all)
	mask := GP32()
	VMOVMSKPS(all, mask)
	CMPL(mask, U8(0xff))
	JNE(LabelRef("out"))
	res := YMM()
	VANDPS(eq, lo, res)
	inf := YMM()
	VBROADCASTSS(slot(expInfF32), inf)
	VANDPS(over, inf, inf)
	VORPS(inf, res, res) // +Inf above the range; +0 below it (res is masked)
	if swiglu {
		one := YMM()
		VBROADCASTSS(slot(expOneF32), one)
		VADDPS(one, res, res) // 1 + Exp(−g)
		VDIVPS(res, g, res)   // g / (1 + Exp(−g))
		VMULPS(Mem{Base: up, Index: done, Scale: 4}, res, res)
	}
	VMOVUPS(res, Mem{Base: dst, Index: done, Scale: 4})
	ADDQ(U8(8), done)
	DECQ(n)
	JMP(LabelRef("group"))
	Label("out")
	Store(done, ReturnIndex(0))
	VZEROUPPER()
	RET()
}

// expCore evaluates four lanes of Exp's float64 steps for the float32 arguments in x (all
// within Exp's range) and returns the two float32 roundings Exp compares, of y·(1 − 2^-50) and
// y·(1 + 2^-50).
func expCore(x reg.VecVirtual, slot func(int) Mem, tab reg.Register) (lo, hi reg.VecVirtual) {
	xd := YMM()
	VCVTPS2PD(x, xd)
	kd := YMM()
	VBROADCASTSD(slot(expInvLn2By64), kd)
	VMULPD(xd, kd, kd)
	sh := YMM()
	VBROADCASTSD(slot(expShifter), sh)
	VADDPD(sh, kd, kd) // its low bits hold k
	k := YMM()
	VPSUBQ(sh, kd, k)  // k = bits(kd) − bits(shifter), an int64
	VSUBPD(sh, kd, kd) // kd = k as a float64
	t := YMM()
	VBROADCASTSD(slot(expLn2Hi), t)
	VMULPD(kd, t, t)
	r := YMM()
	VSUBPD(t, xd, r)
	VBROADCASTSD(slot(expLn2Lo), t)
	VMULPD(kd, t, t)
	VSUBPD(t, r, r)
	q := YMM()
	VBROADCASTSD(slot(expC120), q)
	VMULPD(r, q, q)
	VBROADCASTSD(slot(expC24), t)
	VADDPD(t, q, q)
	VMULPD(r, q, q)
	VBROADCASTSD(slot(expC6), t)
	VADDPD(t, q, q)
	VMULPD(r, q, q)
	VBROADCASTSD(slot(expHalf), t)
	VADDPD(t, q, q)
	VMULPD(r, r, t)
	VMULPD(q, t, t)
	VADDPD(r, t, t) // p
	// 2^(j/64) for j = k & 63 (all ones shifted right by 58: the low 6 bits of each qword).
	j := YMM()
	VPCMPEQQ(j, j, j)
	VPSRLQ(U8(58), j, j)
	VPAND(k, j, j)
	m := YMM()
	VPCMPEQQ(m, m, m)
	p2 := YMM()
	VXORPD(p2, p2, p2)
	VGATHERQPD(m, Mem{Base: tab, Index: j, Scale: 8}, p2)
	VMULPD(p2, t, t)
	VADDPD(p2, t, t) // y = t + t·p
	// 2^(k>>6) as bits: (k + 1023·64) >> 6 is the biased exponent (k > −65472 here).
	b := YMM()
	VPBROADCASTQ(slot(expBiasK), b)
	VPADDQ(b, k, k)
	VPSRLQ(U8(6), k, k)
	VPSLLQ(U8(52), k, k)
	VMULPD(k, t, t) // y·2^(k>>6), exact
	lo, hi = XMM(), XMM()
	u := YMM()
	VBROADCASTSD(slot(expBelow), u)
	VMULPD(t, u, u)
	VCVTPD2PSY(u, lo)
	VBROADCASTSD(slot(expAbove), u)
	VMULPD(t, u, u)
	VCVTPD2PSY(u, hi)
	return lo, hi
}
