package quant

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/trochilus-llm/trochilus/gguf"
)

// The quantizers choose scales so that each sub-block's whole range is representable: every
// scale is rounded up, never down, so no value is clipped and each element lands within half a
// quantization step of its input. Decoded values are computed the way the decoders compute
// them (float32 products), so the bound holds for what a reader actually gets back.

func quantizeF32(src []float32, dst []byte) {
	for i, f := range src {
		binary.LittleEndian.PutUint32(dst[4*i:], math.Float32bits(f))
	}
}

// halfAtLeast returns the smallest half (and its value) that is at least v, for v >= 0.
func halfAtLeast(v float64) (uint16, float32, error) {
	h := gguf.F32ToF16(float32(v))
	if float64(gguf.F16ToF32(h)) < v {
		h++
	}
	if h >= 0x7c00 {
		return 0, 0, fmt.Errorf("scale %g does not fit a half", v)
	}
	return h, gguf.F16ToF32(h), nil
}

func putHalf(b []byte, h uint16) { b[0], b[1] = byte(h), byte(h>>8) }

// checkFinite returns an error naming the first NaN or infinity in x.
func checkFinite(x []float32) error {
	for i, v := range x {
		if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
			return fmt.Errorf("element %d is %v", i, v)
		}
	}
	return nil
}

// roundClamp rounds v to the nearest integer (ties to even) and clamps it to [lo, hi].
func roundClamp(v float64, lo, hi int) int {
	r := math.RoundToEven(v)
	switch {
	case r < float64(lo):
		return lo
	case r > float64(hi):
		return hi
	}
	return int(r)
}

// quantizeQ8_0 encodes the 32 values x as the Q8_0 block b: d is the smallest half at least
// max|x|/127, q = round(x/d) in [-127, 127]. It fails on a NaN or infinity, or when d would not fit
// a half (max|x| above about 8.3e6).
func quantizeQ8_0(x *[32]float32, b *[34]byte) error {
	if err := checkFinite(x[:]); err != nil {
		return err
	}
	var amax float64
	for _, v := range x {
		amax = math.Max(amax, math.Abs(float64(v)))
	}
	h, d, err := halfAtLeast(amax / 127)
	if err != nil {
		return err
	}
	putHalf(b[0:], h)
	for j, v := range x {
		q := 0
		if d != 0 {
			q = roundClamp(float64(v)/float64(d), -127, 127)
		}
		b[2+j] = byte(int8(q))
	}
	return nil
}

// quantizeQ4_K encodes the 256 values x as the Q4_K block b. Each sub-block j of 32 gets an offset
// −dmin·m_j at or below min(0, min x) and a step d·sc_j large enough to reach max x from it in 15
// steps; d and dmin are the smallest halves that keep every sc_j and m_j within 6 bits. It fails
// on a NaN or infinity, or when a scale would not fit a half.
func quantizeQ4_K(x *[256]float32, b *[144]byte) error {
	if err := checkFinite(x[:]); err != nil {
		return err
	}
	var lo, hi [8]float64
	var maxNeg float64
	for j := range lo {
		lo[j], hi[j] = 0, math.Inf(-1)
		for _, v := range x[32*j : 32*j+32] {
			lo[j] = math.Min(lo[j], float64(v))
			hi[j] = math.Max(hi[j], float64(v))
		}
		maxNeg = math.Max(maxNeg, -lo[j])
	}
	hmin, dmin, err := halfAtLeast(maxNeg / 63)
	if err != nil {
		return err
	}
	var m, sc [8]uint8
	var lower, need [8]float64
	var maxNeed float64
	for j := range m {
		if dmin != 0 {
			m[j] = uint8(min(63, math.Ceil(-lo[j]/float64(dmin))))
		}
		lower[j] = -float64(float32(dmin * float32(m[j])))
		need[j] = (hi[j] - lower[j]) / 15
		maxNeed = math.Max(maxNeed, need[j])
	}
	hd, d, err := halfAtLeast(maxNeed / 63)
	if err != nil {
		return err
	}
	var q [256]uint8
	for j := range sc {
		if d != 0 {
			sc[j] = uint8(min(63, math.Ceil(need[j]/float64(d))))
		}
		step := float64(float32(d * float32(sc[j])))
		if step == 0 {
			continue
		}
		for l := 32 * j; l < 32*j+32; l++ {
			q[l] = uint8(roundClamp((float64(x[l])-lower[j])/step, 0, 15))
		}
	}
	putHalf(b[0:], hd)
	putHalf(b[2:], hmin)
	for j := 0; j < 4; j++ {
		b[4+j] = sc[j] | (sc[j+4]>>4)<<6
		b[8+j] = m[j] | (m[j+4]>>4)<<6
		b[12+j] = sc[j+4]&15 | (m[j+4]&15)<<4
	}
	for c := 0; c < 4; c++ {
		for l := 0; l < 32; l++ {
			b[16+32*c+l] = q[64*c+l] | q[64*c+32+l]<<4
		}
	}
	return nil
}

// quantizeQ6_K encodes the 256 values x as the Q6_K block b. Each sub-block j of 16 gets a step
// d·sc_j with sc_j in 0..127 large enough that 31 steps reach max|x| of the sub-block; d is the
// smallest half that keeps every sc_j within int8, and q = round(x/step) in [-32, 31]. It fails on
// a NaN or infinity, or when d would not fit a half.
func quantizeQ6_K(x *[256]float32, b *[210]byte) error {
	if err := checkFinite(x[:]); err != nil {
		return err
	}
	var need [16]float64
	var maxNeed float64
	for j := range need {
		var amax float64
		for _, v := range x[16*j : 16*j+16] {
			amax = math.Max(amax, math.Abs(float64(v)))
		}
		need[j] = amax / 31
		maxNeed = math.Max(maxNeed, need[j])
	}
	hd, d, err := halfAtLeast(maxNeed / 127)
	if err != nil {
		return err
	}
	var q [256]uint8 // biased by 32: 0..63
	for j := range need {
		var sc int8
		if d != 0 {
			sc = int8(min(127, math.Ceil(need[j]/float64(d))))
		}
		b[192+j] = byte(sc)
		step := float64(float32(d * float32(sc)))
		for l := 16 * j; l < 16*j+16; l++ {
			v := 0
			if step != 0 {
				v = roundClamp(float64(x[l])/step, -32, 31)
			}
			q[l] = uint8(v + 32)
		}
	}
	for h := 0; h < 2; h++ {
		for l := 0; l < 32; l++ {
			e := q[128*h+l : 128*h+128]
			q1, q2, q3, q4 := e[0], e[32], e[64], e[96]
			b[64*h+l] = q1&15 | (q3&15)<<4
			b[64*h+32+l] = q2&15 | (q4&15)<<4
			b[128+32*h+l] = q1>>4 | (q2>>4)<<2 | (q3>>4)<<4 | (q4>>4)<<6
		}
	}
	putHalf(b[208:], hd)
	return nil
}
