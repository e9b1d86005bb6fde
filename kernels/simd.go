package kernels

import (
	"math"
	"unsafe"

	"github.com/trochilus-llm/trochilus/gguf"
)

// The Go halves of the SIMD tiers: each function here is its scalar namesake with the whole
// groups (or blocks) handed to a vector kernel, the ragged tail added as the scalar code adds it,
// and the lanes joined by lanes.Sum. They are methods of asmKernels so that one body serves every
// tier. Vector kernels exist only on amd64 (little-endian), the only place these run.

// floatBytes views v as its bytes.
func floatBytes(v []float32) []byte {
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(v))), 4*len(v))
}

func (a *asmKernels) dotF32(w, x []float32) float32 {
	var l lanes
	x = x[:len(w)]
	whole := len(w) &^ 15
	l = a.f32(l, floatBytes(w[:whole]), x[:whole])
	l.AddProducts(w[whole:], x[whole:]) // the tail, into the lanes its indices name
	return l.Sum()
}

func (a *asmKernels) sumF32(v []float32) float32 {
	var l lanes
	whole := len(v) &^ 15
	l = a.sum(l, v[:whole])
	l.AddValues(v[whole:])
	return l.Sum()
}

// dotRowHalves is the row dot of 2-byte weights (F16, or BF16 when bf16 is set): whole groups
// by the lanes kernel groups, the tail decoded here. (The decoder is chosen by a flag, not passed as a func
// value, so the tail's array stays on the stack.)
func (a *asmKernels) dotRowHalves(groups func([16]float32, []byte, []float32) [16]float32, bf16 bool, row []byte, x []float32) float32 {
	var l lanes
	n := len(row) / 2
	x = x[:n]
	whole := n &^ 15
	l = groups(l, row[:2*whole], x[:whole])
	if whole < n {
		var w [16]float32
		if bf16 {
			gguf.DequantizeBF16(row[2*whole:], w[:n-whole])
		} else {
			gguf.DequantizeF16(row[2*whole:], w[:n-whole])
		}
		l.AddProducts(w[:n-whole], x[whole:])
	}
	return l.Sum()
}

func (a *asmKernels) dotRowF32(row []byte, x []float32) float32 {
	var l lanes
	n := len(row) / 4
	x = x[:n]
	whole := n &^ 15
	l = a.f32(l, row[:4*whole], x[:whole])
	if whole < n {
		var w [16]float32
		gguf.DequantizeF32(row[4*whole:], w[:n-whole])
		l.AddProducts(w[:n-whole], x[whole:])
	}
	return l.Sum()
}

func (a *asmKernels) dotRowF16(row []byte, x []float32) float32 {
	return a.dotRowHalves(a.f16, false, row, x)
}

func (a *asmKernels) dotRowBF16(row []byte, x []float32) float32 {
	return a.dotRowHalves(a.bf16, true, row, x)
}

func (a *asmKernels) dotRowQ8_0(row []byte, x []float32) float32 {
	var l lanes
	l = a.q8_0(l, row, x[:len(row)/q8_0Bytes*q8_0Elems])
	return l.Sum()
}

// dotRowQ5K decodes each block in Go (gguf.DequantizeQ5_K, as the scalar dotRowQ5K does) and
// runs the products through the float lanes kernel. The decoded block escapes to the heap (it
// goes to a func value as a slice): one 1 KiB allocation a row, to remove when Q5_K gets a
// kernel of its own.
func (a *asmKernels) dotRowQ5K(row []byte, x []float32) float32 {
	var l lanes
	var w [kElems]float32
	for b, k := 0, 0; b+q5KBytes <= len(row); b, k = b+q5KBytes, k+kElems {
		gguf.DequantizeQ5_K((*[q5KBytes]byte)(row[b:]), &w)
		l = a.f32(l, floatBytes(w[:]), x[k:k+kElems])
	}
	return l.Sum()
}

