package kernels

import (
	"math"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/trochilus-llm/trochilus/gguf"
)

// q4KTileCases builds matrices of 1, 7 and 9 blocks a row (spans of q4KSpan blocks with and
// without a short last span) and 5, 21 or 37 rows (a short tile, and whole tiles and a short
// one), against batches of ragged token counts, below and above q4KPanelMinTokens. Rows mix random blocks, special scales
// (subnormal, infinite and NaN d and dmin) and the largest integer sums (every q 15, every
// scale and min 63); inputs mix blocks of very different magnitudes, zero blocks, a NaN or an
// infinity, and |X| at its bound.
func q4KTileCases(t *testing.T) []tileCase {
	rng := rand.New(rand.NewPCG(31, 32))
	var cases []tileCase
	for i, shape := range [][3]int{{5, 1, 9}, {37, 7, 35}, {37, 9, 24}, {5, 7, 40}, {37, 1, 33}, {5, 9, 3}, {37, 7, 17}, {21, 9, 32}} {
		rows, blocks, ntok := shape[0], shape[1], shape[2]
		cols := blocks * kElems
		m := &Matrix{Type: gguf.TypeQ4_K, Rows: rows, Cols: cols}
		for r := range rows {
			row, _ := randQ4KCase(rng, blocks, false, r%3 == 1)
			if r%7 == 6 {
				for b := 0; b < len(row); b += q4KBytes {
					for k := 4; k < q4KBytes; k++ {
						row[b+k] = 0xff
					}
				}
			}
			m.Data = append(m.Data, row...)
		}
		x := make([]float32, 0, ntok*cols)
		for tok := range ntok {
			_, xt := randQ4KCase(rng, blocks, tok%2 == 1, false)
			switch {
			case tok%9 == 4:
				for k := range xt {
					xt[k] = float32(1-2*(k/kElems%2)) * 1.9427
				}
			case tok%5 == 3 && i%2 == 1:
				xt[rng.IntN(len(xt))] = []float32{float32(math.NaN()), float32(math.Inf(-1))}[tok%2]
			}
			x = append(x, xt...)
		}
		cases = append(cases, newTileCase(t, m, x, ntok, dotQ4K))
	}
	return cases
}

// TestQ4KRowsTiles runs each SIMD tier's Q4_K rows kernel on ragged shapes and token counts,
// in each of its forms (sixteen-row panels where the tier has them, eight-input tiles a span of
// blocks at a time, four-input tiles, pairs), and compares every output with dotQ4K bit for
// bit; it counts the block dots each form computed, so a tier that silently stopped using one
// fails. Mutants of the eight-input kernel (the float64 sums not carried from span to span, two
// inputs' results swapped) and of the panel (two rows' lanes swapped, a row's mins left out)
// must be caught.
func TestQ4KRowsTiles(t *testing.T) {
	tiers := needSIMD(t)
	cases := q4KTileCases(t)
	for _, st := range tiers {
		forms := []struct {
			name        string
			panel, wide bool
		}{{"panels", true, true}, {"eight-input tiles", false, true}, {"four-input tiles", false, false}}
		for _, f := range forms {
			a := st.asm
			if !f.panel {
				a.q4KPanel4 = nil
			}
			if !f.wide {
				a.q4K8 = nil
			}
			var eight, panel int
			if k := a.q4K8; k != nil {
				a.q4K8 = func(w []byte, in [24]*byte, nb int, y [8]float64) [8]float64 {
					eight += 8 * nb
					return k(w, in, nb, y)
				}
			}
			if k := a.q4KPanel4; k != nil {
				a.q4KPanel4 = func(p []byte, in [12]*byte, nb, rows int) [4][16]float32 {
					panel += 4 * rows * nb
					return k(p, in, nb, rows)
				}
			}
			checked, bad := checkHalves(cases, false, a.q4KRows)
			t.Logf("%s, %s: %d Q4_K rows-kernel results against dotQ4K (block dots: %d by panels, %d by eight-input tiles), %d differ", st.name, f.name, checked, panel, eight, bad)
			if bad != 0 {
				t.Errorf("%s, %s: %d of %d results differ from dotQ4K", st.name, f.name, bad, checked)
			}
			if a.q4KPanel4 != nil && panel == 0 || a.q4KPanel4 == nil && a.q4K8 != nil && eight == 0 {
				t.Errorf("%s, %s: the kernel never ran", st.name, f.name)
			}
		}
		if st.name == "avx512vnni" && st.asm.q4KPanel4 == nil || st.name != "avx2" && st.asm.q4K8 == nil {
			t.Errorf("%s: a Q4_K tile kernel is missing", st.name)
		}
		own := map[string]string{"avx2": "AVX2", "avx512": "AVX512", "avx512vnni": "AVX512VNNI"}[st.name]
		for entry, k := range map[string]any{"q4K8": st.asm.q4K8, "q4KPanel4": st.asm.q4KPanel4, "q4KPanelBuild": st.asm.q4KPanelBuild} {
			if !reflect.ValueOf(k).IsNil() && !strings.HasSuffix(funcName(k), own) {
				t.Errorf("%s: kernel %s is %s, not the tier's own", st.name, entry, funcName(k))
			}
		}
		if p := st.asm.q4KPanelBuild; p != nil {
			for _, mutant := range []struct {
				name  string
				build func(panel []byte, rows [16]*byte, nb int)
			}{
				{"rows 1 and 2 swapped", func(panel []byte, rows [16]*byte, nb int) {
					rows[1], rows[2] = rows[2], rows[1]
					p(panel, rows, nb)
				}},
				{"mins of row 3 left out", func(panel []byte, rows [16]*byte, nb int) {
					p(panel, rows, nb)
					for b := range nb {
						for j := range 8 {
							clear(panel[b*q4KPanelBlock+8448+128*j+8*3:][:8]) // m_j of row 3 (asmgen's q4KPanelMins)
						}
					}
				}},
			} {
				a := st.asm
				a.q4KPanelBuild = mutant.build
				checked, bad := checkHalves(cases, false, a.q4KRows)
				t.Logf("%s: panel mutant %q: %d of %d results differ", st.name, mutant.name, bad, checked)
				if bad == 0 {
					t.Errorf("%s: panel mutant %q not caught", st.name, mutant.name)
				}
			}
		}
		if st.asm.q4K8 == nil {
			continue
		}
		k := st.asm.q4K8
		for _, mutant := range []struct {
			name string
			k    func(w []byte, in [24]*byte, nb int, y [8]float64) [8]float64
		}{
			{"sums not carried across spans", func(w []byte, in [24]*byte, nb int, y [8]float64) [8]float64 {
				return k(w, in, nb, [8]float64{})
			}},
			{"inputs 2 and 5 swapped", func(w []byte, in [24]*byte, nb int, y [8]float64) [8]float64 {
				y = k(w, in, nb, y)
				y[2], y[5] = y[5], y[2]
				return y
			}},
		} {
			a := st.asm
			a.q4K8, a.q4KPanel4 = mutant.k, nil
			checked, bad := checkHalves(cases, false, a.q4KRows)
			t.Logf("%s: mutant %q: %d of %d results differ", st.name, mutant.name, bad, checked)
			if bad == 0 {
				t.Errorf("%s: mutant %q not caught", st.name, mutant.name)
			}
		}
	}
}
