package quant

import (
	"crypto/sha256"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/trochilus-llm/trochilus/gguf"
)

// halfCeilBound bounds the smallest half at least v (v >= 0): within 2^-10 relative for normal
// halves, within the subnormal spacing 2^-24 below them.
func halfCeilBound(v float64) float64 { return v*(1+0x1p-10) + 0x1p-24 }

// errorBounds returns, for each element of x (a whole number of blocks of typ), the largest
// error the quantizer promises, worked out from x alone: half a step, where the step is the
// sub-block's range over the quant levels, enlarged by the rounding up of the 6- or 8-bit
// sub-scale and of the half super-scale, plus float32 rounding in the decode.
func errorBounds(typ gguf.Type, x []float32) []float64 {
	bound := make([]float64, len(x))
	switch typ {
	case gguf.TypeQ8_0:
		for b := 0; b < len(x); b += 32 {
			var amax float64
			for _, v := range x[b : b+32] {
				amax = math.Max(amax, math.Abs(float64(v)))
			}
			for i := b; i < b+32; i++ {
				bound[i] = halfCeilBound(amax/127)/2 + amax*0x1p-22
			}
		}
	case gguf.TypeQ4_K:
		for b := 0; b < len(x); b += 256 {
			var lo, hi [8]float64
			var negMax, amax float64
			for j := range lo {
				lo[j], hi[j] = 0, math.Inf(-1)
				for _, v := range x[b+32*j : b+32*j+32] {
					lo[j] = math.Min(lo[j], float64(v))
					hi[j] = math.Max(hi[j], float64(v))
					amax = math.Max(amax, math.Abs(float64(v)))
				}
				negMax = math.Max(negMax, -lo[j])
			}
			dmin := halfCeilBound(negMax / 63)
			var need [8]float64
			var needMax float64
			for j := range need {
				need[j] = (hi[j] - lo[j] + dmin) / 15
				needMax = math.Max(needMax, need[j])
			}
			d := halfCeilBound(needMax / 63)
			for i := b; i < b+256; i++ {
				j := (i - b) / 32
				bound[i] = (need[j]+d)/2 + (amax+63*dmin)*0x1p-21
			}
		}
	case gguf.TypeQ6_K:
		for b := 0; b < len(x); b += 256 {
			var need [16]float64
			var needMax, amax float64
			for j := range need {
				var m float64
				for _, v := range x[b+16*j : b+16*j+16] {
					m = math.Max(m, math.Abs(float64(v)))
				}
				need[j] = m / 31
				needMax = math.Max(needMax, need[j])
				amax = math.Max(amax, m)
			}
			d := halfCeilBound(needMax / 127)
			for i := b; i < b+256; i++ {
				bound[i] = (need[(i-b)/16]+d)/2 + amax*0x1p-21
			}
		}
	}
	return bound
}

// quantInputs returns named test inputs of n elements (n a multiple of 256).
func quantInputs(n int) []struct {
	name string
	x    []float32
} {
	r := rand.New(rand.NewPCG(7, 8))
	gen := func(f func(i int) float64) []float32 {
		x := make([]float32, n)
		for i := range x {
			x[i] = float32(f(i))
		}
		return x
	}
	mags := make([]float64, n/16)
	for i := range mags {
		mags[i] = math.Ldexp(1, r.IntN(21)-10)
	}
	return []struct {
		name string
		x    []float32
	}{
		{"gaussian", gen(func(int) float64 { return r.NormFloat64() })},
		{"gaussian·1e-3", gen(func(int) float64 { return 1e-3 * r.NormFloat64() })},
		{"gaussian·1e3", gen(func(int) float64 { return 1e3 * r.NormFloat64() })},
		{"positive", gen(func(int) float64 { return r.Float64() })},
		{"negative", gen(func(int) float64 { return -r.Float64() })},
		{"offset", gen(func(int) float64 { return 5 + r.Float64() })},
		{"constant", gen(func(int) float64 { return 0.7 })},
		{"zeros", gen(func(i int) float64 { return math.Copysign(0, float64(i%2*2-1)) })},
		{"tiny", gen(func(int) float64 { return 1e-7 * r.NormFloat64() })},
		{"outliers", gen(func(i int) float64 {
			if i%97 == 0 {
				return 100 * r.NormFloat64()
			}
			return r.NormFloat64()
		})},
		{"mixed scales", gen(func(i int) float64 { return mags[i/16] * r.NormFloat64() })},
		{"near limit", gen(func(int) float64 { return 1.5e5 * (2*r.Float64() - 1) })},
	}
}

