package kernels

import "unsafe"

// q6KRows is the Q6_K rows kernel of a tier (DotQ6K; the batch is already prepared). A batch
// of four tokens or more runs in tiles of one weight row against eight tokens and then four
// (each block's weights decoded and scaled once for the tile), tileRows rows at a time so they
// stay in cache across the token groups; the tokens left over, and smaller batches, run four
// weight rows a call where the tier has the kernel (a call runs every group of four of a run:
// decode's whole matrix in one call), then two, then one.
func (a *asmKernels) q6KRows(dst []float32, m *Matrix, in *Batch, r0, r1 int) {
	nb := in.Cols / kElems
	tiled, wide := 0, 0 // tokens [0, wide) run eight a call, [wide, tiled) four
	if a.q6KTile4 != nil {
		tiled = in.Ntok &^ 3
	}
	if a.q6KTile8 != nil {
		wide = in.Ntok &^ 7
	}
	for b0 := r0; b0 < r1 && tiled > 0; b0 += tileRows {
		b1 := min(b0+tileRows, r1)
		for t := 0; t < wide; t += 8 {
			var args [16]*byte
			for i := range 8 {
				x := &in.q4k[t+i]
				args[i] = (*byte)(unsafe.Pointer(unsafe.SliceData(x.wide.digits)))
				args[8+i] = (*byte)(unsafe.Pointer(unsafe.SliceData(x.scale)))
			}
			for r := b0; r < b1; r++ {
				y := a.q6KTile8(m.Row(r), args, nb)
				for i := range 8 {
					dst[(t+i)*m.Rows+r] = y[i]
				}
			}
		}
		for t := wide; t < tiled; t += 4 {
			var args [8]*byte
			for i := range 4 {
				x := &in.q4k[t+i]
				args[i] = (*byte)(unsafe.Pointer(unsafe.SliceData(x.wide.digits)))
				args[4+i] = (*byte)(unsafe.Pointer(unsafe.SliceData(x.scale)))
			}
			for r := b0; r < b1; r++ {
				y := a.q6KTile4(m.Row(r), args, nb)
				for i := range 4 {
					dst[(t+i)*m.Rows+r] = y[i]
				}
			}
		}
	}
	r := r0
	if a.q6KQuad != nil && tiled < in.Ntok {
		// As in q4KRows: a lone token takes the whole run in one call; two or three take spans
		// of tileRows rows, so the span's weights stay in cache from one token to the next.
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
				x := &in.q4k[t]
				a.q6KQuad(w, rb, x.wide.digits, x.scale, dst[t*m.Rows+r:t*m.Rows+e])
			}
		}
		r = quads
	}
	for ; r+2 <= r1; r += 2 {
		w0, w1 := m.Row(r), m.Row(r+1)
		for t := tiled; t < in.Ntok; t++ {
			x := &in.q4k[t]
			y := a.q6KPair(w0, w1, x.wide.digits, x.scale)
			dst[t*m.Rows+r], dst[t*m.Rows+r+1] = y[0], y[1]
		}
	}
	if r < r1 {
		w := m.Row(r)
		for t := tiled; t < in.Ntok; t++ {
			x := &in.q4k[t]
			dst[t*m.Rows+r] = a.q6KPair(w, w, x.wide.digits, x.scale)[0]
		}
	}
}

// dotQ6K is DotQ6K of one row, through the pair kernel.
func (a *asmKernels) dotQ6K(row []byte, in *Q4KInput) float32 {
	row = row[:in.n/kElems*q6KBytes]
	return a.q6KPair(row, row, in.wide.digits, in.scale)[0]
}
