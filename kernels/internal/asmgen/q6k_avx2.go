package main

import (
	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	"github.com/mmcloughlin/avo/reg"
)

// q6KAVX2Kernels emits the AVX2 kernels of dotQ6K, the exact-integer Q6_K dot on the prepared
// Q4_K input (its q4KWide digits X = lo + 65536·hi and its block scales 2^-sh):
//
//	func q6KPairAVX2(w0, w1 []byte, digits []int16, scale []float64) [2]float32
//	func q6KTile4AVX2(w []byte, in [8]*byte, nb int) [4]float32
//
// the first computes two rows against one input (decode), the second one row against four
// inputs (prompts; in[t] points at input t's digits, in[4+t] at its scales), each block's
// weights decoded and scaled once for the four. Both follow the same steps, a quarter of a half
// block (32 elements, which are exactly one 32-element group of the digits) at a time:
//
//   - The bytes (q XOR 32) << 2, which read as signed bytes are 4·(q−32), are assembled as in
//     q6KNibbles: the ql bytes shifted left or right 2 and masked to bits 2-5, the qh bytes
//     shifted left 6−2c and masked to bits 6-7. The flip of bit 7 is done once a half, on qh
//     (XOR 0xaa flips the top bit of every pair).
//   - ql and qh are loaded through VPERMQ 0xd8 (qwords 0, 2, 1, 3; one instruction with the
//     load; ql once for the quarters c and c+2 that share it, see q6KQuarters), so that the two in-lane byte unpacks with zero that follow give elements 0-15 and
//     16-31 in order, each byte in the high byte of its word: 1024·(q−32). VPMULHW by the
//     word 64·sc keeps the high half of 65536·sc·(q−32), which is exactly the weight word
//     sc·(q−32), in [-4064, 4096]; the scales are stored a block at a time as dwords holding
//     the word twice, so that each sub-block's broadcast is a plain dword load.
//   - VPMADDWD with the lo and the hi digit words adds pairs of products into dword
//     accumulators. A dword can hold 16 products and no more: with weights in [-4064, 4096]
//     and digits in [-32768, 32767] (hi within ±31831), 16 products lie in [-2^31, 2^31),
//     the low end reached only by 4096·-32768 sixteen times. Sixteen a dword is one half
//     block of one digit, so each half has its own accumulators, and at its end they are
//     widened to float64 (VCVTDQ2PD) and folded to four partial sums of lo + 65536·hi:
//     integers below 2^50, every step exact.
//   - At the block end the partial sums are added to T (exact below 2^53), v = fl64(d·T),
//     and y = fl64(y + fl64(v·2^-sh)), the rows (inputs) side by side in float64 lanes, each
//     lane rounding exactly where dotQ6K does; no FMA. The result is one rounding to float32.
//
// Against the float-lane AVX2 kernels they replaced (since removed; BenchmarkQ6KAVX2 then, one
// thread, Zen 5) the pair ran 1.53-1.58 times as fast, the tile 1.11-1.15 times in cache and
// 1.15-1.30 from RAM. A quarter costs the pair about 10 vector instructions of decode and 8 of products a row
// (the float kernel about 10 to assemble the bytes and 20 to widen, scale, multiply and add
// them), so the pair gains most. The tile shares the decode among four inputs in both forms,
// and without VNNI the products of 16 weight words with the two digits cost VPMADDWD and
// VPADDD twice, four instructions, as many as the float kernel's VMULPS and VADDPS for them.
func q6KAVX2Kernels(s isa) {
	flip := GLOBL("q6KFlipAVX2", RODATA|NOPTR)
	for i := range 8 {
		DATA(4*i, U32(0xaaaaaaaa))
	}
	m := q6KIntMasks{nibble: q6KTables.ymmMasks, pair: q6KTables.ymmMasks.Offset(32), flip: flip}
	q6KPairAVX2Kernel(s, m)
	q6KTile4AVX2Kernel(s, m)
}

// q6KIntMasks are the 32-byte memory operands of the AVX2 integer Q6_K decode: 0x3c (a low
// nibble in bits 2-5), 0xc0 (a high pair in bits 6-7) and 0xaa (every pair's top bit).
type q6KIntMasks struct{ nibble, pair, flip Mem }

