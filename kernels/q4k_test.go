package kernels

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/big"
	"math/rand/v2"
	"testing"

	"github.com/trochilus-llm/trochilus/gguf"
)

// refQ4K evaluates the Q4_K definition plainly, with math/big where the kernel uses bit tricks:
// the shift by search, X by big rounding, T and M as big integers.
func refQ4K(row []byte, x []float32) float32 {
	y := 0.0
	for b := range len(x) / 256 {
		xb := x[256*b : 256*b+256]
		blk := row[144*b : 144*b+144]
		X, sh, ok := refFixedPoint(xb)
		if !ok {
			y += math.NaN()
			continue
		}
		d := float64(gguf.F16ToF32(binary.LittleEndian.Uint16(blk[0:])))
		dmin := float64(gguf.F16ToF32(binary.LittleEndian.Uint16(blk[2:])))
		T, M := new(big.Int), new(big.Int)
		for k := range 256 {
			j := k / 32
			sc, mn := gguf.ScaleMinK4(j, (*[12]byte)(blk[4:16]))
			q := int64(blk[16+32*(k/64)+k%32] >> (4 * (j % 2)) & 15)
			T.Add(T, big.NewInt(int64(sc)*q*X[k]))
			M.Add(M, big.NewInt(int64(mn)*X[k]))
		}
		tf, _ := new(big.Float).SetInt(T).Float64()
		mf, _ := new(big.Float).SetInt(M).Float64()
		a := d * tf
		c := dmin * mf
		v := a - c
		y = y + math.Ldexp(v, -sh)
	}
	return float32(y)
}

// refFixedPoint evaluates steps 1-3 of the prepared-input definitions plainly for one block:
// the shift by search, X_k = round_half_even(x_k·2^sh) by big rounding. ok is false for a
// block holding a NaN or an infinity.
func refFixedPoint(xb []float32) (X []int64, sh int, ok bool) {
	var m float64
	for _, v := range xb {
		if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
			return nil, 0, false
		}
		m = max(m, math.Abs(float64(v)))
	}
	if m != 0 {
		sh = 400
		for math.Ldexp(m, sh) > q4kXMax {
			sh--
		}
	}
	X = make([]int64, len(xb))
	for k, v := range xb {
		f := new(big.Float).SetPrec(200).SetFloat64(float64(v))
		f.SetMantExp(f, sh)
		X[k] = roundHalfEven(f)
	}
	return X, sh, true
}

// q4kTM returns the exact integers T and M of block b (see dotQ4K).
func q4kTM(blk []byte, in *q4KInput, b int) (T, M int64) {
	for k := range 256 {
		j := k / 32
		sc, mn := gguf.ScaleMinK4(j, (*[12]byte)(blk[4:16]))
		q := int64(blk[16+32*(k/64)+k%32] >> (4 * (j % 2)) & 15)
		T += int64(sc) * q * int64(in.x[256*b+k])
		M += int64(mn) * int64(in.x[256*b+k])
	}
	return T, M
}

// roundHalfEven rounds f to the nearest integer, ties to even.
func roundHalfEven(f *big.Float) int64 {
	fl, _ := f.Int(nil) // truncates toward zero
	frac := new(big.Float).Sub(f, new(big.Float).SetInt(fl))
	half := big.NewFloat(0.5)
	absFrac := new(big.Float).Abs(frac)
	n := fl.Int64()
	up := absFrac.Cmp(half) > 0 || absFrac.Cmp(half) == 0 && n%2 != 0
	if up {
		if f.Sign() < 0 {
			n--
		} else {
			n++
		}
	}
	return n
}

// q4kWeightsExact returns the exact weights (d·sc_j)·q − dmin·m_j of a Q4_K row as big floats
// (products of f16 values and small integers: exact in 64 bits).
func q4kWeightsExact(row []byte, n int) []*big.Float {
	w := make([]*big.Float, n)
	for b := range n / 256 {
		blk := row[144*b:]
		d := float64(gguf.F16ToF32(binary.LittleEndian.Uint16(blk[0:])))
		dmin := float64(gguf.F16ToF32(binary.LittleEndian.Uint16(blk[2:])))
		for k := range 256 {
			j := k / 32
			sc, mn := gguf.ScaleMinK4(j, (*[12]byte)(blk[4:16]))
			q := float64(blk[16+32*(k/64)+k%32] >> (4 * (j % 2)) & 15)
			a := new(big.Float).SetPrec(128).SetFloat64(d * float64(sc)) // exact
			a.Mul(a, big.NewFloat(q))
			c := new(big.Float).SetPrec(128).SetFloat64(dmin * float64(mn))
			w[256*b+k] = a.Sub(a, c)
		}
	}
	return w
}

func randQ4KCase(rng *rand.Rand, blocks int, special, specialScales bool) ([]byte, []float32) {
	return randPreparedCase(rng, gguf.TypeQ4_K, blocks, special, specialScales)
}

