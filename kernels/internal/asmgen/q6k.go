package main

import (
	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	"github.com/mmcloughlin/avo/reg"
)

// q6KBody is the Q6_K block body of a tier, without VBMI (the VBMI tier's kernels come from
// q6KAVX512Kernels).
func q6KBody(s isa) block {
	if s.parts == 1 {
		return q6KBlockBytes(s, q6KTables, false)
	}
	return q6KBlockAVX2(s, q6KTables)
}

// q6KConsts are the read-only tables of the Q6_K bodies.
type q6KConsts struct {
	shifts        Mem // words: left shifts 6|4 (the low nibbles' quarters), then 2|0 (the high ones')
	spread        Mem // VPERMB indices: group j's byte i in every byte of dword i, j < 4, 64 bytes each
	vbmiScale     Mem // the float32 2^-26, the weight of the VPERMB dwords
	widenScale    Mem // the float32 2^-2, the weight of the VPMOVSXBD dwords
	m3C, mC0, m80 Mem // byte masks: the nibble's bits, the high pair's, the sign
	ymmMasks      Mem // the three byte masks again as 32-byte operands, 32 bytes each (AVX2)
}

// q6KTables holds the Q6_K tables once main has defined them with q6KConstants.
var q6KTables q6KConsts

// q6KConstants defines the Q6_K tables in the read-only data.
func q6KConstants() q6KConsts {
	c := q6KConsts{shifts: GLOBL("q6KLeftShifts", RODATA|NOPTR)}
	for i := range 64 {
		DATA(2*i, U16(6-2*(i/16)))
	}
	c.spread = GLOBL("q6KSpread", RODATA|NOPTR)
	for j := range 4 {
		for i := range 16 {
			DATA(64*j+4*i, U32(uint32(16*j+i)*0x01010101))
		}
	}
	c.vbmiScale = ConstData("q6KScaleVBMI", U32(0x32800000))
	c.widenScale = ConstData("q6KScaleWiden", U32(0x3e800000))
	c.m3C = ConstData("q6KNibble", U32(0x3c3c3c3c))
	c.mC0 = ConstData("q6KHighPair", U32(0xc0c0c0c0))
	c.m80 = ConstData("q6KSign", U32(0x80808080))
	c.ymmMasks = GLOBL("q6KMasks", RODATA|NOPTR)
	for i, m := range []uint32{0x3c3c3c3c, 0xc0c0c0c0, 0x80808080} {
		for b := 0; b < 32; b += 4 {
			DATA(32*i+b, U32(m))
		}
	}
	return c
}

// q6KAVX512Kernels emits the AVX-512 Q6_K kernels that main's loop over the lane types does
// not: two and four rows of the AVX-512 tier (q6KRowsKernel, widening), and every lanes kernel
// of the VBMI tier (suffix AVX512VNNI): one row and one row against four inputs with the VPERMB
// body, two and four rows with q6KRowsKernel.
func q6KAVX512Kernels(s isa) {
	q6KRowsKernel(s, 2, q6KTables, false, "lanes2Q6K"+s.suffix)
	q6KRowsKernel(s, 4, q6KTables, false, "lanesRows4Q6K"+s.suffix)
	s.suffix = "AVX512VNNI"
	body := q6KBlockBytes(s, q6KTables, true)
	lanesKernel(s, "Q6K", 210, body)
	q6KRowsKernel(s, 2, q6KTables, true, "lanes2Q6K"+s.suffix)
	lanes4Kernel(s, "Q6K", 210, body)
	q6KRowsKernel(s, 4, q6KTables, true, "lanesRows4Q6K"+s.suffix)
}

