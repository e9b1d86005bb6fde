package kernels

//go:generate go run ./internal/asmgen -out kernels_amd64.s -stubs kernels_stubs_amd64.go -pkg kernels

import (
	"fmt"
	"os"
	"strings"
)

// CPUMaxEnv names the environment variable that caps the tier Best hands out: one of scalar,
// avx2, avx512 or avx512vnni (tierNames). Tests and benchmarks use it to run a slower tier on a
// faster CPU.
const CPUMaxEnv = "TROCHILUS_CPU_MAX"

// tierNames lists the tiers from slowest to fastest. A tier needs every CPU feature of the ones
// before it and more:
//
//	scalar      the portable definitions (every CPU and architecture)
//	avx2        amd64 with AVX2 and F16C
//	avx512      amd64 with AVX-512 F, BW, VL and DQ (and AVX2, F16C)
//	avx512vnni  avx512 with VNNI and VBMI: the Q4_K dot takes VPDPWSSD, the Q6_K decode VPERMB
func tierNames() []string { return []string{"scalar", "avx2", "avx512", "avx512vnni"} }

// tierLevel returns the position of a tier name in tierNames, or -1.
func tierLevel(name string) int {
	for i, n := range tierNames() {
		if n == name {
			return i
		}
	}
	return -1
}

// Tiers returns the tiers this CPU can run, slowest (scalar) first, fastest last, each built
// afresh. It ignores the cap.
func Tiers() []*Tier {
	tiers := []*Tier{Scalar()}
	for _, s := range simdTiers() {
		if s.usable() {
			tiers = append(tiers, s.tier())
		}
	}
	return tiers
}

// Best returns the fastest tier this CPU can run, capped by the environment variable
// TROCHILUS_CPU_MAX when it is set. An unknown value is an error, never ignored.
func Best() (*Tier, error) {
	t, err := bestUpTo(os.Getenv(CPUMaxEnv))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", CPUMaxEnv, err)
	}
	return t, nil
}

// bestUpTo returns the fastest tier this CPU can run that is not above the named one (""
// means no cap). Naming a tier the CPU lacks gives the best one below it.
func bestUpTo(limit string) (*Tier, error) {
	tiers := Tiers()
	if limit == "" {
		return tiers[len(tiers)-1], nil
	}
	lvl := tierLevel(limit)
	if lvl < 0 {
		return nil, fmt.Errorf("kernels: unknown tier %q (want one of %s)", limit, strings.Join(tierNames(), ", "))
	}
	best := tiers[0]
	for _, t := range tiers {
		if tierLevel(t.Name) <= lvl {
			best = t
		}
	}
	return best, nil
}

// simdTier describes one SIMD tier: its name, whether the CPU can run it, and the vector
// kernels (asmKernels) everything it accelerates goes through.
type simdTier struct {
	name   string
	usable func() bool
	asm    asmKernels
}

