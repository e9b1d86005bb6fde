package engine

import (
	"cmp"
	"fmt"
	"math"
	"math/big"
	"math/bits"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/trochilus-llm/trochilus/kernels"
)

// referenceSampler is the sampler as session 6 wrote it: candidates sorted with
// slices.SortFunc, probabilities summed in float64 in rank order. The sampler now sums exact
// integer masses instead (sample.go), which needs no full ranking; the two agree draw for draw
// on every vector TestSamplerMatchesReference tries (they could part only where a float64
// rounding of the old sum decides a cut, and a token of p below 2^-63 cannot be drawn now).
type referenceSampler struct {
	sp   Sampling
	rng  *rand.Rand
	cand []candidate
}

type candidate struct {
	id int32
	z  float32 // logit / temperature, then e^(z − max)
}

func newReferenceSampler(sp Sampling) *referenceSampler {
	return &referenceSampler{sp: sp, rng: rand.New(rand.NewPCG(sp.Seed, 0x74726f6368696c75))}
}

// next is the sampler as session 6 wrote it (a full sort of the kept vocabulary each token):
//
//  1. z = float32(logit / T) for every token whose logit is not NaN; z_max the largest;
//  2. tokens with z − z_max below −104 (whose exp rounds to 0: they cannot be drawn) dropped,
//     the rest sorted by z, largest first, lower ids first among equals; the first TopK kept;
//  3. p = kernels.Exp(z − z_max) (the correctly rounded float32 exp), in that order;
//  4. with TopP < 1, the shortest prefix whose float64 running sum of p reaches TopP times
//     the float64 sum of all kept p;
//  5. u = the stream's next float64 in [0, 1); the token is the first of the prefix whose
//     running sum exceeds u times the prefix's sum (the last one if rounding leaves none).
func (s *referenceSampler) next(logits []float32) (int32, error) {
	t := s.sp.Temperature
	top := float32(math.Inf(-1))
	seen := false
	for _, l := range logits {
		if l == l {
			seen = true
			top = max(top, l/t)
		}
	}
	switch {
	case !seen:
		return 0, fmt.Errorf("engine: sampling: every logit is NaN")
	case math.IsInf(float64(top), -1):
		return 0, fmt.Errorf("engine: sampling: every logit is -Inf")
	}
	keep := func(l, z float32) bool {
		return l == l && (z-top >= -104 || math.IsInf(float64(top), 1) && math.IsInf(float64(z), 1))
	}
	s.cand = s.cand[:0]
	if k := s.sp.TopK; k > 0 && k < len(logits)/4 {
		// The K best without sorting the vocabulary: a heap whose root is the worst kept.
		for id, l := range logits {
			if z := l / t; keep(l, z) {
				c := candidate{int32(id), z}
				if len(s.cand) < k {
					s.cand = append(s.cand, c)
					refSiftUp(s.cand, len(s.cand)-1)
				} else if refBetter(c, s.cand[0]) {
					s.cand[0] = c
					refSiftDown(s.cand, 0)
				}
			}
		}
	} else {
		for id, l := range logits {
			if z := l / t; keep(l, z) {
				s.cand = append(s.cand, candidate{int32(id), z})
			}
		}
	}
	slices.SortFunc(s.cand, func(a, b candidate) int {
		if c := cmp.Compare(b.z, a.z); c != 0 {
			return c
		}
		return cmp.Compare(a.id, b.id)
	})
	if k := s.sp.TopK; k > 0 && k < len(s.cand) {
		s.cand = s.cand[:k]
	}
	var total float64
	for i := range s.cand {
		p := float32(1) // +Inf logits share all the probability (Inf − Inf would be NaN)
		if !math.IsInf(float64(top), 1) {
			p = kernels.Exp(s.cand[i].z - top)
		}
		s.cand[i].z = p
		total += float64(p)
	}
	if p := s.sp.TopP; p > 0 && p < 1 {
		want := float64(p) * total
		var sum float64
		for i := range s.cand {
			sum += float64(s.cand[i].z)
			if sum >= want {
				s.cand, total = s.cand[:i+1], sum
				break
			}
		}
	}
	target := s.rng.Float64() * total
	var sum float64
	for _, c := range s.cand {
		sum += float64(c.z)
		if sum > target {
			return c.id, nil
		}
	}
	return s.cand[len(s.cand)-1].id, nil
}

