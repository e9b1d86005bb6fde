package gguf

import (
	"encoding/binary"
	"math"
)

// The formats whose codes index a table of values rather than counting steps of a scale:
// IQ4_NL and IQ4_XS (a non-linear 4-bit grid), MXFP4 (OCP's 4-bit float under a power-of-two
// scale, gpt-oss's experts) and the ternary TQ1_0 and TQ2_0.

// iq4nlValues is ggml's kvalues_iq4nl: the 16 levels of IQ4_NL and IQ4_XS, denser near zero
// where weights are.
var iq4nlValues = [16]int8{-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113}

// DequantizeIQ4_NL decodes the IQ4_NL block b into y. Layout: f16 d, then 16 bytes whose low
// nibbles index elements 0-15's level and high nibbles 16-31's; y = d·level.
func DequantizeIQ4_NL(b *[18]byte, y *[32]float32) {
	d := halfAt(b[:], 0)
	for j := 0; j < 16; j++ {
		q := b[2+j]
		y[j] = d * float32(iq4nlValues[q&15])
		y[j+16] = d * float32(iq4nlValues[q>>4])
	}
}

// DequantizeIQ4_XS decodes the IQ4_XS block b into y. Layout: f16 d, a 16-bit word of the high
// 2 bits of the eight sub-block scales, 4 bytes of their low nibbles, then 8 × 16 bytes coded as
// IQ4_NL's; sub-block i's scale is dl = d·(ls−32) with its 6-bit ls, and y = dl·level.
func DequantizeIQ4_XS(b *[136]byte, y *[256]float32) {
	d := halfAt(b[:], 0)
	hi := binary.LittleEndian.Uint16(b[2:4])
	for i := 0; i < 8; i++ {
		ls := int(b[4+i/2]>>(4*(i%2)))&15 | int(hi>>(2*i))&3<<4
		dl := d * float32(ls-32)
		qs, out := b[8+16*i:8+16*i+16], y[32*i:32*i+32]
		for j := 0; j < 16; j++ {
			out[j] = dl * float32(iq4nlValues[qs[j]&15])
			out[j+16] = dl * float32(iq4nlValues[qs[j]>>4])
		}
	}
}

// mxfp4Values is ggml's kvalues_mxfp4: the E2M1 values 0, 0.5, 1, 1.5, 2, 3, 4, 6 and their
// negatives, doubled to integers (the scale is halved to match: e8m0Half).
var mxfp4Values = [16]int8{0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12}

// e8m0Half returns half the E8M0 scale e, 2^(e−128), as ggml's GGML_E8M0_TO_FP32_HALF does
// (subnormal for e < 2; e = 255, a NaN in OCP's format, gives 2^127 as there).
func e8m0Half(e uint8) float32 {
	if e < 2 {
		return math.Float32frombits(0x00200000 << e)
	}
	return math.Float32frombits(uint32(e-1) << 23)
}

// DequantizeMXFP4 decodes the MXFP4 block b into y. Layout: the E8M0 scale byte, then 16 bytes
// whose low nibbles code elements 0-15 and high nibbles 16-31; y = value·scale.
func DequantizeMXFP4(b *[17]byte, y *[32]float32) {
	d := e8m0Half(b[0])
	for j := 0; j < 16; j++ {
		q := b[1+j]
		y[j] = float32(mxfp4Values[q&15]) * d
		y[j+16] = float32(mxfp4Values[q>>4]) * d
	}
}

// ternaryDigit returns the n-th base-3 digit of a TQ1_0 byte q, as ggml reads it: q·3^n modulo
// 256 (the byte holds the digits as a fixed-point fraction), times 3, over 256.
func ternaryDigit(q uint8, n int) int {
	p := q * [5]uint8{1, 3, 9, 27, 81}[n]
	return int(uint16(p)*3>>8) - 1
}

// DequantizeTQ1_0 decodes the TQ1_0 block b into y. Layout: 48 bytes of five ternary digits each
// (elements 0-159 from bytes 0-31, 160-239 from bytes 32-47, digit-major), 4 bytes of four
// digits each (240-255), then f16 d; y = (digit−1)·d.
func DequantizeTQ1_0(b *[54]byte, y *[256]float32) {
	d := halfAt(b[:], 52)
	k := 0
	for _, part := range [2][2]int{{0, 32}, {32, 48}} {
		for n := 0; n < 5; n++ {
			for _, q := range b[part[0]:part[1]] {
				y[k] = float32(ternaryDigit(q, n)) * d
				k++
			}
		}
	}
	for n := 0; n < 4; n++ {
		for _, q := range b[48:52] {
			y[k] = float32(ternaryDigit(q, n)) * d
			k++
		}
	}
}

// DequantizeTQ2_0 decodes the TQ2_0 block b into y. Layout: 64 bytes of four 2-bit codes each
// (byte 32h+m holds elements 128h+32l+m in its bits 2l, 2l+1), then f16 d; y = (code−1)·d.
func DequantizeTQ2_0(b *[66]byte, y *[256]float32) {
	d := halfAt(b[:], 64)
	for h := 0; h < 2; h++ {
		for l := 0; l < 4; l++ {
			for m := 0; m < 32; m++ {
				q := b[32*h+m] >> (2 * l) & 3
				y[128*h+32*l+m] = float32(int(q)-1) * d
			}
		}
	}
}
