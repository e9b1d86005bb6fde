package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/trochilus-llm/trochilus/gguf"
)

// q6KQuadKernel is the signature of the four-row integer Q6_K kernels (asmKernels.q6KQuad).
type q6KQuadKernel = func(w []byte, rowBytes int, digits []int16, scale []float64, dst []float32)

// q6KIntTiers returns the usable SIMD tiers whose integer Q6_K kernel has picks non-nil, and
// fails the test if an AVX-512 tier lacks it.
func q6KIntTiers(t *testing.T, has func(a *asmKernels) bool) []*simdTier {
	var tiers []*simdTier
	for _, st := range usableSIMD() {
		switch {
		case has(&st.asm):
			tiers = append(tiers, st)
		case st.name != "avx2":
			t.Errorf("%s: no integer Q6_K kernel", st.name)
		}
	}
	if len(tiers) == 0 {
		t.Skip("no SIMD tier with integer Q6_K kernels on this CPU")
	}
	return tiers
}

// q6KRows4Case is one input of the integer Q6_K kernel checks: fourteen contiguous Q6_K rows
// (the four-row kernel takes runs of one to three groups of four starting at rows 0, 1 and 2)
// and two prepared inputs.
type q6KRows4Case struct {
	blocks int
	m      *Matrix
	ins    [2]Q4KInput
}

// q6KRows4Cases builds rows of 0 to 18 blocks (the kernels have no unrolling across blocks, so
// 16 covers their loops, 0 their guards; q6KRows4 takes rows of up to 16 blocks in its lane
// layout and longer ones, the last four cases, in memory order), mixing random blocks, blocks of very different
// magnitudes and zero blocks, special d (subnormal, negative, infinite, NaN), every int8 scale
// (random bytes: -128 included), a NaN or infinite input block, and the largest lane sums:
// every weight word at its extremes (q = 0 with sc = -128, 4096, or sc = 127, -4064) against
// inputs whose low digits are all -32768, so every dword lane of the low products reaches
// 16·4096·(−32768) = −2^31 or 16·4064·32768, and the high ones 16·4096·31830.
func q6KRows4Cases(t *testing.T) []q6KRows4Case {
	rng := rand.New(rand.NewPCG(61, 62))
	var cases []q6KRows4Case
	for i := range 72 {
		c := q6KRows4Case{blocks: i % 17}
		if i >= 68 {
			c.blocks = 17 + i%2
		}
		n := c.blocks * kElems
		c.m = &Matrix{Type: gguf.TypeQ6_K, Rows: 14, Cols: n}
		for range 14 {
			c.m.Data = append(c.m.Data, randRow(rng, gguf.TypeQ6_K, n, i%3 == 1)...)
		}
		largest := i%8 == 7 && c.blocks > 0
		if largest {
			for b := 0; b < len(c.m.Data); b += q6KBytes {
				sc := byte(0x80) // -128
				if b/q6KBytes%3 == 1 {
					sc = 127
				}
				for k := range 192 {
					c.m.Data[b+k] = 0 // q = 0
				}
				for j := range 16 {
					c.m.Data[b+192+j] = sc
				}
			}
		}
		for j := range c.ins {
			_, x := randQ6KCase(rng, c.blocks, i%2 == 1, false)
			switch {
			case largest:
				// X = ±(31829·65536 + 32768) in every element: the low digit −32768 whatever
				// the sign, the high one ±31830 or so.
				for k := range x {
					x[k] = float32(1-2*(k/kElems%2)) * float32(math.Ldexp(31829*65536+32768, -30))
				}
			case i%6 == 5 && n > 0:
				x[rng.IntN(n)] = []float32{float32(math.NaN()), float32(math.Inf(-1))}[j]
			}
			if err := PrepareQ4K(&c.ins[j], x); err != nil {
				t.Fatal(err)
			}
		}
		cases = append(cases, c)
	}
	return cases
}

