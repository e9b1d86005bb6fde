package modelgen

import (
	"hash/fnv"
	"math/bits"
)

// rng is xoshiro256** (Blackman and Vigna, "Scrambled linear pseudorandom number generators",
// 2018), seeded through splitmix64 as its authors recommend. It is defined by 64-bit integer
// operations only, so a seed gives the same stream on every machine and compiler.
type rng struct{ s [4]uint64 }

// splitmix64 advances *x and returns the next output of Steele, Lea and Flood's SplitMix64.
func splitmix64(x *uint64) uint64 {
	*x += 0x9e3779b97f4a7c15
	z := *x
	z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
	z = (z ^ z>>27) * 0x94d049bb133111eb
	return z ^ z>>31
}

// newRNG returns a generator whose state is four splitmix64 outputs from seed (never all zero,
// since splitmix64 is a bijection of a counter that takes four distinct values).
func newRNG(seed uint64) rng {
	var r rng
	for i := range r.s {
		r.s[i] = splitmix64(&seed)
	}
	return r
}

// next returns the next 64 random bits.
func (r *rng) next() uint64 {
	s := &r.s
	out := bits.RotateLeft64(s[1]*5, 7) * 9
	t := s[1] << 17
	s[2] ^= s[0]
	s[3] ^= s[1]
	s[1] ^= s[2]
	s[0] ^= s[3]
	s[2] ^= t
	s[3] = bits.RotateLeft64(s[3], 45)
	return out
}

// chunkSeed is the seed of one chunk of one tensor: the model's seed, the tensor's name and the
// chunk's index, each folded in through splitmix64 so nearby inputs give unrelated streams.
func chunkSeed(seed uint64, tensor string, chunk int) uint64 {
	h := fnv.New64a()
	h.Write([]byte(tensor))
	x := seed
	x = splitmix64(&x) ^ h.Sum64()
	x = splitmix64(&x) ^ uint64(chunk)
	return splitmix64(&x)
}
