package modelgen

import (
	"encoding/binary"
	"math"

	"github.com/trochilus-llm/trochilus/gguf"
)

// A filler writes random well-formed blocks of one type. fill draws from r and fills dst, a
// whole number of blocks, with weights of root mean square about unit·rms; rms is therefore the
// root mean square of the integer part of a weight (its quant times its sub-block scale, with
// the per-block scale d left out), worked out from the distributions below.
type filler struct {
	fill func(r *rng, dst []byte, unit float32)
	rms  float64
}

// fillers are the types Write can make. Each block's d is unit times a jitter in [0.875, 1.125),
// so that blocks differ in scale as real ones do.
var fillers = map[gguf.Type]filler{
	// Floats: triangular on ±65535 (the sum of two uniform 16-bit numbers, centred), whose
	// root mean square is √(2·(65536²−1)/12).
	gguf.TypeF32:  {fillF32, 26754.97},
	gguf.TypeF16:  {fillF16, 26754.97},
	gguf.TypeBF16: {fillBF16, 26754.97},
	// q uniform on −127..127 but 0 twice as likely (ggml's quantizer never makes −128):
	// E[q²] = 2·(127·128·255/6)/256.
	gguf.TypeQ8_0: {fillQ8_0, 73.4677},
	// q−8 uniform on −8..7 (E = 344/16); d takes a random sign, as ggml's d = max/−8 does,
	// which centres the weights.
	gguf.TypeQ4_0: {fillQ4_0, 4.6368},
	// sc uniform on 8..15 (E[sc²] = 137.5), q uniform on 0..3, min chosen to centre q on 1.5:
	// E ≈ 137.5·1.25 + 1.5²·E[(sc−m)²].
	gguf.TypeQ2_K: {fillQ2_K, 13.17},
	// |sc| uniform on 16..31 with a random sign (E[sc²] = 573.5), q uniform on −4..3 (E[q²] = 5.5).
	gguf.TypeQ3_K: {fillQ3_K, 56.16},
	// sc uniform on 40..63 (E[sc²] = 2700), q uniform on 0..15 centred on 7.5 by the min.
	gguf.TypeQ4_K: {fillQ4_K, 239.6},
	// As Q4_K with 5-bit q centred on 15.5.
	gguf.TypeQ5_K: {fillQ5_K, 479.9},
	// |sc| uniform on 32..127 with a random sign (E[sc²] = 7088.2), q−32 uniform on −32..31
	// (E = 341.5).
	gguf.TypeQ6_K: {fillQ6_K, 1555.8},
}

// jitter returns a factor in [0.875, 1.125) from the low 8 bits of x, exactly.
func jitter(x uint64) float32 { return float32(896+x&255) * (1.0 / 1024) }

func putHalf(b []byte, v float32) { binary.LittleEndian.PutUint16(b, gguf.F32ToF16(v)) }

// randomBytes fills b (a multiple of 8 bytes long) with random bytes.
func randomBytes(r *rng, b []byte) {
	for i := 0; i+8 <= len(b); i += 8 {
		binary.LittleEndian.PutUint64(b[i:], r.next())
	}
}

// triangular returns two values triangular on ±65535 from one draw.
func triangular(x uint64) (a, b int32) {
	a = int32(x&0xffff) + int32(x>>16&0xffff) - 0xffff
	b = int32(x>>32&0xffff) + int32(x>>48) - 0xffff
	return a, b
}

func fillF32(r *rng, dst []byte, unit float32) {
	for i := 0; i+8 <= len(dst); i += 8 {
		a, b := triangular(r.next())
		binary.LittleEndian.PutUint32(dst[i:], math.Float32bits(float32(a)*unit))
		binary.LittleEndian.PutUint32(dst[i+4:], math.Float32bits(float32(b)*unit))
	}
	if len(dst)%8 != 0 { // an odd element count
		a, _ := triangular(r.next())
		binary.LittleEndian.PutUint32(dst[len(dst)-4:], math.Float32bits(float32(a)*unit))
	}
}

