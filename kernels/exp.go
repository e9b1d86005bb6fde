package kernels

//go:generate go run ./internal/gentables

import "math"

// Thresholds of Exp: above expOverflow e^x rounds to +Inf; below expUnderflow it is under half
// the smallest subnormal and rounds to +0.
const (
	expOverflow  = 0x1.62e42ep+6 // 88.72283172607422, the largest float32 whose exp is finite
	expUnderflow = -0x1.ap+6     // -104; e^-104 < 2^-150
)

// expRoundMargin is the relative error bound of the float64 evaluation that Exp's rounding test
// assumes. The evaluation's error is about 2^-52 (the table entry, one polynomial and two
// roundings); four times that is allowed, and the exhaustive test (TestExpLong) proves every
// answer the test lets through.
const expRoundMargin = 0x1p-50

// Exp returns e^x correctly rounded to float32: the float32 nearest to the true value, ties to
// even (no tie occurs but at x = 0), overflowing to +Inf above 88.72283, underflowing through
// the subnormals to +0, and NaN for NaN.
//
// It evaluates e^x in float64 as 2^(k/64) · e^r with |r| <= ln2/128 (a 64-entry table and a
// degree-5 polynomial) and rounds the result to float32 when the whole error interval rounds to
// one float32. The few arguments where it does not are listed in expHard with their answers,
// found by the exhaustive search and computed at high precision.
func Exp(x float32) float32 {
	switch {
	case x != x:
		return x + x // quiet the NaN
	case x > expOverflow:
		return float32(math.Inf(1))
	case x < expUnderflow:
		return 0
	}
	y := expFloat64(x)
	lo := float32(float64(y * (1 - expRoundMargin)))
	hi := float32(float64(y * (1 + expRoundMargin)))
	if lo == hi {
		return lo
	}
	return expHardCase(x, y)
}

// expFloat64 evaluates e^x in float64 for a finite x in [expUnderflow, expOverflow], relative
// error about 2^-52. Every product is converted to float64 explicitly so that the compiler
// cannot fuse it with the following addition into an FMA: the result is the same on every
// architecture and GOAMD64 level.
func expFloat64(x float32) float64 {
	const (
		invLn2By64 = 64 / math.Ln2
		shifter    = 0x1.8p52 // adding it rounds a float64 below 2^51 to an integer
	)
	xd := float64(x)
	kd := float64(xd*invLn2By64) + shifter
	kd -= shifter
	k := int64(kd)
	// r = x − k·ln2/64; k·hi is exact (|k| < 2^14, hi has 39 bits) and so is the subtraction
	// whenever k != 0 (Sterbenz), leaving the one rounding of k·lo.
	r := float64(xd-float64(kd*expLn2By64Hi)) - float64(kd*expLn2By64Lo)
	// e^r − 1 = r + r²(1/2 + r(1/6 + r(1/24 + r/120))); truncation error < 2^-57 for
	// |r| <= ln2/128.
	q := float64(r*(1.0/120)) + 1.0/24
	q = float64(r*q) + 1.0/6
	q = float64(r*q) + 0.5
	p := float64(float64(r*r)*q) + r
	t := expPow2[k&63]
	y := t + float64(t*p)
	// 2^(k>>6) as bits; the arithmetic shift floors, matching k&63 above. The product is exact:
	// y stays a normal float64 over the whole domain.
	scale := math.Float64frombits(uint64(1023+(k>>6)) << 52)
	return float64(y * scale)
}

// expHardCase answers for the arguments whose float64 evaluation lies too near a float32
// rounding boundary. Any argument not listed cannot occur (TestExpLong checks all 2^32); were
// one to, the nearest float32 to the float64 value is still within one ulp.
func expHardCase(x float32, y float64) float32 {
	b := math.Float32bits(x)
	lo, hi := 0, len(expHard)
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		if expHard[mid][0] < b {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	if lo < len(expHard) && expHard[lo][0] == b {
		return math.Float32frombits(expHard[lo][1])
	}
	return float32(y)
}

// expHard lists, sorted by argument bits, the arguments where Exp's rounding test fails and the
// bits of their correctly rounded exp, computed by bigmath.ExpFloat32 (TestExpHardCases checks
// each entry, TestExpLong that the list is complete).
var expHard = [...][2]uint32{
	{0x377eff81, 0x3f800080},
	{0x39c6be5b, 0x3f800c6d},
	{0x4001b249, 0x40f2cd14},
	{0x40315b33, 0x417fa47d},
	{0xb3000000, 0x3f800000},
	{0xbae0e25c, 0x3f7f8fa7},
	{0xbbf0edf1, 0x3f7e1fe9},
	{0xc16912cd, 0x34fd331b},
}
