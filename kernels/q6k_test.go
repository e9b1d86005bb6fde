package kernels

import (
	"math"
	"math/big"
	"math/rand/v2"
	"testing"

	"github.com/trochilus-llm/trochilus/gguf"
)

// refQ6K evaluates the Q6_K definition plainly and independently of q6KBlock's bit picking:
// the weights come from gguf/quant's dequantization (checked against ggml; each weight
// d·sc·(q−32) is exact in float32), the shift by search, X by big rounding, and v as the
// exact dot of weights and X rounded once to float64.
func refQ6K(row []byte, x []float32) float32 {
	y := 0.0
	var w [256]float32
	for b := range len(x) / 256 {
		xb := x[256*b : 256*b+256]
		X, sh, ok := refFixedPoint(xb)
		if !ok {
			y += math.NaN()
			continue
		}
		// T from the integer weights sc·(q−32): the block dequantized with d = 1.
		var blk [210]byte
		copy(blk[:], row[210*b:210*b+210])
		blk[208], blk[209] = 0x00, 0x3c
		gguf.DequantizeQ6_K(&blk, &w)
		T := new(big.Int)
		for k := range xb {
			T.Add(T, new(big.Int).Mul(big.NewInt(int64(w[k])), big.NewInt(X[k])))
		}
		d := float64(gguf.F16ToF32(uint16(row[210*b+208]) | uint16(row[210*b+209])<<8))
		var v float64
		if math.IsNaN(d) || math.IsInf(d, 0) {
			v = d * float64(T.Int64()) // IEEE: ±Inf, or NaN for Inf·0 and NaN
		} else {
			v, _ = new(big.Float).SetPrec(512).Mul(new(big.Float).SetFloat64(d), new(big.Float).SetInt(T)).Float64() // nearest, ties to even: fl64(d·T)
		}
		y = y + math.Ldexp(v, -sh)
	}
	return float32(y)
}

func randQ6KCase(rng *rand.Rand, blocks int, special, specialScales bool) ([]byte, []float32) {
	return randPreparedCase(rng, gguf.TypeQ6_K, blocks, special, specialScales)
}

// checkQ6K compares a Q6_K dot with the plainly evaluated definition (see checkPrepared).
func checkQ6K(dot func(row []byte, in *q4KInput) float32) (checked, bad int, first string) {
	return checkPrepared(rand.New(rand.NewPCG(16, 1)), gguf.TypeQ6_K, refQ6K, dot)
}

func TestQ6KMatchesDefinition(t *testing.T) {
	checked, bad, first := checkQ6K(dotQ6K)
	expectAgree(t, checked, bad, first, "%d rows checked against the math/big evaluation, %d differ", "%d of %d rows differ; first: %s")
}

// TestQ6KCatchesWrongDefinitions makes sure checkQ6K can fail: each variant breaks one rule of
// the definition.
func TestQ6KCatchesWrongDefinitions(t *testing.T) {
	variants := map[string]func(row []byte, in *q4KInput) float32{
		"float32 block sums": func(row []byte, in *q4KInput) float32 {
			var y float32
			for b := range in.n / kElems {
				y += float32(q6KBlock(row[b*q6KBytes:], in, b) * in.scale[b])
			}
			return y
		},
		"no offset 32": func(row []byte, in *q4KInput) float32 {
			var y float64
			for b := range in.n / kElems {
				blk := row[b*q6KBytes:]
				v := q6KBlock(blk, in, b)
				var s int64
				for j := range 16 {
					var sx int64
					for k := 16 * j; k < 16*j+16; k++ {
						sx += int64(in.x[b*kElems+k])
					}
					s += int64(int8(blk[192+j])) * sx
				}
				v += float64(half(blk[208:])) * float64(32*s)
				y += v * in.scale[b]
			}
			return float32(y)
		},
		"unsigned scales": func(row []byte, in *q4KInput) float32 {
			flipped := append([]byte(nil), row...)
			for b := 0; b+q6KBytes <= len(flipped); b += q6KBytes {
				for j := range 16 {
					if int8(flipped[b+192+j]) < 0 {
						flipped[b+192+j] &= 0x7f
					}
				}
			}
			return dotQ6K(flipped, in)
		},
	}
	for name, dot := range variants {
		checked, bad, _ := checkQ6K(dot)
		t.Logf("%s: %d of %d rows differ", name, bad, checked)
		if bad == 0 {
			t.Errorf("%s: the check did not notice the broken definition", name)
		}
	}
}

// TestQ6KAccuracy measures the definition against the exact rational dot of the exact weights
// and x: how often it is the correctly rounded float32, and the worst error in ulps, beside the
// float definition it replaced: 16 float32 lanes (type lanes) of the rounded products of the exact
// weights and x, joined by the lanes' tree.
func TestQ6KAccuracy(t *testing.T) {
	rng := rand.New(rand.NewPCG(16, 2))
	var in q4KInput
	var w [256]float32
	rows, exact, floatExact := 0, 0, 0
	worst, floatWorst := 0.0, 0.0
	for i := range 300 {
		blocks := 1 + i%8
		row, x := randQ6KCase(rng, blocks, false, false)
		if err := prepareQ4K(&in, x); err != nil {
			t.Fatal(err)
		}
		E := new(big.Float).SetPrec(768)
		var lanes lanes
		for b := range blocks {
			gguf.DequantizeQ6_K((*[210]byte)(row[210*b:210*b+210]), &w)
			lanes.AddProducts(w[:], x[256*b:])
			for k := range 256 {
				p := new(big.Float).SetPrec(768).SetFloat64(float64(w[k]))
				E.Add(E, p.Mul(p, new(big.Float).SetFloat64(float64(x[256*b+k]))))
			}
		}
		cr, _ := E.Float32()
		got, old := dotQ6K(row, &in), lanes.Sum()
		rows++
		if sameBits(got, cr) {
			exact++
		}
		if sameBits(old, cr) {
			floatExact++
		}
		worst = max(worst, ulpsOff(got, cr))
		floatWorst = max(floatWorst, ulpsOff(old, cr))
	}
	t.Logf("%d rows: exact-integer definition correctly rounded in %d (worst %.1f ulp); float lanes in %d (worst %.1f ulp)",
		rows, exact, worst, floatExact, floatWorst)
	if exact*100 < rows*90 {
		t.Errorf("only %d of %d rows correctly rounded", exact, rows)
	}
	if exact < floatExact {
		t.Errorf("the integer definition is less often correctly rounded (%d) than the float one (%d)", exact, floatExact)
	}
}

// ulpsOff returns |a − b| in units of the last place of b.
func ulpsOff(a, b float32) float64 {
	if a == b {
		return 0
	}
	ulp := float64(math.Nextafter32(float32(math.Abs(float64(b))), float32(math.Inf(1)))) - math.Abs(float64(b))
	return math.Abs(float64(a)-float64(b)) / ulp
}
