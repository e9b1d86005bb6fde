package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// refRMSNorm is rmsNorm's definition written out.
func refRMSNorm(x, w []float32, eps float32) []float32 {
	ss := refDot(x, x)
	mean := ss / float32(len(x))
	root := float32(math.Sqrt(float64(mean + eps)))
	inv := 1 / root
	out := make([]float32, len(x))
	for i := range x {
		xi := float32(x[i] * inv)
		out[i] = float32(xi * w[i])
	}
	return out
}

func refSoftmax(x []float32) []float32 {
	m := x[0]
	for _, v := range x {
		if v > m {
			m = v
		}
	}
	e := make([]float32, len(x))
	for i, v := range x {
		d := v - m
		e[i] = bigExp32(d)
	}
	s := refLaneSum(len(e), func(k int) float32 { return e[k] })
	for i := range e {
		e[i] = e[i] / s
	}
	return e
}

// bigExp32 is the correctly rounded exp by the test reference (math.Exp, math/big when near a
// boundary), NaN for NaN.
func bigExp32(x float32) float32 {
	if x != x {
		return x
	}
	v, _ := expReference(x)
	return v
}

// checkVectorOp compares op with ref on vectors of lengths 1..70 and 1000, plain and special.
func checkVectorOp(op, ref func(x []float32) []float32) (checked, bad int, first string) {
	var c counts
	rng := rand.New(rand.NewPCG(9, 9))
	lengths := []int{1000, 2048}
	for n := 1; n <= 70; n++ {
		lengths = append(lengths, n)
	}
	for _, n := range lengths {
		for _, special := range []bool{false, true} {
			x := randFloats(rng, n, special, false)
			got, want := op(x), ref(x)
			c.noteSlices(got, want, func(i int) string {
				return fmt.Sprintf("n=%d element %d: got %g, want %g", n, i, got[i], want[i])
			})
		}
	}
	return c.result()
}

func rmsNormOp(norm func(dst, x, w []float32, eps float32)) func(x []float32) []float32 {
	return func(x []float32) []float32 {
		w := make([]float32, len(x))
		for i := range w {
			w[i] = 1 + float32(i%7)/8
		}
		dst := make([]float32, len(x))
		norm(dst, x, w, 1e-5)
		return dst
	}
}

func refRMSNormOp(x []float32) []float32 {
	w := make([]float32, len(x))
	for i := range w {
		w[i] = 1 + float32(i%7)/8
	}
	return refRMSNorm(x, w, 1e-5)
}

func softmaxOp(sm func([]float32)) func(x []float32) []float32 {
	return func(x []float32) []float32 {
		y := append([]float32(nil), x...)
		sm(y)
		return y
	}
}

func TestRMSNorm(t *testing.T) {
	checked, bad, first := checkVectorOp(rmsNormOp(rmsNorm), refRMSNormOp)
	expectAgree(t, checked, bad, first, "RMSNorm: %d vectors against the written-out definition, %d differ", "RMSNorm differs on %d of %d vectors; first: %s")
	// [3, 4]: mean of squares 12.5, 1/sqrt(12.5) rounded twice.
	dst := make([]float32, 2)
	rmsNorm(dst, []float32{3, 4}, []float32{1, 2}, 0)
	inv := 1 / float32(math.Sqrt(12.5))
	if dst[0] != float32(3*inv) || dst[1] != float32(float32(4*inv)*2) {
		t.Errorf("RMSNorm([3 4], w [1 2]) = %v", dst)
	}
	// In place.
	x := []float32{1, -2, 3, -4}
	want := refRMSNorm(x, []float32{1, 1, 1, 1}, 1e-5)
	rmsNorm(x, x, []float32{1, 1, 1, 1}, 1e-5)
	for i := range x {
		if x[i] != want[i] {
			t.Errorf("in place: element %d = %g, want %g", i, x[i], want[i])
		}
	}
}

func TestSoftmax(t *testing.T) {
	checked, bad, first := checkVectorOp(softmaxOp(Softmax), func(x []float32) []float32 { return refSoftmax(x) })
	expectAgree(t, checked, bad, first, "Softmax: %d vectors against the written-out definition, %d differ", "Softmax differs on %d of %d vectors; first: %s")
	x := []float32{0, 0, 0, 0}
	Softmax(x)
	for _, v := range x {
		if v != 0.25 {
			t.Errorf("uniform softmax: %v", x)
		}
	}
	inf := float32(math.Inf(1))
	for _, in := range [][]float32{{1, float32(math.NaN()), 2}, {1, inf}, {-inf, -inf}} {
		y := append([]float32(nil), in...)
		Softmax(y)
		for _, v := range y {
			if v == v {
				t.Errorf("Softmax(%v) = %v, want all NaN", in, y)
				break
			}
		}
	}
	y := []float32{-inf, 0}
	Softmax(y)
	if y[0] != 0 || y[1] != 1 {
		t.Errorf("Softmax([-Inf 0]) = %v, want [0 1]", y)
	}
}