// q6KBlockBytes is the AVX-512 Q6_K body. It assembles the 6-bit values q 64 at a time as bytes
// holding (q XOR 32) << 2, which, read as a signed byte, is 4·(q−32): the 64 ql bytes of a half
// block give the low nibbles of elements 0-63 (shifted left 2), the high nibbles of 64-127
// (shifted right 2); the 32 qh bytes, broadcast to both 256-bit halves and shifted left per
// word by 6|4 or 2|0, give the high bit pairs in bits 6 and 7; two VPTERNLOGD mask, merge and
// flip the sign bit (q6KNibbles).
//
// Each group of 16 such bytes then becomes 16 dwords: with VBMI (vbmi set) one zero-masked
// VPERMB puts byte i into the top byte of dword i, an exact (q−32)·2^26, and the block scales
// are (d·2^-26)·sc; without it VEXTRACTI32X4 and VPMOVSXBD widen them to 4·(q−32), and the
// scales are (d·2^-2)·sc. Either way the converted dword times the scale is exactly
// (d·sc)·(q−32): every factor is exact (d is an f16, at least 2^-24 when not zero, so d·2^-26
// is a normal float32; |sc| ≤ 2^7, |q−32| ≤ 2^5, and d has 11 significant bits, so each
// product has at most 23), so the one rounding of the product leaves the exact weight, zeros'
// signs included (the product of the three signs either way); an infinite d gives the same
// infinities, and NaN where the definition's (d·sc)·(q−32) does.
// Then the contract product with x and the lane add.
//
// The scales go to the stack and each group's multiply broadcasts its own from there (an
// embedded broadcast: no instruction of its own). Storing them as two 32-byte halves, as the
// Q4_K kernels do for their dword loads, measured no faster here (13.8 against 13.7 GB/s
// in cache two rows a call, 15.6 against 15.7 for q6KRowsKernel's four).
func q6KBlockBytes(s isa, c q6KConsts, vbmi bool) block {
	return func(w reg.Register, use func(v reg.VecVirtual, p, elem int)) int {
		ds := AllocLocal(64)
		q6KScales(s, c, vbmi, w, ds)
		var spread []reg.VecVirtual
		var mask reg.OpmaskVirtual
		if vbmi {
			spread, mask = q6KSpread(c)
		}
		m := q6KMasks(c)
		for h := range 2 {
			l, hb := q6KLoadHalf(w, h)
			for k := range 2 { // the low nibbles (elements 0-63 of the half), then the high
				t := q6KNibbles(c, m, l, hb, k)
				for j := range 4 { // the four groups of 16 elements in t
					g := 8*h + 4*k + j
					q := q6KGroup(t, j, spread, mask)
					VMULPS_BCST(ds.Offset(4*g), q, q)
					use(q, 0, 16*g)
				}
			}
		}
		return 256
	}
}

// q6KScales stores the 16 scales of the block at w, (d·2^-26)·sc (vbmi) or (d·2^-2)·sc, at ds.
func q6KScales(s isa, c q6KConsts, vbmi bool, w reg.Register, ds Mem) {
	d := halfScale(s, Mem{Base: w, Disp: 208})
	if vbmi {
		VMULPS_BCST(c.vbmiScale, d, d)
	} else {
		VMULPS_BCST(c.widenScale, d, d)
	}
	v := ZMM()
	VPMOVSXBD(Mem{Base: w, Disp: 192}, v)
	VCVTDQ2PS(v, v)
	VMULPS(d, v, v)
	VMOVUPS(v, ds)
}

// q6KSpread loads the four VPERMB index registers and the mask of the dwords' top bytes.
func q6KSpread(c q6KConsts) ([]reg.VecVirtual, reg.OpmaskVirtual) {
	var spread []reg.VecVirtual
	for j := range 4 {
		spread = append(spread, ZMM())
		VMOVDQU64(c.spread.Offset(64*j), spread[j])
	}
	mask := K()
	top := GP64()
	MOVQ(U64(0x8888888888888888), top)
	KMOVQ(top, mask)
	return spread, mask
}

// q6KGroup returns group j of the 64 bytes t of q6KNibbles as 16 floats: (q−32)·2^26 by
// VPERMB where spread (and mask) come from q6KSpread, 4·(q−32) by VPMOVSXBD where spread is nil.
func q6KGroup(t reg.VecVirtual, j int, spread []reg.VecVirtual, mask reg.OpmaskVirtual) reg.VecVirtual {
	q := ZMM()
	if spread != nil {
		VPERMB_Z(t, spread[j], mask, q)
	} else {
		src := t.AsX()
		if j > 0 {
			src = XMM()
			VEXTRACTI32X4(U8(j), t, src)
		}
		VPMOVSXBD(src, q)
	}
	VCVTDQ2PS(q, q)
	return q
}

// q6KByteMasks are the byte masks of q6KNibbles in registers.
type q6KByteMasks struct{ m3C, mC0, m80 reg.VecVirtual }

func q6KMasks(c q6KConsts) q6KByteMasks {
	m := q6KByteMasks{ZMM(), ZMM(), ZMM()}
	VPBROADCASTD(c.m3C, m.m3C)
	VPBROADCASTD(c.mC0, m.mC0)
	VPBROADCASTD(c.m80, m.m80)
	return m
}

// q6KLoadHalf loads the 64 ql bytes of half h of the block at w, and its 32 qh bytes into both
// 256-bit halves of a register.
func q6KLoadHalf(w reg.Register, h int) (l, hb reg.VecVirtual) {
	l, hb = ZMM(), ZMM()
	VMOVDQU64(Mem{Base: w, Disp: 64 * h}, l)
	VBROADCASTI64X4(Mem{Base: w, Disp: 128 + 32*h}, hb)
	return l, hb
}

