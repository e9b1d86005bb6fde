package gguf

import (
	"encoding/binary"
	"math"
)

// The element decoders: every conversion of a weight format to float32, written once.
// gguf/quant's Dequantize (whole tensors, checked against libggml there) and kernels' row dots
// (the scalar definitions the SIMD tiers must match) both decode through these, so the two
// cannot disagree on a bit. They sit in gguf, below both, because kernels may not import
// gguf/quant (internal/layers).
//
// The block decoders follow ggml-quants.c's dequantize_row_* operation by operation: each int
// quant is converted to float and multiplied by a float scale; the K types first round the
// sub-block scale products (d·sc, dmin·m) to float, then compute scale·q − min with the product
// rounded before the subtraction. The explicit float32(...) conversions keep the Go compiler
// from fusing those steps into FMAs (in these formats every such product but Q6_K's last is
// exact in float32 anyway, so a fused build could not change a result today). Multi-byte fields
// are little-endian; the layouts are ggml's ggml-common.h.

// DequantizeF32 writes to dst the len(dst) little-endian float32 values at the start of src,
// every bit kept.
func DequantizeF32(src []byte, dst []float32) {
	src = src[:4*len(dst)] // fixing the length up front halves the per-element bounds checks
	for i := range dst {
		dst[i] = math.Float32frombits(binary.LittleEndian.Uint32(src[4*i : 4*i+4]))
	}
}

// DequantizeF16 writes to dst the len(dst) IEEE halves at the start of src, widened by
// F16ToF32.
func DequantizeF16(src []byte, dst []float32) {
	src = src[:2*len(dst)]
	for i := range dst {
		dst[i] = F16ToF32(binary.LittleEndian.Uint16(src[2*i : 2*i+2]))
	}
}

// DequantizeBF16 writes to dst the len(dst) bfloat16 values at the start of src, widened by
// BF16ToF32.
func DequantizeBF16(src []byte, dst []float32) {
	src = src[:2*len(dst)]
	for i := range dst {
		dst[i] = BF16ToF32(binary.LittleEndian.Uint16(src[2*i : 2*i+2]))
	}
}

// halfAt reads the little-endian half at b[i:i+2] as float32.
func halfAt(b []byte, i int) float32 { return F16ToF32(uint16(b[i]) | uint16(b[i+1])<<8) }

// DequantizeQ8_0 decodes the Q8_0 block b into y. Layout: f16 d, then 32 int8 quants; y = q·d.
func DequantizeQ8_0(b *[34]byte, y *[32]float32) {
	d := halfAt(b[:], 0)
	for j := range y {
		y[j] = float32(int8(b[2+j])) * d
	}
}

// DequantizeQ4_0 decodes the Q4_0 block b into y. Layout: f16 d, then 16 bytes whose low nibbles
// are elements 0-15 and high nibbles 16-31; y = (q−8)·d.
func DequantizeQ4_0(b *[18]byte, y *[32]float32) {
	d := halfAt(b[:], 0)
	for j := 0; j < 16; j++ {
		q := b[2+j]
		y[j] = float32(int(q&15)-8) * d
		y[j+16] = float32(int(q>>4)-8) * d
	}
}

// ScaleMinK4 returns sub-block j's 6-bit scale and min from the 12 packed bytes of a Q4_K or Q5_K
// block (ggml's get_scale_min_k4): sub-blocks 0-3 keep theirs in the low 6 bits of bytes j and
// j+4; 4-7 split theirs between a nibble of byte j+4 and the top 2 bits of bytes j-4 and j.
func ScaleMinK4(j int, s *[12]byte) (sc, m uint8) {
	if j < 4 {
		return s[j] & 63, s[j+4] & 63
	}
	return s[j+4]&15 | (s[j-4]>>6)<<4, s[j+4]>>4 | (s[j]>>6)<<4
}

// scaleAndMinK4 returns sub-block j's factor d·sc and offset dmin·m, each rounded to float32,
// for a Q4_K or Q5_K block with the packed scales s.
func scaleAndMinK4(j int, s *[12]byte, d, dmin float32) (scale, offset float32) {
	sc, m := ScaleMinK4(j, s)
	return float32(d * float32(sc)), float32(dmin * float32(m))
}

// DequantizeQ2_K decodes the Q2_K block b into y. Layout: 16 scale bytes (low nibble scale, high
// nibble min, one per 16 elements), 64 bytes of 2-bit quants, f16 d, f16 dmin; y = (d·sc)·q −
// dmin·m.
func DequantizeQ2_K(b *[84]byte, y *[256]float32) {
	d := halfAt(b[:], 80)
	dmin := halfAt(b[:], 82)
	for half := 0; half < 2; half++ {
		q := (*[32]byte)(b[16+32*half:])
		for j := 0; j < 4; j++ {
			shift := 2 * j
			for k := 0; k < 2; k++ {
				sc := b[8*half+2*j+k]
				dl := float32(d * float32(sc&15))
				ml := float32(dmin * float32(sc>>4))
				out := (*[16]float32)(y[128*half+32*j+16*k:])
				qk := (*[16]byte)(q[16*k:])
				for l := range out {
					out[l] = float32(dl*float32((qk[l]>>shift)&3)) - ml
				}
			}
		}
	}
}