// randPreparedCase returns a row of typ (Q4_K or Q6_K) of blocks blocks (ggml's quantization of
// random floats, or random bytes with random scales) and an input of the same length, with
// blocks of very different magnitudes and zero blocks when special.
func randPreparedCase(rng *rand.Rand, typ gguf.Type, blocks int, special, specialScales bool) ([]byte, []float32) {
	n := 256 * blocks
	row := randRow(rng, typ, n, specialScales)
	x := randFloats(rng, n, false, false)
	if special {
		for b := range blocks {
			s := float32(math.Exp2(float64(rng.IntN(200) - 100)))
			if rng.IntN(5) == 0 {
				s = 0
			}
			for k := range 256 {
				x[256*b+k] *= s
			}
		}
	}
	return row, x
}

// checkQ4K compares a Q4_K dot with the plainly evaluated definition (see checkPrepared).
func checkQ4K(dot func(row []byte, in *q4KInput) float32) (checked, bad int, first string) {
	return checkPrepared(rand.New(rand.NewPCG(12, 1)), gguf.TypeQ4_K, refQ4K, dot)
}

// checkPrepared compares dot, a dot of typ on a prepared input, with ref, the plainly evaluated
// definition, on 300 rows (some with special scales, mixed block magnitudes, NaNs and
// infinities) and returns counts.
func checkPrepared(rng *rand.Rand, typ gguf.Type, ref func(row []byte, x []float32) float32, dot func(row []byte, in *q4KInput) float32) (checked, bad int, first string) {
	var c counts
	var in q4KInput
	for i := range 300 {
		blocks := 1 + i%5
		row, x := randPreparedCase(rng, typ, blocks, i%2 == 1, i%3 == 1)
		if i%10 == 9 { // a NaN or an infinity in one block
			x[rng.IntN(len(x))] = []float32{float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1))}[i%3]
		}
		if err := prepareQ4K(&in, x); err != nil {
			return c.checked, c.bad + 1, err.Error()
		}
		got, want := dot(row, &in), ref(row, x)
		c.note(got, want, func() string {
			return fmt.Sprintf("case %d (%d blocks): got %g (%#08x), definition gives %g (%#08x)", i, blocks, got, math.Float32bits(got), want, math.Float32bits(want))
		})
	}
	return c.result()
}

func TestQ4KMatchesDefinition(t *testing.T) {
	checked, bad, first := checkQ4K(dotQ4K)
	expectAgree(t, checked, bad, first, "Q4_K: %d rows against the plainly evaluated definition, %d differ", "dotQ4K differs on %d of %d rows; first: %s")
}

// TestQ4KAgainstExact compares dotQ4K with the exact dot Σ w_k·x_k of the exact weights
// (rational arithmetic in math/big): the result is the correctly rounded exact dot in most
// rows, and always within the bound the definition's roundings allow.
func TestQ4KAgainstExact(t *testing.T) {
	rng := rand.New(rand.NewPCG(12, 2))
	var in q4KInput
	rows, exact, worstUlps := 0, 0, 0.0
	plainRows, plainExact, plainWorst := 0, 0, 0.0
	for i := range 300 {
		blocks := 1 + i%8
		row, x := randQ4KCase(rng, blocks, i%4 == 3, false)
		if err := prepareQ4K(&in, x); err != nil {
			t.Fatal(err)
		}
		n := len(x)
		w := q4kWeightsExact(row, n)
		const prec = 768
		E := new(big.Float).SetPrec(prec)
		absSum := new(big.Float).SetPrec(prec)
		bound := new(big.Float).SetPrec(prec)
		partial := new(big.Float).SetPrec(prec)
		y := 0.0
		for b := range blocks {
			blockAbs := new(big.Float).SetPrec(prec)
			for k := 256 * b; k < 256*(b+1); k++ {
				p := new(big.Float).SetPrec(prec).Mul(w[k], new(big.Float).SetFloat64(float64(x[k])))
				E.Add(E, p)
				blockAbs.Add(blockAbs, new(big.Float).Abs(w[k]))
			}
			// Fixed-point rounding: each |X·2^-sh − x| <= 2^-sh/2.
			blockAbs.Mul(blockAbs, new(big.Float).SetFloat64(in.scale[b]/2))
			bound.Add(bound, blockAbs)
			blk := row[144*b : 144*(b+1)]
			v := q4KBlock(blk, &in, b)
			// d·T, dmin·M and their difference each round once: at most 2^-53 of each of
			// |d·T|, |dmin·M| and |v|, times the exact scale; then the running sum rounds
			// (2^-53 of |y|). 2^-52 is used for slack.
			tt, mm := q4kTM(blk, &in, b)
			d := float64(gguf.F16ToF32(binary.LittleEndian.Uint16(blk[0:])))
			dmin := float64(gguf.F16ToF32(binary.LittleEndian.Uint16(blk[2:])))
			vs := v * in.scale[b]
			y += vs
			r := (math.Abs(d*float64(tt))+math.Abs(dmin*float64(mm))+math.Abs(v))*in.scale[b] + math.Abs(y)
			partial.SetFloat64(r * 0x1p-52)
			bound.Add(bound, partial)
		}
		absSum.Abs(E)
		got := dotQ4K(row, &in)
		if got != float32(y) {
			t.Fatalf("row %d: dotQ4K %g differs from its own float64 sum rounded %g", i, got, float32(y))
		}
		rows++
		cr, _ := E.Float32()
		plain := i%4 != 3
		if plain {
			plainRows++
		}
		if math.Float32bits(cr) == math.Float32bits(got) {
			exact++
			if plain {
				plainExact++
			}
		}
		diff := new(big.Float).SetPrec(prec).Sub(new(big.Float).SetFloat64(y), E)
		diff.Abs(diff)
		if diff.Cmp(bound) > 0 {
			df, _ := diff.Float64()
			bf, _ := bound.Float64()
			t.Errorf("row %d (%d blocks): |y − exact| = %g exceeds the bound %g", i, blocks, df, bf)
		}
		ulp := float64(math.Nextafter32(float32(math.Abs(float64(cr))), float32(math.Inf(1))) - float32(math.Abs(float64(cr))))
		if ulp > 0 {
			gd := new(big.Float).SetPrec(prec).Sub(new(big.Float).SetFloat64(float64(got)), E)
			g, _ := gd.Float64()
			worstUlps = max(worstUlps, math.Abs(g)/ulp)
			if plain {
				plainWorst = max(plainWorst, math.Abs(g)/ulp)
			}
		}
	}
	t.Logf("Q4_K vs the exact dot of exact weights: %d rows, %d (%.1f%%) correctly rounded, all within the rounding bound, worst %.3f ulp of the exact value",
		rows, exact, 100*float64(exact)/float64(rows), worstUlps)
	t.Logf("  of which %d rows of like-sized inputs: %d (%.1f%%) correctly rounded, worst %.3f ulp; the rest mix blocks 2^±100 apart and zero blocks",
		plainRows, plainExact, 100*float64(plainExact)/float64(plainRows), plainWorst)
	if exact < rows*85/100 {
		t.Errorf("only %d of %d rows correctly rounded; expected most", exact, rows)
	}
}

