package main

import (
	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	"github.com/mmcloughlin/avo/reg"
)

// q4KRows4Kernel emits
//
//	func q4KRows4<suffix>(w []byte, rowBytes int, digits []int16, sums, scale []float64, dst []float32)
//
// which stores in dst DotQ4K of len(dst) Q4_K rows (a multiple of four) against one prepared
// input (its q4KWide digits and sums and its len(scale) block scales): w holds the rows one
// after another, rowBytes bytes (len(scale) blocks) each. It is q4KPairKernel widened to four
// rows, for decode, where one token meets every row; one call runs every group of four rows of
// a run, so the Go driver's slicing, indirect call and copy per group (5% of a one-thread
// decode profile) are gone: 1.08× (1024×2048) and 1.17× (2048×1024) faster a row in cache,
// 1.06× and 1.16× streamed, than one call a group.
// Measured, the kernel is bound by its instruction count (each instruction costs about the
// same, loads and broadcasts included), so everything shared by the rows is done once:
//
//   - Each digit register is loaded once for the four rows.
//   - The four block heads go into the four 128-bit lanes of one register and are unpacked
//     with the byte shuffles of q4KPairKernel (q4KScaleTables, in both 256-bit halves); two
//     byte permutes spread the scales to dwords, stored. The nibble words are scaled by a
//     dword multiply with the scale broadcast from memory (VPMULLD's embedded broadcast): it
//     scales both words of each dword, since sc·q <= 945 never carries into the high word, and
//     takes one instruction where a word multiply takes two (a broadcast and the multiply;
//     3-4% faster in cache).
//   - The block end finishes the four rows together: the eight accumulators (row × digit) fold
//     to four dwords each (two foldPairs: 64 products a dword, below 2^31), go to float64, and
//     T's partial sums form with one exact multiply-add by 65536 per pair of rows. M's partial
//     sums come in the same layout from two more byte permutes of the mins (to dwords:
//     m_0..3 then m_4..7 of each row of a pair), the sums 0-3 and 4-7 broadcast to both
//     halves, one multiply and one exact multiply-add. Then (T, M) of row r lands in float64
//     lanes 2r and 2r+1 of one register, and d·T, dmin·M, their difference, the product with
//     2^-sh and the addition to y are one instruction for the four rows, each lane rounding
//     exactly as DotQ4K's float64 steps do. Every value before those steps is an integer below
//     2^53, so the multiply-adds there are exact.
//   - The prefetch runs one stream over the rows' bytes, four rows' blocks (576 bytes) a block,
//     a whole number of groups of four rows ahead (at least prefetchAhead bytes): the rows of
//     a call are contiguous, and so are the calls of a decode pass. Streamed from RAM it runs
//     within 3-11% of its speed on weights in L2 (BenchmarkStreamPrefetch), and no other scheme
//     measured faster: 2 or 8 KiB ahead, PREFETCHT1/T2/NTA, a far T1 or T2 level besides,
//     a line in two (0.72-0.98×), the next call whole at the start (0.85-0.97×).
//
// It is not software-pipelined as the pair kernel is: the out-of-order core already overlaps
// one block's end with the next block's products (the next block's accumulators are fresh
// registers), and a pipelined form measured no faster.
func q4KRows4Kernel(s isa, vnni bool) {
	name := "q4KRows4" + s.suffix
	if vnni {
		name += "VNNI"
	}
	TEXT(name, NOSPLIT, "func(w []byte, rowBytes int, digits []int16, sums, scale []float64, dst []float32)")
	Pragma("noescape")
	Doc(name + " stores in dst DotQ4K of len(dst)/4 groups of four contiguous Q4_K rows of w (rowBytes each) against a prepared input.")
	k := q4KRows4{s: s, vnni: vnni}
	pick, pickHigh, pickTop, keep, top := q4KScaleTables(name)
	spread := GLOBL(name+"_spread", RODATA|NOPTR)
	for p := range 128 { // dword j of row r takes sc_j (byte 16r+j of the unpacked heads); a mask keeps byte 0
		DATA(p, U8(16*(p/32)+p%32/4))
	}
	// The mins as dwords, a pair of rows a register: (m_0..3 of row 2i, m_0..3 of row 2i+1,
	// m_4..7 of row 2i, m_4..7 of row 2i+1); m_j of row r is byte 16r+8+j of the unpacked heads.
	mins := GLOBL(name+"_mins", RODATA|NOPTR)
	for i := range 2 {
		for p := range 64 {
			d := p / 4
			r, j := 2*i+d%8/4, 4*(d/8)+d%4
			DATA(64*i+p, U8(16*r+8+j))
		}
	}
	heads := GLOBL(name+"_heads", RODATA|NOPTR)
	for r := range 4 { // dword r takes the first dword (d and dmin) of head lane r
		DATA(4*r, U32(uint32(4*r)))
	}

	groups := Load(Param("dst").Len(), GP64())
	SHRQ(U8(2), groups)
	JZ(LabelRef("done"))
	k.w = Load(Param("w").Base(), GP64())
	k.rb = Load(Param("rowBytes"), GP64())
	sums := Load(Param("sums").Base(), GP64())
	scale := Load(Param("scale").Base(), GP64())
	n := Load(Param("scale").Len(), GP64())
	dst := Load(Param("dst").Base(), GP64())
	k.rb3 = GP64()
	LEAQ(Mem{Base: k.rb, Index: k.rb, Scale: 2}, k.rb3)
	// The block's offset from the end of scale, in bytes, counts up to zero: the loop's
	// counter and the index of the input's sums (eight times it) and scale.
	k.off = GP64()
	SHLQ(U8(3), n)
	LEAQ(Mem{Base: sums, Index: n, Scale: 8}, sums)
	ADDQ(n, scale)
	k.sums, k.scale = Mem{Base: sums, Index: k.off, Scale: 8}, Mem{Base: scale, Index: k.off, Scale: 1}
	// The prefetch distance: whole groups (4·rowBytes) until it reaches prefetchAhead. (The
	// callers pass rows of len(scale) blocks; with empty rows there is nothing to prefetch,
	// and the distance would never grow.)
	k.ahead = GP64()
	MOVQ(U32(prefetchAhead), k.ahead)
	TESTQ(k.rb, k.rb)
	JZ(LabelRef("far"))
	XORQ(k.ahead, k.ahead)
	Label("ahead")
	LEAQ(Mem{Base: k.ahead, Index: k.rb, Scale: 4}, k.ahead)
	CMPQ(k.ahead, U32(prefetchAhead))
	JB(LabelRef("ahead"))
	Label("far")

	k.words = AllocLocal(128)
	for i, t := range []Mem{pick, pickHigh, pickTop, keep, top} {
		k.tables[i] = ZMM()
		VBROADCASTI64X4(t, k.tables[i])
	}
	for i := range 2 {
		k.spread[i], k.mins[i] = ZMM(), ZMM()
		VMOVDQU64(spread.Offset(64*i), k.spread[i])
		VMOVDQU64(mins.Offset(64*i), k.mins[i])
	}
	k.heads = ZMM()
	VMOVDQU32(heads, k.heads.AsX())
	k.mask = broadcast(s, 0x000f000f)
	k.low = K()
	bits := GP64()
	MOVQ(U64(0x1111111111111111), bits) // byte 0 of each dword
	KMOVQ(bits, k.low)

	// One group of four rows: the block loop of a single four-row dot product.
	Label("group")
	k.y = ZMM()
	VXORPD(k.y, k.y, k.y)
	k.dig = Load(Param("digits").Base(), GP64())
	MOVQ(n, k.off)
	NEGQ(k.off)
	JZ(LabelRef("store"))

	Label("block")
	head, sm := k.unpack()
	lo, hi := k.products()
	k.end(head, sm, lo, hi)
	ADDQ(U32(144), k.w)
	ADDQ(U32(1024), k.dig)
	ADDQ(U32(4*144-144), k.ahead) // the prefetch stream runs four rows' blocks a block
	ADDQ(U8(8), k.off)
	JNZ(LabelRef("block"))

	Label("store")
	// float32(y) of each row: float64 lanes 0, 2, 4, 6 round to float lanes 0, 2, 4, 6, which
	// VPMOVQD packs into four.
	f := YMM()
	VCVTPD2PS(k.y, f)
	VPMOVQD(f, Mem{Base: dst})
	ADDQ(U8(16), dst)
	// The block loop left w one row on (and the stream three rows further): on to the next
	// group, the prefetch distance as it was.
	ADDQ(k.rb3, k.w)
	SUBQ(k.rb3, k.ahead)
	DECQ(groups)
	JNZ(LabelRef("group"))
	VZEROUPPER()

	Label("done")
	RET()
}