func fillF16(r *rng, dst []byte, unit float32) { fillHalves(r, dst, unit, putHalf) }

func fillBF16(r *rng, dst []byte, unit float32) {
	fillHalves(r, dst, unit, func(b []byte, v float32) { binary.LittleEndian.PutUint16(b, gguf.F32ToBF16(v)) })
}

// fillHalves fills a tensor of 2-byte floats, stored by put, with triangular values times unit,
// two to a draw.
func fillHalves(r *rng, dst []byte, unit float32, put func(b []byte, v float32)) {
	for i := 0; i+4 <= len(dst); i += 4 {
		a, b := triangular(r.next())
		put(dst[i:], float32(a)*unit)
		put(dst[i+2:], float32(b)*unit)
	}
	if len(dst)%4 != 0 {
		a, _ := triangular(r.next())
		put(dst[len(dst)-2:], float32(a)*unit)
	}
}

func fillQ8_0(r *rng, dst []byte, unit float32) {
	for b := 0; b+34 <= len(dst); b += 34 {
		blk := dst[b : b+34]
		putHalf(blk, unit*jitter(r.next()))
		q := blk[2:]
		randomBytes(r, q)
		for i, v := range q {
			if v == 0x80 { // ggml's quantizer never writes −128; 0 keeps the mean at zero
				q[i] = 0
			}
		}
	}
}

func fillQ4_0(r *rng, dst []byte, unit float32) {
	for b := 0; b+18 <= len(dst); b += 18 {
		blk := dst[b : b+18]
		x := r.next()
		d := unit * jitter(x)
		if x&256 != 0 {
			d = -d
		}
		putHalf(blk, d)
		randomBytes(r, blk[2:])
	}
}

// bitSource hands out random bits a few at a time, for the small fields of a block.
type bitSource struct {
	r    *rng
	v    uint64
	left uint
}

// below returns a number uniform on 0..n-1 (to within n/65536, from 16 random bits).
func (s *bitSource) below(n uint64) uint64 { return s.take(16) * n >> 16 }

func (s *bitSource) take(n uint) uint64 {
	if s.left < n {
		s.v, s.left = s.r.next(), 64
	}
	x := s.v & (1<<n - 1)
	s.v >>= n
	s.left -= n
	return x
}

// scaleAndMin draws a K-quant sub-block scale uniform on lo..lo+span-1 and a min within one of
// it (clamped to 0..limit), so that the min, times dmin, recentres the quants near zero.
func (s *bitSource) scaleAndMin(lo, span, limit uint64) (sc, m uint8) {
	v := lo + s.below(span)
	w := int(v) + int(s.below(3)) - 1
	return uint8(v), uint8(min(max(w, 0), int(limit)))
}

// packScaleMinK4 stores eight 6-bit scales and mins as Q4_K and Q5_K keep them (the inverse of
// ggml's get_scale_min_k4).
func packScaleMinK4(dst []byte, sc, m *[8]uint8) {
	for j := range 4 {
		dst[j] = sc[j] | sc[j+4]>>4<<6
		dst[j+4] = m[j] | m[j+4]>>4<<6
		dst[j+8] = sc[j+4]&15 | m[j+4]&15<<4
	}
}

func fillQ4_K(r *rng, dst []byte, unit float32) { fillScaleMinK4(r, dst, unit, 144, 7.5) }

func fillQ5_K(r *rng, dst []byte, unit float32) { fillScaleMinK4(r, dst, unit, 176, 15.5) }

