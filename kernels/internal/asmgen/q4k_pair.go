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
func q4KScaleTables(name string) q4KScaleUnpack {
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
	return q4KScaleUnpack{mems[0], mems[1], mems[2], mems[3], mems[4]}
}

// q4KScaleUnpack holds the five tables of q4KScaleTables, in memory or in registers.
type q4KScaleUnpack struct{ pick, pickHigh, pickTop, keep, top Op }

// inBothHalves loads the tables, 32 bytes each, into both 256-bit halves of zmm registers.
func (u q4KScaleUnpack) inBothHalves() q4KScaleUnpack {
	var r [5]reg.VecVirtual
	for i, t := range []Op{u.pick, u.pickHigh, u.pickTop, u.keep, u.top} {
		r[i] = ZMM()
		VBROADCASTI64X4(t, r[i])
	}
	return q4KScaleUnpack{r[0], r[1], r[2], r[3], r[4]}
}

// unpack unpacks the Q4_K block heads in head, one a 128-bit lane, into sm: their scales and
// mins as bytes (sc_0..7, m_0..7 a lane), with three byte shuffles and two logic ops.
func (u q4KScaleUnpack) unpack(head, sm reg.VecVirtual) {
	VPSHUFB(u.pick, head, sm)
	t := vecOf(head.Size())
	VPSRLW(U8(4), head, t)
	VPSHUFB(u.pickHigh, t, t)
	VPTERNLOGD(U8(0xa8), u.keep, t, sm) // (sm | t) & keep
	VPSRLW(U8(2), head, t)
	VPSHUFB(u.pickTop, t, t)
	VPTERNLOGD(U8(0xf8), u.top, t, sm) // sm | (t & top)
}

// q4KSpreadTable defines name_spread, the VPERMB indices that spread the unpacked scales of
// that many rows' heads (sc_j of row r at byte 16r+j) to dwords: bytes 0 and 2 of dword j of
// row r take sc_j, 32 bytes a row.
func q4KSpreadTable(name string, rows int) Mem {
	spread := GLOBL(name+"_spread", RODATA|NOPTR)
	for p := range 32 * rows {
		DATA(p, U8(16*(p/32)+p%32/4))
	}
	return spread
}

// q4KLowBytesTable defines name_lowBytes, 0x00ff00ff in n dwords: the mask that keeps bytes 0
// and 2 of the spread scales' dwords.
func q4KLowBytesTable(name string, n int) Mem {
	lowBytes := GLOBL(name+"_lowBytes", RODATA|NOPTR)
	for i := range n {
		DATA(4*i, U32(0x00ff00ff))
	}
	return lowBytes
}

