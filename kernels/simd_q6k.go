package kernels

import (
	"sync"
	"unsafe"
)

// q6KRows is the Q6_K rows kernel of a tier (dotQ6K; the batch is already prepared). A batch
// of q6KPanelMinTokens tokens or more runs through panels where the tier has them (sixteen rows
// decoded once into a panel, every group of four tokens against it); otherwise a batch of four
// tokens or more runs in tiles of one weight row against eight tokens and then four (each
// block's weights decoded and scaled once for the tile), tileRows rows at a time so they stay
// in cache across the token groups. The tokens left over, and smaller batches, run four weight
// rows a call where the tier has the kernel (a call runs every group of four of a run:
// decode's whole matrix in one call), then two, then one (see leftRows).
func (a *asmKernels) q6KRows(dst []float32, m *Matrix, in *Batch, r0, r1 int) {
	nb := in.Cols / kElems
	tiled, wide := 0, 0 // tokens [0, wide) run eight a call, [wide, tiled) four
	if a.q6KTile4 != nil {
		tiled = in.Ntok &^ 3
	}
	if a.q6KTile8 != nil {
		wide = in.Ntok &^ 7
	}
	panels := a.q6KPanel4 != nil && in.Ntok&^3 >= q6KPanelMinTokens
	if panels {
		tiled, wide = in.Ntok&^3, 0
		a.q6KPanelRows(dst, m, in, r0, r1)
	}
	var scales *q6KSpanScales
	if wide > 0 {
		scales = a.q6KMemory.scales.Get().(*q6KSpanScales)
		defer a.q6KMemory.scales.Put(scales)
	}
	for b0 := r0; b0 < r1 && tiled > 0 && !panels; b0 += tileRows {
		b1 := min(b0+tileRows, r1)
		for t := 0; t < wide; t += 8 {
			a.q6KTile8Rows(dst, m, in, t, b0, b1, scales)
		}
		for t := wide; t < tiled; t += 4 {
			args := q6KArgs4(in.q4k[t : t+4])
			for r := b0; r < b1; r++ {
				y := a.q6KTile4(m.Row(r), args, nb)
				for i := range 4 {
					dst[(t+i)*m.Rows+r] = y[i]
				}
			}
		}
	}
	a.leftRows(dst, m, in, r0, r1, tiled, true)
}

// q6KArgs4 points the four-input Q6_K kernels at the prepared inputs ins[:4]: [i] and [4+i] at
// input i's digits and scales.
func q6KArgs4(ins []q4KInput) [8]*byte {
	var args [8]*byte
	for i := range 4 {
		x := &ins[i]
		args[i] = (*byte)(unsafe.Pointer(unsafe.SliceData(x.wide.digits)))
		args[4+i] = (*byte)(unsafe.Pointer(unsafe.SliceData(x.scale)))
	}
	return args
}

// dotQ6K is the package's dotQ6K of one row, through the pair kernel.
func (a *asmKernels) dotQ6K(row []byte, in *q4KInput) float32 {
	row = row[:in.n/kElems*q6KBytes]
	return a.q6KPair(row, row, in.wide.digits, in.scale)[0]
}

// q6KSpan is how many blocks of a row the eight-input tiles run at a time: eight inputs'
// digits of a block take 8 KiB, so a span's stay in L1 while every row of the tile runs
// against them (as q4KSpan).
const q6KSpan = 4

// q6KSpanScales holds eight inputs' scales of a span, interleaved block by block (scales[8b+t]
// input t's of block b), as q6KTile8 reads them.
type q6KSpanScales [8 * q6KSpan]float64

// q6KMemory holds a tier's Q6_K scratch memory in pools, so that concurrent calls each get
// their own and a steady stream of calls allocates nothing: the eight-input tiles' interleaved
// scales (*q6KSpanScales; handed to the kernel through a func value, a local array would move
// to the heap on every call) and the panels (*q6KPanelScratch).
type q6KMemory struct{ scales, panels sync.Pool }

func newQ6KMemory() *q6KMemory {
	return &q6KMemory{
		scales: sync.Pool{New: func() any { return new(q6KSpanScales) }},
		panels: sync.Pool{New: func() any { return new(q6KPanelScratch) }},
	}
}

// q6KTile8Rows computes rows [b0, b1) (at most tileRows) for tokens t to t+7 with the
// eight-input kernel, q6KSpan blocks at a time: the float64 sums carry from span to span in
// block order, exactly as dotQ6K adds them, and are rounded to float32 once at the end. The
// eight inputs' scales of a span are interleaved into scales once for all the rows.
func (a *asmKernels) q6KTile8Rows(dst []float32, m *Matrix, in *Batch, t, b0, b1 int, scales *q6KSpanScales) {
	nb := in.Cols / kElems
	var y [tileRows][8]float64
	for s0 := 0; s0 < nb; s0 += q6KSpan {
		n := min(q6KSpan, nb-s0)
		var args [8]*byte
		for i := range 8 {
			x := &in.q4k[t+i]
			args[i] = (*byte)(unsafe.Pointer(&x.wide.digits[s0*2*kElems]))
			for b := range n {
				scales[8*b+i] = x.scale[s0+b]
			}
		}
		for r := b0; r < b1; r++ {
			y[r-b0] = a.q6KTile8(m.Row(r)[s0*q6KBytes:], args, scales[:8*n], y[r-b0])
		}
	}
	storeTile8(dst, m.Rows, t, b0, b1, &y)
}

// q6KPanelBlock is the size of one block of an integer Q6_K panel: sixteen rows' weight words
// in dword lanes, then their d as float64 (see asmgen's q6k_tile_int.go).
const q6KPanelBlock = 8320

// q6KPanelScratch is the memory of one q6KPanelRows call: the panel and the tile's results.
type q6KPanelScratch struct {
	panel []byte
	y     [4 * 16]float32
}

// q6KPanelMinTokens is the smallest batch that runs through panels: with 8 tokens a panel
// only ties the eight-input tiles, from 16 it runs 1.2-1.8x faster (BenchmarkQ6KTileInt).
const q6KPanelMinTokens = 16

// q6KPanelRows computes rows [r0, r1) for the tokens in groups of four (in.Ntok &^ 3) through
// the tier's integer Q6_K panel kernels: each run of sixteen rows is written into a panel once
// (decoded, scaled and laid out a row to a lane) and every group of four tokens runs against
// it, with no decode and no horizontal sum in the inner loop.
func (a *asmKernels) q6KPanelRows(dst []float32, m *Matrix, in *Batch, r0, r1 int) {
	nb := in.Cols / kElems
	mem := a.q6KMemory.panels.Get().(*q6KPanelScratch)
	defer a.q6KMemory.panels.Put(mem)
	if len(mem.panel) < nb*q6KPanelBlock {
		mem.panel = make([]byte, nb*q6KPanelBlock)
	}
	panel, y := mem.panel, mem.y[:]
	tiled := in.Ntok &^ 3
	for b0 := r0; b0 < r1; b0 += 16 {
		rows := min(16, r1-b0)
		a.q6KPanelBuild(panel, panelWindow(m, b0, rows), nb)
		for t := 0; t < tiled; t += 4 {
			a.q6KPanel4(panel, q6KArgs4(in.q4k[t:t+4]), nb, y)
			for i := range 4 {
				copy(dst[(t+i)*m.Rows+b0:(t+i)*m.Rows+b0+rows], y[16*i:16*i+rows])
			}
		}
	}
}