// q6KNibbles returns the 64 bytes (q XOR 32) << 2 of elements 64k..64k+63 of a half block (see
// q6KBlockBytes) from its ql bytes l and qh bytes hb.
func q6KNibbles(c q6KConsts, m q6KByteMasks, l, hb reg.VecVirtual, k int) reg.VecVirtual {
	a, t := ZMM(), ZMM()
	if k == 0 {
		VPSLLW(U8(2), l, a) // the word shifts carry bits across bytes only where the masks drop them
	} else {
		VPSRLW(U8(2), l, a)
	}
	VPSLLVW(c.shifts.Offset(64*k), hb, t)
	VPTERNLOGD(U8(0x6a), m.m80, m.mC0, t) // (t & 0xc0) ^ 0x80
	VPTERNLOGD(U8(0xf8), m.m3C, a, t)     // t | (a & 0x3c)
	return t
}

// q6KBlockAVX2 is the AVX2 Q6_K body. A block is 128 bytes ql of low nibbles, 64 bytes qh of
// high bit pairs, 16 int8 scales and the f16 d; element i = 128h + 32c + l has
// q = (ql[64h+32(c&1)+l] >> 4(c>>1)) & 15 | ((qh[32h+l] >> 2c) & 3) << 4 and the weight
// (d·sc[i/16])·(q−32) (as decodeQ6K). The body forms the bytes (q XOR 32) << 2 of
// q6KBlockBytes 32 at a time, one quarter c of a half block: the ql bytes shifted left or
// right 2 and the qh bytes shifted left 6−2c, masked, merged and the sign bit flipped with
// 32-byte operands from memory. It stores them to the stack and widens them 8 at a time with
// VPMOVSXBD from there (a load and one shuffle); the scales are (d·2^-2)·sc, so each
// converted dword times its scale is exactly the weight, as in q6KBlockBytes.
func q6KBlockAVX2(s isa, c q6KConsts) block {
	return func(w reg.Register, use func(v reg.VecVirtual, p, elem int)) int {
		ds := AllocLocal(64)
		qs := AllocLocal(32)
		d := halfScale(s, Mem{Base: w, Disp: 208})
		quarter := YMM()
		VBROADCASTSS(c.widenScale, quarter)
		VMULPS(quarter, d, d)
		for p := range s.parts {
			v := s.vec()
			VPMOVSXBD(Mem{Base: w, Disp: 192 + s.width()*p}, v)
			VCVTDQ2PS(v, v)
			VMULPS(d, v, v)
			VMOVUPS(v, ds.Offset(4*s.width()*p))
		}
		for h := range 2 {
			for cq := range 4 {
				a, t := YMM(), YMM()
				VMOVDQU(Mem{Base: w, Disp: 64*h + 32*(cq&1)}, a)
				if cq < 2 {
					VPSLLW(U8(2), a, a)
				} else {
					VPSRLW(U8(2), a, a)
				}
				VPAND(c.ymmMasks, a, a)
				VMOVDQU(Mem{Base: w, Disp: 128 + 32*h}, t)
				if cq < 3 {
					VPSLLW(U8(6-2*cq), t, t)
				}
				VPAND(c.ymmMasks.Offset(32), t, t)
				VPXOR(c.ymmMasks.Offset(64), t, t)
				VPOR(a, t, t)
				VMOVDQU(t, qs)
				for g := range 2 { // the two groups of 16 elements of the quarter
					sc := s.vec()
					VBROADCASTSS(ds.Offset(4*(8*h+2*cq+g)), sc)
					for p := range s.parts {
						e := 16*g + 8*p
						q := s.vec()
						VPMOVSXBD(qs.Offset(e), q)
						VCVTDQ2PS(q, q)
						VMULPS(sc, q, q)
						use(q, p, 128*h+32*cq+e)
					}
				}
			}
		}
		return 256
	}
}

