package kernels

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// checkScores compares the tier's attention scores with the definition, score by score: the
// contract dot of q with each key row times the scale, rounded once. Head widths cover whole
// groups of 16 (the kernel) and ragged ones (the fallback); position counts cover the runs of
// four and the single positions after them; inputs mix in special values.
func checkScores(a *asmKernels) (checked, bad int, first string) {
	rng := rand.New(rand.NewPCG(12, 34))
	for _, dim := range []int{16, 48, 64, 128, 256, 40} {
		for _, npos := range []int{1, 3, 4, 5, 8, 11, 64} {
			for _, special := range []bool{false, true} {
				stride := dim + rng.IntN(3)*16
				q := randFloats(rng, dim, special, false)
				keys := randFloats(rng, npos*stride, special, false)
				scale := float32(0.088388346) // 1/√128
				got := make([]float32, npos)
				a.attendScores(got, q, keys, stride, scale)
				for t := range got {
					want := float32(DotF32(q, keys[t*stride:t*stride+dim]) * scale)
					checked++
					if !sameBits(got[t], want) {
						if bad == 0 {
							first = fmt.Sprintf("dim %d npos %d position %d: got %g, want %g", dim, npos, t, got[t], want)
						}
						bad++
					}
				}
			}
		}
	}
	return checked, bad, first
}

// TestAttendScoresTree checks the in-register tree against a sum that would differ from it:
// lanes chosen so that the contract's pairwise join and a left-to-right join round differently.
func TestAttendScoresTree(t *testing.T) {
	q := make([]float32, 16)
	keys := make([]float32, 16)
	for i := range q {
		q[i] = 1
	}
	// Lane values where ((l0+l1)+...) and (((l0+l1)+l2)+...) differ in float32.
	copy(keys, []float32{1 << 24, 1, 1, 1, -(1 << 24), 1, 1, 1, 3, 0.5, 0.25, 0.125, 1 << 20, -(1 << 20), 7, 1})
	want := DotF32(q, keys)
	var serial float32
	for _, v := range keys {
		serial += v
	}
	if serial == want {
		t.Fatalf("test data does not separate the tree from a serial sum (both %g)", want)
	}
	for _, st := range usableSIMD() {
		if st.asm.scores == nil {
			t.Errorf("%s: no scores kernel", st.name)
			continue
		}
		got := make([]float32, 5)
		all := make([]float32, 5*16)
		for p := range 5 {
			copy(all[p*16:], keys)
		}
		st.asm.scores(got, q, all, 16, 1)
		for p, g := range got {
			if !sameBits(g, want) {
				t.Errorf("%s: position %d score %g, tree sum %g (serial %g)", st.name, p, g, want, serial)
			}
		}
	}
}

// BenchmarkAttendScores puts the scores kernel beside one dot a position (what attend did
// before it), 512 positions of a 128-wide head, per tier; "kernel-again" is the A/A control.
func BenchmarkAttendScores(b *testing.B) {
	const npos, dim = 512, 128
	rng := rand.New(rand.NewPCG(5, 5))
	q := randFloats(rng, dim, false, false)
	keys := randFloats(rng, npos*dim, false, false)
	out := make([]float32, npos)
	for _, st := range usableSIMD() {
		a := &st.asm
		for _, v := range []struct {
			name string
			run  func()
		}{
			{"kernel", func() { a.attendScores(out, q, keys, dim, 0.125) }},
			{"dots", func() {
				for t := range out {
					out[t] = float32(a.dotF32(q, keys[t*dim:t*dim+dim]) * 0.125)
				}
			}},
			{"kernel-again", func() { a.attendScores(out, q, keys, dim, 0.125) }},
		} {
			b.Run(st.name+"/"+v.name, func(b *testing.B) {
				b.SetBytes(npos * dim * 4)
				for b.Loop() {
					v.run()
				}
			})
		}
	}
}