// refBetter reports whether a ranks before b: a larger z, or the lower id among equals.
func refBetter(a, b candidate) bool { return a.z > b.z || a.z == b.z && a.id < b.id }

// refSiftUp and refSiftDown keep h a heap whose root is its worst candidate.
func refSiftUp(h []candidate, i int) {
	for i > 0 {
		p := (i - 1) / 2
		if !refBetter(h[p], h[i]) {
			return
		}
		h[p], h[i] = h[i], h[p]
		i = p
	}
}

func refSiftDown(h []candidate, i int) {
	for {
		w := i
		for _, c := range []int{2*i + 1, 2*i + 2} {
			if c < len(h) && refBetter(h[w], h[c]) {
				w = c
			}
		}
		if w == i {
			return
		}
		h[i], h[w] = h[w], h[i]
		i = w
	}
}

// samplingLogits returns a vocabulary's worth of logits of one of several shapes: spread
// narrow and wide, with many ties, with the special values (NaN, ±Inf, −0, subnormals) strewn
// in, and large enough that a small temperature overflows them.
func samplingLogits(rng *rand.Rand, n, shape int) []float32 {
	l := make([]float32, n)
	for i := range l {
		switch shape {
		case 0:
			l[i] = float32(rng.NormFloat64() * 0.5)
		case 1:
			l[i] = float32(rng.NormFloat64() * 3)
		case 2:
			l[i] = float32(rng.NormFloat64() * 40) // many below the −104 cut
		case 3:
			l[i] = float32(rng.IntN(9)) / 4 // ties
		case 4:
			l[i] = []float32{0, float32(math.Copysign(0, -1)), 1e-40, -1e-40, 0.25}[rng.IntN(5)]
		case 5:
			l[i] = float32(rng.NormFloat64() * 1e37)
		}
		if shape >= 3 {
			switch rng.IntN(40) {
			case 0:
				l[i] = float32(math.NaN())
			case 1:
				l[i] = float32(math.Inf(-1))
			}
		}
	}
	if shape == 5 && n > 2 && rng.IntN(2) == 0 {
		l[rng.IntN(n)] = float32(math.Inf(1))
	}
	return l
}

// TestSamplerMatchesReference draws with the sampler and the sort-based one it replaced (the
// float64 sums), the same seeds, on many logit vectors and settings: every draw (and every
// error) must be the same, five draws in a row from each stream — the draws of a seed did not
// change when the sums became exact.
func TestSamplerMatchesReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	trials := 0
	for _, n := range []int{1, 2, 3, 7, 64, 1000, 4096, 50304, 151936} {
		for shape := range 6 {
			reps := 12
			if n > 10000 {
				reps = 2
			}
			for range reps {
				logits := samplingLogits(rng, n, shape)
				sp := Sampling{
					Temperature: []float32{1, 0.7, 0.1, 1.5, 1e-30}[rng.IntN(5)],
					TopK:        []int{0, 0, 1, 5, 40, n / 4, n/4 + 1, n, n + 3}[rng.IntN(9)],
					TopP:        []float32{0, 1, 0.9, 0.5, 0.3, 0.999}[rng.IntN(6)],
					Seed:        rng.Uint64(),
				}
				ref := newReferenceSampler(sp)
				checkDraws(t, fmt.Sprintf("n %d shape %d", n, shape), "reference", sp, logits,
					func() (int32, error) { return ref.next(logits) })
				trials++
			}
		}
	}
	t.Logf("%d logit vectors, 5 draws each, identical", trials)
}

