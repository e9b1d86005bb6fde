package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"runtime"
	"sync"
	"testing"
	"time"
)

// expCorpus returns arguments for the vector Exp: random values over the whole range, the
// thresholds and their neighbours, special values, NaNs, and every hard-case argument (the
// ones Exp decides from its table) in every position of a group of 8.
func expCorpus(rng *rand.Rand) []float32 {
	next := func(v float32, d int) float32 {
		return math.Float32frombits(uint32(int32(math.Float32bits(v)) + int32(d)))
	}
	var x []float32
	for _, v := range []float32{expOverflow, expUnderflow, -103.97, -87.33655, 0, 1, -1, 88.7} {
		for d := -3; d <= 3; d++ {
			x = append(x, next(v, d), -next(v, d))
		}
	}
	x = append(x, specials...)
	x = append(x, float32(math.NaN()), float32(math.Inf(-1)))
	for _, h := range expHard {
		for pos := range 8 {
			g := make([]float32, 8)
			for i := range g {
				g[i] = float32(rng.NormFloat64())
			}
			g[pos] = math.Float32frombits(h[0])
			x = append(x, g...)
		}
	}
	for range 4000 {
		x = append(x, float32((rng.Float64()*2-1)*110))
	}
	for range 1000 {
		x = append(x, math.Float32frombits(rng.Uint32()))
	}
	return x
}

// checkExpVec compares the vector Exp (with shifts 0 and a few others, whole groups, ragged
// tails, in place) and SwiGLU with their scalar definitions on expCorpus; it returns counts.
func checkExpVec(a *asmKernels) (checked, bad int, first string) {
	var c counts
	rng := rand.New(rand.NewPCG(23, 5))
	x := expCorpus(rng)
	note := func(what string, i int, got, want float32) {
		c.note(got, want, func() string {
			return fmt.Sprintf("%s element %d: got %g (%#08x), want %g (%#08x)", what, i, got, math.Float32bits(got), want, math.Float32bits(want))
		})
	}
	for _, shift := range []float32{0, 1.5, -3, 88} {
		for _, n := range []int{len(x), len(x) - 5, 13, 7} {
			src := x[len(x)-n:]
			dst := make([]float32, n)
			a.expShifted(dst, src, shift)
			for i, v := range src {
				note(fmt.Sprintf("Exp(x−%g), n=%d,", shift, n), i, dst[i], Exp(v-shift))
			}
		}
	}
	inPlace := append([]float32(nil), x...)
	a.expShifted(inPlace, inPlace, 0)
	for i, v := range x {
		note("Exp in place", i, inPlace[i], Exp(v))
	}
	// SwiGLU: gate the negated corpus (Exp(−g) then meets every case above), up random.
	gate := make([]float32, len(x))
	up := randFloats(rng, len(x), true, true)
	for i, v := range x {
		gate[i] = -v
	}
	for _, n := range []int{len(x), len(x) - 3} {
		dst := make([]float32, n)
		a.swiGLUVec(dst, gate[:n], up[:n])
		for i := range dst {
			note(fmt.Sprintf("SwiGLU n=%d", n), i, dst[i], silu(gate[i])*up[i])
		}
	}
	return c.result()
}

// TestTierExp: the vector Exp and SwiGLU of every usable tier against the scalar ones.
func TestTierExp(t *testing.T) {
	checkEachTier(t, "Exp and SwiGLU outputs against the scalar definitions", checkExpVec)
}

// TestTierExpLong runs all 2^32 float32 bit patterns through the vector Exp and compares each
// result with the scalar Exp, which TestExpLong proves correctly rounded on all of them: so the
// vector path is proven too. The kernels are AVX2 code shared by every tier, so one tier's
// run covers them all.
func TestTierExpLong(t *testing.T) {
	if os.Getenv("TROCHILUS_LONG") != "1" {
		t.Skip("exhaustive vector exp check runs with TROCHILUS_LONG=1")
	}
	tiers := needSIMD(t)
	a := &tiers[0].asm
	start := time.Now()
	var (
		mu        sync.Mutex
		checked   uint64
		nMismatch uint64
		first     string
	)
	runPieces(runtime.NumCPU(), pieces, func() func(piece int) {
		src := make([]float32, (1<<32)/pieces)
		dst := make([]float32, len(src))
		return func(piece int) {
			base := uint32(uint64(piece) << 32 / pieces)
			for i := range src {
				src[i] = math.Float32frombits(base + uint32(i))
			}
			a.expShifted(dst, src, 0)
			var m uint64
			var bad string
			for i, x := range src {
				if want := Exp(x); !sameBits(dst[i], want) {
					if m == 0 {
						bad = fmt.Sprintf("Exp(%g [%#08x]): vector %#08x, scalar %#08x", x, math.Float32bits(x), math.Float32bits(dst[i]), math.Float32bits(want))
					}
					m++
				}
			}
			mu.Lock()
			checked += uint64(len(src))
			nMismatch += m
			if first == "" {
				first = bad
			}
			mu.Unlock()
		}
	})
	t.Logf("vector Exp exhaustive: %d bit patterns (NaNs included) checked against the scalar Exp, %d mismatches, %v", checked, nMismatch, time.Since(start).Round(time.Millisecond))
	if checked != 1<<32 {
		t.Errorf("checked %d inputs, want 2^32", checked)
	}
	if nMismatch != 0 {
		t.Errorf("%d mismatches; first: %s", nMismatch, first)
	}
}