// q4KRows4 holds the registers and constants of q4KRows4Kernel.
type q4KRows4 struct {
	s           isa
	vnni        bool
	w           reg.Register      // row 0 of the group at the current block
	rb, rb3     reg.Register      // the bytes of one row and of three
	ahead       reg.Register      // the prefetch stream's distance from w
	dig, off    reg.Register      // the input's digits at the current block; see off's comment
	sums, scale Mem               // the input's sums and scale at the current block
	words       Mem               // row r's scales as dwords at 32r
	tables      [5]reg.VecVirtual // q4KScaleTables in both 256-bit halves: pick, pickHigh, pickTop, keep, top
	spread      [2]reg.VecVirtual // VPERMB indices of the scale dwords, rows 0-1 and 2-3
	mins        [2]reg.VecVirtual // VPERMB indices of the min dwords, rows 0-1 and 2-3
	heads       reg.VecVirtual    // VPERMD indices of the four rows' d and dmin
	mask        reg.VecVirtual    // 0x000f in every word
	low         reg.OpmaskVirtual // byte 0 of each dword
	y           reg.VecVirtual    // row r's sum in float64 lane 2r
}

// row returns the address of the current block of row r, plus disp.
func (k *q4KRows4) row(r, disp int) Mem {
	switch r {
	case 0:
		return Mem{Base: k.w, Disp: disp}
	case 3:
		return Mem{Base: k.w, Index: k.rb3, Scale: 1, Disp: disp}
	}
	return Mem{Base: k.w, Index: k.rb, Scale: uint8(r), Disp: disp}
}

