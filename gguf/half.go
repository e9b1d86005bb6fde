package gguf

import "math"

// The half-float conversions of the F16 and BF16 tensor types and of the f16 scales inside the
// block formats (see dequant.go for why they live here).

// F16ToF32 widens an IEEE 754 half to float32. Every finite half and both infinities convert
// exactly. A NaN keeps its sign and payload and comes back quiet (bit 22 set), as ggml's
// GGML_FP16_TO_FP32 makes it: ggml converts through a float multiply, which quiets a
// signaling NaN.
func F16ToF32(h uint16) float32 {
	sign := uint32(h&0x8000) << 16
	em := uint32(h&0x7fff) << 13 // exponent and mantissa in their float32 places
	bits := em + (127-15)<<23
	if em >= 0x0f800000 { // exponent 31: infinity or NaN
		bits += (128 - 16) << 23
		if em != 0x0f800000 {
			bits |= 0x00400000
		}
	}
	if em < 0x00800000 {
		// Zero or subnormal, mant·2^-24: 0.5+mant·2^-24 is exact in float32, and so is taking
		// the 0.5 away again. Integer-only, it would need a leading-zero count and a shift.
		bits = math.Float32bits(math.Float32frombits(0x3f000000|em>>13) - 0.5)
	}
	return math.Float32frombits(bits | sign)
}

// F32ToF16 narrows f to the nearest IEEE 754 half, ties to even, with ggml's
// GGML_FP32_TO_FP16 results: magnitudes from 65520 up become infinity, subnormal halves are
// produced (not flushed), and every NaN becomes the quiet NaN 0x7e00 with f's sign (ggml does not
// keep payloads).
func F32ToF16(f float32) uint16 {
	b := math.Float32bits(f)
	sign := uint16(b>>16) & 0x8000
	a := b & 0x7fffffff
	switch {
	case a > 0x7f800000:
		return sign | 0x7e00
	case a >= 0x477ff000: // 65520 = halfway between 65504 and 2^16: ties to even go up.
		return sign | 0x7c00
	case a >= 0x38800000: // 2^-14, the smallest normal half
		// Rebias the exponent, then round the 23-bit mantissa to 10 bits; a carry out of the
		// mantissa correctly bumps the exponent.
		r := a - (127-15)<<23
		r += 0xfff + (r>>13)&1
		return sign | uint16(r>>13)
	case a < 0x33000000: // below 2^-25, half the smallest subnormal: rounds to zero
		return sign
	default:
		// Subnormal half: the result is f/2^-24 rounded to an integer, ties to even.
		// f = m·2^(e-150) with the hidden bit in m, so f/2^-24 = m >> (126-e).
		e := a >> 23
		m := a&0x7fffff | 0x800000
		shift := 126 - e // 14..24 here
		q := m >> shift
		rem := m & (1<<shift - 1)
		half := uint32(1) << (shift - 1)
		if rem > half || (rem == half && q&1 == 1) {
			q++
		}
		return sign | uint16(q)
	}
}

// BF16ToF32 widens a bfloat16 (the top half of a float32) to float32; it is exact, NaNs included.
func BF16ToF32(b uint16) float32 { return math.Float32frombits(uint32(b) << 16) }

// F32ToBF16 narrows f to bfloat16 as ggml's ggml_compute_fp32_to_bf16 does: round to nearest,
// ties to even, on the bit pattern (so overflow reaches infinity and subnormals are rounded, not
// flushed); a NaN keeps its top bits and is forced quiet.
func F32ToBF16(f float32) uint16 {
	u := math.Float32bits(f)
	if u&0x7fffffff > 0x7f800000 {
		return uint16(u>>16) | 0x40
	}
	return uint16((u + 0x7fff + (u>>16)&1) >> 16)
}
