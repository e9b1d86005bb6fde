package main

import (
	"fmt"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	"github.com/mmcloughlin/avo/reg"
)

// q4KScaleTables returns the constant tables of q4KPairKernel's vector scale unpack, 32 bytes
// each (one 16-byte pattern per 128-bit lane, a row a lane), named after the kernel:
//
//	pick      VPSHUFB indices: sc_0..3 ← s[0..3], sc_4..7 ← s[8..11], m_0..3 ← s[4..7]
//	pickHigh  VPSHUFB indices into the block shifted right by 4: m_4..7 ← s[8..11]>>4
//	pickTop   VPSHUFB indices into the block shifted right by 2: sc_4..7 ← s[0..3]>>2,
//	          m_4..7 ← s[4..7]>>2 (bits 6-7 land in bits 4-5)
//	keep      the masks of the low parts: 0x3f for sc_0..3 and m_0..3, 0x0f for the rest
//	top       0x30 in every byte: bits 4-5
//
// Output byte p of a lane is sc_p for p < 8 and m_{p-8} for p >= 8 (the layout scaleMinK4
// reads); the scale bytes s sit at bytes 4-15 of a block, after d and dmin. An index of 0x80
// gives a zero byte.
func q4KScaleTables(name string) (pick, pickHigh, pickTop, keep, top Mem) {
	const zero = 0x80
	var lane [5][16]byte
	for p := range 16 {
		lane[0][p], lane[1][p], lane[2][p] = zero, zero, zero
		switch j := p % 8; {
		case p < 8 && j < 4: // sc_j = s[j] & 63
			lane[0][p], lane[3][p] = byte(4+j), 0x3f
		case p < 8: // sc_j = s[j+4] & 15 | (s[j-4] >> 6) << 4
			lane[0][p], lane[2][p], lane[3][p] = byte(8+j), byte(j), 0x0f
		case j < 4: // m_j = s[j+4] & 63
			lane[0][p], lane[3][p] = byte(8+j), 0x3f
		default: // m_j = s[j+4] >> 4 | (s[j] >> 6) << 4
			lane[1][p], lane[2][p], lane[3][p] = byte(8+j), byte(4+j), 0x0f
		}
		lane[4][p] = 0x30
	}
	var mems [5]Mem
	for t, suffix := range []string{"pick", "pickHigh", "pickTop", "keep", "top"} {
		mems[t] = GLOBL(name+"_"+suffix, RODATA|NOPTR)
		for i := range 32 {
			DATA(i, U8(lane[t][i%16]))
		}
	}
	return mems[0], mems[1], mems[2], mems[3], mems[4]
}