// unpack prefetches, loads the four block heads into head (row r in 128-bit lane r), unpacks
// their scales and mins into sm (the layout of q4KScaleTables, a row a lane) and stores the
// scales as dwords for the products' broadcasts.
func (k *q4KRows4) unpack() (head, sm reg.VecVirtual) {
	for off := 0; off < 4*144; off += 64 {
		PREFETCHT0(Mem{Base: k.w, Index: k.ahead, Scale: 1, Disp: off})
	}
	head = ZMM()
	VMOVDQU32(k.row(0, 0), head.AsX())
	for r := 1; r < 4; r++ {
		VINSERTI32X4(U8(r), k.row(r, 0), head, head)
	}
	pick, pickHigh, pickTop, keep, top := k.tables[0], k.tables[1], k.tables[2], k.tables[3], k.tables[4]
	sm = ZMM()
	VPSHUFB(pick, head, sm)
	t := ZMM()
	VPSRLW(U8(4), head, t)
	VPSHUFB(pickHigh, t, t)
	VPTERNLOGD(U8(0xa8), keep, t, sm) // (sm | t) & keep
	VPSRLW(U8(2), head, t)
	VPSHUFB(pickTop, t, t)
	VPTERNLOGD(U8(0xf8), top, t, sm) // sm | (t & top)
	// 32-byte stores: the broadcast loads forward from them (a 64-byte store measured slower).
	for i := range 2 {
		sw := ZMM()
		VPERMB_Z(sm, k.spread[i], k.low, sw)
		VMOVDQU32(sw.AsY(), k.words.Offset(64*i))
		x := YMM()
		VEXTRACTI64X4(U8(1), sw, x)
		VMOVDQU32(x, k.words.Offset(64*i+32))
	}
	return head, sm
}