// checkQ6KRows4 runs k on every run of one to three groups of four rows starting at rows 0, 1
// and 2 of every case against each input, and compares each result with DotQ6K bit for bit;
// the call's dst sits inside a larger slice whose other elements must stay untouched. It
// returns the results compared, how many differ, and the first difference.
func checkQ6KRows4(cases []q6KRows4Case, k q6KQuadKernel) (checked, bad int, first string) {
	sentinel := float32(math.Inf(1))
	for i, c := range cases {
		rb := c.m.RowBytes()
		for j := range c.ins {
			in := &c.ins[j]
			for groups := 1; groups <= 3; groups++ {
				for s := range 3 {
					n := 4 * groups
					out := make([]float32, n+2)
					for r := range out {
						out[r] = sentinel
					}
					k(c.m.Data[s*rb:(s+n)*rb], rb, in.wide.digits, in.scale, out[1:1+n])
					for r := range out {
						want := sentinel
						if r >= 1 && r <= n {
							want = DotQ6K(c.m.Row(s+r-1), in)
						}
						checked++
						if !sameBits(out[r], want) {
							if bad == 0 {
								first = fmt.Sprintf("case %d (%d blocks), input %d, %d groups from row %d, dst[%d] (around a dst of %d): got %g (%#08x), want %g (%#08x)",
									i, c.blocks, j, groups, s, r-1, n, out[r], math.Float32bits(out[r]), want, math.Float32bits(want))
							}
							bad++
						}
					}
				}
			}
		}
	}
	return checked, bad, first
}

// TestQ6KPairExact checks each tier's integer Q6_K pair kernel against the math/big evaluation
// of the definition (checkQ6K) with the row as the first, the second and both rows of the
// call, and then every adjacent pair of rows of the extreme cases of q6KRows4Cases against
// DotQ6K, both results of each call.
func TestQ6KPairExact(t *testing.T) {
	tiers := q6KIntTiers(t, func(a *asmKernels) bool { return a.q6KPair != nil })
	cases := q6KRows4Cases(t)
	rng := rand.New(rand.NewPCG(63, 64))
	for _, st := range tiers {
		pair := st.asm.q6KPair
		other := func(row []byte) []byte { return randRow(rng, gguf.TypeQ6_K, len(row)/q6KBytes*kElems, true) }
		for _, v := range []struct {
			name string
			dot  func(row []byte, in *Q4KInput) float32
		}{
			{"one row", func(row []byte, in *Q4KInput) float32 {
				return pair(row, row, in.wide.digits, in.scale)[0]
			}},
			{"first of two", func(row []byte, in *Q4KInput) float32 {
				return pair(row, other(row), in.wide.digits, in.scale)[0]
			}},
			{"second of two", func(row []byte, in *Q4KInput) float32 {
				return pair(other(row), row, in.wide.digits, in.scale)[1]
			}},
		} {
			checked, bad, first := checkQ6K(v.dot)
			t.Logf("%s, %s: %d rows against the math/big evaluation, %d differ", st.name, v.name, checked, bad)
			if bad != 0 {
				t.Errorf("%s, %s: %d of %d rows differ; first: %s", st.name, v.name, bad, checked, first)
			}
		}
		checked, bad := 0, 0
		for i, c := range cases {
			for j := range c.ins {
				in := &c.ins[j]
				for r := 0; r+1 < c.m.Rows; r++ {
					y := pair(c.m.Row(r), c.m.Row(r+1), in.wide.digits, in.scale)
					for p := range 2 {
						want := DotQ6K(c.m.Row(r+p), in)
						checked++
						if !sameBits(y[p], want) {
							if bad == 0 {
								t.Errorf("%s: case %d (%d blocks), input %d, rows %d and %d: result %d = %g (%#08x), want %g (%#08x)",
									st.name, i, c.blocks, j, r, r+1, p, y[p], math.Float32bits(y[p]), want, math.Float32bits(want))
							}
							bad++
						}
					}
				}
			}
		}
		t.Logf("%s: %d pair results (rows of 0-18 blocks, special scales, NaN/Inf inputs, largest lane sums) against DotQ6K, %d differ", st.name, checked, bad)
		if bad != 0 {
			t.Errorf("%s: %d of %d pair results differ", st.name, bad, checked)
		}
	}
}