// fillScaleMinK4 fills the blocks of size bytes of a Q4_K or Q5_K tensor: f16 d, f16 dmin
// (d·dminRatio), the packed scales and mins, and random quant bytes after them.
func fillScaleMinK4(r *rng, dst []byte, unit float32, size int, dminRatio float32) {
	bs := bitSource{r: r}
	var sc, m [8]uint8
	for b := 0; b+size <= len(dst); b += size {
		blk := dst[b : b+size]
		d := unit * jitter(r.next())
		putHalf(blk[0:], d)
		putHalf(blk[2:], d*dminRatio)
		for j := range sc {
			sc[j], m[j] = bs.scaleAndMin(40, 24, 63)
		}
		packScaleMinK4(blk[4:16], &sc, &m)
		randomBytes(r, blk[16:])
	}
}

func fillQ6_K(r *rng, dst []byte, unit float32) {
	bs := bitSource{r: r}
	for b := 0; b+210 <= len(dst); b += 210 {
		blk := dst[b : b+210]
		randomBytes(r, blk[:192])
		for j := range 16 {
			v := int8(32 + bs.below(96))
			if bs.take(1) == 1 {
				v = -v
			}
			blk[192+j] = byte(v)
		}
		putHalf(blk[208:], unit*jitter(r.next()))
	}
}

func fillQ2_K(r *rng, dst []byte, unit float32) {
	bs := bitSource{r: r}
	for b := 0; b+84 <= len(dst); b += 84 {
		blk := dst[b : b+84]
		for j := range 16 {
			sc, m := bs.scaleAndMin(8, 8, 15)
			blk[j] = sc | m<<4
		}
		randomBytes(r, blk[16:80])
		d := unit * jitter(r.next())
		putHalf(blk[80:], d)
		putHalf(blk[82:], d*1.5)
	}
}

func fillQ3_K(r *rng, dst []byte, unit float32) {
	bs := bitSource{r: r}
	for b := 0; b+110 <= len(dst); b += 110 {
		blk := dst[b : b+110]
		randomBytes(r, blk[:96])
		s := blk[96:108]
		clear(s)
		for j := range 16 {
			// The scale is stored biased by 32: ±|sc| with |sc| in 16..31 is 1..16 or 48..63.
			v := 16 + bs.take(4)
			if bs.take(1) == 1 {
				v = 32 - v
			} else {
				v = 32 + v
			}
			// Low 4 bits: byte j%8, low nibble for j<8 and high for j>=8; high 2 bits: byte
			// 8+j%4 at bit 2·(j/4) (the inverse of ggml's kmask unpacking).
			s[j&7] |= byte(v&15) << (4 * (j >> 3))
			s[8+(j&3)] |= byte(v>>4) << (2 * (j >> 2))
		}
		putHalf(blk[108:], unit*jitter(r.next()))
	}
}

// fillNorm writes F32 RMSNorm weights in [0.875, 1.125), each exactly 1 + k/1024.
func fillNorm(r *rng, dst []byte) {
	var x uint64
	for i := 0; i+4 <= len(dst); i += 4 {
		if i%32 == 0 {
			x = r.next()
		}
		k := int8(x >> (8 * (i / 4 % 8)))
		binary.LittleEndian.PutUint32(dst[i:], math.Float32bits(1+float32(k)*(1.0/1024)))
	}
}

// fillRouter writes F32 router weights that a bfloat16 holds exactly: integers on −255..255
// (triangular, root mean square 104.5) times the power of two nearest sigma/104.5. With at most
// 8 significant bits, a value's low 16 bits are zero.
func fillRouter(r *rng, dst []byte, sigma float32) {
	frac, exp := math.Frexp(float64(sigma) / 104.54)
	if frac < math.Sqrt2/2 {
		exp--
	}
	unit := float32(math.Ldexp(1, exp))
	var x uint64
	for i := 0; i+4 <= len(dst); i += 4 {
		if i%16 == 0 {
			x = r.next()
		}
		k := i / 4 % 4 * 16
		q := int32(x>>k&255) + int32(x>>(k+8)&255) - 255
		binary.LittleEndian.PutUint32(dst[i:], math.Float32bits(float32(q)*unit))
	}
}