// TestQuantizeErrorBound quantizes a range of inputs, decodes them and checks every element
// against errorBounds, and that every block is well formed.
func TestQuantizeErrorBound(t *testing.T) {
	const n = 256 * 64
	for _, typ := range []gguf.Type{gguf.TypeQ8_0, gguf.TypeQ4_K, gguf.TypeQ6_K} {
		for _, in := range quantInputs(n) {
			rb, _ := typ.RowBytes(n)
			q := make([]byte, rb)
			if err := Quantize(typ, in.x, q); err != nil {
				t.Fatalf("%v %s: %v", typ, in.name, err)
			}
			checkWellFormed(t, typ, q)
			y := make([]float32, n)
			if err := Dequantize(typ, q, y); err != nil {
				t.Fatal(err)
			}
			bound := errorBounds(typ, in.x)
			var worst, sq, sumBound float64
			for i := range y {
				e := math.Abs(float64(y[i]) - float64(in.x[i]))
				if !(e <= bound[i]) {
					t.Fatalf("%v %s element %d: %v decodes to %v, error %g over the bound %g", typ, in.name, i, in.x[i], y[i], e, bound[i])
				}
				if bound[i] > 0 {
					worst = math.Max(worst, e/bound[i])
				}
				sq += e * e
				sumBound += bound[i]
			}
			t.Logf("%-5v %-14s rms error %.3g, mean bound %.3g, worst error/bound %.3f", typ, in.name,
				math.Sqrt(sq/n), sumBound/n, worst)
		}
	}
}

// checkWellFormed checks the fields a decoder trusts: half scales finite and not negative,
// Q8_0 quants within ±127, Q6_K sub-scales not negative.
func checkWellFormed(t *testing.T, typ gguf.Type, q []byte) {
	t.Helper()
	bb := typ.BlockBytes()
	for b := 0; b < len(q); b += bb {
		blk := q[b : b+bb]
		var halves []int
		switch typ {
		case gguf.TypeQ8_0:
			halves = []int{0}
			for _, v := range blk[2:] {
				if v == 0x80 {
					t.Fatalf("%v block %d: quant -128", typ, b/bb)
				}
			}
		case gguf.TypeQ4_K:
			halves = []int{0, 2}
		case gguf.TypeQ6_K:
			halves = []int{208}
			for j, v := range blk[192:208] {
				if int8(v) < 0 {
					t.Fatalf("%v block %d: sub-scale %d is %d", typ, b/bb, j, int8(v))
				}
			}
		}
		for _, off := range halves {
			if h := le16(blk, off); h >= 0x7c00 {
				t.Fatalf("%v block %d: half at byte %d is %#04x (negative, infinite or NaN)", typ, b/bb, off, h)
			}
		}
	}
}

