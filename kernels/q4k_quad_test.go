package kernels

import (
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"testing"

	"github.com/trochilus-llm/trochilus/gguf"
)

// q4KRows4Kernel is the signature of the four-row Q4_K kernels (asmKernels.q4Kr4).
type q4KRows4Kernel = func(w []byte, rowBytes int, digits []int16, sums, scale []float64, dst []float32)

// q4KGroup is the four-row dot product of one group of four contiguous rows (len(w)/4 bytes
// each), the form the mutants are written in.
type q4KGroup = func(w []byte, digits []int16, sums, scale []float64) [4]float32

// perGroup returns the four-row kernel that runs group on each group of four rows of a call.
func perGroup(group q4KGroup) q4KRows4Kernel {
	return func(w []byte, rb int, digits []int16, sums, scale []float64, dst []float32) {
		for g := range len(dst) / 4 {
			y := group(w[4*g*rb:4*(g+1)*rb], digits, sums, scale)
			copy(dst[4*g:4*g+4], y[:])
		}
	}
}

// oneGroup returns the four-row dot product of k called on a single group.
func oneGroup(k q4KRows4Kernel) q4KGroup {
	return func(w []byte, digits []int16, sums, scale []float64) (y [4]float32) {
		k(w, len(w)/4, digits, sums, scale, y[:])
		return y
	}
}

// q4KRows4Cases builds rows of 0 to 16 blocks (the kernel has no block-level unrolling or
// pipelining, so 16 covers its loop; 0 its guard), mixing random blocks, blocks of very
// different magnitudes and zero blocks, special scales (subnormal, infinite and NaN d and
// dmin), a NaN or infinite input block, and the largest integer sums (every q 15, every scale
// and min 63, both digits of every X at their extremes), where a fold that left the int32
// range would show.
func q4KRows4Cases(t *testing.T) []rows4Case {
	rng := rand.New(rand.NewPCG(41, 42))
	var cases []rows4Case
	for i := range 68 {
		c := rows4Case{blocks: i % 17}
		n := c.blocks * kElems
		c.m = randMatrixOf(rng, gguf.TypeQ4_K, 14, n, i%3 == 1)
		largest := i%8 == 7 && c.blocks > 0
		if largest {
			for b := 0; b < len(c.m.Data); b += q4KBytes {
				for k := 4; k < q4KBytes; k++ {
					c.m.Data[b+k] = 0xff
				}
			}
		}
		prepareRows4Inputs(t, rng, &c, gguf.TypeQ4_K, i, largest)
		cases = append(cases, c)
	}
	return cases
}

// checkQ4KRows4 is checkRows4 of a four-row Q4_K kernel against dotQ4K.
func checkQ4KRows4(cases []rows4Case, k q4KRows4Kernel) (checked, bad int, first string) {
	return checkRows4(cases, func(w []byte, rb int, in *q4KInput, dst []float32) {
		k(w, rb, in.wide.digits, in.wide.sums, in.scale, dst)
	}, dotQ4K)
}

// q4KRows4Tiers returns the usable SIMD tiers that have a four-row Q4_K kernel, and fails the
// test if an AVX-512 tier lacks one.
func q4KRows4Tiers(t *testing.T) []*simdTier {
	return tiersWith(t, "four-row Q4_K kernel", func(a *asmKernels) bool { return a.q4Kr4 != nil })
}