// asmKernels are the vector inner loops of a tier. The lanes kernels continue the 16 contract
// lanes l over the whole units of a weight row w (a group of 16 floats or halves, a Q8_0 block)
// against x; sum adds whole groups of 16 values; q4K computes dotQ4K of two Q4_K rows w0 and w1
// (the same row twice for one) against a prepared input, given its q4KWide digits and sums and
// its block scales: the whole definition, float64 steps included. Each must leave bits exactly
// where the scalar definition does; the Go around them handles tails and the join.
type asmKernels struct {
	f32, f16, bf16, q8_0 func(l [16]float32, w []byte, x []float32) [16]float32
	// The lanes, from +0, of two weight rows against one x: [0] over w0, [1] over w1.
	f32x2, f16x2, bf16x2, q8_0x2 func(w0, w1 []byte, x []float32) [2][16]float32
	// The lanes, from +0, of one weight row against four input rows x[t·stride:], t < 4: [t]
	// over row t, each weight decoded once for the four.
	f32x4, f16x4, bf16x4, q8_0x4 func(w []byte, x []float32, stride int) [4][16]float32
	// The lanes, from +0, of four weight rows against one x: w holds the rows one after another
	// (len(w)/4 bytes each), [i] is row i's. Nil where the tier has too few registers for
	// four rows' lanes and a decode (AVX2); the rows kernel then runs two rows a call.
	f32r4, f16r4, bf16r4, q8_0r4 func(w []byte, x []float32) [4][16]float32
	// panel holds the "sixteen rows in sixteen lanes" tiles of prompt batches (see panel.go);
	// nil where the tier has none.
	panel *panelTiles
	// The panel row writers of the float-lane types and the panel packer (see panelRows).
	panelF32, panelF16, panelBF16, panelQ8_0 func(rows []float32, w []byte, r, ahead int)
	panelPack                                func(panel, rows []float32, groups, stride int)
	sum                                      func(l [16]float32, v []float32) [16]float32
	q4K                                      func(w0, w1 []byte, digits []int16, sums, scale []float64) [2]float32
	// q4Kr4 stores in dst dotQ4K of len(dst) Q4_K rows (len(dst)/4 groups of four) against one
	// prepared input: w holds the rows one after another (rowBytes each, len(scale) blocks of
	// each read). Nil where the tier has too few registers (AVX2); decode then runs two rows a
	// call.
	q4Kr4 func(w []byte, rowBytes int, digits []int16, sums, scale []float64, dst []float32)
	// q4K4 is dotQ4K of one row against four prepared inputs: in[t], in[4+t] and in[8+t] point
	// at input t's digits, sums and scales; nb is the number of blocks.
	q4K4 func(w []byte, in [12]*byte, nb int) [4]float32
	// q4K8 continues and returns dotQ4K's float64 sums y (before the rounding to float32) of one
	// row of nb blocks against eight prepared inputs (in[t], in[8+t], in[16+t]); nil where the tier has
	// too few registers (AVX2).
	q4K8 func(w []byte, in [24]*byte, nb int, y [8]float64) [8]float64
	// q4KPanelBuild writes sixteen Q4_K rows of nb blocks into a panel, row r into lane r,
	// and q4KPanel4 computes dotQ4K of the panel's first rows rows against four prepared
	// inputs (see q4KPanelRows); nil where the tier has no VNNI.
	q4KPanelBuild func(panel []byte, rows [16]*byte, nb int)
	q4KPanel4     func(panel []byte, in [12]*byte, nb, rows int) [4][16]float32
	q4KPanels     *q4KPanels // the panels' memory
	// q4KPrep is the vector Q4_K input preparation (see q4KPrepKernel); nil where the tier has
	// none.
	q4KPrep q4KPrepKernel

	// The integer Q6_K kernels (dotQ6K against prepared inputs; see simd_q6k.go). q6KPair
	// computes two rows w0 and w1 (the same row twice for one) against one input, given its
	// q4KWide digits and its block scales. q6KQuad stores in dst the results of len(dst) rows
	// (len(dst)/4 groups of four) laid one after another in w, rowBytes each, against one input;
	// nil where the tier has too few registers. q6KTile4 computes one row of nb blocks against
	// four inputs (in[t] and in[4+t] point at input t's digits and scales); q6KTile8 continues
	// the float64 sums y of dotQ6K against eight inputs over len(scales)/8 blocks (in[t] points
	// at input t's digits of the first, scales[8b+t] is its scale of block b), so that a row
	// runs a span of blocks at a time; nil where the tier has none.
	q6KPair  func(w0, w1 []byte, digits []int16, scale []float64) [2]float32
	q6KQuad  func(w []byte, rowBytes int, digits []int16, scale []float64, dst []float32)
	q6KTile4 func(w []byte, in [8]*byte, nb int) [4]float32
	q6KTile8 func(w []byte, in [8]*byte, scales []float64, y [8]float64) [8]float64
	// q6KPanelBuild writes sixteen Q6_K rows of nb blocks into a panel, row r into lane r, and
	// q6KPanel4 stores in y[16t+r] dotQ6K of the panel's row r against prepared input t < 4
	// (see q6KPanelRows); nil where the tier has no VNNI. q6KMemory holds the tier's panel and
	// tile scratch memory.
	q6KPanelBuild func(panel []byte, rows [16]*byte, nb int)
	q6KPanel4     func(panel []byte, in [8]*byte, nb int, y []float32)
	q6KMemory     *q6KMemory

	// expShift and swiGLU are the vector Exp kernels (Exp(src[i] − shift), and SiLU(gate)·up)
	// over whole groups of 8; they stop at a group they leave to the scalar code and return how
	// many elements they wrote. expTab holds their table and constants (see expTable).
	expShift func(dst, src []float32, shift float32, tab *[80]float64) int
	swiGLU   func(dst, gate, up []float32, tab *[80]float64) int
	expTab   *[80]float64

	// attendV writes attention's weighted value sums for the whole blocks of attendW outputs
	// of out, at most attendCols (see attendValues); the Go side adds the ragged columns.
	attendV func(out, values, a []float32, stride int)
	attendW int

	// scores writes attention's scores float32(dot(q, keys[t·stride:])·scale) for t < len(out);
	// len(q) is a whole number of groups of 16 (see attendScores).
	scores func(out, q, keys []float32, stride int, scale float32)
}

