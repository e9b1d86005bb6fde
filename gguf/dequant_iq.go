package gguf

import (
	"encoding/binary"
	"math"
	"math/bits"
)

//go:generate go run ./internal/geniq/cmd -out iq_tables.go

// The lattice formats IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS, IQ3_S, IQ1_S and IQ1_M (256-element
// super-blocks whose codes index a grid of 4 or 8 magnitudes, with signs and sub-block scales
// beside), and the newer NVFP4, Q1_0 and Q2_0. The grids (iq_tables.go) are read out of libggml
// by gguf/internal/geniq; the sign patterns are computed from their definition (iq2Signs).
// Each follows ggml-quants.c's dequantize_row_* in its operations and their order: the
// sub-block factor rounded to float32 first, then factor·magnitude, then the sign, or
// factor·(value+delta) for the IQ1 types. ggml writes the sign as a multiplication by ±1.f, which
// its compiler turns into a sign flip: a NaN's sign flips too (a multiplication would keep it),
// so the decoders flip the sign bit (negSign).

// iq2Signs is ggml's ksigns_iq2xs: the 8-element sign pattern coded by 7 bits, the seven bits
// themselves and an eighth that makes the count of minus signs even. Bit j negates element j.
var iq2Signs = func() (s [128]uint8) {
	for i := range s {
		s[i] = uint8(i) | uint8(bits.OnesCount8(uint8(i))&1)<<7
	}
	return s
}()

// negSign returns v with its sign flipped where bit j of signs is set (NaNs included), without a
// branch that random signs would mispredict.
func negSign(v float32, signs uint8, j int) float32 {
	return math.Float32frombits(math.Float32bits(v) ^ uint32(signs>>j&1)<<31)
}

// iqGroup8 writes the 8 elements of grid entry g (magnitude j in byte j) at factor dl, element j
// negated where bit j of signs is set.
func iqGroup8(y *[8]float32, g uint64, signs uint8, dl float32) {
	for j := range y {
		y[j] = negSign(dl*float32(uint8(g>>(8*j))), signs, j)
	}
}

// iqGroup4x2 writes the 8 elements of the 4-magnitude grid entries g1 (elements 0-3) and g2
// (4-7) at factor dl, signed by bits 0-3 and 4-7 of signs.
func iqGroup4x2(y *[8]float32, g1, g2 uint32, signs uint8, dl float32) {
	for j := 0; j < 4; j++ {
		y[j] = negSign(dl*float32(uint8(g1>>(8*j))), signs, j)
		y[j+4] = negSign(dl*float32(uint8(g2>>(8*j))), signs, j+4)
	}
}

// iq2Factor returns an IQ2 sub-block's factor d·(0.5+s)·0.25 for its 4-bit scale s.
func iq2Factor(d float32, s uint32) float32 { return float32(d*(0.5+float32(s))) * 0.25 }

// DequantizeIQ2_XXS decodes the IQ2_XXS block b into y. Layout: f16 d, then per 32 elements two
// little-endian words: four bytes indexing iq2xxsGrid (8 elements each), and four 7-bit sign
// patterns (bits 7l to 7l+6) under a 4-bit scale s (bits 28-31); y = ±(d·(0.5+s)·0.25)·magnitude.
func DequantizeIQ2_XXS(b *[66]byte, y *[256]float32) {
	d := halfAt(b[:], 0)
	for ib := 0; ib < 8; ib++ {
		q := (*[8]byte)(b[2+8*ib:])
		aux := binary.LittleEndian.Uint32(q[4:])
		dl := iq2Factor(d, aux>>28)
		for l := 0; l < 4; l++ {
			iqGroup8((*[8]float32)(y[32*ib+8*l:]), iq2xxsGrid[q[l]], iq2Signs[aux>>(7*l)&127], dl)
		}
	}
}

// DequantizeIQ2_XS decodes the IQ2_XS block b into y. Layout: f16 d, 32 little-endian 16-bit
// codes (one per 8 elements: a 9-bit index into iq2xsGrid under a 7-bit sign pattern), then 8
// bytes of two 4-bit scales (low nibble for the sub-block's first 16 elements, high for the
// rest); y = ±(d·(0.5+s)·0.25)·magnitude.
func DequantizeIQ2_XS(b *[74]byte, y *[256]float32) {
	d := halfAt(b[:], 0)
	for ib := 0; ib < 8; ib++ {
		sc := uint32(b[66+ib])
		dl := [2]float32{iq2Factor(d, sc&15), iq2Factor(d, sc>>4)}
		for l := 0; l < 4; l++ {
			q := binary.LittleEndian.Uint16(b[2+8*ib+2*l:])
			iqGroup8((*[8]float32)(y[32*ib+8*l:]), iq2xsGrid[q&511], iq2Signs[q>>9], dl[l/2])
		}
	}
}