func TestSwiGLU(t *testing.T) {
	rng := rand.New(rand.NewPCG(4, 4))
	g := randFloats(rng, 4096, true, true)
	u := randFloats(rng, 4096, true, false)
	dst := make([]float32, len(g))
	swiGLU(dst, g, u)
	for i := range g {
		e := bigExp32(-g[i])
		den := 1 + e
		silu := g[i] / den
		want := float32(silu * u[i])
		if !sameBits(dst[i], want) {
			t.Fatalf("SwiGLU(g=%g, u=%g) = %g, want %g", g[i], u[i], dst[i], want)
		}
	}
	if got := silu(-200); math.Float32bits(got) != math.Float32bits(float32(math.Copysign(0, -1))) {
		t.Errorf("SiLU(-200) = %g, want -0", got)
	}
	if got := silu(200); got != 200 {
		t.Errorf("SiLU(200) = %g, want 200", got)
	}
	t.Logf("SwiGLU: %d elements (specials and NaNs mixed in) against the definition", len(g))
}

func TestArgmax(t *testing.T) {
	nan := float32(math.NaN())
	inf := float32(math.Inf(1))
	negZero := float32(math.Copysign(0, -1))
	cases := []struct {
		x    []float32
		want int
	}{
		{nil, -1},
		{[]float32{nan, nan}, 0},
		{[]float32{nan, 1, 3, 3}, 2},
		{[]float32{1, nan, 0.5}, 0},
		{[]float32{-inf, -inf}, 0},
		{[]float32{negZero, 0}, 0},
		{[]float32{0, negZero}, 0},
		{[]float32{-1, inf, nan, inf}, 1},
		{[]float32{nan, -inf}, 1},
	}
	for _, c := range cases {
		if got := Argmax(c.x); got != c.want {
			t.Errorf("Argmax(%v) = %d, want %d", c.x, got, c.want)
		}
	}
}

func TestTopK(t *testing.T) {
	nan := float32(math.NaN())
	x := []float32{0.5, 2, nan, 2, -1, 3, 0.5}
	idx := make([]int, 7)
	TopK(idx, x)
	want := []int{5, 1, 3, 0, 6, 4, 2}
	for i := range want {
		if idx[i] != want[i] {
			t.Fatalf("TopK = %v, want %v", idx, want)
		}
	}
	if a := testing.AllocsPerRun(100, func() { TopK(idx[:3], x) }); a != 0 {
		t.Errorf("TopK allocates %.1f", a)
	}
}

// refAttend is the attention definition with the weighted sum written as a plain lane sum.
func refAttend(q, keys, values []float32, npos, stride, dv int, scale float32) []float32 {
	s := make([]float32, npos)
	for t := range s {
		d := refDot(q, keys[t*stride:t*stride+len(q)])
		s[t] = float32(d * scale)
	}
	a := refSoftmax(s)
	out := make([]float32, dv)
	for i := range out {
		out[i] = refLaneSum(npos, func(t int) float32 { return float32(a[t] * values[t*stride+i]) })
	}
	return out
}

type attendFunc func(out, q, keys, values []float32, npos, stride int, scale float32, scores []float32)

func checkAttend(attend attendFunc) (checked, bad int, first string) {
	var c counts
	rng := rand.New(rand.NewPCG(8, 8))
	scale := float32(1 / math.Sqrt(128))
	for _, npos := range []int{1, 2, 15, 16, 17, 40, 100} {
		for _, dim := range []int{8, 33, 128} {
			stride := dim + 3
			q := randFloats(rng, dim, false, false)
			keys := randFloats(rng, npos*stride, false, false)
			values := randFloats(rng, npos*stride, false, false)
			out := make([]float32, dim)
			scores := make([]float32, npos)
			attend(out, q, keys, values, npos, stride, scale, scores)
			want := refAttend(q, keys, values, npos, stride, dim, scale)
			c.noteSlices(out, want, func(i int) string {
				return fmt.Sprintf("npos %d dim %d element %d: got %g, want %g", npos, dim, i, out[i], want[i])
			})
		}
	}
	return c.result()
}

func TestAttend(t *testing.T) {
	checked, bad, first := checkAttend(Attend)
	expectAgree(t, checked, bad, first, "Attend: %d heads (1..100 positions, dims 8, 33, 128) against the definition, %d differ", "Attend differs on %d of %d; first: %s")
}
