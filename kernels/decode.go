package kernels

import (
	"encoding/binary"
	"math"
)

// HalfToFloat32 converts an IEEE binary16 value to float32 exactly, subnormals included; a NaN
// keeps its payload in the high mantissa bits.
func HalfToFloat32(h uint16) float32 {
	sign := uint32(h>>15) << 31
	exp := uint32(h>>10) & 0x1f
	man := uint32(h & 0x3ff)
	switch exp {
	case 0:
		// ±man·2^-24: exact, since man < 2^10 and the scale is a power of two.
		v := float32(man) * 0x1p-24
		return math.Float32frombits(math.Float32bits(v) | sign)
	case 0x1f:
		return math.Float32frombits(sign | 0x7f800000 | man<<13)
	default:
		return math.Float32frombits(sign | (exp+127-15)<<23 | man<<13)
	}
}

// BF16ToFloat32 widens a bfloat16 (the top half of a float32) to float32.
func BF16ToFloat32(b uint16) float32 { return math.Float32frombits(uint32(b) << 16) }

func half(b []byte) float32 { return HalfToFloat32(binary.LittleEndian.Uint16(b)) }

// The sizes of the supported block formats.
const (
	q8_0Elems = 32
	q8_0Bytes = 34
	kElems    = 256 // elements of a K-quant super-block
	q4KBytes  = 144
	q5KBytes  = 176
	q6KBytes  = 210
)

// decodeF32 writes the n = len(dst) float32 values held little-endian in src.
func decodeF32(dst []float32, src []byte) {
	for i := range dst {
		b := src[4*i : 4*i+4 : 4*i+4]
		dst[i] = math.Float32frombits(binary.LittleEndian.Uint32(b))
	}
}

// decodeF16 writes the len(dst) half values of src as float32.
func decodeF16(dst []float32, src []byte) {
	for i := range dst {
		dst[i] = HalfToFloat32(binary.LittleEndian.Uint16(src[2*i : 2*i+2 : 2*i+2]))
	}
}

// decodeBF16 writes the len(dst) bfloat16 values of src as float32.
func decodeBF16(dst []float32, src []byte) {
	for i := range dst {
		dst[i] = BF16ToFloat32(binary.LittleEndian.Uint16(src[2*i : 2*i+2 : 2*i+2]))
	}
}

// decodeQ8_0 dequantizes one Q8_0 block (f16 d, 32 int8 q): w = d·q.
func decodeQ8_0(dst *[q8_0Elems]float32, b []byte) {
	b = b[:q8_0Bytes]
	d := half(b)
	for i := range dst {
		dst[i] = float32(d * float32(int8(b[2+i])))
	}
}

// scaleMinK4 returns the 6-bit scale and min of sub-block j of a Q4_K/Q5_K block from its 12
// packed bytes (ggml's get_scale_min_k4).
func scaleMinK4(j int, s []byte) (sc, m uint8) {
	s = s[:12]
	if j < 4 {
		return s[j] & 63, s[j+4] & 63
	}
	return s[j+4]&0x0f | (s[j-4]>>6)<<4, s[j+4]>>4 | (s[j]>>6)<<4
}

// decodeQ4K dequantizes one Q4_K block as ggml and gguf-py do: w = (d·sc)·q − dmin·m, the two
// products rounded to float32 (both are exact: an f16 times a 6-bit and then a 4-bit integer)
// and then the difference. The Q4_K dot does not use these values (see DotQ4K); tests and row
// lookups do.
func decodeQ4K(dst *[kElems]float32, b []byte) {
	b = b[:q4KBytes]
	d, dmin := half(b[0:]), half(b[2:])
	scales, qs := b[4:16], b[16:144]
	for c := range 4 { // 64 elements: sub-block 2c in the low nibbles, 2c+1 in the high
		sc0, m0 := scaleMinK4(2*c, scales)
		sc1, m1 := scaleMinK4(2*c+1, scales)
		d0, min0 := float32(d*float32(sc0)), float32(dmin*float32(m0))
		d1, min1 := float32(d*float32(sc1)), float32(dmin*float32(m1))
		q := qs[32*c : 32*c+32]
		for l := range 32 {
			dst[64*c+l] = float32(d0*float32(q[l]&15)) - min0
			dst[64*c+32+l] = float32(d1*float32(q[l]>>4)) - min1
		}
	}
}

// decodeQ5K dequantizes one Q5_K block (d, dmin, 12 scale bytes, 32 bytes of fifth bits, 128
// bytes of nibbles): w = (d·sc)·q − dmin·m with q = nibble + 16·high bit, rounded as in
// decodeQ4K (the products are exact, q < 32).
func decodeQ5K(dst *[kElems]float32, b []byte) {
	b = b[:q5KBytes]
	d, dmin := half(b[0:]), half(b[2:])
	scales, qh, qs := b[4:16], b[16:48], b[48:176]
	for c := range 4 {
		sc0, m0 := scaleMinK4(2*c, scales)
		sc1, m1 := scaleMinK4(2*c+1, scales)
		d0, min0 := float32(d*float32(sc0)), float32(dmin*float32(m0))
		d1, min1 := float32(d*float32(sc1)), float32(dmin*float32(m1))
		q := qs[32*c : 32*c+32]
		for l := range 32 {
			lo := q[l]&15 | (qh[l]>>(2*c)&1)<<4
			hi := q[l]>>4 | (qh[l]>>(2*c+1)&1)<<4
			dst[64*c+l] = float32(d0*float32(lo)) - min0
			dst[64*c+32+l] = float32(d1*float32(hi)) - min1
		}
	}
}
