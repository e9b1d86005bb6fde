package quant

import (
	"math"
	"math/big"
	"math/rand/v2"
	"testing"
)

// refRound rounds f to a binary format with prec significant bits whose subnormals are multiples
// of 2^minExp and whose largest finite magnitude is maxFinite, ties to even, using math/big: an
// independent route from the bit manipulations under test. Overflow gives an infinity.
func refRound(f float32, prec uint, minExp int, maxFinite float64) float64 {
	x := new(big.Float).SetFloat64(float64(f)) // exact
	tiny := new(big.Float).SetMantExp(big.NewFloat(1), minExp+int(prec)-1)
	if new(big.Float).Abs(x).Cmp(tiny) < 0 {
		// Below the normal range the quantum is fixed: round x/2^minExp to an integer.
		q := new(big.Float).SetMantExp(x, -minExp)
		i, _ := q.Int(nil) // truncates toward zero
		frac := new(big.Float).Sub(q, new(big.Float).SetInt(i))
		frac.Abs(frac)
		c := frac.Cmp(big.NewFloat(0.5))
		if c > 0 || (c == 0 && i.Bit(0) == 1) {
			if x.Sign() < 0 {
				i.Sub(i, big.NewInt(1))
			} else {
				i.Add(i, big.NewInt(1))
			}
		}
		r, _ := new(big.Float).SetMantExp(new(big.Float).SetInt(i), minExp).Float64()
		if r == 0 && math.Signbit(float64(f)) {
			return math.Copysign(0, -1)
		}
		return r
	}
	r := new(big.Float).SetMode(big.ToNearestEven).SetPrec(prec).Set(x)
	v, _ := r.Float64()
	if math.Abs(v) > maxFinite {
		return math.Copysign(math.Inf(1), v)
	}
	return v
}

// f32Samples returns n float32s: every exponent with random mantissas and signs, values near
// the half and bfloat16 rounding boundaries, and the specials.
func f32Samples(n int) []float32 {
	r := rand.New(rand.NewPCG(1, 2))
	out := []float32{0, float32(math.Copysign(0, -1)), float32(math.Inf(1)), float32(math.Inf(-1)),
		65504, 65519.996, 65520, 65536, -65520, 0x1p-24, 0x1p-25, 0x1.000002p-25, 0x1p-14, 0x1.ff8p-15,
		math.MaxFloat32, math.SmallestNonzeroFloat32, 0x1p-126, 0x1.fffffep-127}
	for len(out) < n {
		switch r.IntN(3) {
		case 0: // uniform bit patterns
			out = append(out, math.Float32frombits(r.Uint32()))
		case 1: // the half range, exponents 2^-26 .. 2^17
			e := uint32(127-26+r.IntN(44)) << 23
			out = append(out, math.Float32frombits(r.Uint32()&0x807fffff|e))
		default: // patterns at and around a rounding tie: low bits 0x0fff/0x1000/0x7fff/0x8000 ± 1
			b := r.Uint32() &^ 0xffff
			low := [...]uint32{0x0fff, 0x1000, 0x1001, 0x2fff, 0x3000, 0x3001, 0x7fff, 0x8000, 0x8001, 0xffff}
			out = append(out, math.Float32frombits(b|low[r.IntN(len(low))]))
		}
	}
	return out
}

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

func TestF32ToF16Reference(t *testing.T) {
	samples := f32Samples(400000)
	var nans, infs, subs int
	for _, f := range samples {
		got := F32ToF16(f)
		if math.IsNaN(float64(f)) {
			nans++
			want := uint16(math.Float32bits(f)>>16)&0x8000 | 0x7e00
			if got != want {
				t.Fatalf("F32ToF16(NaN %#08x) = %#04x, want %#04x", math.Float32bits(f), got, want)
			}
			continue
		}
		want := refRound(f, 11, -24, 65504)
		g := float64(F16ToF32(got))
		if g != want || math.Signbit(g) != math.Signbit(want) {
			t.Fatalf("F32ToF16(%g = %#08x) = %#04x (%g), want %g", f, math.Float32bits(f), got, g, want)
		}
		switch {
		case math.IsInf(want, 0):
			infs++
		case want != 0 && math.Abs(want) < 0x1p-14:
			subs++
		}
	}
	t.Logf("%d float32s against math/big rounding: %d NaN, %d to infinity, %d to subnormal halves, 0 mismatches",
		len(samples), nans, infs, subs)
}

func TestBF16AllAndReference(t *testing.T) {
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
	samples := f32Samples(400000)
	for _, f := range samples {
		got := F32ToBF16(f)
		if math.IsNaN(float64(f)) {
			if want := uint16(math.Float32bits(f)>>16) | 0x40; got != want {
				t.Fatalf("F32ToBF16(NaN %#08x) = %#04x, want %#04x", math.Float32bits(f), got, want)
			}
			continue
		}
		want := refRound(f, 8, -133, 0x1.fep127)
		g := float64(BF16ToF32(got))
		if g != want || math.Signbit(g) != math.Signbit(want) {
			t.Fatalf("F32ToBF16(%g = %#08x) = %#04x (%g), want %g", f, math.Float32bits(f), got, g, want)
		}
	}
	t.Logf("65536 bfloat16 round trips; %d float32s against math/big rounding, 0 mismatches", len(samples))
}
