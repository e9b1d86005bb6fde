package kernels

import "math"

// Natural logarithm in float64, for the log probabilities serve reports. math.Log is not used:
// it is assembly on some architectures and Go code the compiler may fuse into FMAs on others,
// so its last bit can differ between machines. Log64 uses only IEEE operations whose every
// product is rounded before the next addition (an explicit float64 conversion, which keeps the
// compiler from fusing), so it gives the same bits everywhere; TestLog64Pinned holds a digest
// of its results that a fused build would change.

// ln2Hi and ln2Lo split ln 2: ln2Hi has 32 significant bits, so e·ln2Hi is exact for every
// exponent e of a float64; ln2Lo is the rest, rounded.
const (
	ln2Hi = 0x1.62e42fefa38p-1
	ln2Lo = 0x1.ef35793c7673p-45
)

// Log64 returns the natural logarithm of x within about one ulp: −Inf for ±0, NaN for a NaN or
// a negative x, +Inf for +Inf.
//
// With x = m·2^e and m in [√½, √2), ln x = e·ln 2 + 2·atanh(s) where s = (m−1)/(m+1) and
// |s| ≤ 0.1716; atanh(s) = s + s³/3 + s⁵/5 + …, of which ten terms reach below 2^-60 of it.
func Log64(x float64) float64 {
	switch {
	case x != x || x < 0:
		return math.NaN()
	case x == 0:
		return math.Inf(-1)
	case math.IsInf(x, 1):
		return x
	}
	b := math.Float64bits(x)
	e := int(b>>52&0x7ff) - 1023
	if e == -1023 { // subnormal: scale into the normal range first (exact)
		b = math.Float64bits(x * 0x1p54)
		e = int(b>>52&0x7ff) - 1023 - 54
	}
	m := math.Float64frombits(b&^(0x7ff<<52) | 1023<<52) // in [1, 2)
	if m > math.Sqrt2 {
		m *= 0.5 // exact
		e++
	}
	f := m - 1 // exact: m is within a factor of 2 of 1
	s := f / (m + 1)
	z := float64(s * s)
	// P(z) = 1/3 + z/5 + z²/7 + … + z⁹/21, by Horner.
	p := 1.0 / 21
	for _, c := range [...]float64{1.0 / 19, 1.0 / 17, 1.0 / 15, 1.0 / 13, 1.0 / 11, 1.0 / 9, 1.0 / 7, 1.0 / 5, 1.0 / 3} {
		p = float64(p*z) + c
	}
	// 2·atanh(s) = 2s + 2s·z·P(z); the small part first, then the exponent's.
	two := 2 * s // exact
	tail := float64(float64(two*z) * p)
	ed := float64(e)
	return float64(ed*ln2Hi) + (float64(ed*ln2Lo) + (two + tail))
}