// q4KPairKernel emits the AVX-512 form of q4KDot2 (see q4KKernel), which does the per-block
// work of the two rows together (175 instructions a block for both rows, against 229 for the
// row-at-a-time form; it runs 5-10% faster in cache, since the multiplies, 48 a block, bound it):
//
//   - The two block heads (d, dmin and the 12 scale bytes) go into the two 128-bit lanes of
//     one register and are unpacked to 8 scales and 8 mins per row with three byte shuffles
//     and two logic ops, instead of two dozen general-register bit moves a row. The scales are
//     stored as dwords holding the scale word twice, so that the products broadcast them with
//     a plain dword load (a word broadcast costs a shuffle too: 11% slower).
//   - The digit registers of each 64-element group are loaded once for both rows.
//   - The block end folds the four accumulators (two rows × two digits) together: two rounds of
//     128-bit lane shuffles leave four dwords a row and digit (each the sum of 64 products,
//     below 2^31: exact), converted to float64 eight at a time; T's partial sums come from one
//     multiply-add by 65536 and M's from the two rows' mins times the shared sums, all exact
//     integers below 2^53, so no step rounds. The rows' (T, M) pairs then sit in float64 lanes
//     0-1 and 4-5 of one register, and d·T, dmin·M, their difference, the product with 2^-sh
//     and the addition to y are one instruction for both rows, each lane rounding exactly as
//     DotQ4K's float64 steps do (no FMA among them).
func q4KPairKernel(s isa, vnni bool, name string) {
	TEXT(name, NOSPLIT, "func(w0, w1 []byte, digits []int16, sums, scale []float64) [2]float32")
	Pragma("noescape")
	Doc(name + " returns DotQ4K of the Q4_K rows w0 and w1 against a prepared input.")
	k := q4KPair{s: s, vnni: vnni}
	k.pick, k.pickHigh, k.pickTop, k.keep, k.top = q4KScaleTables(name)
	k.w = []reg.Register{Load(Param("w0").Base(), GP64()), Load(Param("w1").Base(), GP64())}
	k.dig = Load(Param("digits").Base(), GP64())
	k.sums = Load(Param("sums").Base(), GP64())
	k.scale = Load(Param("scale").Base(), GP64())
	n := Load(Param("scale").Len(), GP64())
	k.words = AllocLocal(64)
	if vnni { // the byte permute of VBMI, which the avx512vnni tier assumes (see unpack)
		spread := GLOBL(name+"_spread", RODATA|NOPTR)
		for p := range 64 { // byte p: bytes 0 and 2 of dword j of row r take sc_j (byte 16r+j of sm)
			DATA(p, U8(16*(p/32)+p%32/4))
		}
		lowBytes := GLOBL(name+"_lowBytes", RODATA|NOPTR)
		for i := range 16 {
			DATA(4*i, U32(0x00ff00ff))
		}
		k.spread, k.lowBytes = ZMM(), ZMM()
		VMOVDQU32(spread, k.spread)
		VMOVDQU32(lowBytes, k.lowBytes)
	}
	k.mask = broadcast(s, 0x000f000f)
	k.digit = ZMM()
	VBROADCASTSD(s.f64Digit, k.digit)
	k.y = ZMM()
	VXORPD(k.y, k.y, k.y)
	TESTQ(n, n)
	JZ(LabelRef("done"))
	// The loop is software-pipelined: the end of block b-1 (a long chain of dependent steps)
	// sits between the halves of block b's products, so the core works on both at once. It is
	// unrolled twice so that the two blocks in flight swap register sets without moves.
	a, b := k.newBlock(), k.newBlock()
	k.unpack(a)
	k.products(a, 0, 4)
	k.advance()
	DECQ(n)
	Label("block")
	for i, p := range [][2]q4KBlockRegs{{a, b}, {b, a}} {
		last := fmt.Sprintf("last%d", i)
		prev, cur := p[0], p[1]
		TESTQ(n, n)
		JZ(LabelRef(last))
		k.unpack(cur)
		k.products(cur, 0, 2)
		k.end(prev, -1)
		k.products(cur, 2, 4)
		k.advance()
		DECQ(n)
	}
	JMP(LabelRef("block"))
	Label("last0")
	k.end(a, -1)
	JMP(LabelRef("done"))
	Label("last1")
	k.end(b, -1)
	Label("done")
	out := frameAddr(ReturnIndex(0))
	y1 := XMM()
	VEXTRACTF32X4(U8(2), k.y, y1)
	VCVTSD2SS(k.y.AsX(), k.y.AsX(), k.y.AsX())
	VMOVSS(k.y.AsX(), Mem{Base: out})
	VCVTSD2SS(y1, y1, y1)
	VMOVSS(y1, Mem{Base: out, Disp: 4})
	VZEROUPPER()
	RET()
}

// q4KPair holds the registers and constants of q4KPairKernel.
type q4KPair struct {
	s                                  isa
	vnni                               bool
	pick, pickHigh, pickTop, keep, top Mem
	w                                  []reg.Register // the two rows' current blocks
	dig, sums, scale                   reg.Register   // the input's current block
	words                              Mem            // row r's scales as dwords (the word twice) at 32r
	mask                               reg.VecVirtual // 0x000f in every word
	digit                              reg.VecVirtual // float64 65536
	spread, lowBytes                   reg.VecVirtual // VPERMB indices and mask of the dword scales (VNNI tier)
	y                                  reg.VecVirtual // row 0's sum in float64 lane 0, row 1's in lane 4
}

