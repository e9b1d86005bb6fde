package gguf

import "encoding/binary"

// The legacy 32-element formats beside Q4_0 and Q8_0, which llama-quantize still writes
// wherever a row's width does not divide 256 (the "dynamic" mixes use them so).

// DequantizeQ4_1 decodes the Q4_1 block b into y. Layout: f16 d, f16 m, then 16 bytes whose low
// nibbles are elements 0-15 and high nibbles 16-31; y = q·d + m, the product rounded first.
func DequantizeQ4_1(b *[20]byte, y *[32]float32) {
	d, m := halfAt(b[:], 0), halfAt(b[:], 2)
	for j := 0; j < 16; j++ {
		q := b[4+j]
		y[j] = plusMin(float32(q&15)*d, m)
		y[j+16] = plusMin(float32(q>>4)*d, m)
	}
}

// plusMin returns p + m, the product p rounded before (a call boundary the compiler does not
// fuse across), with ggml's NaN: ggml computes q·d + m with the product as the addition's first
// operand, whose NaN x86 keeps when both are NaNs; Go leaves the order of a commutative
// operation to the compiler, so p's NaN is returned explicitly.
func plusMin(p, m float32) float32 {
	if p != p {
		return p
	}
	return p + m
}

// fifthBits returns the fifth bits of a Q5_0 or Q5_1 block's elements j and j+16, from the
// 32-bit little-endian qh that holds one per element, each as 0 or 16.
func fifthBits(qh uint32, j int) (lo, hi uint8) {
	return uint8((qh>>j)<<4) & 0x10, uint8(qh>>(j+12)) & 0x10
}

// DequantizeQ5_0 decodes the Q5_0 block b into y. Layout: f16 d, 4 bytes of fifth bits (element
// j's is bit j), then 16 bytes of low nibbles as Q4_0's; y = (q−16)·d.
func DequantizeQ5_0(b *[22]byte, y *[32]float32) {
	d := halfAt(b[:], 0)
	qh := binary.LittleEndian.Uint32(b[2:6])
	for j := 0; j < 16; j++ {
		q := b[6+j]
		lo, hi := fifthBits(qh, j)
		y[j] = float32(int(q&15|lo)-16) * d
		y[j+16] = float32(int(q>>4|hi)-16) * d
	}
}

// DequantizeQ5_1 decodes the Q5_1 block b into y. Layout: f16 d, f16 m, 4 bytes of fifth bits,
// 16 bytes of low nibbles; y = q·d + m, the product rounded first.
func DequantizeQ5_1(b *[24]byte, y *[32]float32) {
	d, m := halfAt(b[:], 0), halfAt(b[:], 2)
	qh := binary.LittleEndian.Uint32(b[4:8])
	for j := 0; j < 16; j++ {
		q := b[8+j]
		lo, hi := fifthBits(qh, j)
		y[j] = plusMin(float32(q&15|lo)*d, m)
		y[j+16] = plusMin(float32(q>>4|hi)*d, m)
	}
}
