package bigmath

import (
	"math"
	"math/big"
	"testing"
)

// Known digits (from the literature) of the constants the package computes.
const (
	piDigits  = "3.14159265358979323846264338327950288419716939937510582097494459"
	ln2Digits = "0.693147180559945309417232121458176568075500134360255254120680009"
	eDigits   = "2.71828182845904523536028747135266249775724709369995957496696763"
	cos1      = "0.540302305868139717400936607442976603732310420617922227670097255"
	sin1      = "0.841470984807896506652502321630298999622563060798371065672751709"
	log10     = "2.30258509299404568401799145468436420760110148862877297603332790"
)

func parse(t *testing.T, s string) *big.Float {
	f, _, err := big.ParseFloat(s, 10, 256, big.ToNearestEven)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// close reports whether a and b agree to 2^-200 relative (the digits above hold about 2^-206).
func close(a, b *big.Float) bool {
	d := new(big.Float).SetPrec(256).Sub(a, b)
	d.Abs(d)
	lim := new(big.Float).Abs(b)
	lim.SetMantExp(lim, -200)
	return d.Cmp(lim) <= 0
}

func TestConstants(t *testing.T) {
	one := big.NewFloat(1)
	c, s := CosSin(one, 256)
	cases := []struct {
		name string
		got  *big.Float
		want string
	}{
		{"pi", Pi(256), piDigits},
		{"ln2", Ln2(256), ln2Digits},
		{"e", Exp(one, 256), eDigits},
		{"cos 1", c, cos1},
		{"sin 1", s, sin1},
		{"log 10", Log(big.NewFloat(10), 256), log10},
	}
	for _, k := range cases {
		if !close(k.got, parse(t, k.want)) {
			t.Errorf("%s = %s, want %s", k.name, k.got.Text('g', 60), k.want)
		}
	}
	// cos and sin of a large argument (reduction by many multiples of π/2) against
	// float64's, which is accurate to 1e-16 there.
	x := 4095.0
	c, s = CosSin(big.NewFloat(x), 128)
	cf, _ := c.Float64()
	sf, _ := s.Float64()
	if math.Abs(cf-math.Cos(x)) > 1e-15 || math.Abs(sf-math.Sin(x)) > 1e-15 {
		t.Errorf("cos/sin(4095) = %g, %g; float64 says %g, %g", cf, sf, math.Cos(x), math.Sin(x))
	}
	// 10000^(1/2) = 100 exactly.
	p := Pow(big.NewFloat(10000), big.NewFloat(0.5), 128)
	if f, _ := p.Float64(); f != 100 {
		t.Errorf("10000^0.5 = %s", p.Text('g', 40))
	}
}

func TestRounding(t *testing.T) {
	if f := ExpFloat32(1); f != float32(math.E) {
		t.Errorf("ExpFloat32(1) = %g", f)
	}
	if f := ExpFloat32(-104.5); f != 0 {
		t.Errorf("ExpFloat32(-104.5) = %g", f)
	}
	// A value on a float32 rounding boundary cannot be decided with any error.
	mid := new(big.Float).SetFloat64(1 + 0x1p-24)
	if _, ok := RoundFloat32(mid, new(big.Float).SetFloat64(0x1p-60)); ok {
		t.Error("RoundFloat32 decided a midpoint")
	}
	if f, ok := RoundFloat32(mid, big.NewFloat(0)); !ok || f != 1 {
		t.Errorf("exact midpoint with no error: %g, %v (want 1, ties to even)", f, ok)
	}
	if Pow2Frac(32) != math.Sqrt2 {
		t.Errorf("2^(32/64) = %x, want %x", Pow2Frac(32), math.Sqrt2)
	}
}
