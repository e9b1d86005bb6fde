package kernels

import (
	"bytes"
	"sync"
)

// The "sixteen rows in sixteen lanes" prompt product (AVX-512). A lane of the contract is a
// sequence in time, not a register position: lane p of a row's dot adds the products of
// elements p, p+16, p+32, ... in order. So a SIMD lane can follow one weight row instead of one
// phase: a panel holds 16 weight rows decoded to their exact float32 values and transposed,
// phase by phase, and each panel vector (16 rows' weights at one element) is multiplied by one
// token's input, broadcast, and added into that token's accumulator. Every SIMD lane then
// repeats its row's lane p exactly (VMULPS then VADDPS, m in increasing order, from +0), and
// the 16 phases are joined by the contract's tree, vectorized over the rows. No decode, no
// scale and no reduction inside the loop: one multiply and one add per 16 products, the
// exact-arithmetic peak. The panel is decoded once per 16 rows and reused by every token.

// panelMaxTokens is the most tokens one tile runs (one accumulator register each); it must
// match internal/asmgen.
const panelMaxTokens = 24

// panelTiles are the tile kernels, [T-1] for T tokens (see internal/asmgen/panel.go):
// panel[(p·(nm+1)+m)·16+r] = w_r[16m+p] (each phase's run padded by one vector, as the packer
// writes it), xil[(p·nm+m)·T+t] = x_t[16m+p]; the results land at ph[256·T+16t+r].
type panelTiles [panelMaxTokens]func(panel, xil, ph []float32)

// panelScratch is one call's working memory: the panel, the 16 decoded rows it is packed
// from, the interleaved inputs, and the tile's phase vectors and results. It keeps a copy of
// the inputs it interleaved (src, ntok tokens): a call whose inputs are the same bits (the
// next rows of the same product, on this thread) reuses xil instead of interleaving again.
type panelScratch struct {
	panel, rows, xil, ph []float32
	src                  []float32
	ntok, cols           int
}

// grow makes the scratch hold a panel of 16 rows of n and the inputs of ntok tokens.
func (s *panelScratch) grow(n, ntok int) {
	if len(s.panel) < 16*(n+16) {
		s.panel = make([]float32, 16*(n+16))
		s.rows = make([]float32, 17*panelSlice)
	}
	if len(s.xil) < n*ntok {
		s.xil = make([]float32, n*ntok)
		s.src = make([]float32, 0, n*ntok)
	}
	if len(s.ph) == 0 {
		s.ph = make([]float32, 17*16*panelMaxTokens)
	}
}

// panelRows is the rows kernel of a float-lane type with panel tiles: batches of minTokens
// tokens or more over ranges of minRows rows or more go through the panel; smaller ones, and
// rows whose length is not a whole number of groups of 16, through the lanes kernel.
type panelRows struct {
	lanes     laneRows
	unitElems int                                            // the elements of a unit of lanes.unitBytes
	write     func(rows []float32, row []byte, r, ahead int) // row r of the 16 the panel is packed from
	pack      func(panel, rows []float32, groups, stride int)
	tiles     *panelTiles
	scratch   *sync.Pool // of *panelScratch, so concurrent calls each get their own
	minTokens int        // panelMinTokens (tests set other bounds)
	minRows   int        // panelMinRows
}

// panelSlice is how many elements of the 16 rows are decoded before they are packed: a
// multiple of every unit (16, 32 and 256 elements).
const panelSlice = 256

// panelMinRows is the smallest row range the panel takes: a call interleaves (or at least
// compares) its whole batch of inputs, and a partial panel computes padding rows.
const panelMinRows = 64

// panelMinTokens is the batch from which the panel beats the lanes kernels' tiles of four
// tokens (measured: BenchmarkTierPanel).
const panelMinTokens = 16

// newPanelScratch makes the sync.Pool of a tier's panel scratch.
func newPanelScratch() *sync.Pool {
	return &sync.Pool{New: func() any { return new(panelScratch) }}
}

func (k panelRows) kernel(dst []float32, m *Matrix, in *Batch, r0, r1 int) {
	n := in.Cols
	if in.Ntok < k.minTokens || r1-r0 < k.minRows || n%16 != 0 || n == 0 {
		k.lanes.kernel(dst, m, in, r0, r1)
		return
	}
	s := k.scratch.Get().(*panelScratch)
	defer k.scratch.Put(s)
	s.grow(n, in.Ntok)
	// The tokens in chunks of at most panelMaxTokens, cut evenly; each chunk's inputs are
	// interleaved once and reused by every panel.
	chunks := (in.Ntok + panelMaxTokens - 1) / panelMaxTokens
	x := in.X[:n*in.Ntok]
	if s.ntok != in.Ntok || s.cols != n || !bytes.Equal(floatBytes(s.src), floatBytes(x)) {
		for c := range chunks {
			t0, t1 := c*in.Ntok/chunks, (c+1)*in.Ntok/chunks
			interleave(s.xil[n*t0:n*t1], x[n*t0:n*t1], n, t1-t0)
		}
		s.src, s.ntok, s.cols = append(s.src[:0], x...), in.Ntok, n
	}
	panel := s.panel[:16*(n+16)]
	for b0 := r0; b0 < r1; b0 += 16 {
		rows := min(16, r1-b0)
		// The panel is built a slice of panelSlice elements at a time, so the decoded rows
		// stay in L1 between the writers and the packer.
		for e0 := 0; e0 < n; e0 += panelSlice {
			e1 := min(e0+panelSlice, n)
			dec := s.rows[:17*(e1-e0)]
			if rows < 16 { // padding rows, whose results are dropped: any finite weights do
				clear(dec)
			}
			u0, u1 := e0/k.unitElems*k.lanes.unitBytes, e1/k.unitElems*k.lanes.unitBytes
			for r := range rows {
				k.write(dec, m.Row(b0 + r)[u0:u1], r, 16*m.RowBytes())
			}
			k.pack(panel[e0:], dec, (e1-e0)/16, n+16)
		}
		for c := range chunks {
			t0, t1 := c*in.Ntok/chunks, (c+1)*in.Ntok/chunks
			T := t1 - t0
			k.tiles[T-1](panel, s.xil[n*t0:n*t1], s.ph)
			res := s.ph[256*T : 256*T+16*T]
			for t := range T {
				copy(dst[(t0+t)*m.Rows+b0:(t0+t)*m.Rows+b0+rows], res[16*t:16*t+rows])
			}
		}
	}
}

// interleave writes the T input rows of n floats in x as xil[(p·nm+m)·T+t] = x_t[16m+p],
// in the order of xil: its writes are sequential, its reads T sequential streams.
func interleave(xil, x []float32, n, T int) {
	xil = xil[:n*T]
	i := 0
	for p := range 16 {
		for k := p; k < n; k += 16 {
			for t := range T {
				xil[i] = x[t*n+k]
				i++
			}
		}
	}
}
