package kernels

import (
	"math"
	"math/rand/v2"
	"runtime"
	"testing"
)

// q4KPrepRow returns a row of nb blocks, each drawn from one of the kinds the preparation has
// to get right: ordinary values over the whole float32 range of scales, all-zero blocks (with
// −0), subnormals down to 2^-149, magnitudes up to MaxFloat32, a NaN or an infinity among
// ordinary values, exact ties of the rounding, block maxima within an ulp of XMAX's float32
// neighbours (where sh steps down or not), and random bit patterns of every finite exponent
// below 2.
func q4KPrepRow(rng *rand.Rand, nb int) []float32 {
	x := make([]float32, nb*kElems)
	sign := func(v float32) float32 {
		if rng.IntN(2) == 0 {
			return -v
		}
		return v
	}
	for b := range nb {
		xb := x[b*kElems : (b+1)*kElems]
		switch rng.IntN(8) {
		case 0, 1: // ordinary values at one random scale
			k := rng.IntN(286) - 160
			for i := range xb {
				xb[i] = float32(math.Ldexp(rng.NormFloat64(), k))
			}
		case 2: // zeros of both signs
			for i := range xb {
				xb[i] = sign(0)
			}
		case 3: // subnormals
			for i := range xb {
				xb[i] = sign(math.Float32frombits(rng.Uint32N(1 << rng.UintN(24))))
			}
		case 4: // near MaxFloat32, with small values among them
			for i := range xb {
				if rng.IntN(4) == 0 {
					xb[i] = sign(math.Float32frombits(0x7f7fffff - rng.Uint32N(1<<20)))
				} else {
					xb[i] = float32(rng.NormFloat64())
				}
			}
		case 5: // a NaN or an infinity among ordinary values
			for i := range xb {
				xb[i] = float32(rng.NormFloat64())
			}
			special := []float32{float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1)),
				math.Float32frombits(0xffc00001), math.Float32frombits(0x7f800001)}
			xb[rng.IntN(kElems)] = special[rng.IntN(len(special))]
		case 6: // ties: sh = 0 (the maximum is 2^30), the others halves
			for i := range xb {
				xb[i] = float32(rng.IntN(1<<21)-1<<20) + 0.5
			}
			xb[rng.IntN(kElems)] = sign(1 << 30)
		case 7: // the maximum within an ulp of float32(XMAX), scaled by a power of two
			xm := math.Float32bits(float32(q4kXMax)) + uint32(rng.IntN(5)) - 2
			k := rng.IntN(200) - 150
			m := float32(math.Ldexp(float64(math.Float32frombits(xm)), k))
			for i := range xb {
				xb[i] = float32(math.Ldexp(rng.Float64()*2-1, k+30))
			}
			xb[rng.IntN(kElems)] = sign(m)
		}
		if rng.IntN(16) == 0 { // random bit patterns, every exponent below 2
			for i := range xb {
				xb[i] = math.Float32frombits(rng.Uint32() &^ (1 << 30))
			}
		}
	}
	return x
}

// q4KPrepDiffer reports whether two prepared rows differ in any bit of any field.
func q4KPrepDiffer(a, b *q4KInput) bool {
	if a.n != b.n || len(a.x) != len(b.x) || len(a.wide.digits) != len(b.wide.digits) {
		return true
	}
	for i := range a.x {
		if a.x[i] != b.x[i] {
			return true
		}
	}
	for i := range a.sums {
		if a.sums[i] != b.sums[i] || math.Float64bits(a.wide.sums[i]) != math.Float64bits(b.wide.sums[i]) {
			return true
		}
	}
	for i := range a.scale {
		if math.Float64bits(a.scale[i]) != math.Float64bits(b.scale[i]) {
			return true
		}
	}
	for i := range a.wide.digits {
		if a.wide.digits[i] != b.wide.digits[i] {
			return true
		}
	}
	return false
}

// q4KPrepModel is the vector kernels' algorithm in Go (sh from the exponent and mantissa bits
// of float64(m), the high digit as (X + 32768) >> 16), with a mutation: 0 none, 1 no step down
// of sh when m·2^sh would exceed XMAX, 2 rounding half away from zero, 3 the high digit as
// X >> 16, 4 no special case for an all-zero block.
func q4KPrepModel(mut int) q4KPrepKernel {
	return func(x []float32, X []int32, sums []int64, scale []float64, digits []int16, wsums []float64) int {
		for b := range len(x) / kElems {
			xb := x[b*kElems : (b+1)*kElems]
			var mb uint32
			for _, v := range xb {
				mb = max(mb, math.Float32bits(v)&^(1<<31))
			}
			if mb > math.Float32bits(math.MaxFloat32) {
				return b
			}
			bits := math.Float64bits(float64(math.Float32frombits(mb)))
			sh := 1053 - int64(bits>>52)
			if mut != 1 && bits&(1<<52-1) > math.Float64bits(q4kXMax)&(1<<52-1) {
				sh--
			}
			if mb == 0 && mut != 4 {
				sh = 0
			}
			up := math.Float64frombits(uint64(1023+sh) << 52)
			scale[b] = math.Float64frombits(uint64(1023-sh) << 52)
			for k, v := range xb {
				if mut == 2 {
					X[b*kElems+k] = int32(math.Round(float64(v) * up))
				} else {
					X[b*kElems+k] = int32(math.RoundToEven(float64(v) * up))
				}
			}
			for j := range 8 {
				g := 8*b + j
				var s int64
				for i, v := range X[32*g : 32*g+32] {
					s += int64(v)
					digits[64*g+i] = int16(v)
					if mut == 3 {
						digits[64*g+32+i] = int16(v >> 16)
					} else {
						digits[64*g+32+i] = int16((v + 32768) >> 16)
					}
				}
				sums[g], wsums[g] = s, float64(s)
			}
		}
		return len(x) / kElems
	}
}

