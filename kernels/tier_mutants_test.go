package kernels

import (
	"math"
	"testing"
	"unsafe"

	"github.com/trochilus-llm/trochilus/gguf"
)

// Deliberately wrong vector kernels: each is swapped into a copy of a real tier's kernels, and
// checkTier must reject it. They are written in Go (the contract is about bits, not language).

// mutantLanesF32FMA fuses each product with its lane's addition (one rounding, in float64 and
// then to float32, which is what an FMA-like shortcut gives).
func mutantLanesF32FMA(l [16]float32, w []byte, x []float32) [16]float32 {
	n := len(w) / 64 * 16
	ws := unsafe.Slice((*float32)(unsafe.Pointer(unsafe.SliceData(w))), n)
	for k := range n {
		l[k%16] = float32(math.FMA(float64(ws[k]), float64(x[k]), float64(l[k%16])))
	}
	return l
}

// mutantLanesSwapped returns a kernel that runs k with lanes 3 and 12 exchanged.
func mutantLanesSwapped(k func([16]float32, []byte, []float32) [16]float32) func([16]float32, []byte, []float32) [16]float32 {
	return func(l [16]float32, w []byte, x []float32) [16]float32 {
		l[3], l[12] = l[12], l[3]
		l = k(l, w, x)
		l[3], l[12] = l[12], l[3]
		return l
	}
}

// mutantLanes2Swapped returns a two-row kernel that runs k with lanes 3 and 12 of the second
// row exchanged.
func mutantLanes2Swapped(k func([]byte, []byte, []float32) [2][16]float32) func([]byte, []byte, []float32) [2][16]float32 {
	return func(w0, w1 []byte, x []float32) [2][16]float32 {
		l := k(w0, w1, x)
		l[1][3], l[1][12] = l[1][12], l[1][3]
		return l
	}
}

// mutantLanes4Swapped returns a four-token kernel that runs k with lanes 3 and 12 of the third
// token exchanged.
func mutantLanes4Swapped(k func([]byte, []float32, int) [4][16]float32) func([]byte, []float32, int) [4][16]float32 {
	return func(w []byte, x []float32, stride int) [4][16]float32 {
		l := k(w, x, stride)
		l[2][3], l[2][12] = l[2][12], l[2][3]
		return l
	}
}

// mutantLanesQ8_0Unscaled applies the block scale after the product: float32(d·float32(q·x)).
func mutantLanesQ8_0Unscaled(l [16]float32, w []byte, x []float32) [16]float32 {
	for b, k := 0, 0; b+q8_0Bytes <= len(w); b, k = b+q8_0Bytes, k+q8_0Elems {
		d := half(w[b:])
		for i := range q8_0Elems {
			l[i%16] += float32(d * float32(float32(int8(w[b+2+i]))*x[k+i]))
		}
	}
	return l
}

// mutantSumEightLanes adds whole groups of 16 into 8 lanes.
func mutantSumEightLanes(l [16]float32, v []float32) [16]float32 {
	for k := range len(v) &^ 15 {
		l[k%8] += v[k]
	}
	return l
}

// q4KDot2Go is the two-row Q4_K kernel written in Go from the same inputs as the assembly,
// with hooks that make it wrong on purpose: wrap32 sums each block's T in wrapping int32 (a
// kernel that forgot to widen), noMins leaves out M (the sub-block mins).
func q4KDot2Go(w0, w1 []byte, digits []int16, sums, scale []float64, wrap32, noMins bool) (y [2]float32) {
	for r, w := range [][]byte{w0, w1} {
		var acc float64
		for b := range scale {
			blk := w[b*q4KBytes : (b+1)*q4KBytes]
			var t, m int64
			var t32 int32
			for j := range 8 {
				sc, mn := gguf.ScaleMinK4(j, (*[12]byte)(blk[4:16]))
				d := digits[b*512+64*j : b*512+64*j+64]
				for l := range 32 {
					q := blk[16+32*(j/2)+l] >> (4 * (j % 2)) & 15
					x := int64(d[l]) + 65536*int64(d[32+l])
					t += int64(sc) * int64(q) * x
					t32 += int32(sc) * int32(q) * int32(x)
				}
				m += int64(mn) * int64(sums[8*b+j])
			}
			if wrap32 {
				t = int64(t32)
			}
			dd, dmin := float64(half(blk[0:])), float64(half(blk[2:]))
			if noMins {
				m = 0
			}
			v := float64(dd*float64(t)) - float64(dmin*float64(m))
			acc += float64(v * scale[b])
		}
		y[r] = float32(acc)
	}
	return y
}

