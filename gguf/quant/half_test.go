package quant

import (
	"math"
	"math/big"
	"math/rand/v2"
	"testing"

	"github.com/trochilus-llm/trochilus/gguf"
)

// The half and bfloat16 conversions are gguf's (gguf/half.go, whose tests check all 65,536
// values of each); here they are checked on samples of float32s against math/big rounding, and
// the samples are shared with the comparison against libggml (ggml_test.go).

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

// TestF32ToF16Reference narrows a sample of float32s to halves and compares with math/big
// rounding.
func TestF32ToF16Reference(t *testing.T) {
	samples := f32Samples(400000)
	var nans, infs, subs int
	for _, f := range samples {
		got := gguf.F32ToF16(f)
		if math.IsNaN(float64(f)) {
			nans++
			want := uint16(math.Float32bits(f)>>16)&0x8000 | 0x7e00
			if got != want {
				t.Fatalf("F32ToF16(NaN %#08x) = %#04x, want %#04x", math.Float32bits(f), got, want)
			}
			continue
		}
		want := refRound(f, 11, -24, 65504)
		g := float64(gguf.F16ToF32(got))
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

// TestF32ToBF16Reference narrows a sample of float32s to bfloat16 and compares with math/big
// rounding.
func TestF32ToBF16Reference(t *testing.T) {
	samples := f32Samples(400000)
	for _, f := range samples {
		got := gguf.F32ToBF16(f)
		if math.IsNaN(float64(f)) {
			if want := uint16(math.Float32bits(f)>>16) | 0x40; got != want {
				t.Fatalf("F32ToBF16(NaN %#08x) = %#04x, want %#04x", math.Float32bits(f), got, want)
			}
			continue
		}
		want := refRound(f, 8, -133, 0x1.fep127)
		g := float64(gguf.BF16ToF32(got))
		if g != want || math.Signbit(g) != math.Signbit(want) {
			t.Fatalf("F32ToBF16(%g = %#08x) = %#04x (%g), want %g", f, math.Float32bits(f), got, g, want)
		}
	}
	t.Logf("%d float32s against math/big rounding, 0 mismatches", len(samples))
}