// DequantizeIQ2_S decodes the IQ2_S block b into y. Layout: f16 d, 32 bytes of the low 8 bits of
// the 10-bit indices into iq2sGrid (one per 8 elements), 32 bytes of 8 sign bits each, 8 bytes of
// the indices' high 2 bits (bits 2l, 2l+1 of byte ib for index 4ib+l), then 8 bytes of scales as
// IQ2_XS's; y = ±(d·(0.5+s)·0.25)·magnitude.
func DequantizeIQ2_S(b *[82]byte, y *[256]float32) {
	d := halfAt(b[:], 0)
	for ib := 0; ib < 8; ib++ {
		sc, qh := uint32(b[74+ib]), uint16(b[66+ib])
		dl := [2]float32{iq2Factor(d, sc&15), iq2Factor(d, sc>>4)}
		for l := 0; l < 4; l++ {
			g := 4*ib + l
			idx := uint16(b[2+g]) | (qh>>(2*l)&3)<<8
			iqGroup8((*[8]float32)(y[8*g:]), iq2sGrid[idx], b[34+g], dl[l/2])
		}
	}
}

// DequantizeIQ3_XXS decodes the IQ3_XXS block b into y. Layout: f16 d, 64 bytes indexing
// iq3xxsGrid (4 elements each), then per 32 elements a little-endian word of four 7-bit sign
// patterns (one per 8 elements, bits 7l to 7l+6) under a 4-bit scale s (bits 28-31);
// y = ±(d·(0.5+s)·0.5)·magnitude.
func DequantizeIQ3_XXS(b *[98]byte, y *[256]float32) {
	d := halfAt(b[:], 0)
	for ib := 0; ib < 8; ib++ {
		aux := binary.LittleEndian.Uint32(b[66+4*ib:])
		dl := float32(d*(0.5+float32(aux>>28))) * 0.5
		q := (*[8]byte)(b[2+8*ib:])
		for l := 0; l < 4; l++ {
			iqGroup4x2((*[8]float32)(y[32*ib+8*l:]), iq3xxsGrid[q[2*l]], iq3xxsGrid[q[2*l+1]],
				iq2Signs[aux>>(7*l)&127], dl)
		}
	}
}

// DequantizeIQ3_S decodes the IQ3_S block b into y. Layout: f16 d, 64 bytes of the low 8 bits of
// the 9-bit indices into iq3sGrid (4 elements each), 8 bytes of their ninth bits (bit k of byte
// ib for index 8ib+k), 32 bytes of 8 sign bits each, then 4 bytes of two 4-bit scales s (low
// nibble for the even 32-element sub-block, high for the odd); y = ±(d·(1+2s))·magnitude.
func DequantizeIQ3_S(b *[110]byte, y *[256]float32) {
	d := halfAt(b[:], 0)
	for ib := 0; ib < 8; ib++ {
		s := b[106+ib/2] >> (4 * (ib % 2)) & 15
		dl := d * float32(1+2*int(s))
		qh := uint16(b[66+ib])
		for l := 0; l < 4; l++ {
			k := 8*ib + 2*l
			g1 := iq3sGrid[uint16(b[2+k])|(qh>>(2*l)&1)<<8]
			g2 := iq3sGrid[uint16(b[3+k])|(qh>>(2*l+1)&1)<<8]
			iqGroup4x2((*[8]float32)(y[32*ib+8*l:]), g1, g2, b[74+4*ib+l], dl)
		}
	}
}

// iq1Group writes the 8 elements of iq1sGrid entry g (int8 j in byte j) as dl·(value+delta).
func iq1Group(y *[8]float32, g uint64, dl, delta float32) {
	for j := range y {
		y[j] = dl * (float32(int8(g>>(8*j))) + delta)
	}
}

// DequantizeIQ1_S decodes the IQ1_S block b into y. Layout: f16 d, 32 bytes of the low 8 bits of
// the 11-bit indices into iq1sGrid (one per 8 elements), then per 32 elements a little-endian
// 16-bit word: the indices' high 3 bits (bits 3l to 3l+2), a 3-bit scale s (bits 12-14) and the
// delta's sign (bit 15); y = (d·(2s+1))·(value ± iq1sDelta).
func DequantizeIQ1_S(b *[50]byte, y *[256]float32) {
	d := halfAt(b[:], 0)
	for ib := 0; ib < 8; ib++ {
		qh := binary.LittleEndian.Uint16(b[34+2*ib:])
		dl := d * float32(2*(qh>>12&7)+1)
		delta := float32(iq1sDelta)
		if qh&0x8000 != 0 {
			delta = -iq1sDelta
		}
		for l := 0; l < 4; l++ {
			idx := uint16(b[2+4*ib+l]) | (qh>>(3*l)&7)<<8
			iq1Group((*[8]float32)(y[32*ib+8*l:]), iq1sGrid[idx], dl, delta)
		}
	}
}