// q3Scales unpacks Q3_K's sixteen 6-bit scales (low 4 bits in bytes 0-7, two nibbles each; high 2
// bits in bytes 8-11, four pairs each) and removes their bias of 32.
func q3Scales(s *[12]byte) (sc [16]int32) {
	for j := range sc {
		lo := s[j&7]
		if j >= 8 {
			lo >>= 4
		}
		hi := (s[8+(j&3)] >> (2 * (j >> 2))) & 3
		sc[j] = int32(lo&15|hi<<4) - 32
	}
	return sc
}

// DequantizeQ3_K decodes the Q3_K block b into y. Layout: 32 bytes of high bits (hmask), 64 bytes
// of low 2 bits, 12 bytes of packed 6-bit scales, f16 d; y = (d·(sc−32))·(q − 4 if the high bit is
// clear).
func DequantizeQ3_K(b *[110]byte, y *[256]float32) {
	hm := (*[32]byte)(b[0:])
	d := halfAt(b[:], 108)
	sc := q3Scales((*[12]byte)(b[96:]))
	for half := 0; half < 2; half++ {
		q := (*[32]byte)(b[32+32*half:])
		for j := 0; j < 4; j++ {
			shift := 2 * j
			hbit := uint(4*half + j)
			for k := 0; k < 2; k++ {
				dl := float32(d * float32(sc[8*half+2*j+k]))
				out := (*[16]float32)(y[128*half+32*j+16*k:])
				qk := (*[16]byte)(q[16*k:])
				hk := (*[16]byte)(hm[16*k:])
				for l := range out {
					// A clear high bit means q − 4; computed without a branch, which random
					// bits would mispredict half the time.
					v := int32((qk[l]>>shift)&3) - 4 + 4*int32((hk[l]>>hbit)&1)
					out[l] = dl * float32(v)
				}
			}
		}
	}
}

// DequantizeQ4_K decodes the Q4_K block b into y. Layout: f16 d, f16 dmin, 12 bytes of packed 6-bit
// scales and mins for 8 sub-blocks of 32, 128 bytes of nibbles (byte 32c+l holds element 64c+l in
// its low nibble and 64c+32+l in its high one); y = (d·sc)·q − dmin·m.
func DequantizeQ4_K(b *[144]byte, y *[256]float32) {
	d := halfAt(b[:], 0)
	dmin := halfAt(b[:], 2)
	s := (*[12]byte)(b[4:])
	for c := 0; c < 4; c++ {
		d1, min1 := scaleAndMinK4(2*c, s, d, dmin)
		d2, min2 := scaleAndMinK4(2*c+1, s, d, dmin)
		q := (*[32]byte)(b[16+32*c:])
		out := (*[64]float32)(y[64*c:])
		for l, v := range q {
			out[l] = float32(d1*float32(v&15)) - min1
			out[l+32] = float32(d2*float32(v>>4)) - min2
		}
	}
}

// DequantizeQ5_K decodes the Q5_K block b into y. Layout: f16 d, f16 dmin, 12 scale bytes as in
// Q4_K, 32 bytes of fifth bits (bit 2c of byte l for element 64c+l, bit 2c+1 for 64c+32+l), 128
// bytes of nibbles as in Q4_K; y = (d·sc)·q − dmin·m.
func DequantizeQ5_K(b *[176]byte, y *[256]float32) {
	d := halfAt(b[:], 0)
	dmin := halfAt(b[:], 2)
	s := (*[12]byte)(b[4:])
	qh := (*[32]byte)(b[16:])
	for c := 0; c < 4; c++ {
		d1, min1 := scaleAndMinK4(2*c, s, d, dmin)
		d2, min2 := scaleAndMinK4(2*c+1, s, d, dmin)
		ql := (*[32]byte)(b[48+32*c:])
		out := (*[64]float32)(y[64*c:])
		for l, v := range ql {
			h := qh[l] >> (2 * c)
			out[l] = float32(d1*float32(v&15|(h&1)<<4)) - min1
			out[l+32] = float32(d2*float32(v>>4|(h&2)<<3)) - min2
		}
	}
}

// DequantizeQ6_K decodes the Q6_K block b into y. Layout: 128 bytes of low nibbles, 64 bytes of
// high 2-bit pairs, 16 int8 scales (one per 16 elements), f16 d last; y = (d·sc)·(q−32).
func DequantizeQ6_K(b *[210]byte, y *[256]float32) {
	d := halfAt(b[:], 208)
	for h := 0; h < 2; h++ {
		ql := (*[64]byte)(b[64*h:])
		qh := (*[32]byte)(b[128+32*h:])
		sc := (*[8]byte)(b[192+8*h:])
		out := (*[128]float32)(y[128*h:])
		for l := 0; l < 32; l++ {
			is := l / 16
			hi := qh[l]
			q1 := int32(ql[l]&15|(hi&3)<<4) - 32
			q2 := int32(ql[l+32]&15|(hi>>2&3)<<4) - 32
			q3 := int32(ql[l]>>4|(hi>>4&3)<<4) - 32
			q4 := int32(ql[l+32]>>4|(hi>>6&3)<<4) - 32
			out[l] = float32(d*float32(int8(sc[is]))) * float32(q1)
			out[l+32] = float32(d*float32(int8(sc[is+2]))) * float32(q2)
			out[l+64] = float32(d*float32(int8(sc[is+4]))) * float32(q3)
			out[l+96] = float32(d*float32(int8(sc[is+6]))) * float32(q4)
		}
	}
}
