package kernels

import (
	"fmt"
	"math"
	"math/big"
	"math/rand/v2"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/trochilus-llm/trochilus/kernels/internal/bigmath"
)

// logReference returns the correctly rounded float32 ln x for a positive finite x, and whether
// deciding it needed the high-precision evaluation. A float64 ln x (math.Log, here only: the
// proof's reference) whose whole error interval of refMargin rounds to one float32 decides the
// answer; the rest go to math/big.
func logReference(x float32) (float32, bool) {
	if x == 1 {
		return 0, false
	}
	y := math.Log(float64(x))
	lo := float32(y * (1 - refMargin))
	hi := float32(y * (1 + refMargin))
	if math.Float32bits(lo) == math.Float32bits(hi) {
		return lo, false
	}
	return bigLogFloat32(x), true
}

// bigLogFloat32 is ln x correctly rounded to float32 for a positive finite x ≠ 1, evaluated with
// math/big at growing precision until the rounding is decided. The argument is scaled into
// [½, 1) first (bigmath.Log starts from math.Log of its argument): ln x = ln(x·2^-k) + k·ln 2,
// whose absolute error is below 2^-(prec−16) (|k| ≤ 149, and both terms are good to 2^-prec).
func bigLogFloat32(x float32) float32 {
	_, k := math.Frexp(float64(x))
	for prec := uint(128); prec <= 1<<12; prec *= 2 {
		v := new(big.Float).SetPrec(prec).SetMantExp(new(big.Float).SetFloat64(float64(x)), -k)
		l := bigmath.Log(v, prec)
		l.Add(l, new(big.Float).SetPrec(prec).Mul(new(big.Float).SetInt64(int64(k)), bigmath.Ln2(prec)))
		err := new(big.Float).SetMantExp(big.NewFloat(1), 16-int(prec))
		if f, ok := bigmath.RoundFloat32(l, err); ok {
			return f
		}
	}
	panic(fmt.Sprintf("bigLogFloat32(%g): undecided at 4096 bits", x))
}

// logFastDecides reports whether Log32's float64 path decides x without the hard-case table.
func logFastDecides(x float32) bool {
	if x != x || x <= 0 || x > math.MaxFloat32 || x == 1 {
		return true
	}
	y := Log64(float64(x))
	return float32(float64(y*(1-logRoundMargin))) == float32(float64(y*(1+logRoundMargin)))
}

func TestLog32SpecialValues(t *testing.T) {
	inf := float32(math.Inf(1))
	cases := []struct{ x, want float32 }{
		{0, -inf},
		{float32(math.Copysign(0, -1)), -inf},
		{inf, inf},
		{1, 0},
		{2, 0x1.62e43p-1},
		{0.5, -0x1.62e43p-1},
		{math.E, 0x1.fffffep-1},                  // float32(e) is below e
		{math.MaxFloat32, 0x1.62e43p+6},          // 88.72284
		{math.Float32frombits(1), -0x1.9d1dap+6}, // the smallest subnormal: −103.27893
		{math.Float32frombits(0x00800000), -0x1.5d58ap+6}, // the smallest normal: −87.33655
		{math.Nextafter32(1, 2), 0x1.fffffep-24},          // ln(1 + 2^-23) just below 2^-23
		{math.Nextafter32(1, 0), -0x1p-24},                // ln(1 − 2^-24) rounds to −2^-24
	}
	for _, c := range cases {
		if got := Log32(c.x); !sameBits(got, c.want) {
			t.Errorf("Log32(%g) = %g (%#08x), want %g (%#08x)", c.x, got, math.Float32bits(got), c.want, math.Float32bits(c.want))
		}
		if c.x > 0 && c.x <= math.MaxFloat32 {
			if ref, _ := logReference(c.x); !sameBits(ref, c.want) {
				t.Errorf("reference ln %g = %g, table says %g", c.x, ref, c.want)
			}
		}
	}
	for _, x := range []float32{-1, -inf, float32(math.NaN()), -math.Float32frombits(1)} {
		if got := Log32(x); got == got {
			t.Errorf("Log32(%g) = %g, want NaN", x, got)
		}
	}
}

