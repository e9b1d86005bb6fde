package kernels

import (
	"sync"
	"unsafe"
)

// q4KWide is a prepared Q4_K input laid out for the vector kernels. Each X is split into two
// signed 16-bit digits, X = lo + 65536·hi with lo the sign-extended low half (|hi| <= 31831
// since |X| <= q4kXMax), so a word multiply-add (VPMADDWD, VPDPWSSD) takes 32 of them a
// register; per 32-element sub-block, digits holds its 32 lo words and then its 32 hi words.
// sums holds the sub-block sums of X as float64 (exact: below 2^37), so the kernel forms M with
// exact float64 products and additions.
type q4KWide struct {
	digits []int16
	sums   []float64
}

// prepare fills w from the prepared row in.
func (w *q4KWide) prepare(in *q4KInput) {
	w.resize(in.n)
	w.fill(in, 0, in.n/32)
}

// resize makes w the size of a prepared row of n elements, reusing its memory where it can.
func (w *q4KWide) resize(n int) {
	if cap(w.digits) < 2*n || cap(w.sums) < n/32 {
		w.digits = make([]int16, 2*n)
		w.sums = make([]float64, n/32)
	}
	w.digits, w.sums = w.digits[:2*n], w.sums[:n/32]
}

// fill writes the sub-blocks [g0, g1) of 32 elements of w from the prepared row in.
func (w *q4KWide) fill(in *q4KInput, g0, g1 int) {
	for g := g0; g < g1; g++ {
		x := in.x[32*g : 32*g+32]
		d := w.digits[64*g : 64*g+64]
		for i, v := range x {
			lo := int16(v)
			d[i] = lo
			d[32+i] = int16((v - int32(lo)) >> 16)
		}
		w.sums[g] = float64(in.sums[g])
	}
}

// dotQ4K is the package's dotQ4K of one row, through the two-row kernel.
func (a *asmKernels) dotQ4K(row []byte, in *q4KInput) float32 {
	row = row[:in.n/kElems*q4KBytes]
	return a.q4K(row, row, in.wide.digits, in.wide.sums, in.scale)[0]
}

// q4KRows is the Q4_K rows kernel of a tier. A batch of four tokens or more runs in tiles of
// one weight row against eight tokens (where the tier has the kernel) and then four (the
// nibbles widened and scaled once for the group), tileRows rows at a time so they stay in cache
// across the token groups; the tokens left over, and smaller batches, run four weight rows at
// a time where the tier has the kernel (each digit load shared by four rows, the four block
// ends finished together; a call runs many groups of four), then two, then one (see
// leftRows).
func (a *asmKernels) q4KRows(dst []float32, m *Matrix, in *Batch, r0, r1 int) {
	nb := in.Cols / kElems
	wide := 0 // tokens [0, wide) run eight a call, [wide, tiled) four
	if a.q4K8 != nil {
		wide = in.Ntok &^ 7
	}
	tiled := in.Ntok &^ 3
	panels := a.q4KPanel4 != nil && tiled >= q4KPanelMinTokens
	if panels {
		a.q4KPanelRows(dst, m, in, r0, r1)
	}
	for b0 := r0; b0 < r1 && tiled > 0 && !panels; b0 += tileRows {
		b1 := min(b0+tileRows, r1)
		for t := 0; t < wide; t += 8 {
			a.q4KTile8(dst, m, in, t, b0, b1)
		}
		for t := wide; t < tiled; t += 4 {
			args := q4KArgs4(in.q4k[t : t+4])
			for r := b0; r < b1; r++ {
				y := a.q4K4(m.Row(r), args, nb)
				for i := range 4 {
					dst[(t+i)*m.Rows+r] = y[i]
				}
			}
		}
	}
	a.leftRows(dst, m, in, r0, r1, tiled, false)
}

// q4KArgs4 points the four-input Q4_K kernels at the prepared inputs ins[:4]: [i], [4+i] and
// [8+i] at input i's digits, sums and scales.
func q4KArgs4(ins []q4KInput) [12]*byte {
	var args [12]*byte
	for i := range 4 {
		x := &ins[i]
		args[i] = (*byte)(unsafe.Pointer(unsafe.SliceData(x.wide.digits)))
		args[4+i] = (*byte)(unsafe.Pointer(unsafe.SliceData(x.wide.sums)))
		args[8+i] = (*byte)(unsafe.Pointer(unsafe.SliceData(x.scale)))
	}
	return args
}

// leftRows computes rows [r0, r1) for the tokens [tiled, in.Ntok), those the tiles leave, with
// the Q4_K kernels, or the Q6_K ones when q6 is set (chosen by a flag rather than passed as func
// values, so that each call stays one indirect call): four weight rows a call where the tier
// has the kernel, then two, then one. One call of the four-row kernel runs a whole span of
// groups of four rows for one token. A lone token (decode) takes the run in one span; two or
// three take spans of tileRows rows, so the span's weights stay in cache from one token to the
// next.
func (a *asmKernels) leftRows(dst []float32, m *Matrix, in *Batch, r0, r1, tiled int, q6 bool) {
	r := r0
	if (q6 && a.q6KQuad != nil || !q6 && a.q4Kr4 != nil) && tiled < in.Ntok {
		rb := m.RowBytes()
		quads := r0 + (r1-r0)&^3
		span := quads - r0
		if in.Ntok-tiled > 1 {
			span = tileRows
		}
		for ; r < quads; r += span {
			e := min(r+span, quads)
			w := m.Data[r*rb : e*rb]
			for t := tiled; t < in.Ntok; t++ {
				x, y := &in.q4k[t], dst[t*m.Rows+r:t*m.Rows+e]
				if q6 {
					a.q6KQuad(w, rb, x.wide.digits, x.scale, y)
				} else {
					a.q4Kr4(w, rb, x.wide.digits, x.wide.sums, x.scale, y)
				}
			}
		}
		r = quads
	}
	for ; r < r1; r += 2 {
		pair := r+1 < r1
		w0, w1 := m.Row(r), m.Row(min(r+1, r1-1)) // the last row of an odd range runs twice
		for t := tiled; t < in.Ntok; t++ {
			x := &in.q4k[t]
			var y [2]float32
			if q6 {
				y = a.q6KPair(w0, w1, x.wide.digits, x.scale)
			} else {
				y = a.q4K(w0, w1, x.wide.digits, x.wide.sums, x.scale)
			}
			dst[t*m.Rows+r] = y[0]
			if pair {
				dst[t*m.Rows+r+1] = y[1]
			}
		}
	}
}