// q4KBlockRegs is one block of the two rows in flight: its digit sums (the dword products
// with the low and the high digit, a row each) and its head and unpacked scales.
type q4KBlockRegs struct {
	lo, hi   []reg.VecVirtual
	head, sm reg.VecVirtual // the first 16 bytes of each row's block, a row a lane; sc_0..7, m_0..7
}

func (k *q4KPair) newBlock() q4KBlockRegs {
	return q4KBlockRegs{lo: []reg.VecVirtual{ZMM(), ZMM()}, hi: []reg.VecVirtual{ZMM(), ZMM()}, head: YMM(), sm: YMM()}
}

// advance moves the pointers to the next block.
func (k *q4KPair) advance() {
	for r := range 2 {
		ADDQ(U32(144), k.w[r])
	}
	ADDQ(U32(1024), k.dig)
	ADDQ(U32(64), k.sums)
	ADDQ(U8(8), k.scale)
}

// unpack loads the block heads of both rows into b.head, unpacks their scales and mins into
// b.sm and stores them as words for the products' broadcasts.
func (k *q4KPair) unpack(b q4KBlockRegs) {
	for r := range 2 {
		for off := 0; off < 144; off += 64 {
			PREFETCHT0(Mem{Base: k.w[r], Disp: prefetchAhead + off})
		}
	}
	VMOVDQU32(Mem{Base: k.w[0]}, b.head.AsX())
	VINSERTI32X4(U8(1), Mem{Base: k.w[1]}, b.head, b.head)
	VPSHUFB(k.pick, b.head, b.sm)
	t := YMM()
	VPSRLW(U8(4), b.head, t)
	VPSHUFB(k.pickHigh, t, t)
	VPTERNLOGD(U8(0xa8), k.keep, t, b.sm) // (sm | t) & keep
	VPSRLW(U8(2), b.head, t)
	VPSHUFB(k.pickTop, t, t)
	VPTERNLOGD(U8(0xf8), k.top, t, b.sm) // sm | (t & top)
	// Each scale as a dword holding it twice, so that the products broadcast it with a plain
	// load (a word broadcast costs a shuffle too). 32-byte stores: the loads forward from them
	// (a 64-byte store does not forward, and stalls).
	sw := ZMM()
	if k.vnni {
		VPERMB(b.sm.AsZ(), k.spread, sw)
		VPANDD(k.lowBytes, sw, sw)
	} else {
		// Without VBMI (Skylake-X to Cooper Lake have AVX-512 but no VPERMB): doubling each
		// byte in its lane and widening the bytes to words gives the same dwords.
		sc := YMM()
		VPUNPCKLBW(b.sm, b.sm, sc) // sc_0 sc_0 sc_1 sc_1 ... sc_7 sc_7, a row a lane
		VPMOVZXBW(sc, sw)
	}
	VMOVDQU32(sw.AsY(), k.words)
	x := YMM()
	VEXTRACTI64X4(U8(1), sw, x)
	VMOVDQU32(x, k.words.Offset(32))
}

// products adds the products of chunks c0 to c1-1 (64 elements each: sub-blocks 2c and
// 2c+1) of both rows into b's digit sums; chunk 0 starts them.
func (k *q4KPair) products(b q4KBlockRegs, c0, c1 int) {
	for c := c0; c < c1; c++ {
		// Digits of sub-blocks 2c (low nibbles) and 2c+1 (high nibbles), shared by the rows.
		d := [4]reg.VecVirtual{ZMM(), ZMM(), ZMM(), ZMM()}
		for i := range d {
			VMOVDQU32(Mem{Base: k.dig, Disp: 128*(2*c+i/2) + 64*(i%2)}, d[i])
		}
		for r := range 2 {
			q := ZMM()
			VPMOVZXBW(Mem{Base: k.w[r], Disp: 16 + 32*c}, q)
			ql := ZMM()
			VPANDD(k.mask, q, ql)
			VPSRLW(U8(4), q, q)
			sc := ZMM()
			VPBROADCASTD(k.words.Offset(32*r+4*(2*c)), sc)
			VPMULLW(sc, ql, ql)
			VPBROADCASTD(k.words.Offset(32*r+4*(2*c+1)), sc)
			VPMULLW(sc, q, q)
			for i, p := range []struct{ q, acc reg.VecVirtual }{{ql, b.lo[r]}, {ql, b.hi[r]}, {q, b.lo[r]}, {q, b.hi[r]}} {
				if c == 0 && i < 2 { // the first products start the sums
					VPMADDWD(d[i], p.q, p.acc)
				} else {
					madd(k.s, k.vnni, p.q, d[i], p.acc)
				}
			}
		}
	}
}