func TestQuantizeFloatTypes(t *testing.T) {
	x := f32Samples(4096)
	f32 := make([]byte, 4*len(x))
	if err := Quantize(gguf.TypeF32, x, f32); err != nil {
		t.Fatal(err)
	}
	back := make([]float32, len(x))
	if err := Dequantize(gguf.TypeF32, f32, back); err != nil {
		t.Fatal(err)
	}
	for i := range x {
		if math.Float32bits(back[i]) != math.Float32bits(x[i]) {
			t.Fatalf("F32 element %d: %#08x came back as %#08x", i, math.Float32bits(x[i]), math.Float32bits(back[i]))
		}
	}
	for _, typ := range []gguf.Type{gguf.TypeF16, gguf.TypeBF16} {
		h := make([]byte, 2*len(x))
		if err := Quantize(typ, x, h); err != nil {
			t.Fatal(err)
		}
		for i, v := range x {
			want := gguf.F32ToF16(v)
			if typ == gguf.TypeBF16 {
				want = gguf.F32ToBF16(v)
			}
			if got := le16(h, 2*i); got != want {
				t.Fatalf("%v element %d (%g): wrote %#04x, want %#04x", typ, i, v, got, want)
			}
		}
	}
}

func TestQuantizeErrors(t *testing.T) {
	block := func(v float32, at int) []float32 {
		x := make([]float32, 256)
		for i := range x {
			x[i] = float32(i%7) - 3
		}
		x[at] = v
		return x
	}
	cases := []struct {
		typ   gguf.Type
		x     []float32
		dst   int
		error string
	}{
		{gguf.TypeQ4_0, make([]float32, 32), 18, "not supported"},
		{gguf.TypeQ2_K, make([]float32, 256), 84, "not supported"},
		{gguf.TypeQ8_0, make([]float32, 31), 34, "whole number"},
		{gguf.TypeQ8_0, make([]float32, 32), 35, "take 34 bytes, got 35"},
		{gguf.TypeF16, make([]float32, 3), 4, "take 6 bytes, got 4"},
		{gguf.TypeQ8_0, block(float32(math.NaN()), 40), 8 * 34, "block at element 32: element 8 is NaN"},
		{gguf.TypeQ4_K, block(float32(math.Inf(-1)), 3), 144, "element 3 is -Inf"},
		{gguf.TypeQ6_K, block(float32(math.Inf(1)), 255), 210, "element 255 is +Inf"},
		{gguf.TypeQ8_0, block(1e7, 0), 8 * 34, "does not fit a half"},
		{gguf.TypeQ4_K, block(-3e9, 100), 144, "does not fit a half"},
		{gguf.TypeQ6_K, block(5e8, 7), 210, "does not fit a half"},
	}
	for _, c := range cases {
		err := Quantize(c.typ, c.x, make([]byte, c.dst))
		if err == nil || !strings.Contains(err.Error(), c.error) {
			t.Errorf("Quantize(%v, %d floats, %d bytes) = %v, want an error with %q", c.typ, len(c.x), c.dst, err, c.error)
		}
	}
	for _, typ := range []gguf.Type{gguf.TypeF32, gguf.TypeF16, gguf.TypeBF16, gguf.TypeQ8_0, gguf.TypeQ4_K, gguf.TypeQ6_K} {
		if !QuantizeSupported(typ) {
			t.Errorf("QuantizeSupported(%v) = false", typ)
		}
	}
	if QuantizeSupported(gguf.TypeQ5_K) {
		t.Error("QuantizeSupported(Q5_K) = true")
	}
}