// q6KScaleWords stores the 16 scales of the Q6_K block at w as the words 64·sc, each a dword
// holding it twice, at dst (64 bytes; q6KScaleWord gives the place of sc_j): VPUNPCKLWD and
// VPUNPCKHWD double the words within 128-bit lanes.
func q6KScaleWords(w reg.Register, dst Mem) {
	v := YMM()
	VPMOVSXBW(Mem{Base: w, Disp: 192}, v)
	VPSLLW(U8(6), v, v)
	lo := YMM()
	VPUNPCKLWD(v, v, lo) // sc_0..3, sc_8..11
	VPUNPCKHWD(v, v, v)  // sc_4..7, sc_12..15
	VMOVDQU(lo, dst)
	VMOVDQU(v, dst.Offset(32))
}

// q6KScaleWord returns the offset of sc_j's dword in q6KScaleWords' layout.
func q6KScaleWord(j int) int { return 4*(j%4) + 16*(j/8) + 32*(j/4%2) }

// q6KHighPairs loads the 32 qh bytes of half h of the block at w, in VPERMQ 0xd8 order with
// every pair's top bit flipped.
func q6KHighPairs(m q6KIntMasks, w reg.Register, h int) reg.VecVirtual {
	qh := YMM()
	VPERMQ(U8(0xd8), Mem{Base: w, Disp: 128 + 32*h}, qh)
	VPXOR(m.flip, qh, qh)
	return qh
}

// q6KQuarters is the order in which the kernels run the quarters of a half block: quarters c
// and c+2 take the low and the high nibbles of the same 32 ql bytes, which are loaded once for
// the two (the pair 4-5% faster, the tile 2-3.5%, than loading them again for c+2). Quarter 0
// comes first: it starts the half's sums.
var q6KQuarters = []int{0, 2, 1, 3}

// q6KLowBits loads the 32 ql bytes of quarters c and c+2 of half h of the block at w, in
// VPERMQ 0xd8 order.
func q6KLowBits(w reg.Register, h, c int) reg.VecVirtual {
	ql := YMM()
	VPERMQ(U8(0xd8), Mem{Base: w, Disp: 64*h + 32*(c&1)}, ql)
	return ql
}

// q6KQuarterWords returns the weight words sc·(q−32) of quarter c of half h of a block
// (elements 128h+32c+l): l < 16 in the first register, l >= 16 in the second. ql is the
// quarter's q6KLowBits, qh the half's q6KHighPairs, zero a zero register, words the block's
// q6KScaleWords.
func q6KQuarterWords(m q6KIntMasks, ql reg.VecVirtual, h, c int, qh, zero reg.VecVirtual, words Mem) (reg.VecVirtual, reg.VecVirtual) {
	// Word shifts: the bits they carry from one byte into the next are masked off.
	a := YMM()
	if c < 2 {
		VPSLLW(U8(2), ql, a)
	} else {
		VPSRLW(U8(2), ql, a)
	}
	VPAND(m.nibble, a, a)
	t := YMM()
	if c < 3 {
		VPSLLW(U8(6-2*c), qh, t)
		VPAND(m.pair, t, t)
	} else {
		VPAND(m.pair, qh, t)
	}
	VPOR(a, t, t)
	lo := YMM()
	VPUNPCKLBW(t, zero, lo) // 1024·(q−32), elements 0-15
	VPUNPCKHBW(t, zero, t)  // elements 16-31
	j := 8*h + 2*c
	sc := YMM()
	VPBROADCASTD(words.Offset(q6KScaleWord(j)), sc)
	VPMULHW(sc, lo, lo)
	VPBROADCASTD(words.Offset(q6KScaleWord(j+1)), sc)
	VPMULHW(sc, t, t)
	return lo, t
}

// q6KQuarterProducts adds the products of the weight words of quarter c of half h (from
// q6KQuarterWords) with the input's digits of the block at dig into the half's accumulators
// lo and hi; quarter 0 starts them.
func q6KQuarterProducts(s isa, words [2]reg.VecVirtual, dig reg.Register, h, c int, lo, hi reg.VecVirtual) {
	g := 4*h + c // the 32-element group of the digits: 32 lo words, then 32 hi words
	for p, w := range words {
		for i, acc := range []reg.VecVirtual{lo, hi} {
			startOrMadd(s, false, c == 0 && p == 0, w, Mem{Base: dig, Disp: 128*g + 64*i + 32*p}, acc)
		}
	}
}