// products returns the dword sums of the block's products of each row with the low and the
// high digits.
func (k *q4KRows4) products() (lo, hi [4]reg.VecVirtual) {
	for r := range 4 {
		lo[r], hi[r] = ZMM(), ZMM()
	}
	for c := range 4 {
		// Digits of sub-blocks 2c (low nibbles) and 2c+1 (high nibbles), shared by the rows.
		d := [4]reg.VecVirtual{ZMM(), ZMM(), ZMM(), ZMM()}
		for i := range d {
			VMOVDQU32(Mem{Base: k.dig, Disp: 128*(2*c+i/2) + 64*(i%2)}, d[i])
		}
		for r := range 4 {
			q := ZMM()
			VPMOVZXBW(k.row(r, 16+32*c), q)
			ql := ZMM()
			VPANDD(k.mask, q, ql)
			VPSRLW(U8(4), q, q)
			// A dword multiply by the scale scales both words of each dword: sc·q <= 945
			// never carries into the high word.
			VPMULLD_BCST(k.words.Offset(32*r+4*(2*c)), ql, ql)
			VPMULLD_BCST(k.words.Offset(32*r+4*(2*c+1)), q, q)
			for i, p := range []struct{ q, acc reg.VecVirtual }{{ql, lo[r]}, {ql, hi[r]}, {q, lo[r]}, {q, hi[r]}} {
				if c == 0 && i < 2 { // the first products start the sums
					VPMADDWD(d[i], p.q, p.acc)
				} else {
					madd(k.s, k.vnni, p.q, d[i], p.acc)
				}
			}
		}
	}
	return lo, hi
}

// end finishes the block of the four rows and adds v·2^-sh to each row's sum.
func (k *q4KRows4) end(head, sm reg.VecVirtual, lo, hi [4]reg.VecVirtual) {
	// T's partial sums: four a row, rows 0-1 in tm[0], rows 2-3 in tm[1].
	flo := foldPairs(lo[0], lo[1], lo[2], lo[3]) // 128-bit lane r: row r's four dwords
	fhi := foldPairs(hi[0], hi[1], hi[2], hi[3])
	var tm [2]reg.VecVirtual
	for i := range 2 {
		l, h := ZMM(), ZMM()
		if i == 0 {
			VCVTDQ2PD(flo.AsY(), l)
			VCVTDQ2PD(fhi.AsY(), h)
		} else {
			x := YMM()
			VEXTRACTI64X4(U8(1), flo, x)
			VCVTDQ2PD(x, l)
			VEXTRACTI64X4(U8(1), fhi, x)
			VCVTDQ2PD(x, h)
		}
		VFMADD231PD_BCST(k.s.f64Digit, h, l) // exact: an integer below 2^48
		tm[i] = l
	}
	// M's partial sums in the same layout: m_0..3·sums_0..3 + m_4..7·sums_4..7 (exact).
	slo, shi := ZMM(), ZMM()
	VBROADCASTF64X4(k.sums, slo)
	VBROADCASTF64X4(k.sums.Offset(32), shi)
	var uv [2]reg.VecVirtual
	for i := range 2 {
		md := ZMM()
		VPERMB_Z(sm, k.mins[i], k.low, md)
		a, b := ZMM(), ZMM()
		VCVTDQ2PD(md.AsY(), a)
		x := YMM()
		VEXTRACTI64X4(U8(1), md, x)
		VCVTDQ2PD(x, b)
		VMULPD(slo, a, a)
		VFMADD231PD(shi, b, a)
		// Per 128-bit lane: (T's partial sums 2k and 2k+1 added, M's the same).
		u, v := ZMM(), ZMM()
		VUNPCKLPD(a, tm[i], u)
		VUNPCKHPD(a, tm[i], v)
		VADDPD(v, u, u)
		uv[i] = u
	}
	// (T, M) of row r in float64 lanes 2r and 2r+1.
	u, v := ZMM(), ZMM()
	VSHUFF64X2(U8(0x88), uv[1], uv[0], u)
	VSHUFF64X2(U8(0xdd), uv[1], uv[0], v)
	VADDPD(v, u, u)
	// d and dmin of row r in lanes 2r and 2r+1.
	dd := ZMM()
	VPERMD(head, k.heads, dd)
	df := YMM()
	VCVTPH2PS(dd.AsX(), df)
	dz := ZMM()
	VCVTPS2PD(df, dz)
	VMULPD(dz, u, u) // (fl64(d·T), fl64(dmin·M)) a row
	VPERMILPD(U8(0x55), u, v)
	VSUBPD(v, u, u)
	VMULPD_BCST(k.scale, u, u)
	VADDPD(u, k.y, k.y)
}
