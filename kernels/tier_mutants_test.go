package kernels

import (
	"math"
	"testing"
	"unsafe"
)

// Deliberately wrong vector kernels: each is swapped into a copy of a real tier's kernels, and
// checkTier must reject it. They are written in Go (the contract is about bits, not language).

// mutantLanesF32FMA fuses each product with its lane's addition (one rounding, in float64 and
// then to float32, which is what an FMA-like shortcut gives).
func mutantLanesF32FMA(l *[16]float32, w []byte, x []float32) {
	n := len(w) / 64 * 16
	ws := unsafe.Slice((*float32)(unsafe.Pointer(unsafe.SliceData(w))), n)
	for k := range n {
		l[k%16] = float32(math.FMA(float64(ws[k]), float64(x[k]), float64(l[k%16])))
	}
}

// mutantLanesSwapped returns a kernel that runs k with lanes 3 and 12 exchanged.
func mutantLanesSwapped(k func(*[16]float32, []byte, []float32)) func(*[16]float32, []byte, []float32) {
	return func(l *[16]float32, w []byte, x []float32) {
		l[3], l[12] = l[12], l[3]
		k(l, w, x)
		l[3], l[12] = l[12], l[3]
	}
}

// mutantLanesQ8_0Unscaled applies the block scale after the product: float32(d·float32(q·x)).
func mutantLanesQ8_0Unscaled(l *[16]float32, w []byte, x []float32) {
	for b, k := 0, 0; b+q8_0Bytes <= len(w); b, k = b+q8_0Bytes, k+q8_0Elems {
		d := half(w[b:])
		for i := range q8_0Elems {
			l[i%16] += float32(d * float32(float32(int8(w[b+2+i]))*x[k+i]))
		}
	}
}

// mutantSumEightLanes adds whole groups of 16 into 8 lanes.
func mutantSumEightLanes(l *[16]float32, v []float32) {
	for k := range len(v) &^ 15 {
		l[k%8] += v[k]
	}
}

// mutantQ4KInt32 sums each block's products in wrapping int32, as a kernel that forgot to
// widen would.
func mutantQ4KInt32(t []int64, w []byte, x []int32, sc []uint32) {
	for b := range t {
		var s int32
		for j := range 8 {
			q := w[b*q4KBytes+16+32*(j/2):]
			for l := range 32 {
				v := q[l] & 15
				if j%2 == 1 {
					v = q[l] >> 4
				}
				s += int32(sc[8*b+j]) * int32(v) * x[b*kElems+32*j+l]
			}
		}
		t[b] = int64(s)
	}
}

func TestTierMutantsDetected(t *testing.T) {
	tiers := usableSIMD()
	if len(tiers) == 0 {
		t.Skip("no SIMD tier on this CPU: nothing to mutate")
	}
	base := tiers[len(tiers)-1].asm
	mutants := []struct {
		name   string
		mutate func(a *asmKernels)
	}{
		{"F32 lanes with a fused multiply-add", func(a *asmKernels) { a.f32 = mutantLanesF32FMA }},
		{"F32 lanes 3 and 12 swapped", func(a *asmKernels) { a.f32 = mutantLanesSwapped(a.f32) }},
		{"F16 lanes 3 and 12 swapped", func(a *asmKernels) { a.f16 = mutantLanesSwapped(a.f16) }},
		{"BF16 lanes 3 and 12 swapped", func(a *asmKernels) { a.bf16 = mutantLanesSwapped(a.bf16) }},
		{"Q6_K lanes 3 and 12 swapped", func(a *asmKernels) { a.q6K = mutantLanesSwapped(a.q6K) }},
		{"Q8_0 scale applied after the product", func(a *asmKernels) { a.q8_0 = mutantLanesQ8_0Unscaled }},
		{"sum in 8 lanes", func(a *asmKernels) { a.sum = mutantSumEightLanes }},
		{"Q4_K block sums in int32", func(a *asmKernels) { a.q4K = mutantQ4KInt32 }},
	}
	for _, m := range mutants {
		a := base
		m.mutate(&a)
		checked, bad, first := checkTier(&a)
		t.Logf("mutant %-38s caught on %4d of %4d cases (first: %s)", m.name+":", bad, checked, first)
		if bad == 0 {
			t.Errorf("mutant %q passes the tier checks: they cannot tell it from the definition", m.name)
		}
	}
}
