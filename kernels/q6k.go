package kernels

// dotQ6K is the Q6_K row dot, defined in exact integers on the same prepared input as dotQ4K
// (see q4KInput): for each 256-element block with fixed-point inputs X and scale 2^-sh,
//
//	T = Σ_j sc_j · Σ_{k in sub-block j} (q_k − 32)·X_k    (exact int64; sub-blocks of 16)
//	v = fl64(d·T)                                          (d the block's f16 value)
//
// then y = +0 and y = fl64(y + v·2^-sh) over the blocks in order (the scaling is exact), and
// the result is float32(y), one rounding. d·T is the exact dot of the block's dequantized
// weights with X, so v is that dot rounded once; every sum before it is an exact integer, so a
// tier may add them in any order or width and give the same bits. (|T| < 2^51: 256 terms of at
// most 4096·2^31.) A block of x holding a NaN or an infinity makes the result NaN. in must have
// been prepared from as many floats as row holds elements.
func dotQ6K(row []byte, in *q4KInput) float32 { return dotBlocks(row, in, q6KBytes, q6KBlock) }

// q6KBlock returns v for block b of a Q6_K row (see dotQ6K). The block is 128 bytes of low
// nibbles, 64 bytes of high bit pairs, 16 int8 scales and the f16 d: in each half h of 128
// elements, element 32c+l (c < 4, l < 32) takes its low four bits from nibble c>>1 of byte
// 64h+32(c&1)+l and its high two from bits 2c, 2c+1 of byte 128+32h+l.
func q6KBlock(blk []byte, in *q4KInput, b int) float64 {
	blk = blk[:q6KBytes]
	ql, qh, sc := blk[0:128], blk[128:192], blk[192:208]
	d := float64(half(blk[208:]))
	X := in.x[b*kElems : (b+1)*kElems]
	var t int64
	for j := range 16 { // sub-block j: elements 16j .. 16j+15
		h, c, l0 := j/8, j/2%4, 16*(j%2)
		low := ql[64*h+32*(c&1):]
		shift := 4 * (c >> 1)
		var s int64
		for l := l0; l < l0+16; l++ {
			q := int64(low[l]>>shift&15) | int64(qh[32*h+l]>>(2*c)&3)<<4
			s += (q - 32) * int64(X[128*h+32*c+l])
		}
		t += int64(int8(sc[j])) * s
	}
	return d * float64(t)
}