// TestQ4KRows4Exact calls each tier's four-row Q4_K kernel directly on runs of one to three
// groups of four contiguous rows (so the rows' stride is the row size, as in a matrix) of 0 to
// 16 blocks and compares every result with dotQ4K bit for bit, and the elements around dst
// with their untouched values. The same checks must reject deliberately
// wrong kernels: rows exchanged, the last block left out, T summed in wrapping int32, the
// mins left out, and the ways the kernel's own steps could go wrong: a block scaled by the
// scales and mins of the block before it or a group's first block by the previous group's
// (the heads are unpacked one block ahead), and the block end's partial sums converted to
// float64 as unsigned dwords (its magic-number conversion without the sign bias).
func TestQ4KRows4Exact(t *testing.T) {
	tiers := q4KRows4Tiers(t)
	cases := q4KRows4Cases(t)
	for _, st := range tiers {
		checked, bad, first := checkQ4KRows4(cases, st.asm.q4Kr4)
		expectAgree(t, checked, bad, first, st.name+": %d four-row Q4_K results and untouched neighbours (1-3 groups a call, rows of 0-16 blocks, special scales, NaN/Inf inputs, largest sums) against dotQ4K, %d differ", st.name+": %d of %d four-row Q4_K results differ from dotQ4K; first: %s")
	}
	real4 := tiers[len(tiers)-1].asm.q4Kr4
	real := oneGroup(real4)
	goRows := func(wrap32, noMins bool) q4KRows4Kernel {
		return perGroup(func(w []byte, digits []int16, sums, scale []float64) (y [4]float32) {
			rb := len(w) / 4
			for p := range 2 {
				v := q4KDot2Go(w[2*p*rb:(2*p+1)*rb], w[(2*p+1)*rb:(2*p+2)*rb], digits, sums, scale, wrap32, noMins)
				y[2*p], y[2*p+1] = v[0], v[1]
			}
			return y
		})
	}
	mutants := []struct {
		name string
		k    q4KRows4Kernel
	}{
		{"rows 1 and 3 exchanged", perGroup(func(w []byte, digits []int16, sums, scale []float64) [4]float32 {
			y := real(w, digits, sums, scale)
			y[1], y[3] = y[3], y[1]
			return y
		})},
		{"last block left out", perGroup(func(w []byte, digits []int16, sums, scale []float64) [4]float32 {
			return real(w, digits, sums, scale[:max(len(scale)-1, 0)])
		})},
		{"last group left out", func(w []byte, rb int, digits []int16, sums, scale []float64, dst []float32) {
			tiers[len(tiers)-1].asm.q4Kr4(w, rb, digits, sums, scale, dst[:max(len(dst)-4, 0)])
		}},
		{"T summed in wrapping int32", goRows(true, false)},
		{"mins left out", goRows(false, true)},
		{"scales one block late", withHeads(real4, func(w []byte, rb, r, b int) {
			if at := r*rb + b*q4KBytes; b > 0 {
				copy(w[at+4:at+16], w[at-q4KBytes+4:])
			}
		})},
		{"previous group's first heads", withHeads(real4, func(w []byte, rb, r, b int) {
			if at := r * rb; r >= 4 && b == 0 {
				copy(w[at:at+16], w[at-4*rb:])
			}
		})},
		{"partial sums unsigned", q4KRows4Lanes(true)},
	}
	if _, bad, first := checkQ4KRows4(cases, goRows(false, false)); bad > 0 {
		t.Fatalf("the Go model of the mutants is wrong before any mutation: %s", first)
	}
	if _, bad, first := checkQ4KRows4(cases, q4KRows4Lanes(false)); bad > 0 {
		t.Fatalf("the Go model of the block end's partial sums is wrong before any mutation: %s", first)
	}
	if _, bad, first := checkQ4KRows4(cases, withHeads(real4, func([]byte, int, int, int) {})); bad > 0 {
		t.Fatalf("the heads mutants are wrong before any mutation: %s", first)
	}
	rows4Mutants(t, mutants, func(k q4KRows4Kernel) (int, int, string) { return checkQ4KRows4(cases, k) })
}