// tier builds the dispatch table of s. Every entry a SIMD tier accelerates routes through
// s.asm; TestTierKernelsCount checks that by counting the products the asm kernels compute.
func (s *simdTier) tier() *Tier {
	a := &s.asm
	f32 := laneRows{a.f32x4, a.f32r4, a.f32x2, a.dotRowF32, 64}
	f16 := laneRows{a.f16x4, a.f16r4, a.f16x2, a.dotRowF16, 32}
	bf16 := laneRows{a.bf16x4, a.bf16r4, a.bf16x2, a.dotRowBF16, 32}
	q8_0 := laneRows{a.q8_0x4, a.q8_0r4, a.q8_0x2, a.dotRowQ8_0, q8_0Bytes}
	t := &Tier{
		Name:    s.name,
		dotF32:  a.dotF32,
		rmsNorm: a.rmsNorm,
		softmax: a.softmax,
		expOf:   a.expShifted,
		swiGLU:  a.swiGLUVec,
		attend:  a.attend,
		f32:     f32.kernel,
		f16:     f16.kernel,
		bf16:    bf16.kernel,
		q8_0:    q8_0.kernel,
		q4K:     a.q4KRows,
		q5K:     floatRows(a.dotRowQ5K),
		q6K:     a.q6KRows,
		prepQ4K: a.q4KPrep,
	}
	if a.panel != nil { // prompt batches through the panel tiles (see panel.go)
		scratch := newPanelScratch()
		panel := func(lanes laneRows, unitElems int, write func([]float32, []byte, int, int)) rowsKernel {
			return panelRows{lanes, unitElems, write, a.panelPack, a.panel, scratch, panelMinTokens, panelMinRows}.kernel
		}
		t.f32 = panel(f32, 16, a.panelF32)
		t.f16 = panel(f16, 16, a.panelF16)
		t.bf16 = panel(bf16, 16, a.panelBF16)
		t.q8_0 = panel(q8_0, q8_0Elems, a.panelQ8_0)
	}
	return t
}

// laneRows is the rows kernel of a type whose weights go through the contract lanes: tiles of
// one weight row against four tokens (four), four rows against one token (fourRows, nil where
// the tier has none), pairs of rows against one token (two), and the one-row dot (one) for
// rows with a ragged tail; unitBytes is the size of a whole unit.
type laneRows struct {
	four      func(w []byte, x []float32, stride int) [4][16]float32
	fourRows  func(w []byte, x []float32) [4][16]float32
	two       func(w0, w1 []byte, x []float32) [2][16]float32
	one       func(row []byte, x []float32) float32
	unitBytes int
}

// tileRows is how many weight rows a tile pass keeps hot while it runs every group of four
// tokens against them.
const tileRows = 16

// kernel computes rows [r0, r1) for every token: a batch of four tokens or more runs in tiles
// of four tokens, each weight row decoded once for the four and tileRows rows reused from
// cache across the token groups; the tokens left over, and smaller batches, run four rows a
// call (or two) so their independent add chains overlap. A row with a ragged tail, and the
// last row of an odd range, go through the one-row dot.
func (k laneRows) kernel(dst []float32, m *Matrix, in *Batch, r0, r1 int) {
	n := in.Cols
	if m.RowBytes()%k.unitBytes != 0 {
		for r := r0; r < r1; r++ {
			row := m.Row(r)
			for t := range in.Ntok {
				dst[t*m.Rows+r] = k.one(row, in.X[t*n:(t+1)*n])
			}
		}
		return
	}
	tiled := in.Ntok &^ 3
	for b0 := r0; b0 < r1 && tiled > 0; b0 += tileRows {
		b1 := min(b0+tileRows, r1)
		for t := 0; t < tiled; t += 4 {
			for r := b0; r < b1; r++ {
				l := k.four(m.Row(r), in.X[t*n:(t+4)*n], n)
				for i := range 4 {
					dst[(t+i)*m.Rows+r] = (*lanes)(&l[i]).Sum()
				}
			}
		}
	}
	r := r0
	if k.fourRows != nil && tiled < in.Ntok {
		rb := m.RowBytes()
		for ; r+4 <= r1; r += 4 {
			w := m.Data[r*rb : (r+4)*rb]
			for t := tiled; t < in.Ntok; t++ {
				l := k.fourRows(w, in.X[t*n:(t+1)*n])
				for i := range 4 {
					dst[t*m.Rows+r+i] = (*lanes)(&l[i]).Sum()
				}
			}
		}
	}
	for ; r+2 <= r1; r += 2 {
		w0, w1 := m.Row(r), m.Row(r+1)
		for t := tiled; t < in.Ntok; t++ {
			l := k.two(w0, w1, in.X[t*n:(t+1)*n])
			dst[t*m.Rows+r] = (*lanes)(&l[0]).Sum()
			dst[t*m.Rows+r+1] = (*lanes)(&l[1]).Sum()
		}
	}
	if r < r1 {
		row := m.Row(r)
		for t := tiled; t < in.Ntok; t++ {
			dst[t*m.Rows+r] = k.one(row, in.X[t*n:(t+1)*n])
		}
	}
}