func TestQ4KPrepare(t *testing.T) {
	var in q4KInput
	if err := prepareQ4K(&in, make([]float32, 300)); err == nil {
		t.Error("prepareQ4K of 300 floats: no error")
	}
	x := make([]float32, 512)
	x[3] = 1.5  // block 0: max 1.5 = 0.75·2^1, 0.75·2^31 > XMAX? no (1610612736): sh = 30
	x[300] = -3 // block 1: max 3 = 0.75·2^2: sh = 29
	x[301] = 1.0000001
	if err := prepareQ4K(&in, x); err != nil {
		t.Fatal(err)
	}
	if got, want := in.scale[0], 0x1p-30; got != want {
		t.Errorf("block 0 scale %g, want %g", got, want)
	}
	if got, want := in.x[3], int32(1.5*(1<<30)); got != want {
		t.Errorf("X[3] = %d, want %d", got, want)
	}
	if got, want := in.scale[1], 0x1p-29; got != want {
		t.Errorf("block 1 scale %g, want %g", got, want)
	}
	// 1.0000001 = 1 + 2^-23: times 2^29 is 2^29 + 64, exact.
	if got, want := in.x[301], int32(1<<29+64); got != want {
		t.Errorf("X[301] = %d, want %d", got, want)
	}
	// 0.98·2^31 > XMAX: the shift steps down once.
	x2 := make([]float32, 256)
	x2[0] = 0.98
	x2[1] = 0x1p-40 // rounds to 0 at sh = 30: 2^-10, half of nothing... 0
	if err := prepareQ4K(&in, x2); err != nil {
		t.Fatal(err)
	}
	if got, want := in.scale[0], 0x1p-30; got != want {
		t.Errorf("max 0.98: scale %g, want %g", got, want)
	}
	if in.x[0] > q4kXMax || in.x[1] != 0 {
		t.Errorf("max 0.98: X[0] = %d (limit %d), X[1] = %d", in.x[0], q4kXMax, in.x[1])
	}
	// Ties to even: 2.5·2^-30 and 3.5·2^-30 at sh = 30 give 2 and 4.
	x2[2], x2[3] = 2.5*0x1p-30, 3.5*0x1p-30
	if err := prepareQ4K(&in, x2); err != nil {
		t.Fatal(err)
	}
	if in.x[2] != 2 || in.x[3] != 4 {
		t.Errorf("ties: X = %d, %d, want 2, 4", in.x[2], in.x[3])
	}
	// A zero block has scale 1, X all zero, and contributes +0.
	if err := prepareQ4K(&in, make([]float32, 256)); err != nil {
		t.Fatal(err)
	}
	if in.scale[0] != 1 {
		t.Errorf("zero block scale %g, want 1", in.scale[0])
	}
}
