package engine

import (
	"fmt"
	"math"
	"math/rand/v2"

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
	keys []uint64 // the kept tokens as rank keys (see rankKey)
	tmp  []uint64 // the radix sort's other buffer
	p    []float32

	// tier, when set, computes the exponentials of a whole vocabulary in one vector pass
	// (Tier.ExpShifted: the scalar Exp's bits) instead of one scalar Exp a kept token; z and
	// e are its scratch, by token id.
	tier *kernels.Tier
	z, e []float32
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
//
// The sums run in that order, so the order is part of the definition; it is found by a radix
// sort on the bits of z, in time linear in the vocabulary (a comparison sort of 151,936 tokens
// cost milliseconds a token), and the result is the same for any correct sort: no two tokens
// share an id, so the order is total.
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
	infinite := math.IsInf(float64(top), 1)
	keep := func(l, z float32) bool {
		return l == l && (z-top >= -104 || infinite && math.IsInf(float64(z), 1))
	}
	keys := s.keys[:0]
	if k := s.sp.TopK; k > 0 && k < len(logits)/4 {
		// The K best without ranking the vocabulary: a heap whose root is the worst kept
		// (the largest key). Once it is full a token enters only with a larger z than the
		// worst's (equal z loses: its id is larger), which implies that it passes keep.
		var worst float32
		for id, l := range logits {
			z := l / t
			if len(keys) == k {
				if z > worst {
					keys[0] = rankKey(z, int32(id))
					siftDown(keys, 0)
					worst = rankZ(keys[0])
				}
				continue
			}
			if keep(l, z) {
				keys = append(keys, rankKey(z, int32(id)))
				siftUp(keys, len(keys)-1)
				worst = rankZ(keys[0])
			}
		}
	} else {
		for id, l := range logits {
			if z := l / t; keep(l, z) {
				keys = append(keys, rankKey(z, int32(id)))
			}
		}
	}
	if cap(s.tmp) < len(keys) {
		s.tmp = make([]uint64, cap(keys))
	}
	keys, s.tmp = radixSort(keys, s.tmp[:len(keys)])
	if k := s.sp.TopK; k > 0 && k < len(keys) {
		keys = keys[:k]
	}
	if cap(s.p) < len(keys) {
		s.p = make([]float32, cap(keys))
	}
	p := s.p[:len(keys)]
	// Most of a vocabulary is kept unless TopK cuts it: then the exponentials of every token
	// at once, by id, through the tier's vector Exp, are cheaper than one scalar Exp a kept
	// token. Exp(z[id] − top) is Exp(rankZ(key) − top) bit for bit (rankZ gives z back, −0 as
	// +0, and Exp(−0) = Exp(+0)).
	var byID []float32
	if s.tier != nil && !infinite && 4*len(keys) > len(logits) {
		if cap(s.z) < len(logits) {
			s.z, s.e = make([]float32, len(logits)), make([]float32, len(logits))
		}
		z, e := s.z[:len(logits)], s.e[:len(logits)]
		for id, l := range logits {
			z[id] = l / t
		}
		s.tier.ExpShifted(e, z, top)
		byID = e
	}
	var total float64
	for i, key := range keys {
		pi := float32(1) // +Inf logits share all the probability (Inf − Inf would be NaN)
		switch {
		case infinite:
		case byID != nil:
			pi = byID[rankID(key)]
		default:
			pi = kernels.Exp(rankZ(key) - top)
		}
		p[i] = pi
		total += float64(pi)
	}
	if tp := s.sp.TopP; tp > 0 && tp < 1 {
		want := float64(tp) * total
		var sum float64
		for i := range p {
			sum += float64(p[i])
			if sum >= want {
				keys, p, total = keys[:i+1], p[:i+1], sum
				break
			}
		}
	}
	s.keys = keys // the ranked candidates drawn from (a test reads them); reused next time
	target := s.rng.Float64() * total
	var sum float64
	for i := range p {
		sum += float64(p[i])
		if sum > target {
			return rankID(keys[i]), nil
		}
	}
	return rankID(keys[len(keys)-1]), nil
}

// rankKey packs a candidate so that keys in increasing order rank candidates: larger z first,
// the lower id first among equal z. The high word is z's bits mapped so that unsigned order is
// float order, then flipped (−0 is taken as +0, which compares equal to it); the low word is
// the id.
func rankKey(z float32, id int32) uint64 {
	if z == 0 {
		z = 0
	}
	b := math.Float32bits(z)
	if b&(1<<31) != 0 {
		b = ^b
	} else {
		b |= 1 << 31
	}
	return uint64(^b)<<32 | uint64(uint32(id))
}

// rankZ and rankID unpack a rank key.
func rankZ(key uint64) float32 {
	b := ^uint32(key >> 32)
	if b&(1<<31) != 0 {
		b &^= 1 << 31
	} else {
		b = ^b
	}
	return math.Float32frombits(b)
}

func rankID(key uint64) int32 { return int32(uint32(key)) }

// radixBits is the digit of radixSort: three passes cover the 32 bits of a key's high word.
const radixBits = 11

// radixSort sorts keys into increasing order, using tmp (as long as keys) as the other buffer,
// and returns the sorted keys and the other buffer (either may be either). It is an LSD radix
// sort, stable, in 11-bit digits (measured 2x faster than bytes with one shared count pass,
// MEASUREMENTS): the three digits of the high word, after those of the low word (the id) when
// the keys did not come in increasing id order, as a heap's do not. A pass in which every key
// has the same digit is skipped.
func radixSort(keys, tmp []uint64) (sorted, spare []uint64) {
	if len(keys) < 2 {
		return keys, tmp
	}
	inOrder := true
	for i := 1; i < len(keys); i++ {
		if uint32(keys[i]) < uint32(keys[i-1]) {
			inOrder = false
			break
		}
	}
	var count [1 << radixBits]int
	shifts := []uint{32, 32 + radixBits, 32 + 2*radixBits}
	if !inOrder {
		shifts = []uint{0, radixBits, 2 * radixBits, 32, 32 + radixBits, 32 + 2*radixBits}
	}
	for _, shift := range shifts {
		clear(count[:])
		for _, k := range keys {
			count[(k>>shift)&(1<<radixBits-1)]++
		}
		if count[(keys[0]>>shift)&(1<<radixBits-1)] == len(keys) {
			continue // one digit: the pass would move nothing
		}
		at := 0
		for d, c := range count {
			count[d] = at
			at += c
		}
		for _, k := range keys {
			d := (k >> shift) & (1<<radixBits - 1)
			tmp[count[d]] = k
			count[d]++
		}
		keys, tmp = tmp, keys
	}
	return keys, tmp
}

// siftUp and siftDown keep h a heap whose root is its largest key: the worst candidate kept.
func siftUp(h []uint64, i int) {
	for i > 0 {
		p := (i - 1) / 2
		if h[p] >= h[i] {
			return
		}
		h[p], h[i] = h[i], h[p]
		i = p
	}
}

func siftDown(h []uint64, i int) {
	for {
		w := i
		for _, c := range [2]int{2*i + 1, 2*i + 2} {
			if c < len(h) && h[c] > h[w] {
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
