package main

import (
	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	"github.com/mmcloughlin/avo/reg"
)

// q6KConsts are the read-only tables of the Q6_K decode the integer kernels share.
type q6KConsts struct {
	shifts        Mem // words: left shifts 6|4 (the low nibbles' quarters), then 2|0 (the high ones')
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

// q6KNibbles returns the 64 bytes (q XOR 32) << 2 of elements 64k..64k+63 of a half block from
// its ql bytes l and qh bytes hb (q6KLoadHalf). Read as a signed byte, (q XOR 32) << 2 is
// 4·(q−32): the 64 ql bytes give the low nibbles of elements 0-63 (shifted left 2), the high
// nibbles of 64-127 (shifted right 2); the 32 qh bytes, in both 256-bit halves and shifted left
// per word by 6|4 or 2|0, give the high bit pairs in bits 6 and 7; two VPTERNLOGD mask, merge
// and flip the sign bit.
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
