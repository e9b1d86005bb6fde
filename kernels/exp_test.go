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

// refMargin is the relative error the exp reference allows math.Exp (which claims under one
// float64 ulp, 2^-52): 256 times more. TestMathExpAccuracy measures the real error on samples.
const refMargin = 0x1p-44

// expReference returns the correctly rounded float32 e^x and whether deciding it needed the
// high-precision evaluation. A float64 e^x whose whole error interval rounds to one float32
// decides the answer; the rest go to math/big.
func expReference(x float32) (float32, bool) {
	y := math.Exp(float64(x))
	lo := float32(y * (1 - refMargin))
	hi := float32(y * (1 + refMargin))
	if math.Float32bits(lo) == math.Float32bits(hi) {
		return lo, false
	}
	return bigmath.ExpFloat32(x), true
}

// expFastDecides reports whether Exp's float64 path decides x without the hard-case table.
func expFastDecides(x float32) bool {
	if x != x || x > expOverflow || x < expUnderflow {
		return true
	}
	y := expFloat64(x)
	return float32(float64(y*(1-expRoundMargin))) == float32(float64(y*(1+expRoundMargin)))
}

func sameBits(a, b float32) bool {
	if a != a && b != b {
		return true
	}
	return math.Float32bits(a) == math.Float32bits(b)
}

func TestExpSpecialValues(t *testing.T) {
	inf := float32(math.Inf(1))
	cases := []struct{ x, want float32 }{
		{0, 1},
		{float32(math.Copysign(0, -1)), 1},
		{inf, inf},
		{-inf, 0},
		{1, 0x1.5bf0a8p+1},
		{-1, 0x1.78b564p-2},
		{math.Float32frombits(0x42b17217), math.Float32frombits(0x7f7fff84)}, // largest finite result
		{math.Float32frombits(0x42b17218), inf},
		{math.Float32frombits(0xc2cff1b4), math.Float32frombits(0x00000001)}, // last to reach the smallest subnormal
		{math.Float32frombits(0xc2cff1b5), 0},
		{expUnderflow, 0},
		{math.Float32frombits(0xc2aeac4f), math.Float32frombits(0x00800026)}, // normal result
		{math.Float32frombits(0xc2aeac50), math.Float32frombits(0x007fffe6)}, // subnormal result
		{math.Float32frombits(1), 1},
		{-math.Float32frombits(1), 1},
	}
	for _, c := range cases {
		if got := Exp(c.x); !sameBits(got, c.want) {
			t.Errorf("Exp(%g) = %g (%#08x), want %g (%#08x)", c.x, got, math.Float32bits(got), c.want, math.Float32bits(c.want))
		}
		if ref, _ := expReference(c.x); !sameBits(ref, c.want) {
			t.Errorf("reference e^%g = %g, table says %g", c.x, ref, c.want)
		}
	}
	nan := Exp(float32(math.NaN()))
	if nan == nan {
		t.Errorf("Exp(NaN) = %g, want NaN", nan)
	}
}

// TestExpSampled checks every 1021st bit pattern (4.2 million inputs over the whole range)
// plus every hard case against the reference.
func TestExpSampled(t *testing.T) {
	const stride = 1021
	checked, mismatches, slow := 0, 0, 0
	check := func(x float32) {
		if x != x {
			return
		}
		want, s := expReference(x)
		if s {
			slow++
		}
		checked++
		if got := Exp(x); !sameBits(got, want) {
			mismatches++
			if mismatches <= 10 {
				t.Errorf("Exp(%g [%#08x]) = %#08x, want %#08x", x, math.Float32bits(x), math.Float32bits(got), math.Float32bits(want))
			}
		}
	}
	for b := uint64(0); b < 1<<32; b += stride {
		check(math.Float32frombits(uint32(b)))
	}
	for _, h := range expHard {
		check(math.Float32frombits(h[0]))
	}
	t.Logf("Exp: %d sampled inputs checked, %d decided at high precision, %d mismatches", checked, slow, mismatches)
}