// q6KIntGo is a Go model of the integer kernels' arithmetic for one row: per block, the
// products of the weight words with the low and the high digits in 16 wrapping int32 lanes
// (dword i of the register of elements 32e..32e+31 takes elements 32e+2i and 32e+2i+1),
// widened, T, and DotQ6K's float64 steps. Its flags break it the ways a kernel could go wrong.
func q6KIntGo(row []byte, digits []int16, scale []float64, foldInt32, swapScales, float32Sums bool) float32 {
	var y float64
	var y32 float32
	for b := range scale {
		blk := row[b*q6KBytes : (b+1)*q6KBytes]
		var lanes [2][16]int32 // low digit, high digit
		for e := range 8 {
			for l := range 32 {
				el := 32*e + l
				h, c, i := el/128, el%128/32, el%32
				q := int32(blk[64*h+32*(c&1)+i]>>(4*(c>>1))&15) | int32(blk[128+32*h+i]>>(2*c)&3)<<4
				j := el / 16
				if swapScales {
					j ^= 1
				}
				w := int32(int8(blk[192+j])) * (q - 32)
				dg := digits[b*2*kElems+64*e:]
				lanes[0][l/2] += w * int32(dg[l])
				lanes[1][l/2] += w * int32(dg[32+l])
			}
		}
		var s [2]int64
		for p := range 2 {
			var s32 int32
			for _, v := range lanes[p] {
				s[p] += int64(v)
				s32 += v
			}
			if foldInt32 {
				s[p] = int64(s32)
			}
		}
		v := float64(half(blk[208:])) * float64(s[0]+65536*s[1])
		y += v * scale[b]
		y32 += float32(v * scale[b])
	}
	if float32Sums {
		return y32
	}
	return float32(y)
}

// TestQ6KRows4Exact calls each tier's four-row integer Q6_K kernel directly on runs of one to
// three groups of four contiguous rows (so the rows' stride is the row size, as in a matrix)
// of 0 to 18 blocks (both layouts) and compares every result with DotQ6K bit for bit, and the elements around
// dst with their untouched values. The same checks must reject deliberately wrong kernels:
// rows exchanged, the last block or group left out, lanes added in int32 before widening, the
// two sub-block scales of a register exchanged, the blocks summed in float32.
func TestQ6KRows4Exact(t *testing.T) {
	tiers := q6KIntTiers(t, func(a *asmKernels) bool { return a.q6KQuad != nil })
	cases := q6KRows4Cases(t)
	for _, st := range tiers {
		checked, bad, first := checkQ6KRows4(cases, st.asm.q6KQuad)
		if bad > 0 {
			t.Errorf("%s: %d of %d four-row Q6_K results differ from DotQ6K; first: %s", st.name, bad, checked, first)
		}
		t.Logf("%s: %d four-row Q6_K results and untouched neighbours (1-3 groups a call, rows of 0-18 blocks, special scales, NaN/Inf inputs, largest lane sums) against DotQ6K, %d differ", st.name, checked, bad)
	}
	last := tiers[len(tiers)-1].asm.q6KQuad
	group := func(w []byte, digits []int16, scale []float64) (y [4]float32) {
		last(w, len(w)/4, digits, scale, y[:])
		return y
	}
	perGroup := func(g func(w []byte, digits []int16, scale []float64) [4]float32) q6KQuadKernel {
		return func(w []byte, rb int, digits []int16, scale []float64, dst []float32) {
			for i := range len(dst) / 4 {
				y := g(w[4*i*rb:4*(i+1)*rb], digits, scale)
				copy(dst[4*i:4*i+4], y[:])
			}
		}
	}
	goRows := func(foldInt32, swapScales, float32Sums bool) q6KQuadKernel {
		return perGroup(func(w []byte, digits []int16, scale []float64) (y [4]float32) {
			rb := len(w) / 4
			for r := range 4 {
				y[r] = q6KIntGo(w[r*rb:(r+1)*rb], digits, scale, foldInt32, swapScales, float32Sums)
			}
			return y
		})
	}
	if _, bad, first := checkQ6KRows4(cases, goRows(false, false, false)); bad > 0 {
		t.Fatalf("the Go model of the mutants is wrong before any mutation: %s", first)
	}
	mutants := []struct {
		name string
		k    q6KQuadKernel
	}{
		{"rows 1 and 3 exchanged", perGroup(func(w []byte, digits []int16, scale []float64) [4]float32 {
			y := group(w, digits, scale)
			y[1], y[3] = y[3], y[1]
			return y
		})},
		{"last block left out", perGroup(func(w []byte, digits []int16, scale []float64) [4]float32 {
			return group(w, digits, scale[:max(len(scale)-1, 0)])
		})},
		{"last group left out", func(w []byte, rb int, digits []int16, scale []float64, dst []float32) {
			last(w, rb, digits, scale, dst[:max(len(dst)-4, 0)])
		}},
		{"lanes added in int32", goRows(true, false, false)},
		{"sub-block scales exchanged", goRows(false, true, false)},
		{"blocks summed in float32", goRows(false, false, true)},
	}
	for _, m := range mutants {
		checked, bad, first := checkQ6KRows4(cases, m.k)
		t.Logf("mutant %-28s caught on %4d of %4d results (first: %s)", m.name+":", bad, checked, first)
		if bad == 0 {
			t.Errorf("mutant %q passes the four-row checks: they cannot tell it from the definition", m.name)
		}
	}
}

