package engine

import (
	"cmp"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/trochilus-llm/trochilus/kernels"
)

// Sampling draws tokens at random from the model's distribution instead of taking the most
// likely one. The draw is a function of the logits and the seed alone: every step below runs in
// a fixed order, and the logits are the same bits on every machine, tier and thread count, so a
// seed gives the same tokens everywhere.
type Sampling struct {
	// Temperature divides the logits before the softmax: above 0. (Greedy decoding is the
	// absence of Sampling, not a temperature of 0.)
	Temperature float32
	// TopK keeps the K most likely tokens (0: all).
	TopK int
	// TopP keeps the most likely tokens whose probabilities add up to at least TopP, the
	// fewest that do (1 or 0: all).
	TopP float32
	// Seed starts the random stream. Every value is an ordinary seed, 0 included; a caller
	// without one draws it with NewSeed.
	Seed uint64
}

// MaxSeed is the largest seed NewSeed draws: 2^53 − 1, the largest integer a JSON number
// carries exactly to every client (JavaScript's Number, Python's float), so that a reported seed
// can always be sent back to replay an answer.
const MaxSeed = 1<<53 - 1

// NewSeed draws a fresh seed in [0, MaxSeed] for a caller that names none.
func NewSeed() uint64 { return rand.Uint64() & MaxSeed }

// Check reports whether the settings can be sampled with.
func (sp *Sampling) Check() error {
	switch {
	case !(sp.Temperature > 0) || math.IsInf(float64(sp.Temperature), 0):
		return fmt.Errorf("engine: sampling temperature %v: want a finite number above 0", sp.Temperature)
	case sp.TopK < 0:
		return fmt.Errorf("engine: sampling top-k %d: want 0 (all) or more", sp.TopK)
	case !(sp.TopP >= 0 && sp.TopP <= 1):
		return fmt.Errorf("engine: sampling top-p %v: want a number from 0 to 1", sp.TopP)
	}
	return nil
}

// sampler holds a generation's random stream and scratch.
type sampler struct {
	sp   Sampling
	rng  *rand.Rand
	cand []candidate
}

type candidate struct {
	id int32
	z  float32 // logit / temperature, then e^(z − max)
}

func newSampler(sp Sampling) *sampler {
	// The second word of the PCG state is fixed: the seed alone names the stream.
	return &sampler{sp: sp, rng: rand.New(rand.NewPCG(sp.Seed, 0x74726f6368696c75))}
}

// next draws a token from logits:
//
//  1. z = float32(logit / T) for every token whose logit is not NaN; z_max the largest;
//  2. tokens with z − z_max below −104 (whose exp rounds to 0: they cannot be drawn) dropped,
//     the rest sorted by z, largest first, lower ids first among equals; the first TopK kept;
//  3. p = kernels.Exp(z − z_max) (the correctly rounded float32 exp), in that order;
//  4. with TopP < 1, the shortest prefix whose float64 running sum of p reaches TopP times
//     the float64 sum of all kept p;
//  5. u = the stream's next float64 in [0, 1); the token is the first of the prefix whose
//     running sum exceeds u times the prefix's sum (the last one if rounding leaves none).
func (s *sampler) next(logits []float32) (int32, error) {
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
					siftUp(s.cand, len(s.cand)-1)
				} else if better(c, s.cand[0]) {
					s.cand[0] = c
					siftDown(s.cand, 0)
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

// better reports whether a ranks before b: a larger z, or the lower id among equals.
func better(a, b candidate) bool { return a.z > b.z || a.z == b.z && a.id < b.id }

// siftUp and siftDown keep h a heap whose root is its worst candidate.
func siftUp(h []candidate, i int) {
	for i > 0 {
		p := (i - 1) / 2
		if !better(h[p], h[i]) {
			return
		}
		h[p], h[i] = h[i], h[p]
		i = p
	}
}

func siftDown(h []candidate, i int) {
	for {
		w := i
		for _, c := range []int{2*i + 1, 2*i + 2} {
			if c < len(h) && better(h[w], h[c]) {
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
