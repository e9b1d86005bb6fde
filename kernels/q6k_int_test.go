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

// q6KRows4Cases builds rows of 0 to 18 blocks (the kernels have no unrolling across blocks, so
// 16 covers their loops, 0 their guards; q6KRows4 takes rows of up to 16 blocks in its lane
// layout and longer ones, the last four cases, in memory order), mixing random blocks, blocks of very different
// magnitudes and zero blocks, special d (subnormal, negative, infinite, NaN), every int8 scale
// (random bytes: -128 included), a NaN or infinite input block, and the largest lane sums:
// every weight word at its extremes (q = 0 with sc = -128, 4096, or sc = 127, -4064) against
// inputs whose low digits are all -32768, so every dword lane of the low products reaches
// 16·4096·(−32768) = −2^31 or 16·4064·32768, and the high ones 16·4096·31830.
func q6KRows4Cases(t *testing.T) []rows4Case {
	rng := rand.New(rand.NewPCG(61, 62))
	var cases []rows4Case
	for i := range 72 {
		c := rows4Case{blocks: i % 17}
		if i >= 68 {
			c.blocks = 17 + i%2
		}
		n := c.blocks * kElems
		c.m = randMatrixOf(rng, gguf.TypeQ6_K, 14, n, i%3 == 1)
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
		prepareRows4Inputs(t, rng, &c, gguf.TypeQ6_K, i, largest)
		cases = append(cases, c)
	}
	return cases
}

// checkQ6KRows4 is checkRows4 of a four-row Q6_K kernel against dotQ6K.
func checkQ6KRows4(cases []rows4Case, k q6KQuadKernel) (checked, bad int, first string) {
	return checkRows4(cases, func(w []byte, rb int, in *q4KInput, dst []float32) {
		k(w, rb, in.wide.digits, in.scale, dst)
	}, dotQ6K)
}

// TestQ6KPairExact checks each tier's integer Q6_K pair kernel against the math/big evaluation
// of the definition (checkQ6K) with the row as the first, the second and both rows of the
// call, and then every adjacent pair of rows of the extreme cases of q6KRows4Cases against
// dotQ6K, both results of each call.
func TestQ6KPairExact(t *testing.T) {
	tiers := tiersWith(t, "integer Q6_K kernel", func(a *asmKernels) bool { return a.q6KPair != nil })
	cases := q6KRows4Cases(t)
	rng := rand.New(rand.NewPCG(63, 64))
	for _, st := range tiers {
		pair := st.asm.q6KPair
		other := func(row []byte) []byte { return randRow(rng, gguf.TypeQ6_K, len(row)/q6KBytes*kElems, true) }
		for _, v := range []struct {
			name string
			dot  func(row []byte, in *q4KInput) float32
		}{
			{"one row", func(row []byte, in *q4KInput) float32 {
				return pair(row, row, in.wide.digits, in.scale)[0]
			}},
			{"first of two", func(row []byte, in *q4KInput) float32 {
				return pair(row, other(row), in.wide.digits, in.scale)[0]
			}},
			{"second of two", func(row []byte, in *q4KInput) float32 {
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
						want := dotQ6K(c.m.Row(r+p), in)
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
		t.Logf("%s: %d pair results (rows of 0-18 blocks, special scales, NaN/Inf inputs, largest lane sums) against dotQ6K, %d differ", st.name, checked, bad)
		if bad != 0 {
			t.Errorf("%s: %d of %d pair results differ", st.name, bad, checked)
		}
	}
}

// q6KIntGo is a Go model of the integer kernels' arithmetic for one row: per block, the
// products of the weight words with the low and the high digits in 16 wrapping int32 lanes
// (dword i of the register of elements 32e..32e+31 takes elements 32e+2i and 32e+2i+1),
// widened, T, and dotQ6K's float64 steps. Its flags break it the ways a kernel could go wrong.
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
// of 0 to 18 blocks (both layouts) and compares every result with dotQ6K bit for bit, and the elements around
// dst with their untouched values. The same checks must reject deliberately wrong kernels:
// rows exchanged, the last block or group left out, lanes added in int32 before widening, the
// two sub-block scales of a register exchanged, the blocks summed in float32.
func TestQ6KRows4Exact(t *testing.T) {
	tiers := tiersWith(t, "integer Q6_K kernel", func(a *asmKernels) bool { return a.q6KQuad != nil })
	cases := q6KRows4Cases(t)
	for _, st := range tiers {
		checked, bad, first := checkQ6KRows4(cases, st.asm.q6KQuad)
		expectAgree(t, checked, bad, first, st.name+": %d four-row Q6_K results and untouched neighbours (1-3 groups a call, rows of 0-18 blocks, special scales, NaN/Inf inputs, largest lane sums) against dotQ6K, %d differ", st.name+": %d of %d four-row Q6_K results differ from dotQ6K; first: %s")
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
	rows4Mutants(t, mutants, func(k q6KQuadKernel) (int, int, string) { return checkQ6KRows4(cases, k) })
}

// TestQ6KRowsDecode runs the integer Q6_K rows kernel (simd_q6k.go) of each tier with a
// four-row kernel over every row range [r0, r1) of an 11-row matrix for batches of one to
// three tokens (all of them take the decode kernels: four rows a call, then two, then one),
// and checks that every output equals dotQ6K and that nothing outside the range is written.
func TestQ6KRowsDecode(t *testing.T) {
	tiers := tiersWith(t, "integer Q6_K kernel", func(a *asmKernels) bool { return a.q6KQuad != nil })
	rng := rand.New(rand.NewPCG(65, 66))
	const rows, cols = 11, 1024
	m := randMatrix(rng, gguf.TypeQ6_K, rows, cols)
	for _, st := range tiers {
		checked := 0
		for ntok := 1; ntok <= 3; ntok++ {
			in := preparedBatch(t, randFloats(rng, ntok*cols, false, false), ntok, cols)
			for r0 := 0; r0 <= rows; r0++ {
				for r1 := r0; r1 <= rows; r1++ {
					dst := infs(ntok * rows)
					st.asm.q6KRows(dst, m, in, r0, r1)
					checked += checkRange(t, fmt.Sprintf("%s, %d tokens", st.name, ntok), dst, rows, ntok, r0, r1,
						func(r, tok int) float32 { return dotQ6K(m.Row(r), &in.q4k[tok]) })
				}
			}
		}
		t.Logf("%s: %d outputs over every row range of 11 rows, 1-3 tokens, equal dotQ6K or stayed untouched", st.name, checked)
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