// q6KRowsKernel emits name, the Q6_K lanes of rows weight rows against one x with the decode
// of q6KBlockBytes (VPERMB where vbmi is set): rows = 2 is
//
//	func(w0, w1 []byte, x []float32) [2][16]float32
//
// (lanes2Kernel's form), rows = 4 is func(w []byte, x []float32) [4][16]float32 (rows4Kernel's).
// The rows' blocks are decoded together and their groups interleaved, so that independent
// products and adds sit side by side in the instruction stream (a whole block of one row ahead
// of the other's, as lanes2Kernel emits it, ran about 10% slower); the index registers and
// masks are loaded once a call. Each row stores its scales in its own 64 bytes of the frame.
func q6KRowsKernel(s isa, rows int, c q6KConsts, vbmi bool, name string) {
	var w []reg.Register
	var n, ahead, size reg.Register
	prefetch := func(r, off int) Mem { return Mem{Base: w[r], Disp: prefetchAhead + off} }
	if rows == 2 {
		TEXT(name, NOSPLIT, "func(w0, w1 []byte, x []float32) [2][16]float32")
		Pragma("noescape")
		Doc(name + " returns the lanes of the products of the len(w0)/210 whole Q6_K blocks of w0 and of as many of w1 with x.")
		w = []reg.Register{Load(Param("w0").Base(), GP64()), Load(Param("w1").Base(), GP64())}
		n = Load(Param("w0").Len(), GP64())
	} else {
		// Not NOSPLIT: four rows' scales and the frame exceed what a NOSPLIT function may use,
		// so this one checks the stack on entry.
		TEXT(name, 0, "func(w []byte, x []float32) [4][16]float32")
		Pragma("noescape")
		Doc(name + " returns the lanes of the products of the whole Q6_K blocks of the four rows of w (len(w)/4 bytes each) with x.")
		w0 := Load(Param("w").Base(), GP64())
		size = Load(Param("w").Len(), GP64())
		rowBytes := GP64()
		MOVQ(size, rowBytes)
		SHRQ(U8(2), rowBytes)
		w = []reg.Register{w0}
		for r := 1; r < rows; r++ {
			wr := GP64()
			LEAQ(Mem{Base: w[r-1], Index: rowBytes, Scale: 1}, wr)
			w = append(w, wr)
		}
		n = rowBytes
		// Each row prefetches the same bytes of a row a whole number of calls ahead (of len(w)
		// bytes, at least prefetchAhead), which a later call of the pass reads: the rows of a
		// call are contiguous, and so are the calls. Streamed from RAM, two calls ahead for
		// OLMoE's 2048×1024 down projection (3,360-byte calls) ran 2-3% faster than one
		// (BenchmarkStreamPrefetch); PREFETCHNTA, a far PREFETCHT1/T2 level, a line in two and
		// the next call prefetched at the start did not pay.
		ahead = GP64()
		prefetch = func(r, off int) Mem { return Mem{Base: w[r], Index: ahead, Scale: 1, Disp: off} }
	}
	x := Load(Param("x").Base(), GP64())
	acc := make([]reg.VecVirtual, rows)
	for r := range acc {
		acc[r] = ZMM()
		VPXORD(acc[r], acc[r], acc[r])
	}
	var spread []reg.VecVirtual
	var mask reg.OpmaskVirtual
	if vbmi {
		spread, mask = q6KSpread(c)
	}
	m := q6KMasks(c)
	ds := AllocLocal(64 * rows)
	if rows == 4 {
		// The prefetch distance: whole calls until it reaches prefetchAhead (a call with no
		// whole block, len(w) possibly zero, returns first, so the loop ends).
		CMPQ(n, U32(210))
		JB(LabelRef("done"))
		MOVQ(size, ahead)
		Label("ahead")
		CMPQ(ahead, U32(prefetchAhead))
		JAE(LabelRef("loop"))
		ADDQ(size, ahead)
		JMP(LabelRef("ahead"))
	}
	Label("loop")
	CMPQ(n, U32(210))
	JB(LabelRef("done"))
	for r := range rows {
		for off := 0; off < 210; off += 64 {
			PREFETCHT0(prefetch(r, off))
		}
	}
	for r := range rows {
		q6KScales(s, c, vbmi, w[r], ds.Offset(64*r))
	}
	for h := range 2 {
		l, hb := make([]reg.VecVirtual, rows), make([]reg.VecVirtual, rows)
		for r := range rows {
			l[r], hb[r] = q6KLoadHalf(w[r], h)
		}
		for k := range 2 {
			nib := make([]reg.VecVirtual, rows)
			for r := range rows {
				nib[r] = q6KNibbles(c, m, l[r], hb[r], k)
			}
			for j := range 4 {
				g := 8*h + 4*k + j
				for r := range rows {
					q := q6KGroup(nib[r], j, spread, mask)
					VMULPS_BCST(ds.Offset(64*r+4*g), q, q)
					VMULPS(Mem{Base: x, Disp: 64 * g}, q, q)
					VADDPS(q, acc[r], acc[r])
				}
			}
		}
	}
	for r := range rows {
		ADDQ(U32(210), w[r])
	}
	ADDQ(U32(1024), x)
	SUBQ(U32(210), n)
	JMP(LabelRef("loop"))
	Label("done")
	out := frameAddr(ReturnIndex(0))
	for r := range acc {
		VMOVUPS(acc[r], Mem{Base: out, Disp: 64 * r})
	}
	VZEROUPPER()
	RET()
}