// expTable returns the table of the vector Exp kernels: the 64 powers 2^(j/64) of Exp, then its
// constants in the order the kernels read them (internal/asmgen names the slots); the float32
// ones sit in the low half of their slot.
func expTable() *[80]float64 {
	f32 := func(v float32) float64 { return math.Float64frombits(uint64(math.Float32bits(v))) }
	var t [80]float64
	copy(t[:64], expPow2[:])
	copy(t[64:], []float64{
		64 / math.Ln2, 0x1.8p52, expLn2By64Hi, expLn2By64Lo,
		1.0 / 120, 1.0 / 24, 1.0 / 6, 0.5,
		1 - expRoundMargin, 1 + expRoundMargin,
		f32(expOverflow), f32(expUnderflow),
		math.Float64frombits(1023 * 64),
		f32(float32(math.Inf(1))), math.Float64frombits(1 << 31), f32(1),
	})
	return &t
}

// expShifted writes dst[i] = Exp(src[i] − shift) (the difference rounded to float32) through
// the vector kernel, a group it leaves and the ragged tail by the scalar Exp. dst may be src.
func (a *asmKernels) expShifted(dst, src []float32, shift float32) {
	dst = dst[:len(src)]
	whole := len(src) &^ 7
	for i := 0; i < len(src); {
		if i < whole {
			i += a.expShift(dst[i:whole], src[i:whole], shift, a.expTab)
		}
		end := min(i+8, len(src))
		for ; i < end; i++ {
			dst[i] = Exp(src[i] - shift)
		}
	}
}

// swiGLUVec is swiGLU through the vector kernel, a group it leaves and the ragged tail by the
// scalar silu. dst may alias gate or up.
func (a *asmKernels) swiGLUVec(dst, gate, up []float32) {
	up, dst = up[:len(gate)], dst[:len(gate)]
	whole := len(gate) &^ 7
	for i := 0; i < len(gate); {
		if i < whole {
			i += a.swiGLU(dst[i:whole], gate[i:whole], up[i:whole], a.expTab)
		}
		end := min(i+8, len(gate))
		for ; i < end; i++ {
			dst[i] = silu(gate[i]) * up[i]
		}
	}
}

// rmsNorm is the package's rmsNorm with the sum of squares through the tier's dot.
func (a *asmKernels) rmsNorm(dst, x, w []float32, eps float32) {
	n := len(x)
	if n == 0 {
		return
	}
	w, dst = w[:n], dst[:n]
	mean := a.dotF32(x, x) / float32(n)
	inv := 1 / sqrt32(mean+eps)
	for i, v := range x {
		dst[i] = float32(v*inv) * w[i]
	}
}

// softmax is Softmax with the denominator through the tier's sum.
func (a *asmKernels) softmax(x []float32) {
	if len(x) == 0 {
		return
	}
	m := firstMax(x)
	a.expShifted(x, x, m)
	s := a.sumF32(x)
	for i := range x {
		x[i] /= s
	}
}

// attend is Attend with the scores and softmax through the tier.
func (a *asmKernels) attend(out, q, keys, values []float32, npos, stride int, scale float32, scores []float32) {
	scores = scores[:npos]
	a.attendScores(scores, q, keys, stride, scale)
	a.softmax(scores)
	a.attendValues(out, values, scores, stride)
}

// attendCols is the most outputs one attendV call computes: its lanes fill 16 KiB of its frame
// (the generator's attendCols).
const attendCols = 256

// attendValues is the package's attendValues with the whole blocks of a.attendW outputs
// through the vector kernel and the ragged columns by the definition, one output at a time.
func (a *asmKernels) attendValues(out, values, w []float32, stride int) {
	whole := len(out) / a.attendW * a.attendW
	// The kernel keeps the 16 lanes of each output in its frame (in L1); a head wider than
	// attendCols runs in column slices.
	for c0 := 0; c0 < whole; c0 += attendCols {
		a.attendV(out[c0:min(c0+attendCols, whole)], values[c0:], w, stride)
	}
	for i := whole; i < len(out); i++ {
		var l lanes
		for t, wt := range w {
			l[t&15] += float32(wt * values[t*stride+i])
		}
		out[i] = l.Sum()
	}
}