// mutantLanesRows4Swapped returns a four-row kernel that runs k with lanes 3 and 12 of the
// third row exchanged.
func mutantLanesRows4Swapped(k func([]byte, []float32) [4][16]float32) func([]byte, []float32) [4][16]float32 {
	return func(w []byte, x []float32) [4][16]float32 {
		l := k(w, x)
		l[2][3], l[2][12] = l[2][12], l[2][3]
		return l
	}
}

// mutantPanelTiles returns panel tiles that run the real ones and then spoil the results:
// swap exchanges tokens 0 and 1; serial joins the phases left to right instead of by the tree.
func mutantPanelTiles(real *panelTiles, swap, serial bool) *panelTiles {
	m := new(panelTiles)
	for i, tile := range real {
		T := i + 1
		m[i] = func(panel, xil, ph []float32) {
			tile(panel, xil, ph)
			res := ph[256*T : 256*T+16*T]
			if swap && T > 1 {
				for r := range 16 {
					res[r], res[16+r] = res[16+r], res[r]
				}
			}
			if serial {
				for t := range T {
					for r := range 16 {
						var y float32
						for p := range 16 {
							y += ph[(p*T+t)*16+r]
						}
						res[16*t+r] = y
					}
				}
			}
		}
	}
	return m
}

// mutantPanelPack returns a packer that runs k and then exchanges phases 3 and 12 of the
// groups it packed.
func mutantPanelPack(k func(panel, rows []float32, groups, stride int)) func(panel, rows []float32, groups, stride int) {
	return func(panel, rows []float32, groups, stride int) {
		k(panel, rows, groups, stride)
		for i := range 16 * groups {
			panel[3*stride+i], panel[12*stride+i] = panel[12*stride+i], panel[3*stride+i]
		}
	}
}

// swapTile4 returns the four-input tile kernel k (Q4_K or Q6_K) with the results of inputs i
// and j swapped.
func swapTile4[In any](k func(w []byte, in In, nb int) [4]float32, i, j int) func(w []byte, in In, nb int) [4]float32 {
	return func(w []byte, in In, nb int) [4]float32 {
		y := k(w, in, nb)
		y[i], y[j] = y[j], y[i]
		return y
	}
}

// swapQ6KPair swaps the two results of a's Q6_K pair kernel.
func swapQ6KPair(a *asmKernels) {
	k := a.q6KPair
	a.q6KPair = func(w0, w1 []byte, digits []int16, scale []float64) [2]float32 {
		y := k(w0, w1, digits, scale)
		return [2]float32{y[1], y[0]}
	}
}