// TestQ4KRowsFourRows runs the Q4_K rows kernel of each tier with a four-row kernel over every
// row range [r0, r1) of an 11-row matrix, and over the ranges from rows 0-3 of a 37-row one,
// for batches of 1 to 7 tokens (the tokens past the last whole group of four take the decode
// path), and checks that every output equals dotQ4K, that nothing outside the range is
// written, and that the four-row kernel ran every whole group of four rows once per decode
// token, in one call a token where one token decodes and in spans of tileRows rows where two
// or three do, leaving the last 1-3 rows of the range to the pair and single-row kernels.
func TestQ4KRowsFourRows(t *testing.T) {
	tiers := q4KRows4Tiers(t)
	rng := rand.New(rand.NewPCG(43, 44))
	const cols = 512
	for _, st := range tiers {
		var calls, groups atomic.Int64
		a := st.asm
		a.q4Kr4 = func(w []byte, rb int, digits []int16, sums, scale []float64, dst []float32) {
			calls.Add(1)
			groups.Add(int64(len(dst) / 4))
			st.asm.q4Kr4(w, rb, digits, sums, scale, dst)
		}
		checked, multi := 0, 0
		for _, rows := range []int{11, 37} {
			m := randMatrix(rng, gguf.TypeQ4_K, rows, cols)
			starts := rows
			if rows > 11 {
				starts = 3
			}
			for _, ntok := range []int{1, 2, 3, 5, 6, 7} {
				in := preparedBatch(t, randFloats(rng, ntok*cols, true, false), ntok, cols)
				want := make([]float32, ntok*rows)
				for tok := range ntok {
					for r := range rows {
						want[tok*rows+r] = dotQ4K(m.Row(r), &in.q4k[tok])
					}
				}
				decode := ntok - ntok&^3
				for r0 := 0; r0 <= starts; r0++ {
					for r1 := r0; r1 <= rows; r1++ {
						dst := infs(ntok * rows) // untouched outside [r0, r1)
						calls.Store(0)
						groups.Store(0)
						a.q4KRows(dst, m, in, r0, r1)
						quads := (r1 - r0) / 4
						spans := min(quads, 1)
						if decode > 1 {
							spans = (4*quads + tileRows - 1) / tileRows
						}
						if calls.Load() != int64(spans*decode) || groups.Load() != int64(quads*decode) {
							t.Errorf("%s, %d rows, %d tokens, rows [%d, %d): %d four-row calls of %d groups, want %d of %d",
								st.name, rows, ntok, r0, r1, calls.Load(), groups.Load(), spans*decode, quads*decode)
						}
						if quads > 1 {
							multi++
						}
						checked += checkRange(t, fmt.Sprintf("%s, %d rows, %d tokens", st.name, rows, ntok), dst, rows, ntok, r0, r1,
							func(r, tok int) float32 { return want[tok*rows+r] })
					}
				}
			}
		}
		t.Logf("%s: %d outputs over the row ranges of 11 and 37 rows, 1-7 tokens, equal dotQ4K; four-row calls and groups as counted (%d runs of several groups)", st.name, checked, multi)
	}
}