// q6KWiden returns the four float64 partial sums of lo + 65536·hi over the dword accumulators
// lo and hi of a half block: the dwords converted exactly, each sum an integer below 2^50.
func q6KWiden(s isa, lo, hi reg.VecVirtual) reg.VecVirtual {
	t, u := widenSum(lo), widenSum(hi)
	VMULPD(s.f64Digit, u, u)
	VADDPD(u, t, t)
	return t
}

// q6KHalfSums widens the accumulators of half h of a block, lo[i] and hi[i] of each row (or
// input) i, to four float64 partial sums (q6KWiden): after the first half they wait at
// first+32i, after the second the two halves' sums go to t[i].
func q6KHalfSums(s isa, h int, lo, hi []reg.VecVirtual, first Mem, t []reg.VecVirtual) {
	for i := range lo {
		v := q6KWiden(s, lo[i], hi[i])
		if h == 0 {
			VMOVUPD(v, first.Offset(32*i))
		} else {
			VADDPD(first.Offset(32*i), v, v)
			t[i] = v
		}
	}
}

// q6KPairAVX2Kernel emits q6KPairAVX2 (see q6KAVX2Kernels). The two rows take turns quarter by
// quarter, sharing the digit loads' cache lines; eight dword accumulators (two rows × two
// digits, one half), the zero, the rows' qh and ql and a quarter's words fit the 16 registers,
// and the first half's float64 partial sums wait on the stack.
func q6KPairAVX2Kernel(s isa, m q6KIntMasks) {
	name := "q6KPairAVX2"
	declare(name, NOSPLIT, "func(w0, w1 []byte, digits []int16, scale []float64) [2]float32",
		name+" returns dotQ6K of the Q6_K rows w0 and w1 against a prepared input.")
	w := []reg.Register{Load(Param("w0").Base(), GP64()), Load(Param("w1").Base(), GP64())}
	dig := Load(Param("digits").Base(), GP64())
	scale := Load(Param("scale").Base(), GP64())
	n := Load(Param("scale").Len(), GP64())
	words := AllocLocal(128) // row r's scale words at 64r
	first := AllocLocal(64)  // row r's partial sums of the first half at 32r
	zero := YMM()
	VPXOR(zero, zero, zero)
	y := XMM() // row 0's sum in float64 lane 0, row 1's in lane 1
	VXORPD(y, y, y)
	blockLoop(n, func() {
		for r := range 2 {
			prefetch(Mem{Base: w[r], Disp: prefetchAhead}, 210)
			q6KScaleWords(w[r], words.Offset(64*r))
		}
		var t [2]reg.VecVirtual
		for h := range 2 {
			qh := [2]reg.VecVirtual{q6KHighPairs(m, w[0], h), q6KHighPairs(m, w[1], h)}
			var lo, hi [2]reg.VecVirtual
			for r := range 2 {
				lo[r], hi[r] = YMM(), YMM()
			}
			var ql [2]reg.VecVirtual
			for _, c := range q6KQuarters {
				for r := range 2 {
					if c < 2 {
						ql[r] = q6KLowBits(w[r], h, c)
					}
					a, b := q6KQuarterWords(m, ql[r], h, c, qh[r], zero, words.Offset(64*r))
					q6KQuarterProducts(s, [2]reg.VecVirtual{a, b}, dig, h, c, lo[r], hi[r])
				}
			}
			q6KHalfSums(s, h, lo[:], hi[:], first, t[:])
		}
		// (T0, T1) in float64 lanes 0 and 1: exact.
		u := YMM()
		VHADDPD(t[1], t[0], u) // t0[0]+t0[1], t1[0]+t1[1], t0[2]+t0[3], t1[2]+t1[3]
		tt := XMM()
		VEXTRACTF128(U8(1), u, tt)
		VADDPD(u.AsX(), tt, tt)
		// The rows' d: the dword before it holds sc_14 and sc_15 (a block ends with d).
		d := XMM()
		VMOVD(Mem{Base: w[0], Disp: 206}, d)
		VPSRLD(U8(16), d, d)
		VPINSRW(U8(1), Mem{Base: w[1], Disp: 208}, d, d)
		VCVTPH2PS(d, d)
		VCVTPS2PD(d, d)
		VMULPD(d, tt, tt) // fl64(d·T)
		sh := XMM()
		VMOVDDUP(Mem{Base: scale}, sh)
		VMULPD(sh, tt, tt)
		VADDPD(tt, y, y)
		for r := range 2 {
			ADDQ(U32(210), w[r])
		}
		ADDQ(U32(1024), dig)
		ADDQ(U8(8), scale)
	})
	VCVTPD2PSX(y, y)
	VMOVQ(y, Mem{Base: frameAddr(ReturnIndex(0))})
	VZEROUPPER()
	RET()
}