// TestQ4KPrepTiers compares every tier's Q4_K preparation, and the Go model of the vector
// algorithm, with prepareQ4K on rows of 256 to 8192 floats built from every kind of block
// q4KPrepRow makes: X, the sums, the scales, the digits and the float64 sums, bit for bit. The
// rows go into one reused q4KInput, so a field the kernel leaves unwritten shows. The model's
// mutants must each differ on some rows, so the cases reach what they break.
func TestQ4KPrepTiers(t *testing.T) {
	kerns := map[string]q4KPrepKernel{"model": q4KPrepModel(0)}
	for _, st := range usableSIMD() {
		if st.asm.q4KPrep != nil {
			kerns[st.name] = st.asm.q4KPrep
			if st.tier().prepQ4K == nil {
				t.Errorf("tier %s has a preparation kernel its Tier does not use", st.name)
			}
		}
	}
	mutants := []q4KPrepKernel{nil, q4KPrepModel(1), q4KPrepModel(2), q4KPrepModel(3), q4KPrepModel(4)}
	rng := rand.New(rand.NewPCG(31, 41))
	const rows = 1500
	got := map[string]*q4KInput{}
	for name := range kerns {
		got[name] = new(q4KInput)
	}
	var want, mut q4KInput
	caught := make([]int, len(mutants))
	blocks, nanBlocks := 0, 0
	for c := range rows {
		x := q4KPrepRow(rng, 1+rng.IntN(32))
		if err := prepareQ4K(&want, x); err != nil {
			t.Fatal(err)
		}
		blocks += len(want.scale)
		for _, s := range want.scale {
			if math.IsNaN(s) {
				nanBlocks++
			}
		}
		for name, k := range kerns {
			if err := prepareQ4KWith(got[name], x, k); err != nil {
				t.Fatal(err)
			}
			if q4KPrepDiffer(&want, got[name]) {
				t.Errorf("%s: row %d (%d floats) differs from prepareQ4K", name, c, len(x))
			}
		}
		for i, k := range mutants[1:] {
			if err := prepareQ4KWith(&mut, x, k); err != nil {
				t.Fatal(err)
			}
			if q4KPrepDiffer(&want, &mut) {
				caught[i+1]++
			}
		}
	}
	t.Logf("%d rows, %d blocks (%d with a NaN or an infinity), kernels %v", rows, blocks, nanBlocks, keys(kerns))
	for i := 1; i < len(mutants); i++ {
		t.Logf("mutant %d differs on %d of %d rows", i, caught[i], rows)
		if caught[i] == 0 {
			t.Errorf("mutant %d of the model is not caught", i)
		}
	}
	if nanBlocks == 0 {
		t.Errorf("no block with a NaN or an infinity")
	}
	if err := prepareQ4KWith(&want, make([]float32, 300), q4KPrepModel(0)); err == nil {
		t.Errorf("a row of 300 floats was prepared")
	}
}

func keys(m map[string]q4KPrepKernel) []string {
	var s []string
	for k := range m {
		s = append(s, k)
	}
	return s
}

// TestQ4KPrepAllocates: preparing a row of steady length through a tier's kernel allocates
// nothing.
func TestQ4KPrepAllocates(t *testing.T) {
	x := q4KPrepRow(rand.New(rand.NewPCG(1, 2)), 8)
	for _, st := range usableSIMD() {
		if st.asm.q4KPrep == nil {
			continue
		}
		var in q4KInput
		allocs := testing.AllocsPerRun(20, func() { _ = prepareQ4KWith(&in, x, st.asm.q4KPrep) })
		if allocs != 0 {
			t.Errorf("%s: %v allocations a row", st.name, allocs)
		}
	}
}

// BenchmarkQ4KPrep prepares one 2048-float row (ordinary values) on one thread through the
// definition and through each tier's kernel, the definition twice as an A/A control, and
// reports the thread's CPU time per row as well as the wall time.
func BenchmarkQ4KPrep(b *testing.B) {
	rng := rand.New(rand.NewPCG(3, 4))
	x := make([]float32, 2048)
	for i := range x {
		x[i] = float32(rng.NormFloat64())
	}
	type variant struct {
		name string
		kern q4KPrepKernel
	}
	vs := []variant{{"definition", nil}}
	for _, st := range usableSIMD() {
		if st.asm.q4KPrep != nil && st.name != "avx512vnni" { // avx512vnni runs avx512's kernel
			vs = append(vs, variant{st.name, st.asm.q4KPrep})
		}
	}
	vs = append(vs, variant{"definition-again", nil})
	for _, v := range vs {
		b.Run(v.name, func(b *testing.B) {
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			var in q4KInput
			start := threadCPUTime()
			for b.Loop() {
				_ = prepareQ4KWith(&in, x, v.kern)
			}
			if cpu := threadCPUTime() - start; cpu > 0 {
				b.ReportMetric(float64(cpu)/float64(b.N), "cpu-ns/row")
			}
		})
	}
}