// TestQ6KRowsDecode runs the integer Q6_K rows kernel (simd_q6k.go) of each tier with a
// four-row kernel over every row range [r0, r1) of an 11-row matrix for batches of one to
// three tokens (all of them take the decode kernels: four rows a call, then two, then one),
// and checks that every output equals DotQ6K and that nothing outside the range is written.
func TestQ6KRowsDecode(t *testing.T) {
	tiers := q6KIntTiers(t, func(a *asmKernels) bool { return a.q6KQuad != nil })
	rng := rand.New(rand.NewPCG(65, 66))
	const rows, cols = 11, 1024
	m := randMatrix(rng, gguf.TypeQ6_K, rows, cols)
	for _, st := range tiers {
		checked := 0
		for ntok := 1; ntok <= 3; ntok++ {
			var in Batch
			if err := in.Set(randFloats(rng, ntok*cols, false, false), ntok, cols); err != nil {
				t.Fatal(err)
			}
			if err := in.prepareAll(NewPool(1)); err != nil {
				t.Fatal(err)
			}
			for r0 := 0; r0 <= rows; r0++ {
				for r1 := r0; r1 <= rows; r1++ {
					dst := make([]float32, ntok*rows)
					for i := range dst {
						dst[i] = float32(math.Inf(1))
					}
					st.asm.q6KRows(dst, m, &in, r0, r1)
					for tok := range ntok {
						for r := range rows {
							got, want := dst[tok*rows+r], float32(math.Inf(1))
							if r >= r0 && r < r1 {
								want = DotQ6K(m.Row(r), &in.q4k[tok])
							}
							checked++
							if !sameBits(got, want) {
								t.Fatalf("%s, %d tokens, rows [%d, %d): token %d row %d = %g, want %g", st.name, ntok, r0, r1, tok, r, got, want)
							}
						}
					}
				}
			}
		}
		t.Logf("%s: %d outputs over every row range of 11 rows, 1-3 tokens, equal DotQ6K or stayed untouched", st.name, checked)
	}
}

// TestQ6KIntAVX512Instructions checks that the integer Q6_K kernels of the avx512 tier use no
// instruction of the extensions only the avx512vnni tier may assume (VNNI's VPDPWSSD, VBMI's
// byte permutes and multishift): an AVX-512 CPU without them would fault. The VNNI kernels
// must use VPDPWSSD, or the tiers would not differ.
func TestQ6KIntAVX512Instructions(t *testing.T) {
	if runtime.GOARCH != "amd64" {
		t.Skip("the kernels are amd64 assembly")
	}
	src, err := os.ReadFile("kernels_amd64.s")
	if err != nil {
		t.Fatal(err)
	}
	later := regexp.MustCompile(`\b(VPDPWSSDS?|VPDPBUSDS?|VPERMB|VPERMI2B|VPERMT2B|VPMULTISHIFTQB)\b`)
	checked := map[string]int{}
	for _, fn := range strings.Split(string(src), "\nTEXT ")[1:] {
		name, body, _ := strings.Cut(fn, "(SB)")
		name = strings.TrimPrefix(name, "·")
		if name != "q6KPairAVX512" && name != "q6KRows4AVX512" && name != "q6KPairAVX512VNNI" && name != "q6KRows4AVX512VNNI" {
			continue
		}
		found := later.FindAllString(body, -1)
		checked[name] = len(strings.Split(body, "\n"))
		switch vnni := strings.HasSuffix(name, "VNNI"); {
		case !vnni && len(found) > 0:
			t.Errorf("%s uses %s, which the avx512 tier may not assume", name, found[0])
		case vnni && !slices.Contains(found, "VPDPWSSD"):
			t.Errorf("%s uses no VPDPWSSD", name)
		}
	}
	t.Logf("lines of each kernel checked: %v", checked)
	if len(checked) != 4 {
		t.Errorf("found %d of the 4 integer Q6_K kernels", len(checked))
	}
}