// TestQuantizeComparedWithGGML quantizes the same inputs with Quantize and with ggml's
// quantize_row_*_ref, decodes both with ggml's to_float, and compares the errors. Ours must decode
// through ggml to the same bits as through Dequantize, stay within errorBounds, and not be much
// worse than ggml's in RMS.
func TestQuantizeComparedWithGGML(t *testing.T) {
	g := loadGGML(t)
	const n = 256 * 256
	for _, typ := range []gguf.Type{gguf.TypeQ8_0, gguf.TypeQ4_K, gguf.TypeQ6_K} {
		for _, in := range quantInputs(n) {
			rb, _ := typ.RowBytes(n)
			ours, theirs := make([]byte, rb), make([]byte, rb)
			if err := Quantize(typ, in.x, ours); err != nil {
				t.Fatal(err)
			}
			g.fromFloatRef(typ, in.x, theirs)
			yo, yt, yd := make([]float32, n), make([]float32, n), make([]float32, n)
			g.toFloat(typ, ours, yo)
			g.toFloat(typ, theirs, yt)
			if err := Dequantize(typ, ours, yd); err != nil {
				t.Fatal(err)
			}
			if m, first := compareBits(yd, yo, func(i int) string { return fmt.Sprint(i) }); m != 0 {
				t.Fatalf("%v %s: %d elements of our blocks decode differently in ggml: %v", typ, in.name, m, first)
			}
			bound := errorBounds(typ, in.x)
			var so, st, maxO, maxT float64
			for i := range yo {
				eo := math.Abs(float64(yo[i]) - float64(in.x[i]))
				et := math.Abs(float64(yt[i]) - float64(in.x[i]))
				if !(eo <= bound[i]) {
					t.Fatalf("%v %s element %d: error %g over the bound %g", typ, in.name, i, eo, bound[i])
				}
				so, st = so+eo*eo, st+et*et
				maxO, maxT = math.Max(maxO, eo), math.Max(maxT, et)
			}
			ro, rt := math.Sqrt(so/n), math.Sqrt(st/n)
			ratio := ro / rt
			if rt == 0 {
				ratio = 1
				if ro != 0 {
					ratio = math.Inf(1)
				}
			}
			t.Logf("%-5v %-14s rms ours %.4g ggml %.4g (ratio %.3f); max ours %.3g ggml %.3g", typ, in.name, ro, rt, ratio, maxO, maxT)
			if ratio > maxRMSRatio(typ) {
				t.Errorf("%v %s: rms error %.4g is %.3f times ggml's %.4g", typ, in.name, ro, ratio, rt)
			}
		}
	}
}

// maxRMSRatio is how much larger than ggml's reference quantizer our RMS error may be: ours
// rounds every scale up so nothing clips (which bounds every element's error), where ggml
// searches for the least squared error and lets outliers clip. Q4_K pays most, on blocks with
// outliers: its shared 6-bit min scale then rounds each sub-block's offset up by a coarse step
// (measured 1.90 times ggml's RMS there, 1.12 on Gaussian data).
func maxRMSRatio(typ gguf.Type) float64 {
	switch typ {
	case gguf.TypeQ8_0:
		return 1.05
	case gguf.TypeQ4_K:
		return 2.0
	}
	return 1.3
}

// TestQuantizeStable pins Quantize's output for a fixed input: files generated from it must be
// the same whatever the build (GOAMD64=v1 or v3, amd64 or arm64), so nothing in it may depend on
// FMA fusion. A deliberate change to a quantizer updates the digests.
func TestQuantizeStable(t *testing.T) {
	// Integer-derived input, so that it is the same everywhere too (NormFloat64 goes through
	// math.Exp, whose amd64 assembly uses FMA where the CPU has it): uniform in [-1, 1) with the
	// magnitude of each run of 16 between 2^-10 and 2^10.
	r := rand.New(rand.NewPCG(3, 4))
	x := make([]float32, 256*16)
	for i := range x {
		x[i] = float32(int32(r.Uint32())) * float32(math.Ldexp(0x1p-31, i/16*7919%21-10))
	}
	want := map[gguf.Type]string{
		gguf.TypeQ8_0: "33d1f4f3f5d3e693a54b33e4d846d3376f5fcb9042604bd3744af755ac5bb72a",
		gguf.TypeQ4_K: "963f8f262b83b37046adeb49fc61f327ab4f6aa5bf5ff160c770b7c3f5da39db",
		gguf.TypeQ6_K: "bd3208e87f79205e8ae5e5bfe1fd0624e31c296d08a354f92934af8719d64f0a",
	}
	for typ, digest := range want {
		rb, _ := typ.RowBytes(int64(len(x)))
		q := make([]byte, rb)
		if err := Quantize(typ, x, q); err != nil {
			t.Fatal(err)
		}
		if got := fmt.Sprintf("%x", sha256.Sum256(q)); got != digest {
			t.Errorf("%v: sha256 %s, want %s", typ, got, digest)
		}
	}
}
