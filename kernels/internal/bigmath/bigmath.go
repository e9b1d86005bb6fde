// Package bigmath evaluates the few transcendental functions the kernels need (exp, log, cos,
// sin, powers) at high precision with math/big, and rounds them correctly to float32 and
// float64.
//
// It is the slow, trusted side of the numerics: the kernels' tables are generated from it, the
// RoPE table falls back on it for the rare entry a float64 evaluation cannot decide, and the
// tests use it as the reference that fast code is compared against. Nothing here is fast and
// everything allocates.
package bigmath

import (
	"fmt"
	"math"
	"math/big"
)

// guard is the number of bits carried beyond the requested precision inside an evaluation.
// Every function below loses far fewer than guard/2 bits to rounding and cancellation, so
// results are good to the requested precision with a wide margin.
const guard = 64

func newFloat(prec uint) *big.Float { return new(big.Float).SetPrec(prec) }

// Ln2 returns ln 2 to prec bits, from ln 2 = 2 atanh(1/3) = 2 sum 1/((2k+1) 3^(2k+1)).
func Ln2(prec uint) *big.Float {
	p := prec + guard
	third := newFloat(p).Quo(newFloat(p).SetInt64(1), newFloat(p).SetInt64(3))
	ninth := newFloat(p).Mul(third, third)
	sum := atanhSeries(third, ninth, p)
	return sum.Mul(sum, newFloat(p).SetInt64(2)).SetPrec(prec)
}

// atanhSeries returns sum_k u^(2k+1)/(2k+1) given u and u².
func atanhSeries(u, u2 *big.Float, p uint) *big.Float {
	sum := newFloat(p).Set(u)
	pow := newFloat(p).Set(u)
	term := newFloat(p)
	eps := newFloat(p).SetMantExp(big.NewFloat(1), -int(p))
	for k := int64(1); ; k++ {
		pow.Mul(pow, u2)
		term.Quo(pow, newFloat(p).SetInt64(2*k+1))
		if term.Sign() == 0 || term.Cmp(eps) < 0 {
			return sum
		}
		sum.Add(sum, term)
	}
}

// Pi returns π to prec bits by Machin's formula π = 16 atan(1/5) − 4 atan(1/239).
func Pi(prec uint) *big.Float {
	p := prec + guard
	atanInv := func(m int64) *big.Float {
		// atan(1/m) = sum (-1)^k / ((2k+1) m^(2k+1))
		u := newFloat(p).Quo(newFloat(p).SetInt64(1), newFloat(p).SetInt64(m))
		u2 := newFloat(p).Mul(u, u)
		sum := newFloat(p).Set(u)
		pow := newFloat(p).Set(u)
		term := newFloat(p)
		eps := newFloat(p).SetMantExp(big.NewFloat(1), -int(p))
		for k := int64(1); ; k++ {
			pow.Mul(pow, u2)
			term.Quo(pow, newFloat(p).SetInt64(2*k+1))
			if term.Cmp(eps) < 0 {
				return sum
			}
			if k%2 == 1 {
				sum.Sub(sum, term)
			} else {
				sum.Add(sum, term)
			}
		}
	}
	a := atanInv(5)
	a.Mul(a, newFloat(p).SetInt64(16))
	b := atanInv(239)
	b.Mul(b, newFloat(p).SetInt64(4))
	return a.Sub(a, b).SetPrec(prec)
}

// Exp returns e^x to prec bits for a finite x with |x| < 2^20.
func Exp(x *big.Float, prec uint) *big.Float {
	p := prec + guard
	if x.IsInf() {
		panic("bigmath.Exp: infinite argument")
	}
	// x = n ln2 + r with |r| <= ln2/2, then e^r = (e^(r/2^s))^(2^s).
	ln2 := Ln2(p + 32)
	q := newFloat(p+32).Quo(x, ln2)
	nf, _ := q.Float64()
	n := int64(math.Round(nf))
	r := newFloat(p+32).Mul(ln2, newFloat(p+32).SetInt64(n))
	r.Sub(newFloat(p+32).Set(x), r)
	const s = 12
	r.SetMantExp(r, -s)
	r.SetPrec(p)
	sum := newFloat(p).SetInt64(1)
	term := newFloat(p).SetInt64(1)
	eps := newFloat(p).SetMantExp(big.NewFloat(1), -int(p))
	for k := int64(1); ; k++ {
		term.Mul(term, r)
		term.Quo(term, newFloat(p).SetInt64(k))
		if term.Sign() == 0 || new(big.Float).Abs(term).Cmp(eps) < 0 {
			break
		}
		sum.Add(sum, term)
	}
	for range s {
		sum.Mul(sum, sum)
	}
	sum.SetMantExp(sum, int(n))
	return sum.SetPrec(prec)
}

// Log returns ln x to prec bits for a finite x > 0, by Newton's iteration on Exp.
func Log(x *big.Float, prec uint) *big.Float {
	if x.Sign() <= 0 || x.IsInf() {
		panic("bigmath.Log: argument not finite and positive")
	}
	p := prec + guard
	xf, _ := x.Float64()
	y := newFloat(p).SetFloat64(math.Log(xf))
	// Each step y += 2(x − e^y)/(x + e^y) triples the correct bits; from 50 bits, five steps
	// give more than 10000.
	for range 5 {
		e := Exp(y, p)
		num := newFloat(p).Sub(x, e)
		den := newFloat(p).Add(x, e)
		num.Quo(num, den)
		num.Mul(num, newFloat(p).SetInt64(2))
		y.Add(y, num)
	}
	return y.SetPrec(prec)
}