// DequantizeIQ1_M decodes the IQ1_M block b into y. Layout: 32 bytes of the low 8 bits of the
// 11-bit indices into iq1sGrid (one per 8 elements), 16 bytes of a nibble per index (its high 3
// bits, and the delta's sign in bit 3), then 4 little-endian 16-bit words of four 3-bit scales
// each (one per 16 elements) whose top nibbles together are the f16 d (word k's in bits 4k to
// 4k+3); y = (d·(2s+1))·(value ± iq1mDelta).
func DequantizeIQ1_M(b *[56]byte, y *[256]float32) {
	var sc [4]uint16
	for k := range sc {
		sc[k] = binary.LittleEndian.Uint16(b[48+2*k:])
	}
	d := F16ToF32(sc[0]>>12 | sc[1]>>8&0x00f0 | sc[2]>>4&0x0f00 | sc[3]&0xf000)
	for ib := 0; ib < 8; ib++ {
		s := sc[ib/2] >> (6 * (ib % 2))
		dl := [2]float32{d * float32(2*(s&7)+1), d * float32(2*(s>>3&7)+1)}
		for l := 0; l < 4; l++ {
			h := b[32+2*ib+l/2] >> (4 * (l % 2))
			delta := float32(iq1mDelta)
			if h&8 != 0 {
				delta = -iq1mDelta
			}
			idx := uint16(b[4*ib+l]) | uint16(h&7)<<8
			iq1Group((*[8]float32)(y[32*ib+8*l:]), iq1sGrid[idx], dl[l/2], delta)
		}
	}
}

// ue4m3Half returns half the UE4M3 scale e, as ggml's ggml_ue4m3_to_fp32 does: 4 exponent bits
// (bits 3-6, bias 7) and 3 mantissa bits, subnormal below exponent 1; 0x00 and 0x7f (E4M3's NaN)
// give 0, and bit 7 is ignored otherwise. Every value is exact in float32.
func ue4m3Half(e uint8) float32 {
	if e == 0 || e == 0x7f {
		return 0
	}
	exp, man := e>>3&15, e&7
	if exp == 0 {
		return float32(man) / 1024 // man·2^−9, halved
	}
	return math.Float32frombits(uint32(exp+119)<<23 | uint32(man)<<20) // (1+man/8)·2^(exp−7), halved
}

// DequantizeNVFP4 decodes the NVFP4 block b into y. Layout: 4 UE4M3 scale bytes (one per 16
// elements), then per 16 elements 8 bytes whose low nibbles code elements 0-7 and high nibbles
// 8-15 as MXFP4's; y = value·scale (the doubled values under the halved scale, as MXFP4).
func DequantizeNVFP4(b *[36]byte, y *[64]float32) {
	for s := 0; s < 4; s++ {
		d := ue4m3Half(b[s])
		q := (*[8]byte)(b[4+8*s:])
		out := (*[16]float32)(y[16*s:])
		for j, v := range q {
			out[j] = float32(mxfp4Values[v&15]) * d
			out[j+8] = float32(mxfp4Values[v>>4]) * d
		}
	}
}

// DequantizeQ1_0 decodes the Q1_0 block b into y. Layout: f16 d, then 16 bytes of one bit per
// element (element j in bit j%8 of byte j/8); y = d where the bit is set, −d where it is clear.
func DequantizeQ1_0(b *[18]byte, y *[128]float32) {
	d := halfAt(b[:], 0)
	pm := [2]float32{-d, d}
	for j := range y {
		y[j] = pm[b[2+j/8]>>(j%8)&1]
	}
}

// DequantizeQ2_0 decodes the Q2_0 block b into y. Layout: f16 d, then 16 bytes of four 2-bit
// codes each (element j in bits 2(j%4), 2(j%4)+1 of byte j/4); y = (code−1)·d.
func DequantizeQ2_0(b *[18]byte, y *[64]float32) {
	d := halfAt(b[:], 0)
	for j := range y {
		q := b[2+j/4] >> (2 * (j % 4)) & 3
		y[j] = float32(int(q)-1) * d
	}
}