// TestMatMulManyQ4KFourRows runs one-token passes of several Q4_K matrices with odd row
// counts through Tier.MatMulMany on 1 to 3 threads, with runs as short as the pool allows
// (cut on even rows, so a run may start mid-group of four and end with a pair or a single
// row) and as long as decode uses, through each tier whose kernels are wrapped to count the
// four-row calls, and compares every output with the scalar tier.
func TestMatMulManyQ4KFourRows(t *testing.T) {
	tiers := q4KRows4Tiers(t)
	rng := rand.New(rand.NewPCG(45, 46))
	shapes := [][2]int{{37, 512}, {6, 512}, {1, 512}, {230, 512}, {131, 1024}}
	var mats []*Matrix
	for _, s := range shapes {
		mats = append(mats, randMatrix(rng, gguf.TypeQ4_K, s[0], s[1]))
	}
	x512, x1024 := randFloats(rng, 512, false, false), randFloats(rng, 1024, false, false)
	scalar := Scalar()
	for _, st := range tiers {
		var calls atomic.Int64
		a := st.asm
		a.q4Kr4 = func(w []byte, rb int, digits []int16, sums, scale []float64, dst []float32) {
			calls.Add(1)
			st.asm.q4Kr4(w, rb, digits, sums, scale, dst)
		}
		tier := (&simdTier{name: st.name, usable: st.usable, asm: a}).tier()
		for _, run := range []struct {
			threads int
			minRun  int64
		}{{1, 0}, {2, 1}, {3, 1}, {2, 0}, {3, 700}} {
			threads := run.threads
			p := newPool(threads, poolOptions{minRun: run.minRun})
			var b512, b1024 Batch
			if err := b512.Set(x512, 1, 512); err != nil {
				t.Fatal(err)
			}
			if err := b1024.Set(x1024, 1, 1024); err != nil {
				t.Fatal(err)
			}
			jobs := make([]MatMulJob, len(mats))
			for i, m := range mats {
				in := &b512
				if m.Cols == 1024 {
					in = &b1024
				}
				jobs[i] = MatMulJob{Dst: make([]float32, m.Rows), M: m, In: in}
			}
			calls.Store(0)
			if err := tier.MatMulMany(p, jobs); err != nil {
				t.Fatal(err)
			}
			outputs := 0
			for i, j := range jobs {
				want := make([]float32, j.M.Rows)
				var in Batch
				if err := in.Set(j.In.X, 1, j.M.Cols); err != nil {
					t.Fatal(err)
				}
				if err := scalar.MatMul(p, want, j.M, &in); err != nil {
					t.Fatal(err)
				}
				for r := range want {
					outputs++
					if !sameBits(j.Dst[r], want[r]) {
						t.Errorf("%s, %d threads, runs of %d: product %d row %d = %g, scalar %g", st.name, threads, run.minRun, i, r, j.Dst[r], want[r])
					}
				}
			}
			if calls.Load() == 0 {
				t.Errorf("%s, %d threads: the four-row kernel never ran", st.name, threads)
			}
			t.Logf("%s, %d threads, runs of at least %d bytes: %d outputs equal the scalar tier's, %d four-row calls", st.name, threads, run.minRun, outputs, calls.Load())
			p.Close()
		}
	}
}

// withHeads returns the four-row kernel that runs k on a copy of the rows in which spoil has
// changed the head of block b of row r (rb bytes a row): a model of a kernel that unpacks the
// wrong block's heads. spoil sees each row's blocks from the last to the first, and the rows
// from the last to the first, so that it copies heads as they were.
func withHeads(k q4KRows4Kernel, spoil func(w []byte, rb, r, b int)) q4KRows4Kernel {
	return func(w []byte, rb int, digits []int16, sums, scale []float64, dst []float32) {
		w = append([]byte(nil), w...)
		for r := len(dst) - 1; r >= 0; r-- {
			for b := len(scale) - 1; b >= 0; b-- {
				spoil(w, rb, r, b)
			}
		}
		k(w, rb, digits, sums, scale, dst)
	}
}

// q4KRows4Lanes returns a Go model of the four-row kernel that forms T as its block end does,
// from each row's partial sums over the four 128-bit lanes of its accumulators (lane l holds
// elements 8l to 8l+7 of every sub-block), and with unsigned set converts each partial sum
// as an unsigned dword.
func q4KRows4Lanes(unsigned bool) q4KRows4Kernel {
	return func(w []byte, rb int, digits []int16, sums, scale []float64, dst []float32) {
		for r := range dst {
			var y float64
			for b := range scale {
				blk := w[r*rb+b*q4KBytes : r*rb+(b+1)*q4KBytes]
				var t, m int64
				for digit := range 2 {
					for l := range 4 {
						var p int64
						for j := range 8 {
							sc, _ := gguf.ScaleMinK4(j, (*[12]byte)(blk[4:16]))
							for e := 8 * l; e < 8*l+8; e++ {
								q := blk[16+32*(j/2)+e] >> (4 * (j % 2)) & 15
								p += int64(sc) * int64(q) * int64(digits[b*512+64*j+32*digit+e])
							}
						}
						if unsigned {
							p = int64(uint32(p))
						}
						t += p << (16 * digit)
					}
				}
				for j := range 8 {
					_, mn := gguf.ScaleMinK4(j, (*[12]byte)(blk[4:16]))
					m += int64(mn) * int64(sums[8*b+j])
				}
				d, dmin := float64(half(blk[0:])), float64(half(blk[2:]))
				v := float64(d*float64(t)) - float64(dmin*float64(m))
				y += float64(v * scale[b])
			}
			dst[r] = float32(y)
		}
	}
}
