package kernels

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"math"
	"math/big"
	"math/rand/v2"
	"testing"

	"github.com/trochilus-llm/trochilus/kernels/internal/bigmath"
)

// log64Inputs are the arguments the Log64 tests run on: the ranges a sum of probabilities
// takes (1 to a vocabulary's size), and every binade of float64, subnormals included.
func log64Inputs() []float64 {
	r := rand.New(rand.NewPCG(3, 4))
	var xs []float64
	for range 200000 {
		xs = append(xs, 1+float64(r.Float64()*float64(r.IntN(1<<18)))) // rounded before the sum, as under FMA it would not be
	}
	for range 100000 {
		xs = append(xs, math.Float64frombits(r.Uint64()&^(1<<63)))
	}
	for _, x := range []float64{1, 2, 0.5, math.Sqrt2, math.Sqrt2 * (1 + 0x1p-52), 1 + 0x1p-52, 1 - 0x1p-53,
		math.E, 10, 50304, 151936, math.MaxFloat64, math.SmallestNonzeroFloat64, 0x1p-1022} {
		xs = append(xs, x)
	}
	return xs
}

// TestLog64Accurate compares Log64 with the logarithm computed to 200 bits (rounded to float64):
// within one ulp.
func TestLog64Accurate(t *testing.T) {
	xs := log64Inputs()
	worst := 0.0
	for i, x := range xs {
		if x != x || math.IsInf(x, 0) || (i%50 != 0 && i < len(xs)-20) {
			continue // math/big is slow: every 50th, and the special ones
		}
		want := bigLog(x)
		got := Log64(x)
		ulp := math.Abs(math.Nextafter(want, math.Inf(1)) - want)
		if d := math.Abs(got-want) / ulp; d > worst {
			worst = d
		}
		if math.Abs(got-want) > ulp {
			t.Fatalf("Log64(%v) = %v, ln is %v: off by %.2f ulp", x, got, want, math.Abs(got-want)/ulp)
		}
	}
	t.Logf("worst error %.3f ulp", worst)
	for _, c := range []struct{ x, want float64 }{{0, math.Inf(-1)}, {math.Copysign(0, -1), math.Inf(-1)}, {math.Inf(1), math.Inf(1)}, {1, 0}} {
		if got := Log64(c.x); got != c.want {
			t.Errorf("Log64(%v) = %v, want %v", c.x, got, c.want)
		}
	}
	for _, x := range []float64{-1, math.NaN(), math.Inf(-1)} {
		if got := Log64(x); !math.IsNaN(got) {
			t.Errorf("Log64(%v) = %v, want NaN", x, got)
		}
	}
}

// bigLog is ln x to 200 bits, rounded to float64. bigmath.Log starts its Newton steps from
// math.Log, which is far off for subnormals on amd64 (ln 1.68e-308 comes out −708.526, not
// −708.675), so the argument is scaled near 1 first: ln x = ln(x·2^k) − k·ln 2.
func bigLog(x float64) float64 {
	_, k := math.Frexp(x)
	v := new(big.Float).SetPrec(200).SetMantExp(new(big.Float).SetPrec(200).SetFloat64(x), -k)
	l := bigmath.Log(v, 200)
	l.Add(l, new(big.Float).SetPrec(200).Mul(new(big.Float).SetInt64(int64(k)), bigmath.Ln2(200)))
	f, _ := l.Float64()
	return f
}

// TestLog64Pinned hashes Log64's results on its inputs: the digest is the same on every
// architecture and GOAMD64 level, or a build fused a product into an FMA (the gate runs this
// under GOAMD64=v1 and v3).
func TestLog64Pinned(t *testing.T) {
	h := sha256.New()
	var b [8]byte
	for _, x := range log64Inputs() {
		binary.LittleEndian.PutUint64(b[:], math.Float64bits(Log64(x)))
		h.Write(b[:])
	}
	const want = "a3360e7df934ec6ec2000715df7ef074ba47dfb5ec1ceb53a78bafa890b68fc8"
	if got := hex.EncodeToString(h.Sum(nil)); got != want {
		t.Fatalf("Log64's results hash to %s, pinned %s", got, want)
	}
}