// q4KScaleDwords returns the unpacked scales sc_0..7 of sm (a row a 128-bit lane) as dwords
// holding the scale word twice, in a register twice as wide as sm: with VBMI (vnni) one
// VPERMB by spread and a VPANDD with lowBytes; without it (Skylake-X to Cooper Lake have
// AVX-512 but no VPERMB), doubling each byte in its lane and widening the bytes to words,
// which gives the same dwords.
func q4KScaleDwords(vnni bool, sm, spread, lowBytes reg.VecVirtual) reg.VecVirtual {
	sw := vecOf(2 * sm.Size())
	if vnni {
		var wide Op = sm.AsY()
		if sw.Size() == 64 {
			wide = sm.AsZ()
		}
		VPERMB(wide, spread, sw)
		VPANDD(lowBytes, sw, sw)
	} else {
		sc := vecOf(sm.Size())
		VPUNPCKLBW(sm, sm, sc) // sc_0 sc_0 sc_1 sc_1 ... sc_7 sc_7, a row a lane
		VPMOVZXBW(sc, sw)
	}
	return sw
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
//     dotQ4K's float64 steps do (no FMA among them).
func q4KPairKernel(s isa, vnni bool, name string) {
	declare(name, NOSPLIT, "func(w0, w1 []byte, digits []int16, sums, scale []float64) [2]float32",
		name+" returns dotQ4K of the Q4_K rows w0 and w1 against a prepared input.")
	k := q4KPair{s: s, vnni: vnni}
	k.tables = q4KScaleTables(name)
	k.w = []reg.Register{Load(Param("w0").Base(), GP64()), Load(Param("w1").Base(), GP64())}
	k.dig = Load(Param("digits").Base(), GP64())
	k.sums = Load(Param("sums").Base(), GP64())
	k.scale = Load(Param("scale").Base(), GP64())
	n := Load(Param("scale").Len(), GP64())
	k.words = AllocLocal(64)
	if vnni { // the byte permute of VBMI, which the avx512vnni tier assumes (see unpack)
		spread, lowBytes := q4KSpreadTable(name, 2), q4KLowBytesTable(name, 16)
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
	q4KNextBlock(k.w, k.dig, k.sums, k.scale)
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
		q4KNextBlock(k.w, k.dig, k.sums, k.scale)
		DECQ(n)
	}
	JMP(LabelRef("block"))
	Label("last0")
	k.end(a, -1)
	JMP(LabelRef("done"))
	Label("last1")
	k.end(b, -1)
	Label("done")
	storeSumPair(k.y, frameAddr(ReturnIndex(0)), 0)
	VZEROUPPER()
	RET()
}

// q4KPair holds the registers and constants of q4KPairKernel.
type q4KPair struct {
	s                isa
	vnni             bool
	tables           q4KScaleUnpack // in memory
	w                []reg.Register // the two rows' current blocks
	dig, sums, scale reg.Register   // the input's current block
	words            Mem            // row r's scales as dwords (the word twice) at 32r
	mask             reg.VecVirtual // 0x000f in every word
	digit            reg.VecVirtual // float64 65536
	spread, lowBytes reg.VecVirtual // VPERMB indices and mask of the dword scales (VNNI tier)
	y                reg.VecVirtual // row 0's sum in float64 lane 0, row 1's in lane 4
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

// unpack loads the block heads of both rows into b.head, unpacks their scales and mins into
// b.sm and stores them as words for the products' broadcasts.
func (k *q4KPair) unpack(b q4KBlockRegs) {
	for r := range 2 {
		prefetch(Mem{Base: k.w[r], Disp: prefetchAhead}, 144)
	}
	VMOVDQU32(Mem{Base: k.w[0]}, b.head.AsX())
	VINSERTI32X4(U8(1), Mem{Base: k.w[1]}, b.head, b.head)
	k.tables.unpack(b.head, b.sm)
	// Each scale as a dword holding it twice, so that the products broadcast it with a plain
	// load (a word broadcast costs a shuffle too). 32-byte stores: the loads forward from them
	// (a 64-byte store does not forward, and stalls).
	sw := q4KScaleDwords(k.vnni, b.sm, k.spread, k.lowBytes)
	VMOVDQU32(sw.AsY(), k.words)
	x := YMM()
	VEXTRACTI64X4(U8(1), sw, x)
	VMOVDQU32(x, k.words.Offset(32))
}

// products adds the products of chunks c0 to c1-1 (64 elements each: sub-blocks 2c and
// 2c+1) of both rows into b's digit sums; chunk 0 starts them.
func (k *q4KPair) products(b q4KBlockRegs, c0, c1 int) {
	for c := c0; c < c1; c++ {
		d := q4KLoadDigits(k.dig, c) // shared by the rows
		for r := range 2 {
			ql, q := q4KNibbleWords(k.s, Mem{Base: k.w[r]}, c, k.mask, k.words.Offset(32*r), 4)
			q4KChunkProducts(k.s, k.vnni, c, ql, q, d, b.lo[r], b.hi[r])
		}
	}
}

// end finishes block b of both rows and adds v·2^-sh to each row's sum; the input's pointers
// are blocks blocks past b.
func (k *q4KPair) end(b q4KBlockRegs, blocks int) {
	tm := q4KPartialT(b.lo[0], b.lo[1], b.hi[0], b.hi[1], k.digit)
	mins := XMM() // row 0's mins, then row 1's, as bytes
	VPERMQ(U8(0x0d), b.sm, mins.AsY())
	md := ZMM()
	VPMOVZXBD(mins, md)
	m0, m1 := toFloat64(md)
	sums := Mem{Base: k.sums, Disp: 64 * blocks}
	VMULPD(sums, m0, m0)
	VMULPD(sums, m1, m1)
	u, v := q4KJoinTM(tm, m0, m1)
	dd := YMM() // the halves d, dmin of row 0 in dword 0, of row 1 in dword 2
	VPERMQ(U8(0x08), b.head, dd)
	q4KBlockValues(halvesToF64(dd.AsX()), u, v)
	VMULPD_BCST(Mem{Base: k.scale, Disp: 8 * blocks}, u, u)
	VADDPD(u, k.y, k.y)
}

// q4KLoadDigits loads the digits of chunk c of the input's block at dig into four registers
// (see q4KDigits).
func q4KLoadDigits(dig reg.Register, c int) [4]Op {
	r := [4]reg.VecVirtual{ZMM(), ZMM(), ZMM(), ZMM()}
	var d [4]Op
	for i, m := range q4KDigits(Mem{Base: dig}, c) {
		VMOVDQU32(m, r[i])
		d[i] = r[i]
	}
	return d
}

// q4KPartialT returns T's float64 partial sums of a block of two rows (or inputs) a and b,
// four of a's in the low 256 bits and four of b's in the high, from their dword sums with the
// low digit (loA, loB) and the high (hiA, hiB): folded by foldPairs to four dwords each, then
// lo + 65536·hi in one FMA.
func q4KPartialT(loA, loB, hiA, hiB, digit reg.VecVirtual) reg.VecVirtual {
	folded := foldPairs(loA, loB, hiA, hiB) // 128-bit lanes: a's low digit, b's, a's high, b's
	tm := ZMM()
	VCVTDQ2PD(folded.AsY(), tm)
	hiDigit := halfOf(folded, 1)
	hz := ZMM()
	VCVTDQ2PD(hiDigit, hz)
	VFMADD231PD(digit, hz, tm) // exact: an integer below 2^48
	return tm
}

// q4KJoinTM adds up T's partial sums tm (see q4KPartialT) and the products of the mins with
// the input's sub-block sums, eight of a in ma and eight of b in mb, into (T, M) of a in
// float64 lanes 0-1 of u and of b in lanes 4-5; v is free after. Every value is an integer
// below 2^53, so no step rounds.
func q4KJoinTM(tm, ma, mb reg.VecVirtual) (u, v reg.VecVirtual) {
	mm := ZMM() // M's partial sums: four for a, four for b
	VSHUFF64X2(U8(0x44), mb, ma, mm)
	VSHUFF64X2(U8(0xee), mb, ma, ma)
	VADDPD(ma, mm, mm)
	// Per 128-bit lane k: (tm[2k]+tm[2k+1], mm[2k]+mm[2k+1]); then lanes 0 and 2 take (T, M).
	u, v = ZMM(), ZMM()
	VUNPCKLPD(mm, tm, u)
	VUNPCKHPD(mm, tm, v)
	VADDPD(v, u, u)
	VSHUFF64X2(U8(0xb1), u, u, v)
	VADDPD(v, u, u)
	return u, v
}

// halvesToF64 widens the eight halves (float16) at h to float64 in a zmm register, exactly.
func halvesToF64(h Op) reg.VecVirtual {
	df := YMM()
	VCVTPH2PS(h, df)
	dz := ZMM()
	VCVTPS2PD(df, dz)
	return dz
}

// q4KBlockValues leaves fl64(d·T) − fl64(dmin·M) in the even float64 lane of each (T, M)
// pair of u, with (d, dmin) in the same lanes of dz; v is scratch.
func q4KBlockValues(dz, u, v reg.VecVirtual) {
	VMULPD(dz, u, u) // (fl64(d·T), fl64(dmin·M))
	VPERMILPD(U8(0x55), u, v)
	VSUBPD(v, u, u)
}

// storeSumPair rounds the float64 sums in lanes 0 and 4 of y to float32 and stores them at
// out+disp and out+disp+4.
func storeSumPair(y reg.VecVirtual, out reg.Register, disp int) {
	y1 := XMM()
	VEXTRACTF32X4(U8(2), y, y1)
	VCVTSD2SS(y.AsX(), y.AsX(), y.AsX())
	VMOVSS(y.AsX(), Mem{Base: out, Disp: disp})
	VCVTSD2SS(y1, y1, y1)
	VMOVSS(y1, Mem{Base: out, Disp: disp + 4})
}

// addHalves adds the 128-bit lane pairs of x and y (x's to lanes 0-1, y's to 2-3) with add,
// after the lane shuffle shuf: VSHUFI64X2 and VPADDD for dwords, VSHUFF64X2 and VADDPD for
// float64s.
func addHalves(shuf, add func(...Op), x, y reg.VecVirtual) reg.VecVirtual {
	lo, hi := ZMM(), ZMM()
	shuf(U8(0x44), y, x, lo) // x0 x1 y0 y1
	shuf(U8(0xee), y, x, hi) // x2 x3 y2 y3
	add(hi, lo, lo)
	return lo
}

// foldPairs adds the 16 dwords of each of a, b, c and d down to four and returns them in one
// register, the 128-bit lanes in that order: two rounds of lane shuffles and additions.
func foldPairs(a, b, c, d reg.VecVirtual) reg.VecVirtual {
	ab, cd := addHalves(VSHUFI64X2, VPADDD, a, b), addHalves(VSHUFI64X2, VPADDD, c, d)
	r, t := ZMM(), ZMM()
	VSHUFI64X2(U8(0x88), cd, ab, r) // ab0 ab2 cd0 cd2
	VSHUFI64X2(U8(0xdd), cd, ab, t) // ab1 ab3 cd1 cd3
	VPADDD(t, r, r)
	return r
}
