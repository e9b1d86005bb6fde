package kernels

import (
	"math"
	"testing"

	"github.com/trochilus-llm/trochilus/gguf"
)

// Deliberately wrong variants of the definitions. Each is a mistake a faster implementation
// could plausibly make; TestMutantsDetected proves the checks above catch every one, so a
// passing check means something.

// mutantDotFMA fuses each product into its lane's add.
func mutantDotFMA(a, b []float32) float32 {
	var l lanes
	for k := range a {
		l[k%16] = float32(math.FMA(float64(a[k]), float64(b[k]), float64(l[k%16])))
	}
	return l.Sum()
}

// mutantDotSwappedLanes sends lane 1's elements to lane 8 and lane 8's to lane 1.
func mutantDotSwappedLanes(a, b []float32) float32 {
	var l lanes
	for k := range a {
		lane := k % 16
		switch lane {
		case 1:
			lane = 8
		case 8:
			lane = 1
		}
		l[lane] += float32(a[k] * b[k])
	}
	return l.Sum()
}

// mutantDotSerialJoin joins the lanes left to right instead of by the tree.
func mutantDotSerialJoin(a, b []float32) float32 {
	var l lanes
	l.AddProducts(a, b)
	var s float32
	for _, v := range l {
		s += v
	}
	return s
}

// mutantDotEightLanes keeps 8 accumulators (one AVX register) instead of 16.
func mutantDotEightLanes(a, b []float32) float32 {
	var l lanes
	for k := range a {
		l[k%8] += float32(a[k] * b[k])
	}
	return l.Sum()
}

// mutantRowQ8_0Unrounded multiplies x by d and then by q (never forming the weight d·q).
func mutantRowQ8_0Unrounded(row []byte, x []float32) float32 {
	var l lanes
	for b, k := 0, 0; b+q8_0Bytes <= len(row); b, k = b+q8_0Bytes, k+q8_0Elems {
		d := half(row[b:])
		for i := range q8_0Elems {
			l[(k+i)%16] += float32(float32(d*x[k+i]) * float32(int8(row[b+2+i])))
		}
	}
	return l.Sum()
}

// mutantRopeInterleaved rotates adjacent pairs (x_2i, x_2i+1), GPT-J style, instead of the
// NeoX halves.
func mutantRopeInterleaved(rt *RopeTable, x []float32, p int) error {
	cos, sin := rt.CosSin(p)
	for h := 0; h < len(x); h += rt.HeadDim() {
		for i := range cos {
			a, b := x[h+2*i], x[h+2*i+1]
			x[h+2*i] = float32(a*cos[i]) - float32(b*sin[i])
			x[h+2*i+1] = float32(b*cos[i]) + float32(a*sin[i])
		}
	}
	return nil
}

// mutantRopeSignFlipped rotates the wrong way (x_i + x_{i+half}·sin).
func mutantRopeSignFlipped(rt *RopeTable, x []float32, p int) error {
	cos, sin := rt.CosSin(p)
	half := rt.HeadDim() / 2
	for h := 0; h < len(x); h += rt.HeadDim() {
		for i := range cos {
			a, b := x[h+i], x[h+i+half]
			x[h+i] = float32(a*cos[i]) + float32(b*sin[i])
			x[h+i+half] = float32(b*cos[i]) - float32(a*sin[i])
		}
	}
	return nil
}

// mutantAttendSerial sums the weighted values position after position (one axpy each) instead
// of in 16 lanes over positions.
func mutantAttendSerial(out, q, keys, values []float32, npos, stride int, scale float32, scores []float32) {
	scores = attendWeights(q, keys, npos, stride, scale, scores)
	clear(out)
	for t, a := range scores {
		for i := range out {
			out[i] += float32(a * values[t*stride+i])
		}
	}
}

// mutantRMSNormRsqrt rounds 1/sqrt once (in float64) instead of rounding the root and then
// the reciprocal.
func mutantRMSNormRsqrt(dst, x, w []float32, eps float32) {
	mean := DotF32(x, x) / float32(len(x))
	inv := float32(1 / math.Sqrt(float64(mean+eps)))
	for i, v := range x {
		dst[i] = float32(v*inv) * w[i]
	}
}

// mutantSoftmaxSerialSum sums the exponentials left to right.
func mutantSoftmaxSerialSum(x []float32) {
	m := x[0]
	for _, v := range x {
		m = max(m, v)
	}
	var s float32
	for i, v := range x {
		x[i] = Exp(v - m)
		s += x[i]
	}
	for i := range x {
		x[i] /= s
	}
}

// mutantQ4KFloat32Blocks adds the blocks in float32 instead of float64.
func mutantQ4KFloat32Blocks(row []byte, in *q4KInput) float32 {
	var y float32
	for b := range in.Len() / kElems {
		y += float32(q4KBlock(row[b*q4KBytes:(b+1)*q4KBytes], in, b) * in.scale[b])
	}
	return y
}

func TestMutantsDetected(t *testing.T) {
	type check func() (checked, bad int, first string)
	rt, err := NewRopeTable(10000, 128, 512)
	if err != nil {
		t.Fatal(err)
	}
	mutants := []struct {
		name  string
		check check
	}{
		{"dot with FMA", func() (int, int, string) { return checkDot(mutantDotFMA) }},
		{"dot with lanes 1 and 8 swapped", func() (int, int, string) { return checkDot(mutantDotSwappedLanes) }},
		{"dot joined left to right", func() (int, int, string) { return checkDot(mutantDotSerialJoin) }},
		{"dot in 8 lanes", func() (int, int, string) { return checkDot(mutantDotEightLanes) }},
		{"Q8_0 row without the rounded weight", func() (int, int, string) {
			return checkRowDot(gguf.TypeQ8_0, mutantRowQ8_0Unrounded, 200)
		}},
		{"RoPE on interleaved pairs", func() (int, int, string) { return checkRope(rt, mutantRopeInterleaved) }},
		{"RoPE rotating backwards", func() (int, int, string) { return checkRope(rt, mutantRopeSignFlipped) }},
		{"attention summed serially over positions", func() (int, int, string) { return checkAttend(mutantAttendSerial) }},
		{"RMSNorm with a single-rounded rsqrt", func() (int, int, string) {
			return checkVectorOp(rmsNormOp(mutantRMSNormRsqrt), refRMSNormOp)
		}},
		{"softmax summed serially", func() (int, int, string) {
			return checkVectorOp(softmaxOp(mutantSoftmaxSerialSum), func(x []float32) []float32 { return refSoftmax(x) })
		}},
		{"Q4_K blocks added in float32", func() (int, int, string) { return checkQ4K(mutantQ4KFloat32Blocks) }},
		{"MatMul splitting a row's reduction in two", func() (int, int, string) {
			tier := Scalar()
			tier.q8_0 = mutantRowsSplitColumns
			return checkMatMul(tier)
		}},
	}
	for _, m := range mutants {
		checked, bad, first := m.check()
		t.Logf("mutant %-42s caught on %4d of %4d cases (first: %s)", m.name+":", bad, checked, first)
		if bad == 0 {
			t.Errorf("mutant %q passes its check: the check cannot tell it from the definition", m.name)
		}
	}
}