func TestTierMutantsDetected(t *testing.T) {
	tiers := usableSIMD()
	if len(tiers) == 0 {
		t.Skip("no SIMD tier on this CPU: nothing to mutate")
	}
	base := tiers[len(tiers)-1].asm
	q4K := func(wrap32, noMins, swap bool) func([]byte, []byte, []int16, []float64, []float64) [2]float32 {
		return func(w0, w1 []byte, digits []int16, sums, scale []float64) [2]float32 {
			y := q4KDot2Go(w0, w1, digits, sums, scale, wrap32, noMins)
			if swap {
				y[0], y[1] = y[1], y[0]
			}
			return y
		}
	}
	mutants := []struct {
		name   string
		mutate func(a *asmKernels)
	}{
		{"F32 lanes with a fused multiply-add", func(a *asmKernels) { a.f32 = mutantLanesF32FMA }},
		{"F32 lanes 3 and 12 swapped", func(a *asmKernels) { a.f32 = mutantLanesSwapped(a.f32) }},
		{"F16 lanes 3 and 12 swapped", func(a *asmKernels) { a.f16 = mutantLanesSwapped(a.f16) }},
		{"BF16 lanes 3 and 12 swapped", func(a *asmKernels) { a.bf16 = mutantLanesSwapped(a.bf16) }},
		{"Q8_0 scale applied after the product", func(a *asmKernels) { a.q8_0 = mutantLanesQ8_0Unscaled }},
		{"F32 pair, second row's lanes 3 and 12 swapped", func(a *asmKernels) { a.f32x2 = mutantLanes2Swapped(a.f32x2) }},
		{"Q8_0 pair, second row's lanes 3 and 12 swapped", func(a *asmKernels) { a.q8_0x2 = mutantLanes2Swapped(a.q8_0x2) }},
		{"F16 pair, second row's lanes 3 and 12 swapped", func(a *asmKernels) { a.f16x2 = mutantLanes2Swapped(a.f16x2) }},
		{"F32 tile, third token's lanes 3 and 12 swapped", func(a *asmKernels) { a.f32x4 = mutantLanes4Swapped(a.f32x4) }},
		{"Q8_0 tile, third token's lanes 3 and 12 swapped", func(a *asmKernels) { a.q8_0x4 = mutantLanes4Swapped(a.q8_0x4) }},
		{"BF16 tile, third token's lanes 3 and 12 swapped", func(a *asmKernels) { a.bf16x4 = mutantLanes4Swapped(a.bf16x4) }},
		{"vector Exp of the unrounded difference x − shift", func(a *asmKernels) {
			k := a.expShift
			a.expShift = func(dst, src []float32, shift float32, tab *[80]float64) int {
				n := k(dst, src, shift, tab)
				for i := range n {
					if d := float64(src[i]) - float64(shift); d > -100 && d < 80 {
						dst[i] = float32(math.Exp(d))
					}
				}
				return n
			}
		}},
		{"vector Exp underflowing from −100", func(a *asmKernels) {
			k := a.expShift
			a.expShift = func(dst, src []float32, shift float32, tab *[80]float64) int {
				n := k(dst, src, shift, tab)
				for i := range n {
					if src[i]-shift < -100 {
						dst[i] = 0
					}
				}
				return n
			}
		}},
		{"attention values summed serially over positions", func(a *asmKernels) {
			a.attendV = func(out, values, w []float32, stride int) {
				for i := range out {
					var acc float32
					for t, wt := range w {
						acc += float32(wt * values[t*stride+i])
					}
					out[i] = acc
				}
			}
		}},
		{"sum in 8 lanes", func(a *asmKernels) { a.sum = mutantSumEightLanes }},
		{"Q4_K block sums in int32", func(a *asmKernels) { a.q4K = q4K(true, false, false) }},
		{"Q4_K mins left out", func(a *asmKernels) { a.q4K = q4K(false, true, false) }},
		{"Q4_K tile, second and fourth tokens swapped", func(a *asmKernels) {
			a.q4KPanel4, a.q4K8 = nil, nil // the four-input tiles run every group (q4k_tile_test.go mutates the others)
			a.q4K4 = swapTile4(a.q4K4, 1, 3)
		}},
		{"Q4_K tile block sums in int32", func(a *asmKernels) {
			a.q4KPanel4, a.q4K8 = nil, nil
			a.q4K4 = func(w []byte, in [12]*byte, nb int) (y [4]float32) {
				for t := range 4 {
					digits := unsafe.Slice((*int16)(unsafe.Pointer(in[t])), nb*512)
					sums := unsafe.Slice((*float64)(unsafe.Pointer(in[4+t])), nb*8)
					scale := unsafe.Slice((*float64)(unsafe.Pointer(in[8+t])), nb)
					y[t] = q4KDot2Go(w, w, digits, sums, scale, true, false)[0]
				}
				return y
			}
		}},
		{"Q4_K two-row results swapped", func(a *asmKernels) { a.q4K = q4K(false, false, true) }},
		{"Q4_K four rows, rows 1 and 3 swapped", func(a *asmKernels) {
			k := oneGroup(a.q4Kr4)
			a.q4Kr4 = perGroup(func(w []byte, digits []int16, sums, scale []float64) [4]float32 {
				y := k(w, digits, sums, scale)
				y[1], y[3] = y[3], y[1]
				return y
			})
		}},
		{"Q4_K four rows, block sums in int32", func(a *asmKernels) {
			a.q4Kr4 = perGroup(func(w []byte, digits []int16, sums, scale []float64) (y [4]float32) {
				rb := len(w) / 4
				for p := range 2 {
					v := q4KDot2Go(w[2*p*rb:(2*p+1)*rb], w[(2*p+1)*rb:(2*p+2)*rb], digits, sums, scale, true, false)
					y[2*p], y[2*p+1] = v[0], v[1]
				}
				return y
			})
		}},
		{"Q8_0 four rows, third row's lanes 3 and 12 swapped", func(a *asmKernels) { a.q8_0r4 = mutantLanesRows4Swapped(a.q8_0r4) }},
		{"F16 four rows, third row's lanes 3 and 12 swapped", func(a *asmKernels) { a.f16r4 = mutantLanesRows4Swapped(a.f16r4) }},
		{"Q6_K two-row results swapped", swapQ6KPair},
		{"Q6_K four rows (two where the tier has no four), rows 1 and 3 swapped", func(a *asmKernels) {
			if a.q6KQuad == nil {
				swapQ6KPair(a)
				return
			}
			k := a.q6KQuad
			a.q6KQuad = func(w []byte, rb int, digits []int16, scale []float64, dst []float32) {
				k(w, rb, digits, scale, dst)
				for g := 0; g+4 <= len(dst); g += 4 {
					dst[g+1], dst[g+3] = dst[g+3], dst[g+1]
				}
			}
		}},
		{"Q6_K tile, second and fourth tokens swapped", func(a *asmKernels) {
			a.q6KPanel4, a.q6KTile8 = nil, nil // the four-input tiles run every group (q6k_tile_int_test.go mutates the others)
			a.q6KTile4 = swapTile4(a.q6KTile4, 1, 3)
		}},
		{"Q6_K panel, tokens 0 and 2 swapped", func(a *asmKernels) {
			if a.q6KPanel4 == nil && a.q6KTile8 == nil { // neither: break the four-input tile
				a.q6KTile4 = swapTile4(a.q6KTile4, 0, 2)
				return
			}
			if a.q6KPanel4 == nil { // no panel in this tier: break the eight-input tile instead
				k := a.q6KTile8
				a.q6KTile8 = func(w []byte, in [8]*byte, scales []float64, y [8]float64) [8]float64 {
					y = k(w, in, scales, y)
					y[0], y[2] = y[2], y[0]
					return y
				}
				return
			}
			k := a.q6KPanel4
			a.q6KPanel4 = func(panel []byte, in [8]*byte, nb int, y []float32) {
				k(panel, in, nb, y)
				for r := range 16 {
					y[r], y[32+r] = y[32+r], y[r]
				}
			}
		}},
		{"panel tiles, tokens 0 and 1 swapped", func(a *asmKernels) { a.panel = mutantPanelTiles(a.panel, true, false) }},
		{"panel tiles, phases joined left to right", func(a *asmKernels) { a.panel = mutantPanelTiles(a.panel, false, true) }},
		{"panel packer, phases 3 and 12 exchanged", func(a *asmKernels) { a.panelPack = mutantPanelPack(a.panelPack) }},
	}
	// The four-row and panel kernels exist in the AVX-512 tiers only; a tier without one runs
	// the kernels the other mutants break, and its mutants are not applied.
	needs := map[string]func(a *asmKernels) bool{
		"Q4_K four rows, rows 1 and 3 swapped":               func(a *asmKernels) bool { return a.q4Kr4 != nil },
		"Q8_0 four rows, third row's lanes 3 and 12 swapped": func(a *asmKernels) bool { return a.q8_0r4 != nil },
		"F16 four rows, third row's lanes 3 and 12 swapped":  func(a *asmKernels) bool { return a.f16r4 != nil },
		"panel tiles, tokens 0 and 1 swapped":                func(a *asmKernels) bool { return a.panel != nil },
		"panel tiles, phases joined left to right":           func(a *asmKernels) bool { return a.panel != nil },
		"panel packer, phases 3 and 12 exchanged":            func(a *asmKernels) bool { return a.panelPack != nil },
	}
	applied := 0
	for _, m := range mutants {
		if has := needs[m.name]; has != nil && !has(&base) {
			t.Logf("mutant %-48s not applied: tier %s has no such kernel (the others cover what it runs)", m.name+":", tiers[len(tiers)-1].name)
			continue
		}
		applied++
		a := base
		m.mutate(&a)
		checked, bad, first := checkTier(&a)
		t.Logf("mutant %-48s caught on %4d of %4d cases (first: %s)", m.name+":", bad, checked, first)
		if bad == 0 {
			t.Errorf("mutant %q passes the tier checks: they cannot tell it from the definition", m.name)
		}
	}
	t.Logf("%d of %d mutants applied to tier %s", applied, len(mutants), tiers[len(tiers)-1].name)
}