// end finishes block b of both rows and adds v·2^-sh to each row's sum; the input's pointers
// are blocks blocks past b.
func (k *q4KPair) end(b q4KBlockRegs, blocks int) {
	// Lanes (128-bit) of folded: row 0 low digit, row 1 low, row 0 high, row 1 high.
	folded := foldPairs(b.lo[0], b.lo[1], b.hi[0], b.hi[1])
	tm := ZMM() // T's partial sums: four for row 0, four for row 1
	VCVTDQ2PD(folded.AsY(), tm)
	hiDigit := YMM()
	VEXTRACTI64X4(U8(1), folded, hiDigit)
	hz := ZMM()
	VCVTDQ2PD(hiDigit, hz)
	VFMADD231PD(k.digit, hz, tm) // exact: an integer below 2^48

	mins := XMM() // row 0's mins, then row 1's, as bytes
	VPERMQ(U8(0x0d), b.sm, mins.AsY())
	md := ZMM()
	VPMOVZXBD(mins, md)
	m0, m1 := ZMM(), ZMM()
	VCVTDQ2PD(md.AsY(), m0)
	mh := YMM()
	VEXTRACTI64X4(U8(1), md, mh)
	VCVTDQ2PD(mh, m1)
	sums := Mem{Base: k.sums, Disp: 64 * blocks}
	VMULPD(sums, m0, m0)
	VMULPD(sums, m1, m1)
	mm := ZMM() // M's partial sums: four for row 0, four for row 1
	VSHUFF64X2(U8(0x44), m1, m0, mm)
	VSHUFF64X2(U8(0xee), m1, m0, m0)
	VADDPD(m0, mm, mm)

	// Per 128-bit lane k: (tm[2k]+tm[2k+1], mm[2k]+mm[2k+1]); then lanes 0 and 2 (float64
	// lanes 0-1 and 4-5) take (T, M) of rows 0 and 1.
	u, v := ZMM(), ZMM()
	VUNPCKLPD(mm, tm, u)
	VUNPCKHPD(mm, tm, v)
	VADDPD(v, u, u)
	VSHUFF64X2(U8(0xb1), u, u, v)
	VADDPD(v, u, u)
	dd := YMM() // the halves d, dmin of row 0 in dword 0, of row 1 in dword 2
	VPERMQ(U8(0x08), b.head, dd)
	df := YMM()
	VCVTPH2PS(dd.AsX(), df)
	dz := ZMM()
	VCVTPS2PD(df, dz)
	VMULPD(dz, u, u) // (fl64(d·T), fl64(dmin·M)) a row
	VPERMILPD(U8(0x55), u, v)
	VSUBPD(v, u, u)
	VMULPD_BCST(Mem{Base: k.scale, Disp: 8 * blocks}, u, u)
	VADDPD(u, k.y, k.y)
}

// foldPairs adds the 16 dwords of each of a, b, c and d down to four and returns them in one
// register, the 128-bit lanes in that order: two rounds of lane shuffles and additions.
func foldPairs(a, b, c, d reg.VecVirtual) reg.VecVirtual {
	half := func(x, y reg.VecVirtual) reg.VecVirtual {
		lo, hi := ZMM(), ZMM()
		VSHUFI64X2(U8(0x44), y, x, lo) // x0 x1 y0 y1
		VSHUFI64X2(U8(0xee), y, x, hi) // x2 x3 y2 y3
		VPADDD(hi, lo, lo)
		return lo
	}
	ab, cd := half(a, b), half(c, d)
	r, t := ZMM(), ZMM()
	VSHUFI64X2(U8(0x88), cd, ab, r) // ab0 ab2 cd0 cd2
	VSHUFI64X2(U8(0xdd), cd, ab, t) // ab1 ab3 cd1 cd3
	VPADDD(t, r, r)
	return r
}