// TestExpHardCases checks each entry of the hard-case table at high precision, and that the
// float64 path really cannot decide it (a dead entry would hide a change in expFloat64).
func TestExpHardCases(t *testing.T) {
	if !slices.IsSortedFunc(expHard[:], func(a, b [2]uint32) int { return int(int64(a[0]) - int64(b[0])) }) {
		t.Fatal("expHard is not sorted by argument")
	}
	for _, h := range expHard {
		x := math.Float32frombits(h[0])
		if want := bigmath.ExpFloat32(x); math.Float32bits(want) != h[1] {
			t.Errorf("expHard: e^%g [%#08x] listed as %#08x, high precision says %#08x", x, h[0], h[1], math.Float32bits(want))
		}
		if expFastDecides(x) {
			t.Errorf("expHard: %#08x is decided by the float64 path; the entry is dead", h[0])
		}
	}
}

// TestExpConstants regenerates the exp constants at high precision and compares them with
// exp_table.go bit for bit.
func TestExpConstants(t *testing.T) {
	hi, lo, pow2 := bigmath.ExpConstants()
	if hi != expLn2By64Hi || lo != expLn2By64Lo {
		t.Errorf("ln2/64 split: file has %x + %x, generator gives %x + %x", float64(expLn2By64Hi), float64(expLn2By64Lo), hi, lo)
	}
	for j := range pow2 {
		if math.Float64bits(pow2[j]) != math.Float64bits(expPow2[j]) {
			t.Errorf("2^(%d/64): file has %x, generator gives %x", j, expPow2[j], pow2[j])
		}
	}
}

// TestMathExpAccuracy measures math.Exp against a 200-bit evaluation on random float32
// arguments: the reference above relies on its relative error being far below refMargin.
func TestMathExpAccuracy(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	worst := 0.0
	const n = 2000
	for range n {
		x := float32(rng.Float64()*192 - 103)
		exact := bigmath.Exp(new(big.Float).SetFloat64(float64(x)), 200)
		got := new(big.Float).SetPrec(200).SetFloat64(math.Exp(float64(x)))
		diff := new(big.Float).SetPrec(200).Sub(got, exact)
		diff.Quo(diff, exact)
		rel, _ := diff.Float64()
		worst = max(worst, math.Abs(rel))
	}
	t.Logf("math.Exp: worst relative error on %d samples %.3g (2^%.1f); reference margin 2^%d", n, worst, math.Log2(worst), int(math.Log2(refMargin)))
	if worst > refMargin/64 {
		t.Errorf("math.Exp relative error %g is too close to the reference margin %g", worst, refMargin)
	}
}

// pieces is how many pieces the exhaustive checks cut the 2^32 float32 bit patterns into.
const pieces = 1 << 12

// TestExpLong checks Exp on every float32 bit pattern against the reference, on all cores,
// and that the hard-case table lists exactly the arguments the float64 path cannot decide.
func TestExpLong(t *testing.T) {
	if os.Getenv("TROCHILUS_LONG") != "1" {
		t.Skip("exhaustive exp check runs with TROCHILUS_LONG=1")
	}
	r := checkEveryFloat32("Exp", 0, 1<<32, Exp, expReference, expFastDecides)
	checked, mismatches, undecided := r.checked, r.mismatches, r.undecided
	t.Logf("Exp exhaustive: %d non-NaN inputs checked, %d mismatches, %d decided at high precision, %d hard cases, %d workers, %v",
		checked, r.mismatched, r.slow, len(undecided), r.workers, r.took.Round(time.Millisecond))
	if checked != 4278190082 {
		t.Errorf("checked %d inputs, want 4278190082 (all non-NaN float32)", checked)
	}
	for i, s := range mismatches {
		if i < 20 {
			t.Error(s)
		}
	}
	var listed []uint32
	for _, h := range expHard {
		listed = append(listed, h[0])
	}
	if !slices.Equal(undecided, listed) {
		t.Errorf("hard cases: float64 path leaves %d arguments undecided, table lists %d", len(undecided), len(listed))
		if os.Getenv("TROCHILUS_EXP_HARD") == "print" {
			for _, b := range undecided {
				fmt.Printf("\t{%#08x, %#08x},\n", b, math.Float32bits(bigmath.ExpFloat32(math.Float32frombits(b))))
			}
		}
	}
}