// q4KSpan is how many blocks of a row the eight-input tiles run at a time: eight inputs'
// digits of 1024 columns fill half of a 64 KiB L1 (32 KiB on most cores), so they stay there
// while every row of the tile runs against them.
const q4KSpan = 4

// q4KTile8 computes rows [b0, b1) (at most tileRows) for tokens t to t+7 with the eight-input
// kernel, q4KSpan blocks at a time: the float64 sums carry from span to span in block order,
// exactly as dotQ4K adds them, and are rounded to float32 once at the end.
func (a *asmKernels) q4KTile8(dst []float32, m *Matrix, in *Batch, t, b0, b1 int) {
	nb := in.Cols / kElems
	var y [tileRows][8]float64
	for s0 := 0; s0 < nb; s0 += q4KSpan {
		n := min(q4KSpan, nb-s0)
		var args [24]*byte
		for i := range 8 {
			x := &in.q4k[t+i]
			args[i] = (*byte)(unsafe.Pointer(&x.wide.digits[s0*2*kElems]))
			args[8+i] = (*byte)(unsafe.Pointer(&x.wide.sums[s0*8]))
			args[16+i] = (*byte)(unsafe.Pointer(&x.scale[s0]))
		}
		for r := b0; r < b1; r++ {
			y[r-b0] = a.q4K8(m.Row(r)[s0*q4KBytes:], args, n, y[r-b0])
		}
	}
	storeTile8(dst, m.Rows, t, b0, b1, &y)
}

// storeTile8 rounds the float64 sums y[r-b0] of rows [b0, b1) against tokens t to t+7 to
// float32 and stores them in dst, laid out as a rows kernel lays them (rows results a token).
func storeTile8(dst []float32, rows, t, b0, b1 int, y *[tileRows][8]float64) {
	for r := b0; r < b1; r++ {
		for i, v := range y[r-b0] {
			dst[(t+i)*rows+r] = float32(v)
		}
	}
}

// q4KPanelMinTokens is the smallest batch that runs through panels: writing a panel costs
// about as much as running a few tokens against it (BenchmarkQ4KTileRatio, against four-input
// tiles: 0.88x at 4 tokens, 1.22x at 8, 1.49x at 16, 1.7x at 64).
const q4KPanelMinTokens = 8

// q4KPanelBlock is the size of one block of a Q4_K panel: sixteen rows' scaled weight words
// in dword lanes, and their d, dmin and mins as float64 (see asmgen's q4k_panel.go).
const q4KPanelBlock = 9472

// q4KPanelRows computes rows [r0, r1) for the tokens in groups of four (in.Ntok &^ 3) through
// the panel kernels: each run of sixteen rows is written into a panel once (decoded, scaled
// and laid out a row to a lane) and every group of four tokens runs against it, with no
// decode and no horizontal sum in the inner loop.
func (a *asmKernels) q4KPanelRows(dst []float32, m *Matrix, in *Batch, r0, r1 int) {
	nb := in.Cols / kElems
	buf := a.q4KPanels.pool.Get().(*[]byte)
	defer a.q4KPanels.pool.Put(buf)
	if len(*buf) < nb*q4KPanelBlock {
		*buf = make([]byte, nb*q4KPanelBlock)
	}
	panel := *buf
	tiled := in.Ntok &^ 3
	for b0 := r0; b0 < r1; b0 += 16 {
		rows := min(16, r1-b0)
		a.q4KPanelBuild(panel, panelWindow(m, b0, rows), nb)
		for t := 0; t < tiled; t += 4 {
			y := a.q4KPanel4(panel, q4KArgs4(in.q4k[t:t+4]), nb, rows)
			for i := range 4 {
				copy(dst[(t+i)*m.Rows+b0:(t+i)*m.Rows+b0+rows], y[i][:rows])
			}
		}
	}
}

// panelWindow points at the rows [b0, b0+rows) of m (rows <= 16) that a panel of sixteen lanes
// is built from, the padding lanes repeating the last row.
func panelWindow(m *Matrix, b0, rows int) [16]*byte {
	var w [16]*byte
	for r := range w {
		w[r] = unsafe.SliceData(m.Row(b0 + min(r, rows-1)))
	}
	return w
}

// q4KPanels holds a tier's Q4_K panel memory: a pool of *[]byte, so that concurrent calls
// each get their own and a steady stream of calls allocates nothing.
type q4KPanels struct{ pool sync.Pool }

func newQ4KPanels() *q4KPanels {
	return &q4KPanels{pool: sync.Pool{New: func() any { return new([]byte) }}}
}