// q6KTile4AVX2Kernel emits q6KTile4AVX2 (see q6KAVX2Kernels). Each quarter's weight words are
// formed once and multiplied with the four inputs' digits; the eight dword accumulators of a
// half (four inputs × two digits), the zero, qh, ql and the words fit the 16 registers, and the
// first half's partial sums and the four sums y wait on the stack. At the block end the four
// inputs' T go to one register, one per float64 lane, for d, 2^-sh and y.
func q6KTile4AVX2Kernel(s isa, m q6KIntMasks) {
	name := "q6KTile4AVX2"
	declare(name, NOSPLIT, "func(w []byte, in [8]*byte, nb int) [4]float32",
		name+" returns dotQ6K of the Q6_K row w against four prepared inputs.")
	w := Load(Param("w").Base(), GP64())
	args := frameAddr(Param("in"))
	n := Load(Param("nb"), GP64())
	dig := loadPointers(args, 4)
	scOff := GP64() // the block's offset into the scales, in bytes
	XORQ(scOff, scOff)
	words := AllocLocal(64)
	first := AllocLocal(128) // input i's partial sums of the first half at 32i
	y := AllocLocal(32)      // the four sums, a float64 each
	zero := YMM()
	VPXOR(zero, zero, zero)
	VMOVUPD(zero, y)
	blockLoop(n, func() {
		prefetch(Mem{Base: w, Disp: prefetchAhead}, 210)
		q6KScaleWords(w, words)
		var t [4]reg.VecVirtual
		for h := range 2 {
			qh := q6KHighPairs(m, w, h)
			var lo, hi [4]reg.VecVirtual
			for i := range 4 {
				lo[i], hi[i] = YMM(), YMM()
			}
			var ql reg.VecVirtual
			for _, c := range q6KQuarters {
				if c < 2 {
					ql = q6KLowBits(w, h, c)
				}
				a, b := q6KQuarterWords(m, ql, h, c, qh, zero, words)
				for i := range 4 {
					q6KQuarterProducts(s, [2]reg.VecVirtual{a, b}, dig[i], h, c, lo[i], hi[i])
				}
			}
			q6KHalfSums(s, h, lo[:], hi[:], first, t[:])
		}
		// (T0, T1, T2, T3), one per float64 lane: exact.
		u01, u23 := YMM(), YMM()
		VHADDPD(t[1], t[0], u01) // T0a T1a T0b T1b
		VHADDPD(t[3], t[2], u23) // T2a T3a T2b T3b
		tt, tb := YMM(), YMM()
		VPERM2F128(U8(0x20), u23, u01, tt)
		VPERM2F128(U8(0x31), u23, u01, tb)
		VADDPD(tb, tt, tt)
		d := XMM()
		VPBROADCASTW(Mem{Base: w, Disp: 208}, d)
		VCVTPH2PS(d, d)
		dd := YMM()
		VCVTPS2PD(d, dd)
		VMULPD(dd, tt, tt) // fl64(d·T)
		var sh [2]reg.VecVirtual
		for p := range sh {
			sh[p] = XMM()
			for i := range 2 {
				sp := GP64()
				MOVQ(Mem{Base: args, Disp: 8 * (4 + 2*p + i)}, sp)
				if i == 0 {
					VMOVSD(Mem{Base: sp, Index: scOff, Scale: 1}, sh[p])
				} else {
					VMOVHPD(Mem{Base: sp, Index: scOff, Scale: 1}, sh[p], sh[p])
				}
			}
		}
		shv := YMM()
		VINSERTF128(U8(1), sh[1], sh[0].AsY(), shv)
		VMULPD(shv, tt, tt)
		VADDPD(y, tt, tt)
		VMOVUPD(tt, y)
		ADDQ(U32(210), w)
		for _, p := range dig {
			ADDQ(U32(1024), p)
		}
		ADDQ(U8(8), scOff)
	})
	v := YMM()
	VMOVUPD(y, v)
	out := XMM()
	VCVTPD2PSY(v, out)
	VMOVUPS(out, Mem{Base: frameAddr(ReturnIndex(0))})
	VZEROUPPER()
	RET()
}
