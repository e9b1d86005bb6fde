package kernels

import "unsafe"

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
func (w *q4KWide) prepare(in *Q4KInput) {
	n := in.n
	if cap(w.digits) < 2*n || cap(w.sums) < n/32 {
		w.digits = make([]int16, 2*n)
		w.sums = make([]float64, n/32)
	}
	w.digits, w.sums = w.digits[:2*n], w.sums[:n/32]
	for g := range n / 32 {
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

// dotQ4K is DotQ4K of one row, through the two-row kernel.
func (a *asmKernels) dotQ4K(row []byte, in *Q4KInput) float32 {
	row = row[:in.n/kElems*q4KBytes]
	return a.q4K(row, row, in.wide.digits, in.wide.sums, in.scale)[0]
}

// q4KRows is the Q4_K rows kernel of a tier. A batch of four tokens or more runs in tiles of
// one weight row against four tokens (the nibbles widened and scaled once for the four),
// tileRows rows at a time so they stay in cache across the token groups; the tokens left over,
// and smaller batches, run two weight rows a call.
func (a *asmKernels) q4KRows(dst []float32, m *Matrix, in *Batch, r0, r1 int) {
	nb := in.Cols / kElems
	tiled := in.Ntok &^ 3
	for b0 := r0; b0 < r1 && tiled > 0; b0 += tileRows {
		b1 := min(b0+tileRows, r1)
		for t := 0; t < tiled; t += 4 {
			var args [12]*byte
			for i := range 4 {
				x := &in.q4k[t+i]
				args[i] = (*byte)(unsafe.Pointer(unsafe.SliceData(x.wide.digits)))
				args[4+i] = (*byte)(unsafe.Pointer(unsafe.SliceData(x.wide.sums)))
				args[8+i] = (*byte)(unsafe.Pointer(unsafe.SliceData(x.scale)))
			}
			for r := b0; r < b1; r++ {
				y := a.q4K4(m.Row(r), args, nb)
				for i := range 4 {
					dst[(t+i)*m.Rows+r] = y[i]
				}
			}
		}
	}
	r := r0
	for ; r+2 <= r1; r += 2 {
		w0, w1 := m.Row(r), m.Row(r+1)
		for t := tiled; t < in.Ntok; t++ {
			x := &in.q4k[t]
			y := a.q4K(w0, w1, x.wide.digits, x.wide.sums, x.scale)
			dst[t*m.Rows+r], dst[t*m.Rows+r+1] = y[0], y[1]
		}
	}
	if r < r1 {
		w := m.Row(r)
		for t := tiled; t < in.Ntok; t++ {
			x := &in.q4k[t]
			dst[t*m.Rows+r] = a.q4K(w, w, x.wide.digits, x.wide.sums, x.scale)[0]
		}
	}
}
