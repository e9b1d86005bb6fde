package kernels

import (
	"fmt"
	"math"
	"math/big"

	"github.com/trochilus-llm/trochilus/kernels/internal/bigmath"
)

// RopeTable holds the cos and sin of every rotary angle of a session: for position p and
// frequency i < HeadDim/2, following transformers' float32 computation of them, with every
// float32 step correctly rounded:
//
//	inv_i   = float32(1 / float32(theta^(float32(2i)/float32(HeadDim))))
//	angle   = float32(inv_i · float32(p))
//	cos, sin = cos(angle), sin(angle) correctly rounded to float32
//
// (transformers: inv_freq = 1.0 / (base ** (arange(0, dim, 2).float() / dim)) in float32,
// freqs = inv_freq @ position_ids in float32, emb.cos(), emb.sin()). The powers and the cosines
// are evaluated in float64 and rounded to float32 when the float64 error interval decides the
// rounding; the rare entry it does not decide is evaluated at high precision. The table is thus
// the same on every platform and GOAMD64 level, whatever libm error the float64 step has.
type RopeTable struct {
	headDim, positions int
	cos, sin           []float32 // positions × headDim/2
}

// Margins of the float64 evaluations: Go's math.Pow and math.Sincos are good to about one
// float64 ulp (2^-52, relative for Pow, absolute for the Sincos of an argument below 2^20); the
// margins allow sixteen times that.
const (
	ropePowMargin = 0x1p-48 // relative
	ropeCosMargin = 0x1p-48 // absolute
)

// NewRopeTable builds the table for theta, an even head dimension and positions 0..positions-1.
func NewRopeTable(theta float64, headDim, positions int) (*RopeTable, error) {
	switch {
	case !(theta > 1) || math.IsInf(theta, 0) || float64(float32(theta)) != theta:
		return nil, fmt.Errorf("kernels: RoPE theta %g is not a float32 above 1", theta)
	case headDim <= 0 || headDim%2 != 0:
		return nil, fmt.Errorf("kernels: RoPE head dimension %d is not positive and even", headDim)
	case positions <= 0 || positions > 1<<24:
		return nil, fmt.Errorf("kernels: RoPE table of %d positions (want 1..2^24)", positions)
	case int64(positions)*int64(headDim) > 1<<31:
		return nil, fmt.Errorf("kernels: RoPE table of %d positions × %d dims is too large", positions, headDim)
	}
	half := headDim / 2
	rt := &RopeTable{headDim: headDim, positions: positions,
		cos: make([]float32, positions*half), sin: make([]float32, positions*half)}
	inv := make([]float32, half)
	for i := range inv {
		e := float32(2*i) / float32(headDim)
		inv[i] = 1 / pow32(float32(theta), e)
	}
	for p := range positions {
		for i, f := range inv {
			angle := f * float32(p)
			rt.cos[p*half+i], rt.sin[p*half+i] = sincos32(angle)
		}
	}
	return rt, nil
}

// HeadDim returns the head dimension the table rotates.
func (rt *RopeTable) HeadDim() int { return rt.headDim }

// CosSin returns the cos and sin rows of position p (HeadDim/2 floats each).
func (rt *RopeTable) CosSin(p int) (cos, sin []float32) {
	half := rt.headDim / 2
	return rt.cos[p*half : (p+1)*half], rt.sin[p*half : (p+1)*half]
}

// Apply rotates every head of x (a whole number of HeadDim-wide heads) to position p in the
// NeoX / rotate_half layout: for i < HeadDim/2, with a = x_i and b = x_{i+HeadDim/2},
//
//	x_i            = float32(a·cos_i) − float32(b·sin_i)
//	x_{i+HeadDim/2} = float32(b·cos_i) + float32(a·sin_i)
//
// which is transformers' q·cos + rotate_half(q)·sin rounded the same way.
func (rt *RopeTable) Apply(x []float32, p int) error {
	if p < 0 || p >= rt.positions {
		return fmt.Errorf("kernels: RoPE position %d outside the table's %d", p, rt.positions)
	}
	if len(x)%rt.headDim != 0 {
		return fmt.Errorf("kernels: RoPE over %d floats, not whole heads of %d", len(x), rt.headDim)
	}
	cos, sin := rt.CosSin(p)
	half := rt.headDim / 2
	for h := 0; h < len(x); h += rt.headDim {
		lo := x[h : h+half : h+half]
		hi := x[h+half : h+2*half : h+2*half]
		for i, c := range cos {
			s := sin[i]
			a, b := lo[i], hi[i]
			lo[i] = float32(a*c) - float32(b*s)
			hi[i] = float32(b*c) + float32(a*s)
		}
	}
	return nil
}

// pow32 returns base^e correctly rounded to float32, for base > 1 and e in [0, 1].
func pow32(base, e float32) float32 {
	y := math.Pow(float64(base), float64(e))
	lo := float32(y * (1 - ropePowMargin))
	hi := float32(y * (1 + ropePowMargin))
	if lo == hi {
		return lo
	}
	const prec = 160
	v := bigmath.Pow(new(big.Float).SetFloat64(float64(base)), new(big.Float).SetFloat64(float64(e)), prec)
	err := new(big.Float).Abs(v)
	err.SetMantExp(err, -(prec - 8))
	if f, ok := bigmath.RoundFloat32(v, err); ok {
		return f
	}
	return float32(y) // not reached: an irrational power is never this close to a boundary
}

// sincos32 returns cos and sin of angle correctly rounded to float32.
func sincos32(angle float32) (cos, sin float32) {
	if angle == 0 {
		return 1, angle
	}
	s, c := math.Sincos(float64(angle))
	cos, okc := decide32(c)
	sin, oks := decide32(s)
	if okc && oks {
		return cos, sin
	}
	const prec = 160
	bc, bs := bigmath.CosSin(new(big.Float).SetFloat64(float64(angle)), prec)
	err := new(big.Float).SetMantExp(big.NewFloat(1), -(prec - 8))
	if !okc {
		if f, ok := bigmath.RoundFloat32(bc, err); ok {
			cos = f
		} else {
			cos = float32(c) // not reached for a nonzero angle (Lindemann)
		}
	}
	if !oks {
		if f, ok := bigmath.RoundFloat32(bs, err); ok {
			sin = f
		} else {
			sin = float32(s)
		}
	}
	return cos, sin
}

// decide32 rounds a float64 value with absolute error below ropeCosMargin to float32 when the
// whole error interval rounds to one float32.
func decide32(v float64) (float32, bool) {
	lo, hi := float32(v-ropeCosMargin), float32(v+ropeCosMargin)
	return lo, math.Float32bits(lo) == math.Float32bits(hi)
}
