package kernels

import "unsafe"

// The Go halves of the SIMD tiers: each function here is its scalar namesake with the whole
// groups (or blocks) handed to a vector kernel, the ragged tail added as the scalar code adds it,
// and the lanes joined by Lanes.Sum. They are methods of asmKernels so that one body serves every
// tier. Vector kernels exist only on amd64 (little-endian), the only place these run.

// floatBytes views v as its bytes.
func floatBytes(v []float32) []byte {
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(v))), 4*len(v))
}

func (a *asmKernels) dotF32(w, x []float32) float32 {
	var l Lanes
	x = x[:len(w)]
	whole := len(w) &^ 15
	a.f32((*[16]float32)(&l), floatBytes(w[:whole]), x[:whole])
	l.AddProducts(w[whole:], x[whole:]) // the tail, into the lanes its indices name
	return l.Sum()
}

func (a *asmKernels) sumF32(v []float32) float32 {
	var l Lanes
	whole := len(v) &^ 15
	a.sum((*[16]float32)(&l), v[:whole])
	l.AddValues(v[whole:])
	return l.Sum()
}

// dotRowHalves is the row dot of 2-byte weights (F16, BF16): whole groups by lanes, the tail
// decoded by decode.
func (a *asmKernels) dotRowHalves(lanes func(*[16]float32, []byte, []float32), decode func([]float32, []byte), row []byte, x []float32) float32 {
	var l Lanes
	n := len(row) / 2
	x = x[:n]
	whole := n &^ 15
	lanes((*[16]float32)(&l), row[:2*whole], x[:whole])
	if whole < n {
		var w [16]float32
		decode(w[:n-whole], row[2*whole:])
		l.AddProducts(w[:n-whole], x[whole:])
	}
	return l.Sum()
}

func (a *asmKernels) dotRowF32(row []byte, x []float32) float32 {
	var l Lanes
	n := len(row) / 4
	x = x[:n]
	whole := n &^ 15
	a.f32((*[16]float32)(&l), row[:4*whole], x[:whole])
	if whole < n {
		var w [16]float32
		decodeF32(w[:n-whole], row[4*whole:])
		l.AddProducts(w[:n-whole], x[whole:])
	}
	return l.Sum()
}

func (a *asmKernels) dotRowF16(row []byte, x []float32) float32 {
	return a.dotRowHalves(a.f16, decodeF16, row, x)
}

func (a *asmKernels) dotRowBF16(row []byte, x []float32) float32 {
	return a.dotRowHalves(a.bf16, decodeBF16, row, x)
}

func (a *asmKernels) dotRowQ8_0(row []byte, x []float32) float32 {
	var l Lanes
	a.q8_0((*[16]float32)(&l), row, x[:len(row)/q8_0Bytes*q8_0Elems])
	return l.Sum()
}

func (a *asmKernels) dotRowQ6K(row []byte, x []float32) float32 {
	var l Lanes
	a.q6K((*[16]float32)(&l), row, x[:len(row)/q6KBytes*kElems])
	return l.Sum()
}

// dotRowQ5K decodes each block in Go (the scalar decodeQ5K) and runs the products through the
// float lanes kernel.
func (a *asmKernels) dotRowQ5K(row []byte, x []float32) float32 {
	var l Lanes
	var w [kElems]float32
	for b, k := 0, 0; b+q5KBytes <= len(row); b, k = b+q5KBytes, k+kElems {
		decodeQ5K(&w, row[b:])
		a.f32((*[16]float32)(&l), floatBytes(w[:]), x[k:k+kElems])
	}
	return l.Sum()
}

// q4KChunk is how many Q4_K blocks dotQ4K hands the vector kernel at once.
const q4KChunk = 16

// dotQ4K is DotQ4K with each block's exact integer T computed by the vector kernel; the mins,
// the float64 steps and the order of blocks are the scalar ones.
func (a *asmKernels) dotQ4K(row []byte, in *Q4KInput) float32 {
	nb := in.n / kElems
	row = row[:nb*q4KBytes]
	var (
		y  float64
		t  [q4KChunk]int64
		sc [q4KChunk * 8]uint32
	)
	for b0 := 0; b0 < nb; b0 += q4KChunk {
		m := min(q4KChunk, nb-b0)
		for b := range m {
			scales := row[(b0+b)*q4KBytes+4 : (b0+b)*q4KBytes+16]
			for j := range 8 {
				s, _ := scaleMinK4(j, scales)
				sc[8*b+j] = uint32(s)
			}
		}
		a.q4K(t[:m], row[b0*q4KBytes:(b0+m)*q4KBytes], in.x[b0*kElems:(b0+m)*kElems], sc[:8*m])
		for b := range m {
			blk := row[(b0+b)*q4KBytes : (b0+b+1)*q4KBytes]
			d, dmin := float64(half(blk[0:])), float64(half(blk[2:]))
			var mins int64
			for j := range 8 {
				_, mj := scaleMinK4(j, blk[4:16])
				mins += int64(mj) * in.sums[(b0+b)*8+j]
			}
			v := float64(d*float64(t[b])) - float64(dmin*float64(mins))
			y += float64(v * in.scale[b0+b])
		}
	}
	return float32(y)
}

// rmsNorm is RMSNorm with the sum of squares through the tier's dot.
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
	m := x[0]
	for _, v := range x[1:] {
		if v > m {
			m = v
		}
	}
	for i, v := range x {
		x[i] = Exp(v - m)
	}
	s := a.sumF32(x)
	for i := range x {
		x[i] /= s
	}
}

// attend is Attend with the scores and softmax through the tier.
func (a *asmKernels) attend(out, q, keys, values []float32, npos, stride int, scale float32, scores []float32) {
	scores = scores[:npos]
	for t := range scores {
		scores[t] = float32(a.dotF32(q, keys[t*stride:t*stride+len(q)]) * scale)
	}
	a.softmax(scores)
	attendValues(out, values, scores, stride)
}