// checkDraws makes five draws from logits with the sampler of sp — with scalar exponentials
// and with each tier's vector Exp — and with want, a reference's next draw (called what in the
// messages): every token, and whether each draw fails, must be the same.
func checkDraws(t *testing.T, where, what string, sp Sampling, logits []float32, want func() (int32, error)) {
	t.Helper()
	fasts := []*sampler{newSampler(sp)}
	for _, tier := range kernels.Tiers() {
		f := newSampler(sp)
		f.tier = tier
		fasts = append(fasts, f)
	}
	for draw := range 5 {
		w, werr := want()
		for i, fast := range fasts {
			got, gerr := fast.next(logits)
			if got != w || (gerr == nil) != (werr == nil) {
				t.Fatalf("%s %+v, draw %d, sampler %d: token %d (%v), %s %d (%v)", where, sp, draw, i, got, gerr, what, w, werr)
			}
		}
	}
}

// TestRankKeyOrder checks that key order is the ranking: larger z first, lower ids among
// equal z, −0 equal to +0, and that a key gives its z and id back.
func TestRankKeyOrder(t *testing.T) {
	zs := []float32{float32(math.Inf(-1)), -3e38, -1, -1e-45, float32(math.Copysign(0, -1)), 0, 1e-45, 0.5, 1, 3e38, float32(math.Inf(1))}
	for _, a := range zs {
		for _, b := range zs {
			for _, ids := range [][2]int32{{1, 2}, {2, 1}} {
				ka, kb := rankKey(a, ids[0]), rankKey(b, ids[1])
				want := refBetter(candidate{ids[0], a}, candidate{ids[1], b})
				if (ka < kb) != want {
					t.Errorf("z %v id %d vs z %v id %d: keys %x < %x is %v, want %v", a, ids[0], b, ids[1], ka, kb, ka < kb, want)
				}
			}
		}
		if k := rankKey(a, 77); rankID(k) != 77 || rankZ(k) != a {
			t.Errorf("key of %v: gives back %v, id %d", a, rankZ(k), rankID(k))
		}
	}
}

