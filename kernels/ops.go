package kernels

import "math"

// sqrt32 is the correctly rounded float32 square root (the float64 root of a float32 rounds to
// the same float32 as the exact root: 53 >= 2·24 + 2).
func sqrt32(v float32) float32 { return float32(math.Sqrt(float64(v))) }

// rmsNorm writes dst[i] = (x[i]·inv)·w[i] with inv = 1/sqrt(mean + eps) and mean = ss/n, ss the
// 16-lane sum of squares of x: in float32, each of ss/n, mean+eps, the root, the reciprocal and
// both products rounded once, as transformers' float32 RMSNorm rounds them
// (x.pow(2).mean(), torch.rsqrt(var + eps) as 1/sqrt, x * rsqrt, weight * that). dst may be x.
// w and dst must be as long as x.
func rmsNorm(dst, x, w []float32, eps float32) {
	n := len(x)
	if n == 0 {
		return
	}
	w, dst = w[:n], dst[:n]
	mean := DotF32(x, x) / float32(n)
	inv := 1 / sqrt32(mean+eps)
	for i, v := range x {
		dst[i] = float32(v*inv) * w[i]
	}
}

// expShifted writes dst[i] = Exp(src[i] − shift), the scalar definition of Tier.ExpShifted.
func expShifted(dst, src []float32, shift float32) {
	dst = dst[:len(src)]
	for i, v := range src {
		dst[i] = Exp(v - shift)
	}
}

// Softmax replaces x by its softmax: m = the largest element (a scan keeping the first maximum),
// x[i] = Exp(x[i] − m) with the difference rounded to float32, s = the 16-lane sum of those, and
// x[i] = x[i]/s. A NaN anywhere, a +Inf, or all elements −Inf make every element NaN, as in
// torch.
func Softmax(x []float32) {
	if len(x) == 0 {
		return
	}
	m := firstMax(x)
	for i, v := range x {
		x[i] = Exp(v - m)
	}
	s := SumF32(x)
	for i := range x {
		x[i] /= s
	}
}

// firstMax returns the largest element of x (not empty) by a scan keeping the first maximum: the
// m of Softmax.
func firstMax(x []float32) float32 {
	m := x[0]
	for _, v := range x[1:] {
		if v > m {
			m = v
		}
	}
	return m
}

// silu returns g/(1 + Exp(−g)), the sum and the quotient each rounded to float32 (torch's silu
// on CPU computes x / (1 + exp(−x))).
func silu(g float32) float32 { return g / (1 + Exp(-g)) }

// swiGLU writes dst[i] = silu(gate[i])·up[i], the product rounded once. dst may alias gate or
// up; up and dst must be as long as gate.
func swiGLU(dst, gate, up []float32) {
	up, dst = up[:len(gate)], dst[:len(gate)]
	for i, g := range gate {
		dst[i] = silu(g) * up[i]
	}
}

// Argmax returns the index of the largest element of x, the lowest such index when several are
// equal (−0 equals +0); a NaN never wins. It returns 0 when every element is NaN and −1 for an
// empty x.
func Argmax(x []float32) int {
	best := -1
	for i, v := range x {
		if v != v {
			continue
		}
		if best < 0 || v > x[best] {
			best = i
		}
	}
	if best < 0 && len(x) > 0 {
		return 0
	}
	return best
}

// TopK writes into idx (len(idx) = k <= len(x)) the indices of the k largest elements of x,
// largest first, by repeated Argmax over the elements not yet chosen: ties go to the lower
// index and NaNs come last, in index order. It allocates nothing and is meant for short rows
// (a router's 64 experts).
func TopK(idx []int, x []float32) {
	for j := range idx {
		best := -1
		for i, v := range x {
			if taken(idx[:j], i) {
				continue
			}
			if best < 0 || v > x[best] || x[best] != x[best] && v == v {
				best = i
			}
		}
		idx[j] = best
	}
}

func taken(chosen []int, i int) bool {
	for _, c := range chosen {
		if c == i {
			return true
		}
	}
	return false
}

// Attend computes one attention head over npos positions. Position t's key is
// keys[t·stride : t·stride+len(q)] and its value values[t·stride : t·stride+len(out)]:
//
//	scores[t] = float32(DotF32(q, k_t)·scale)           (the dot, then one rounded product)
//	Softmax(scores[:npos])
//	out[i]    = the 16-lane sum over t of float32(scores[t]·v_t[i])
//
// so the weighted sum over positions follows the contract like every other reduction: position
// t goes to lane t mod 16. scores must hold npos floats; it is left holding the attention
// weights. Causality is the caller's: npos counts the positions the query may see.
func Attend(out, q, keys, values []float32, npos, stride int, scale float32, scores []float32) {
	attendValues(out, values, attendWeights(q, keys, npos, stride, scale, scores), stride)
}

// attendWeights is Attend's first two steps: it writes the scaled dots of q with the npos keys
// to scores[:npos], takes their Softmax and returns scores[:npos].
func attendWeights(q, keys []float32, npos, stride int, scale float32, scores []float32) []float32 {
	scores = scores[:npos]
	for t := range scores {
		scores[t] = float32(DotF32(q, keys[t*stride:t*stride+len(q)]) * scale)
	}
	Softmax(scores)
	return scores
}

// attendValues writes out[i] = Σ_t a[t]·v_t[i] under the 16-lane contract over t. Each output
// element keeps its own 16 lanes; they live in a small stack array of lane sets, filled one
// position at a time so the values are read in order.
func attendValues(out, values, a []float32, stride int) {
	const width = 32 // output elements per pass: 32 lane sets of 16 floats = 2 KiB of stack
	for i0 := 0; i0 < len(out); i0 += width {
		n := min(width, len(out)-i0)
		var sets [width]lanes
		for t, at := range a {
			v := values[t*stride+i0 : t*stride+i0+n]
			lane := t & 15
			for i, vi := range v {
				sets[i][lane] += float32(at * vi)
			}
		}
		for i := range n {
			out[i0+i] = sets[i].Sum()
		}
	}
}