// TestLog32Sampled checks every 509th positive finite float32 (4.2 million inputs over the
// whole range, subnormals included), the float32 neighbours of 1, and every hard case against
// the reference.
func TestLog32Sampled(t *testing.T) {
	const stride = 509
	checked, mismatches, slow := 0, 0, 0
	check := func(x float32) {
		want, s := logReference(x)
		if s {
			slow++
		}
		checked++
		if got := Log32(x); !sameBits(got, want) {
			mismatches++
			if mismatches <= 10 {
				t.Errorf("Log32(%g [%#08x]) = %#08x, want %#08x", x, math.Float32bits(x), math.Float32bits(got), math.Float32bits(want))
			}
		}
	}
	for b := uint32(1); b < 0x7f800000; b += stride {
		check(math.Float32frombits(b))
	}
	one := math.Float32bits(1)
	for d := uint32(1); d <= 4096; d++ {
		check(math.Float32frombits(one + d))
		check(math.Float32frombits(one - d))
	}
	for _, h := range logHard {
		check(math.Float32frombits(h[0]))
	}
	t.Logf("Log32: %d sampled inputs checked, %d decided at high precision, %d mismatches", checked, slow, mismatches)
}

// TestLog32HardCases checks each entry of the hard-case table at high precision, and that the
// float64 path really cannot decide it (a dead entry would hide a change in Log64).
func TestLog32HardCases(t *testing.T) {
	if !slices.IsSortedFunc(logHard[:], func(a, b [2]uint32) int { return int(int64(a[0]) - int64(b[0])) }) {
		t.Fatal("logHard is not sorted by argument")
	}
	for _, h := range logHard {
		x := math.Float32frombits(h[0])
		if want := bigLogFloat32(x); math.Float32bits(want) != h[1] {
			t.Errorf("logHard: ln %g [%#08x] listed as %#08x, high precision says %#08x", x, h[0], h[1], math.Float32bits(want))
		}
		if logFastDecides(x) {
			t.Errorf("logHard: %#08x is decided by the float64 path; the entry is dead", h[0])
		}
	}
}

// TestMathLogAccuracy measures math.Log against a 200-bit evaluation on random positive float32
// arguments: the reference above relies on its relative error being far below refMargin.
func TestMathLogAccuracy(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	worst := 0.0
	const n = 2000
	for range n {
		x := math.Float32frombits(1 + rng.Uint32N(0x7f7fffff))
		if x == 1 {
			continue
		}
		_, k := math.Frexp(float64(x))
		v := new(big.Float).SetPrec(200).SetMantExp(new(big.Float).SetFloat64(float64(x)), -k)
		exact := bigmath.Log(v, 200)
		exact.Add(exact, new(big.Float).SetPrec(200).Mul(new(big.Float).SetInt64(int64(k)), bigmath.Ln2(200)))
		got := new(big.Float).SetPrec(200).SetFloat64(math.Log(float64(x)))
		diff := new(big.Float).SetPrec(200).Sub(got, exact)
		diff.Quo(diff, exact)
		rel, _ := diff.Float64()
		worst = max(worst, math.Abs(rel))
	}
	t.Logf("math.Log: worst relative error on %d samples %.3g (2^%.1f); reference margin 2^%d", n, worst, math.Log2(worst), int(math.Log2(refMargin)))
	if worst > refMargin/64 {
		t.Errorf("math.Log relative error %g is too close to the reference margin %g", worst, refMargin)
	}
}

// TestLog32Long checks Log32 on every positive finite float32 (2^31 − 2^23 − 1 inputs,
// subnormals included) against the reference, on all cores, and that the hard-case table lists
// exactly the arguments the float64 path cannot decide. With the special values of
// TestLog32SpecialValues (±0, +Inf, negatives, NaN) that is every float32.
func TestLog32Long(t *testing.T) {
	if os.Getenv("TROCHILUS_LONG") != "1" {
		t.Skip("exhaustive log check runs with TROCHILUS_LONG=1")
	}
	const first, end = 1, 0x7f800000 // the positive finite float32 bit patterns
	r := checkEveryFloat32("Log32", first, end, Log32, logReference, logFastDecides)
	checked, mismatches, undecided := r.checked, r.mismatches, r.undecided
	t.Logf("Log32 exhaustive: %d positive finite inputs checked, %d mismatches, %d decided at high precision, %d hard cases, %d workers, %v",
		checked, r.mismatched, r.slow, len(undecided), r.workers, r.took.Round(time.Millisecond))
	if checked != end-first {
		t.Errorf("checked %d inputs, want %d (all positive finite float32)", checked, end-first)
	}
	for i, s := range mismatches {
		if i < 20 {
			t.Error(s)
		}
	}
	var listed []uint32
	for _, h := range logHard {
		listed = append(listed, h[0])
	}
	if !slices.Equal(undecided, listed) {
		t.Errorf("hard cases: the float64 path leaves %d arguments undecided, the table lists %d", len(undecided), len(listed))
		if os.Getenv("TROCHILUS_LOG_HARD") == "print" {
			for _, b := range undecided {
				fmt.Printf("\t{%#08x, %#08x},\n", b, math.Float32bits(bigLogFloat32(math.Float32frombits(b))))
			}
		}
	}
}