// BenchmarkSample draws one token from a vocabulary of OLMoE's and of Qwen3's size, with
// logits spread as a model's are (σ 3), greedy-like settings aside: the sampler's cost per
// generated token, against the reference sort it replaced.
func BenchmarkSample(b *testing.B) {
	for _, n := range []int{50304, 151936} {
		logits := samplingLogits(rand.New(rand.NewPCG(1, 2)), n, 1)
		for _, sp := range []Sampling{{Temperature: 0.8, TopP: 0.95}, {Temperature: 0.7, TopK: 40, TopP: 0.9}, {Temperature: 1}} {
			name := fmt.Sprintf("vocab=%d/topk=%d/topp=%g", n, sp.TopK, sp.TopP)
			b.Run(name+"/radix-vector-exp", func(b *testing.B) {
				s := newSampler(sp)
				s.tier = kernels.Tiers()[len(kernels.Tiers())-1]
				for b.Loop() {
					if _, err := s.next(logits); err != nil {
						b.Fatal(err)
					}
				}
			})
			b.Run(name+"/radix", func(b *testing.B) {
				s := newSampler(sp)
				for b.Loop() {
					if _, err := s.next(logits); err != nil {
						b.Fatal(err)
					}
				}
			})
			b.Run(name+"/sort", func(b *testing.B) {
				s := newReferenceSampler(sp)
				for b.Loop() {
					if _, err := s.next(logits); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// exactNext is the sampler's definition (sample.go's next) written plainly, as an oracle kept
// apart from the code it checks: every kept token ranked by a sort, masses ⌊p·2^63⌋ summed
// with math/big, the cuts computed as exact rationals.
func exactNext(sp Sampling, rng *rand.Rand, logits []float32) (int32, error) {
	t := sp.Temperature
	top := float32(math.Inf(-1))
	seen := false
	for _, l := range logits {
		if l == l {
			seen = true
			top = max(top, l/t)
		}
	}
	switch {
	case !seen:
		return 0, fmt.Errorf("every logit is NaN")
	case math.IsInf(float64(top), -1):
		return 0, fmt.Errorf("every logit is -Inf")
	}
	inf := math.IsInf(float64(top), 1)
	var cand []candidate
	for id, l := range logits {
		z := l / t
		if l == l && (!inf && z-top >= -104 || inf && math.IsInf(float64(z), 1)) {
			cand = append(cand, candidate{int32(id), z})
		}
	}
	slices.SortFunc(cand, func(a, b candidate) int {
		if c := cmp.Compare(b.z, a.z); c != 0 {
			return c
		}
		return cmp.Compare(a.id, b.id)
	})
	if k := sp.TopK; k > 0 && k < len(cand) {
		cand = cand[:k]
	}
	masses := make([]*big.Int, len(cand))
	total := new(big.Int)
	for i, c := range cand {
		p := 1.0
		if !inf {
			p = float64(kernels.Exp(c.z - top))
		}
		masses[i], _ = new(big.Float).SetFloat64(p * (1 << 63)).Int(nil)
		total.Add(total, masses[i])
	}
	walk := func(want *big.Int) int {
		sum := new(big.Int)
		for i, m := range masses {
			if sum.Add(sum, m).Cmp(want) >= 0 {
				return i + 1
			}
		}
		return len(masses)
	}
	if tp := sp.TopP; tp > 0 && tp < 1 {
		w := new(big.Rat).Mul(new(big.Rat).SetFloat64(float64(tp)), new(big.Rat).SetInt(total))
		want := new(big.Int).Quo(w.Num(), w.Denom()) // ⌊·⌋, then up unless exact
		if new(big.Int).Mul(want, w.Denom()).Cmp(w.Num()) != 0 {
			want.Add(want, big.NewInt(1))
		}
		n := walk(want)
		masses = masses[:n]
		total = new(big.Int)
		for _, m := range masses {
			total.Add(total, m)
		}
	}
	k := new(big.Int).SetUint64(rng.Uint64() << 11 >> 11)
	want := new(big.Int).Rsh(new(big.Int).Mul(k, total), 53)
	return cand[walk(want.Add(want, big.NewInt(1)))-1].id, nil
}

// TestSamplerMatchesDefinition draws with the sampler (scalar and every tier's vector Exp) and
// with exactNext, the same seeds, on the vectors of TestSamplerMatchesReference and on ones
// built to sit on the cuts: many equal probabilities, so that the top-p mass and the draw's
// target fall exactly on a token's boundary, and probabilities that straddle the buckets.
func TestSamplerMatchesDefinition(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 13))
	trials := 0
	for _, n := range []int{1, 2, 3, 5, 64, 1000, 4096, 50304} {
		for shape := range 8 {
			reps := 10
			if n > 10000 {
				reps = 2
			}
			for range reps {
				var logits []float32
				switch shape {
				case 6: // all equal: every mass 2^63, so top-p 0.5 and 0.75 end exactly on a token
					logits = make([]float32, n)
				case 7: // one bucket apart: p just above and below a bucket's edge
					logits = make([]float32, n)
					for i := range logits {
						logits[i] = -float32(i%7) * 0.0215
					}
				default:
					logits = samplingLogits(rng, n, shape)
				}
				sp := Sampling{
					Temperature: []float32{1, 0.7, 0.1, 1.5, 1e-30}[rng.IntN(5)],
					TopK:        []int{0, 0, 1, 5, 40, n / 4, n/4 + 1, n, n + 3}[rng.IntN(9)],
					TopP:        []float32{0, 1, 0.9, 0.5, 0.3, 0.999, 1e-30, 0.75}[rng.IntN(8)],
					Seed:        rng.Uint64(),
				}
				stream := newSampler(sp).rng // the same stream, for the definition
				checkDraws(t, fmt.Sprintf("n %d shape %d", n, shape), "definition", sp, logits,
					func() (int32, error) { return exactNext(sp, stream, logits) })
				trials++
			}
		}
	}
	t.Logf("%d logit vectors, 5 draws each, identical to the definition", trials)
}

// TestMassArithmetic checks the sampler's 128-bit helpers against math/big on random and edge
// operands: ⌈m·f⌉ for float32 f in (0, 1) and ⌊m·k/2^53⌋.
func TestMassArithmetic(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	big128 := func(a u128) *big.Int {
		v := new(big.Int).SetUint64(a.hi)
		return v.Lsh(v, 64).Or(v, new(big.Int).SetUint64(a.lo))
	}
	fs := []float32{math.Float32frombits(1), 1e-30, 0.5, 0.9, 0.999, math.Nextafter32(1, 0), 0.3}
	for trial := range 20000 {
		m := u128{rng.Uint64() >> 47, rng.Uint64()} // below 2^81
		switch trial % 5 {
		case 0:
			m = u128{0, 1 << 63}
		case 1:
			m = u128{1<<17 - 1, math.MaxUint64}
		}
		f := fs[trial%len(fs)]
		if trial%2 == 0 {
			f = math.Float32frombits(uint32(rng.Uint64N(0x3f800000-1)) + 1)
		}
		w := new(big.Rat).Mul(new(big.Rat).SetFloat64(float64(f)), new(big.Rat).SetInt(big128(m)))
		want := new(big.Int).Quo(w.Num(), w.Denom())
		if new(big.Int).Mul(want, w.Denom()).Cmp(w.Num()) != 0 {
			want.Add(want, big.NewInt(1))
		}
		if got := big128(ceilMul(m, f)); got.Cmp(want) != 0 {
			t.Fatalf("ceilMul(%v, %g) = %v, want %v", big128(m), f, got, want)
		}
		k := rng.Uint64() >> 11
		if trial%7 == 0 {
			k = 1<<53 - 1
		}
		want = new(big.Int).Rsh(new(big.Int).Mul(big128(m), new(big.Int).SetUint64(k)), 53)
		if got := big128(mulShift(m, k, 53)); got.Cmp(want) != 0 {
			t.Fatalf("mulShift(%v, %d) = %v, want %v", big128(m), k, got, want)
		}
	}
}

// chosenWords is a random source that returns the words it is given, in turn.
type chosenWords struct {
	words []uint64
	i     int
}

func (c *chosenWords) Uint64() uint64 { w := c.words[c.i%len(c.words)]; c.i++; return w }

// TestSamplerDrawBoundary sets the draw's 53 bits so that k/2^53 times the mass lands exactly
// on a token's end: j tokens of equal mass 2^63 and k = i·2^53/j put the target on the end of
// token i−1, and the definition's "running mass exceeds u times the mass" then draws token i
// (a mass merely reaching the target would draw i−1) — through the buckets and, with a top-k,
// the heap, and in the oracle.
func TestSamplerDrawBoundary(t *testing.T) {
	for _, j := range []int{2, 4, 8, 64} {
		for i := range j {
			k := uint64(i) << (53 - uint(bits.TrailingZeros(uint(j))))
			for _, topK := range []int{0, j} {
				logits := make([]float32, 4*j+4) // the first j equal and best, the rest far below
				for id := j; id < len(logits); id++ {
					logits[id] = -1000
				}
				sp := Sampling{Temperature: 1, TopK: topK}
				s := newSampler(sp)
				s.rng = rand.New(&chosenWords{words: []uint64{k}})
				got, err := s.next(logits)
				want, werr := exactNext(sp, rand.New(&chosenWords{words: []uint64{k}}), logits)
				if err != nil || werr != nil || got != int32(i) || want != int32(i) {
					t.Fatalf("j %d, k = %d·2^53/%d, top-k %d: drew %d (%v), the oracle %d (%v); want %d", j, i, j, topK, got, err, want, werr, i)
				}
			}
		}
	}
}
