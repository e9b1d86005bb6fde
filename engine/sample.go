package engine

import (
	"fmt"
	"math"
	"math/bits"
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

// sampler holds a generation's random stream and scratch, by token id.
type sampler struct {
	sp  Sampling
	rng *rand.Rand

	// tier, when set, computes the exponentials of a whole vocabulary in one vector pass
	// (Tier.ExpShifted: the scalar Exp's bits) instead of one scalar Exp a token.
	tier *kernels.Tier
	z, e []float32 // z = logit/T and its exponential, by token id
	// bucket is each token's probability bucket (probBucket), noBucket for one not kept.
	bucket []uint16
	count  [probBuckets]int32 // tokens in each bucket
	mass   [probBuckets]u128  // the sum of the bucket's masses (mass)
	keys   []uint64           // the rank keys of bucket sorted (rankKey), in rank order
	sorted int                // the bucket keys holds; -1: none yet this draw
	tmp    []uint64           // the radix sort's other buffer
}

func newSampler(sp Sampling) *sampler {
	// The second word of the PCG state is fixed: the seed alone names the stream.
	return &sampler{sp: sp, rng: rand.New(rand.NewPCG(sp.Seed, 0x74726f6368696c75))}
}

// next draws a token from logits:
//
//  1. z = float32(logit / T) for every token whose logit is not NaN; z_max the largest;
//  2. tokens with z − z_max below −104 (whose exp rounds to 0) dropped, the rest ranked by z,
//     largest first, lower ids first among equals; the first TopK kept;
//  3. each kept token's mass is ⌊p·2^63⌋, p = kernels.Exp(z − z_max) (the correctly rounded
//     float32 exp; every p is 1 when some z is +Inf — an +Inf logit, or a finite one that
//     overflows at this temperature — and those tokens alone are kept): an
//     integer, so that every sum of masses is exact, whatever its order;
//  4. with 0 < TopP < 1, the shortest prefix of the ranking whose mass reaches TopP times the
//     mass of all kept tokens (exactly: at least ⌈TopP·M⌉);
//  5. u = k/2^53, k the low 53 bits of the stream's next 64 (what rand's Float64 returns); the
//     token is the first of the prefix whose running mass exceeds u times the prefix's mass
//     (exactly: reaches ⌊k·M/2^53⌋ + 1).
//
// Exact sums make the order of summation no part of the definition, so nothing needs the whole
// ranking: tokens fall into buckets by the top bits of p (buckets of larger p hold tokens
// ranked earlier), each bucket's count and mass are summed in one pass over the vocabulary,
// and only the one bucket in which a cut or the draw falls is ranked, by a radix sort of its
// tokens. (The sampler before kept a float64 running sum in rank order, which needed the whole
// vocabulary sorted each token, milliseconds at 151,936 tokens; a token whose p is below 2^-63
// could be drawn there, with a chance of that order, and is not here. The two draw the same
// tokens on every vector TestSamplerMatchesReference tries.)
func (s *sampler) next(logits []float32) (int32, error) {
	t := s.sp.Temperature
	n := len(logits)
	if cap(s.z) < n {
		s.z, s.e, s.bucket = make([]float32, n), make([]float32, n), make([]uint16, n)
	}
	// The fields themselves cut to this vocabulary: ranked reads them whole.
	s.z, s.e, s.bucket = s.z[:n], s.e[:n], s.bucket[:n]
	z, e, bucket := s.z, s.e, s.bucket
	top := float32(math.Inf(-1))
	seen := false
	for id, l := range logits {
		z[id] = l / t
		if l == l {
			seen = true
			top = max(top, z[id])
		}
	}
	switch {
	case !seen:
		return 0, fmt.Errorf("engine: sampling: every logit is NaN")
	case math.IsInf(float64(top), -1):
		return 0, fmt.Errorf("engine: sampling: every logit is -Inf")
	}
	infinite := math.IsInf(float64(top), 1)
	if k := s.sp.TopK; k > 0 && k < n/4 {
		return s.fromBest(logits, k, top, infinite), nil
	}
	clear(s.count[:])
	clear(s.mass[:])
	kept := 0
	if infinite {
		// +Inf logits share all the probability (Inf − Inf would be NaN): p = 1 each.
		for id, l := range logits {
			bucket[id] = noBucket
			if l == l && math.IsInf(float64(z[id]), 1) {
				e[id] = 1
				s.add(id, 1)
				kept++
			}
		}
	} else {
		if s.tier != nil {
			s.tier.ExpShifted(e, z, top)
		} else {
			for id := range z {
				e[id] = kernels.Exp(z[id] - top)
			}
		}
		for id, l := range logits {
			bucket[id] = noBucket
			if l == l && z[id]-top >= -104 {
				s.add(id, e[id])
				kept++
			}
		}
	}
	// The candidates are a prefix of the ranking: the buckets above cut whole, and in bucket
	// cut the first part tokens of its ranking (all of it when part is its count).
	s.sorted = -1
	cut, part := s.lowest()
	if k := s.sp.TopK; k > 0 && k < kept {
		cut, part = s.crossCount(k)
	}
	total := s.prefixMass(cut, part)
	if tp := s.sp.TopP; tp > 0 && tp < 1 {
		cut, part = s.crossMass(ceilMul(total, tp), cut, part)
		total = s.prefixMass(cut, part)
	}
	k := s.rng.Uint64() << 11 >> 11 // rand.Float64's 53 bits
	b, i := s.crossMass(mulShift(total, k, 53).add(u128{lo: 1}), cut, part)
	return rankID(s.ranked(b)[i-1]), nil
}

// fromBest draws from the k best tokens (k well below the vocabulary) by the same definition,
// without the buckets: a heap picks them in one pass (one Exp each, not one a token), their
// ranking is sorted, and the cuts and the draw walk it.
func (s *sampler) fromBest(logits []float32, k int, top float32, infinite bool) int32 {
	z := s.z[:len(logits)]
	keep := func(l, z float32) bool {
		return l == l && (z-top >= -104 || infinite && math.IsInf(float64(z), 1))
	}
	// A heap whose root is the worst kept (the largest key). Once it is full a token enters
	// only with a larger z than the worst's (equal z loses: its id is larger), which implies
	// that it passes keep.
	keys := s.keys[:0]
	var worst float32
	for id, l := range logits {
		zi := z[id]
		if len(keys) == k {
			if zi > worst {
				keys[0] = rankKey(zi, int32(id))
				siftDown(keys, 0)
				worst = rankZ(keys[0])
			}
			continue
		}
		if keep(l, zi) {
			keys = append(keys, rankKey(zi, int32(id)))
			siftUp(keys, len(keys)-1)
			worst = rankZ(keys[0])
		}
	}
	if cap(s.tmp) < len(keys) {
		s.tmp = make([]uint64, cap(keys))
	}
	keys, s.tmp = radixSort(keys, s.tmp[:len(keys)])
	s.keys, s.sorted = keys, -1
	masses := s.e[:len(keys)] // the masses in rank order, as their p
	var total u128
	for i, key := range keys {
		p := float32(1)
		if !infinite {
			p = kernels.Exp(rankZ(key) - top)
		}
		masses[i] = p
		total = total.add(mass(p))
	}
	walk := func(want u128) int { // the length of the shortest prefix of mass ≥ want
		var m u128
		for i, p := range masses {
			if m = m.add(mass(p)); !m.less(want) {
				return i + 1
			}
		}
		return len(masses)
	}
	if tp := s.sp.TopP; tp > 0 && tp < 1 {
		n := walk(ceilMul(total, tp))
		masses, total = masses[:n], u128{}
		for _, p := range masses {
			total = total.add(mass(p))
		}
	}
	u := s.rng.Uint64() << 11 >> 11
	return rankID(keys[walk(mulShift(total, u, 53).add(u128{lo: 1}))-1])
}

// The buckets: a kept token's is the top bits of p's float32 bits (p ≥ 0, so the bits order
// as the numbers): its exponent and the first four bits of its fraction, 16 buckets a binade.
// A token of larger p ranks before one of smaller (p is Exp of z − z_max, which grows with z),
// so a larger bucket's tokens all rank before a smaller one's.
const (
	probShift   = 19
	probBuckets = 0x3f800000>>probShift + 1 // p ≤ 1
	noBucket    = 0xffff
)

// add puts token id, of probability p, in its bucket.
func (s *sampler) add(id int, p float32) {
	b := math.Float32bits(p) >> probShift
	s.bucket[id] = uint16(b)
	s.count[b]++
	s.mass[b] = s.mass[b].add(mass(p))
}

// mass is ⌊p·2^63⌋ (p in [0, 1]; exact: p·2^63 is, and the conversion truncates).
func mass(p float32) u128 { return u128{lo: uint64(float64(p) * (1 << 63))} }

// lowest returns the whole ranking as a prefix: the lowest bucket holding a token, all of it.
func (s *sampler) lowest() (cut, part int) {
	for b := range probBuckets {
		if s.count[b] > 0 {
			return b, int(s.count[b])
		}
	}
	return 0, 0
}

// ranked returns the rank keys of bucket b's tokens in rank order (larger z first, lower ids
// among equals); the last bucket ranked is kept for the next call.
func (s *sampler) ranked(b int) []uint64 {
	if s.sorted == b {
		return s.keys
	}
	keys := s.keys[:0]
	for id, tb := range s.bucket {
		if int(tb) == b {
			keys = append(keys, rankKey(s.z[id], int32(id)))
		}
	}
	if cap(s.tmp) < len(keys) {
		s.tmp = make([]uint64, cap(keys))
	}
	keys, s.tmp = radixSort(keys, s.tmp[:len(keys)]) // the ids come in order: z's passes only
	s.keys, s.sorted = keys, b
	return keys
}

// crossCount returns the prefix of the ranking of its first k tokens (0 < k < the kept count).
func (s *sampler) crossCount(k int) (cut, part int) {
	for b := probBuckets - 1; b >= 0; b-- {
		c := int(s.count[b])
		if k <= c {
			return b, k
		}
		k -= c
	}
	return s.lowest()
}

// prefixMass returns the mass of the prefix of the ranking that ends with the first part
// tokens of bucket cut.
func (s *sampler) prefixMass(cut, part int) u128 {
	var m u128
	for b := probBuckets - 1; b > cut; b-- {
		m = m.add(s.mass[b])
	}
	if part == int(s.count[cut]) {
		return m.add(s.mass[cut])
	}
	for _, key := range s.ranked(cut)[:part] {
		m = m.add(mass(s.e[rankID(key)]))
	}
	return m
}

// crossMass returns the shortest prefix of the ranking, within the one that ends with the
// first part tokens of bucket cut, whose mass reaches want (which that prefix's mass does):
// its last token is the part-th of bucket b.
func (s *sampler) crossMass(want u128, cut, part int) (b, n int) {
	var m u128
	for b = probBuckets - 1; b > cut; b-- {
		if next := m.add(s.mass[b]); !next.less(want) {
			break
		}
		m = m.add(s.mass[b])
	}
	keys := s.ranked(b)
	if b == cut {
		keys = keys[:part]
	}
	for i, key := range keys {
		if m = m.add(mass(s.e[rankID(key)])); !m.less(want) {
			return b, i + 1
		}
	}
	return b, len(keys) // unreachable when want is at most the prefix's mass
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

// u128 is an unsigned 128-bit integer: a sum of masses (at most 151,936 · 2^63 < 2^81, and
// any vocabulary below 2^64 tokens fits).
type u128 struct{ hi, lo uint64 }

func (a u128) add(b u128) u128 {
	lo, c := bits.Add64(a.lo, b.lo, 0)
	return u128{a.hi + b.hi + c, lo}
}

func (a u128) less(b u128) bool { return a.hi < b.hi || a.hi == b.hi && a.lo < b.lo }

// ceilMul returns ⌈m·f⌉ for f a float32 in (0, 1): f = frac·2^-shift exactly, frac an integer
// below 2^24, so m·f is the 128-bit product m·frac (below 2^105 for m < 2^81) shifted right,
// rounded up.
func ceilMul(m u128, f float32) u128 {
	b := math.Float32bits(f)
	exp, frac := int(b>>23&0xff), uint64(b&(1<<23-1))
	shift := 149 // a subnormal: frac·2^-149
	if exp != 0 {
		frac |= 1 << 23
		shift = 150 - exp
	}
	// m·frac: m.hi·frac < 2^41 (m.hi < 2^17), so it fits 128 bits.
	h, l := bits.Mul64(m.lo, frac)
	p := u128{h + m.hi*frac, l}
	if shift >= 128 {
		if p == (u128{}) {
			return p
		}
		return u128{lo: 1}
	}
	q := p.shr(uint(shift))
	if q.shl(uint(shift)) != p {
		q = q.add(u128{lo: 1})
	}
	return q
}

// mulShift returns ⌊m·k / 2^shift⌋ for m < 2^81, k < 2^53 and shift < 64 (the product is
// below 2^134: three words).
func mulShift(m u128, k uint64, shift uint) u128 {
	h0, l0 := bits.Mul64(m.lo, k)
	h1, l1 := bits.Mul64(m.hi, k)
	mid, c := bits.Add64(h0, l1, 0)
	top := h1 + c
	// (top, mid, l0) >> shift
	return u128{top<<(64-shift) | mid>>shift, mid<<(64-shift) | l0>>shift}
}

func (a u128) shr(n uint) u128 {
	switch {
	case n == 0:
		return a
	case n >= 64:
		return u128{0, a.hi >> (n - 64)}
	}
	return u128{a.hi >> n, a.hi<<(64-n) | a.lo>>n}
}

func (a u128) shl(n uint) u128 {
	switch {
	case n == 0:
		return a
	case n >= 64:
		return u128{a.lo << (n - 64), 0}
	}
	return u128{a.hi<<n | a.lo>>(64-n), a.lo << n}
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