// Pow returns base^e to prec bits for finite base > 0 and a modest e.
func Pow(base, e *big.Float, prec uint) *big.Float {
	p := prec + guard
	l := Log(base, p)
	return Exp(l.Mul(l, e), p).SetPrec(prec)
}

// CosSin returns cos x and sin x to prec bits (absolute error below 2^-prec), for |x| < 2^40.
func CosSin(x *big.Float, prec uint) (cos, sin *big.Float) {
	p := prec + guard + 64
	halfPi := Pi(p)
	halfPi.SetMantExp(halfPi, -1)
	q := newFloat(p).Quo(x, halfPi)
	qf, _ := q.Float64()
	n := int64(math.Round(qf))
	r := newFloat(p).Mul(halfPi, newFloat(p).SetInt64(n))
	r.Sub(newFloat(p).Set(x), r)
	// |r| <= π/4: Taylor series for both.
	r2 := newFloat(p).Mul(r, r)
	c := newFloat(p).SetInt64(1)
	s := newFloat(p).Set(r)
	ct := newFloat(p).SetInt64(1)
	st := newFloat(p).Set(r)
	eps := newFloat(p).SetMantExp(big.NewFloat(1), -int(p))
	for k := int64(1); ; k++ {
		ct.Mul(ct, r2)
		ct.Quo(ct, newFloat(p).SetInt64((2*k-1)*(2*k)))
		ct.Neg(ct)
		st.Mul(st, r2)
		st.Quo(st, newFloat(p).SetInt64((2*k)*(2*k+1)))
		st.Neg(st)
		c.Add(c, ct)
		s.Add(s, st)
		if new(big.Float).Abs(ct).Cmp(eps) < 0 && new(big.Float).Abs(st).Cmp(eps) < 0 {
			break
		}
	}
	switch ((n % 4) + 4) % 4 {
	case 0:
		return c.SetPrec(prec), s.SetPrec(prec)
	case 1:
		return s.Neg(s).SetPrec(prec), c.SetPrec(prec)
	case 2:
		return c.Neg(c).SetPrec(prec), s.Neg(s).SetPrec(prec)
	default:
		return s.SetPrec(prec), c.Neg(c).SetPrec(prec)
	}
}

// RoundFloat32 returns the float32 nearest to v (ties to even, through subnormals, overflow to
// ±Inf) when every value within err of v rounds to the same float32; ok is false when v is too
// close to a rounding boundary for err to decide.
func RoundFloat32(v, err *big.Float) (f float32, ok bool) {
	lo := new(big.Float).SetPrec(v.Prec()+8).Sub(v, err)
	hi := new(big.Float).SetPrec(v.Prec()+8).Add(v, err)
	a, _ := lo.Float32()
	b, _ := hi.Float32()
	if math.Float32bits(a) != math.Float32bits(b) {
		return 0, false
	}
	return a, true
}

// RoundFloat64 is RoundFloat32 for float64.
func RoundFloat64(v, err *big.Float) (f float64, ok bool) {
	lo := new(big.Float).SetPrec(v.Prec()+8).Sub(v, err)
	hi := new(big.Float).SetPrec(v.Prec()+8).Add(v, err)
	a, _ := lo.Float64()
	b, _ := hi.Float64()
	if math.Float64bits(a) != math.Float64bits(b) {
		return 0, false
	}
	return a, true
}

// relErr returns |v| * 2^-bits, an error bound relative to v.
func relErr(v *big.Float, bits int) *big.Float {
	e := new(big.Float).Abs(v)
	return e.SetMantExp(e, -bits)
}

// ExpFloat32 returns the correctly rounded float32 e^x for a finite x, evaluating e^x at
// increasing precision until the rounding is decided. e^x is never a rounding boundary
// itself for x != 0 (Lindemann), so the loop ends.
func ExpFloat32(x float32) float32 {
	if x == 0 {
		return 1
	}
	if x > 89 {
		return float32(math.Inf(1))
	}
	if x < -104 {
		return 0
	}
	xb := new(big.Float).SetFloat64(float64(x))
	for prec := uint(128); ; prec *= 2 {
		v := Exp(xb, prec)
		if f, ok := RoundFloat32(v, relErr(v, int(prec)-4)); ok {
			return f
		}
		if prec > 1<<14 {
			panic(fmt.Sprintf("bigmath.ExpFloat32(%g): undecided at %d bits", x, prec))
		}
	}
}

// Pow2Frac returns 2^(j/64) correctly rounded to float64, for the exp table.
func Pow2Frac(j int) float64 {
	for prec := uint(128); ; prec *= 2 {
		// 2^(j/64) is six square roots of 2^j.
		v := newFloat(prec+guard).SetMantExp(big.NewFloat(1), j)
		for range 6 {
			v.Sqrt(v)
		}
		if f, ok := RoundFloat64(v, relErr(v, int(prec))); ok {
			return f
		}
	}
}

// ExpConstants returns the constants of the kernels' float32 exp: ln2/64 split as hi + lo, hi
// with 39 significant bits so that k·hi is exact for |k| < 2^14, lo the rest rounded to float64;
// and the table 2^(j/64), j = 0..63, correctly rounded to float64.
func ExpConstants() (hi, lo float64, pow2 [64]float64) {
	const p = 256
	l := Ln2(p + guard)
	l.SetMantExp(l, -6)
	h := new(big.Float).SetPrec(39).SetMode(big.ToNearestEven).Set(l)
	hi, _ = h.Float64()
	rest := new(big.Float).SetPrec(p).Sub(l, h)
	lo, _ = rest.Float64()
	for j := range pow2 {
		pow2[j] = Pow2Frac(j)
	}
	return hi, lo, pow2
}
