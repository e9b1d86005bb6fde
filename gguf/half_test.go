package gguf

import (
	"math"
	"testing"
)

// The conversions' exhaustive checks: every one of the 65,536 halves and bfloat16s, NaN bits
// included. The sampled references of the narrowing direction (F32ToF16, F32ToBF16 against
// math/big rounding) and the comparisons with libggml live in gguf/quant's tests, which share
// their samples.

// TestF16ToF32AllHalves widens every half: finite ones against math.Ldexp, NaNs to the quiet
// NaN with their sign and payload (as ggml's GGML_FP16_TO_FP32 gives them), and narrows each
// back.
func TestF16ToF32AllHalves(t *testing.T) {
	var nan, finite int
	for i := 0; i < 1<<16; i++ {
		h := uint16(i)
		got := F16ToF32(h)
		exp, mant := int(h>>10)&31, int(h&1023)
		neg := h&0x8000 != 0
		switch {
		case exp == 31 && mant != 0:
			nan++
			want := uint32(h&0x8000)<<16 | 0x7fc00000 | uint32(mant)<<13
			if math.Float32bits(got) != want {
				t.Fatalf("F16ToF32(%#04x) = %#08x, want quiet NaN %#08x", h, math.Float32bits(got), want)
			}
			continue
		case exp == 31:
			if !math.IsInf(float64(got), map[bool]int{false: 1, true: -1}[neg]) {
				t.Fatalf("F16ToF32(%#04x) = %v, want infinity", h, got)
			}
		default:
			finite++
			var v float64
			if exp == 0 {
				v = math.Ldexp(float64(mant), -24)
			} else {
				v = math.Ldexp(float64(mant+1024), exp-25)
			}
			if neg {
				v = -v
			}
			if float64(got) != v || math.Signbit(float64(got)) != neg {
				t.Fatalf("F16ToF32(%#04x) = %v, want %v", h, got, v)
			}
		}
		// Round trip: every non-NaN half comes back; a NaN becomes ggml's quiet 0x7e00.
		back := F32ToF16(got)
		if exp == 31 && mant != 0 {
			if want := h&0x8000 | 0x7e00; back != want {
				t.Fatalf("F32ToF16(F16ToF32(%#04x)) = %#04x, want %#04x", h, back, want)
			}
		} else if back != h {
			t.Fatalf("F32ToF16(F16ToF32(%#04x)) = %#04x", h, back)
		}
	}
	t.Logf("65536 halves: %d finite checked against math.Ldexp, %d NaNs, all round-tripped", finite, nan)
}

// TestBF16ToF32AllBFloats widens every bfloat16 (exactly: the top half of the float32) and
// narrows it back.
func TestBF16ToF32AllBFloats(t *testing.T) {
	for i := 0; i < 1<<16; i++ {
		b := uint16(i)
		f := BF16ToF32(b)
		if math.Float32bits(f) != uint32(b)<<16 {
			t.Fatalf("BF16ToF32(%#04x) = %#08x", b, math.Float32bits(f))
		}
		want := b
		if b&0x7fff > 0x7f80 {
			want = b | 0x40 // a NaN comes back quiet
		}
		if got := F32ToBF16(f); got != want {
			t.Fatalf("F32ToBF16(BF16ToF32(%#04x)) = %#04x, want %#04x", b, got, want)
		}
	}
	t.Log("65536 bfloat16s widened exactly and round-tripped")
}
