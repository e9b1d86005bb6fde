package main

import (
	"fmt"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	"github.com/mmcloughlin/avo/reg"
)

// q4KRows4Kernel emits
//
//	func q4KRows4<suffix>(w []byte, rowBytes int, digits []int16, sums, scale []float64, dst []float32)
//
// which stores in dst dotQ4K of len(dst) Q4_K rows (a multiple of four) against one prepared
// input (its q4KWide digits and sums and its len(scale) block scales): w holds the rows one
// after another, rowBytes bytes (len(scale) blocks) each. It is q4KPairKernel widened to four
// rows, for decode, where one token meets every row; one call runs every group of four rows of
// a run, so the Go driver's slicing, indirect call and copy per group (5% of a one-thread
// decode profile) are gone: 1.08× (1024×2048) and 1.17× (2048×1024) faster a row in cache,
// 1.06× and 1.16× streamed, than one call a group.
//
// Measured on Zen 5 (throughput loops of single instructions beside a VPDPWSSD stream, not
// kept), the multiplies (VPDPWSSD, VPMULLD) share two vector pipes with the lane-crossing
// shuffles (VPERMB, VSHUFI64X2, VEXTRACTI64X4, VPSHUFB), the float64 multiplies and the
// converts: a VPDPWSSD stream runs at half speed with one of those beside each, and at full
// speed with a VPADDD, VPANDD, VPXORD, VPUNPCKLDQ or VUNPCKLPD, which go to two other pipes
// that the products leave idle. So everything shared by the rows is done once, and the block
// end keeps off the multiply pipes:
//
//   - Each digit register is loaded once for the four rows.
//   - The four block heads go into the four 128-bit lanes of one register and are unpacked
//     with the byte shuffles of q4KPairKernel (q4KScaleTables, in both 256-bit halves); two
//     byte permutes (VBMI's VPERMB in the VNNI variant; in-lane VPSHUFB in the other, whose
//     CPUs may lack VBMI) spread the scales to dwords, stored. The nibble words are scaled by a
//     dword multiply with the scale broadcast from memory (VPMULLD's embedded broadcast): it
//     scales both words of each dword, since sc·q <= 945 never carries into the high word, and
//     takes one instruction where a word multiply takes two (a broadcast and the multiply;
//     3-4% faster in cache).
//   - The heads are unpacked one block ahead (see the loop), so the products never wait for
//     the chain of shuffles, stores and forwarded loads that makes their scale operands.
//   - The block end finishes the four rows together, with interleaves and adds where it can
//     (see end): (T, M) of row r lands in float64 lanes 2r and 2r+1 of one register, and d·T,
//     dmin·M, their difference, the product with 2^-sh and the addition to y are one
//     instruction for the four rows, each lane rounding exactly as dotQ4K's float64 steps do.
//     Every value before those steps is an integer below 2^53, so every step there is exact.
//   - The prefetch runs one stream over the rows' bytes, four rows' blocks (576 bytes) a block,
//     a whole number of groups of four rows ahead (at least prefetchAhead bytes): the rows of
//     a call are contiguous, and so are the calls of a decode pass. Streamed from RAM it runs
//     within 3-11% of its speed on weights in L2 (BenchmarkStreamPrefetch), and no other scheme
//     measured faster: 2 or 8 KiB ahead, PREFETCHT1/T2/NTA, a far T1 or T2 level besides,
//     a line in two (0.72-0.98×), the next call whole at the start (0.85-0.97×).
//
// Against the form before the pipelined unpack and this end (the unpack in its own block, an
// end of lane shuffles and converts): 1.11-1.12× a row in cache, 1.10-1.13× streamed
// (BenchmarkQ4KRows4's four/pair went from 1.22-1.38 to 1.38-1.55). The end still costs about
// what its share of the instructions says (emitted twice a block, 1.20-1.27× slower; left out,
// 1.5× faster), so the kernel now pays for instructions more than for any one pipe. Tried and
// not kept: one 64-byte scale store instead of two of 32 bytes (0.92-0.96× in cache), a blend
// in place of half the end's permutes (0.98-1.01×), the end software-pipelined into the next
// block's products (avo found no register allocation), 6 or 8 KiB of prefetch distance
// (1.00-1.04× streamed on a loaded machine, not clearly better than 4 KiB).
func q4KRows4Kernel(s isa, vnni bool) {
	name := "q4KRows4" + s.suffix
	if vnni {
		name += "VNNI"
	}
	declare(name, NOSPLIT, "func(w []byte, rowBytes int, digits []int16, sums, scale []float64, dst []float32)",
		name+" stores in dst dotQ4K of len(dst)/4 groups of four contiguous Q4_K rows of w (rowBytes each) against a prepared input.")
	k := q4KRows4{s: s, vnni: vnni}
	tables := q4KScaleTables(name)
	// The mins as dwords, two rows a register, laid out so that one interleave with the float64
	// magic turns them into the layout of T's partial sums (see end): dword 4l+k of register i
	// holds m_{2l} of row 2i+k for k < 2 and m_{2l+1} of row 2i+k-2 for k >= 2; m_j of row r is
	// byte 16r+8+j of the unpacked heads.
	var spread, mins Mem
	if vnni { // VBMI's byte permutes, which the avx512vnni tier assumes
		spread = q4KSpreadTable(name, 4) // a mask keeps byte 0
		mins = GLOBL(name+"_mins", RODATA|NOPTR)
		for i := range 2 {
			for p := range 64 {
				l, k := p/16, p%16/4
				r, j := 2*i+k%2, 2*l+k/2
				DATA(64*i+p, U8(16*r+8+j))
			}
		}
	} else {
		// Without VBMI (AVX-512 before Ice Lake has no VPERMB), in-lane byte shuffles (an
		// index of 0x80 gives a zero byte) and a qword permute do the same work. Register i
		// of the scales takes sc_{4i+j} of row r into dword 4r+j: its own row's lane.
		spread = GLOBL(name+"_spread", RODATA|NOPTR)
		for i := range 2 {
			for p := range 64 {
				b := byte(0x80)
				if p%4 == 0 {
					b = byte(4*i + p%16/4)
				}
				DATA(64*i+p, U8(b))
			}
		}
		// Register i of the mins: the qword permute puts the mins of rows 2i and 2i+1 (qwords
		// 4i+1 and 4i+3 of the heads) in every 128-bit lane, then the shuffle (minsShuffle)
		// takes m_{2l} and m_{2l+1} of both into dwords 4l..4l+3 in lane l.
		mins = GLOBL(name+"_mins", RODATA|NOPTR)
		for i := range 2 {
			for q := range 8 {
				DATA(64*i+8*q, U64(uint64(4*i+1+2*(q%2))))
			}
		}
		k.minsShuffle = GLOBL(name+"_minsShuffle", RODATA|NOPTR)
		for p := range 64 {
			l, d, b := p/16, p%16/4, byte(0x80) // dword d of lane l
			if p%4 == 0 {
				b = byte(8*(d%2) + 2*l + d/2)
			}
			DATA(p, U8(b))
		}
	}
	k.consts = q4KRows4Constants(name)
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

	k.words = AllocLocal(256)
	k.tables = tables.inBothHalves()
	for i := range 2 {
		k.spread[i], k.mins[i] = ZMM(), ZMM()
		VMOVDQU64(spread.Offset(64*i), k.spread[i])
		VMOVDQU64(mins.Offset(64*i), k.mins[i])
	}
	k.heads = ZMM()
	VMOVDQU32(heads, k.heads.AsX())
	k.mask = broadcast(s, 0x000f000f)
	k.y, k.dig = ZMM(), GP64()
	if vnni {
		k.low = K()
		bits := GP64()
		MOVQ(U64(0x1111111111111111), bits) // byte 0 of each dword
		KMOVQ(bits, k.low)
	}

	// Rows of no blocks: every result is +0.
	TESTQ(n, n)
	JNZ(LabelRef("blocks"))
	zero := XMM()
	VXORPS(zero, zero, zero)
	Label("zeros")
	VMOVUPS(zero, Mem{Base: dst})
	ADDQ(U8(16), dst)
	DECQ(groups)
	JNZ(LabelRef("zeros"))
	JMP(LabelRef("end"))

	// The loop is software-pipelined one step: each block unpacks the next block's heads and
	// stores its scale dwords (the last block of a group, those of the next group's first
	// block), so that the products find their scales already in memory: with the unpack in the
	// same block, its chain of shuffles, stores and forwarded loads held up every scale
	// multiply (1.13-1.16× without that wait). The unpack sits halfway through the products
	// and the prefetch at the top (each 0-4% faster than the other places, in cache and
	// streamed). It is unrolled twice so that the two blocks in flight swap their heads'
	// registers and scale buffers without moves, and a group may start in either half.
	// Nothing past the last row is read.
	Label("blocks")
	blocks := [2]q4KRows4Block{{head: ZMM(), sm: ZMM()}, {head: ZMM(), sm: ZMM(), words: 128}}
	k.prefetch(0)
	k.unpack(blocks[0], k.w, 0)
	for i := range 2 {
		// One group of four rows, its first block unpacked into blocks[i]: the block loop of a
		// single four-row dot product.
		Label(fmt.Sprintf("group%d", i))
		VXORPD(k.y, k.y, k.y)
		Load(Param("digits").Base(), k.dig)
		MOVQ(n, k.off)
		NEGQ(k.off)
		JMP(LabelRef(fmt.Sprintf("half%d", i)))
	}
	for i := range 2 {
		Label(fmt.Sprintf("half%d", i))
		CMPQ(k.off, I8(-8))
		JE(LabelRef(fmt.Sprintf("last%d", i)))
		k.prefetch(4 * 144)
		k.step(blocks[i], func() { k.unpack(blocks[1-i], k.w, 144) })
	}
	JMP(LabelRef("half0"))
	for i := range 2 {
		// The last block of a group: the next group's rows start three rows and one block on.
		Label(fmt.Sprintf("last%d", i))
		k.step(blocks[i], func() {
			alone := fmt.Sprintf("alone%d", i)
			CMPQ(groups, U8(1))
			JE(LabelRef(alone))
			k.prefetch(4 * 144)
			next := GP64()
			LEAQ(Mem{Base: k.w, Index: k.rb3, Scale: 1}, next)
			k.unpack(blocks[1-i], next, 144)
			Label(alone)
		})
		// float32(y) of each row: float64 lanes 0, 2, 4, 6 round to float lanes 0, 2, 4, 6,
		// which VPMOVQD packs into four.
		f := YMM()
		VCVTPD2PS(k.y, f)
		VPMOVQD(f, Mem{Base: dst})
		ADDQ(U8(16), dst)
		// The block loop left w one row on (and the stream three rows further): on to the
		// next group, the prefetch distance as it was.
		ADDQ(k.rb3, k.w)
		SUBQ(k.rb3, k.ahead)
		DECQ(groups)
		JNZ(LabelRef(fmt.Sprintf("group%d", 1-i)))
		if i == 0 {
			JMP(LabelRef("end"))
		}
	}

	Label("end")
	VZEROUPPER()
	Label("done")
	RET()
}

// q4KRows4Block is one block of the four rows in flight: its heads, row r in 128-bit lane r,
// their unpacked scales and mins (the layout of q4KScaleTables, a row a lane), and where its
// scale dwords are stored (an offset into words).
type q4KRows4Block struct {
	head, sm reg.VecVirtual
	words    int
}

// step runs the products and the end of block b, with mid (the next block's unpack) halfway
// through the products, and moves on to the next block.
func (k *q4KRows4) step(b q4KRows4Block, mid func()) {
	lo, hi := k.products(b.words, mid)
	k.end(b.head, b.sm, lo, hi)
	ADDQ(U32(144), k.w)
	ADDQ(U32(1024), k.dig)
	ADDQ(U32(4*144-144), k.ahead) // the prefetch stream runs four rows' blocks a block
	ADDQ(U8(8), k.off)
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
	words       Mem               // two blocks' scales as dwords (see scaleAt), and 128 on
	tables      q4KScaleUnpack    // q4KScaleTables in both 256-bit halves of registers
	spread      [2]reg.VecVirtual // the scale dwords' VPERMB indices, rows 0-1 and 2-3 (VNNI), or VPSHUFB indices, sc_0..3 and sc_4..7
	mins        [2]reg.VecVirtual // the min dwords' VPERMB indices (VNNI) or VPERMQ indices, rows 0-1 and 2-3
	minsShuffle Mem               // without VNNI, the VPSHUFB indices of the min dwords
	heads       reg.VecVirtual    // VPERMD indices of the four rows' d and dmin
	consts      q4KRows4Consts    // the block end's constants in memory
	mask        reg.VecVirtual    // 0x000f in every word
	low         reg.OpmaskVirtual // byte 0 of each dword (VNNI)
	y           reg.VecVirtual    // row r's sum in float64 lane 2r
}

// row returns the address of the current block of row r, plus disp.
func (k *q4KRows4) row(r, disp int) Mem { return k.rowAt(k.w, r, disp) }

// rowAt returns the address of row r of the group whose row 0 is at base, plus disp.
func (k *q4KRows4) rowAt(base reg.Register, r, disp int) Mem {
	switch r {
	case 0:
		return Mem{Base: base, Disp: disp}
	case 3:
		return Mem{Base: base, Index: k.rb3, Scale: 1, Disp: disp}
	}
	return Mem{Base: base, Index: k.rb, Scale: uint8(r), Disp: disp}
}

// prefetch prefetches the four rows' blocks (576 bytes) pf bytes on in the stream.
func (k *q4KRows4) prefetch(pf int) {
	prefetch(Mem{Base: k.w, Index: k.ahead, Scale: 1, Disp: pf}, 4*144)
}

// unpack loads into b.head (row r in 128-bit lane r) the four heads of the block disp bytes
// on from row 0 at base (the rows rowBytes apart), unpacks their scales and mins into b.sm
// (the layout of q4KScaleTables, a row a lane) and stores the scales as dwords at b.words for
// the products' broadcasts.
func (k *q4KRows4) unpack(b q4KRows4Block, base reg.Register, disp int) {
	head, sm := b.head, b.sm
	VMOVDQU32(k.rowAt(base, 0, disp), head.AsX())
	for r := 1; r < 4; r++ {
		VINSERTI32X4(U8(r), k.rowAt(base, r, disp), head, head)
	}
	k.tables.unpack(head, sm)
	// 32-byte stores: the broadcast loads forward from them (a 64-byte store measured slower).
	for i := range 2 {
		sw := ZMM()
		if k.vnni {
			VPERMB_Z(sm, k.spread[i], k.low, sw)
		} else {
			VPSHUFB(k.spread[i], sm, sw)
		}
		VMOVDQU32(sw.AsY(), k.words.Offset(b.words+64*i))
		VEXTRACTI64X4(U8(1), sw, k.words.Offset(b.words+64*i+32))
	}
}

// products returns the dword sums of the block's products of each row with the low and the
// high digits, its scale dwords at words, with mid emitted halfway.
func (k *q4KRows4) products(words int, mid func()) (lo, hi [4]reg.VecVirtual) {
	for r := range 4 {
		lo[r], hi[r] = ZMM(), ZMM()
	}
	for c := range 4 {
		if c == 2 {
			mid()
		}
		d := q4KLoadDigits(k.dig, c) // shared by the rows
		for r := range 4 {
			q := ZMM()
			VPMOVZXBW(k.row(r, 16+32*c), q)
			ql := ZMM()
			VPANDD(k.mask, q, ql)
			VPSRLW(U8(4), q, q)
			// A dword multiply by the scale scales both words of each dword: sc·q <= 945
			// never carries into the high word.
			VPMULLD_BCST(k.scaleAt(words, r, 2*c), ql, ql)
			VPMULLD_BCST(k.scaleAt(words, r, 2*c+1), q, q)
			q4KChunkProducts(k.s, k.vnni, c, ql, q, d, lo[r], hi[r])
		}
	}
	return lo, hi
}

// scaleAt returns the address of the dword sc_j of row r among the scales stored at words:
// row r's eight at 32r with VNNI (VPERMB's layout), sc_j at 64(j/4) + 16r + 4(j%4) without
// (the in-lane shuffles' layout, each row in its heads' lane).
func (k *q4KRows4) scaleAt(words, r, j int) Mem {
	if k.vnni {
		return k.words.Offset(words + 32*r + 4*j)
	}
	return k.words.Offset(words + 64*(j/4) + 16*r + 4*(j%4))
}

// q4KRows4Consts holds the memory constants of the block end (see end).
type q4KRows4Consts struct {
	bias, magic   Mem // the dwords 0x80000000 and 0x43300000
	offset, two52 Mem // the float64 2^52 + 2^31 and 2^52
	pairs         Mem // two VPERMI2PD index vectors (see end)
}

func q4KRows4Constants(name string) q4KRows4Consts {
	var c q4KRows4Consts
	c.bias = GLOBL(name+"_bias", RODATA|NOPTR)
	DATA(0, U32(0x80000000))
	c.magic = GLOBL(name+"_magic", RODATA|NOPTR)
	DATA(0, U32(0x43300000))
	c.offset = GLOBL(name+"_offset", RODATA|NOPTR)
	DATA(0, U64(0x4330000080000000))
	c.two52 = GLOBL(name+"_two52", RODATA|NOPTR)
	DATA(0, U64(0x4330000000000000))
	// Qword 2r+p of pair h takes partial sum l = p+2h of row r: from the first table (qword
	// 2l+r) for rows 0-1, from the second (index 8 + 2l+r-2) for rows 2-3.
	c.pairs = GLOBL(name+"_pairs", RODATA|NOPTR)
	for h := range 2 {
		for q := range 8 {
			r, l := q/2, q%2+2*h
			i := 2*l + r
			if r >= 2 {
				i = 8 + 2*l + r - 2
			}
			DATA(64*h+8*q, U64(uint64(i)))
		}
	}
	return c
}

// end finishes the block of the four rows and adds v·2^-sh to each row's sum.
//
// It works with interleaves and adds wherever it can, which run beside the next block's
// products (see q4KRows4Kernel):
//
//   - The eight accumulators fold in-lane: interleaving dwords and then qwords of the four rows'
//     registers and adding leaves, per 128-bit lane l, row r's sum of that lane in dword r: each
//     the sum of 64 products of |sc·q| <= 945 and a digit of magnitude at most 32768, below
//     2^31.
//   - The dwords go to float64 by the magic-number trick: x XOR 2^31 is x + 2^31 as an unsigned
//     dword, and with the dword 0x43300000 interleaved above it the qword is the float64
//     2^52 + 2^31 + x, exactly; one subtraction leaves x. Then T's partial sums lo + 65536·hi
//     come from one exact multiply-add, rows 0-1 and rows 2-3 in two registers (qword 2l+r:
//     row r, lane l).
//   - The mins go to float64 the same way (2^52 + m, less 2^52), in the same layout: m_{2l} in
//     one register and m_{2l+1} in another, times the sums duplicated in pairs (S_{2l} and
//     S_{2l+1}), so M's partial sums need no shuffle before they meet T's.
//   - For T and for M, two two-table permutes put row r's partial sums of lanes l and l+2 in
//     128-bit lane r, and one addition sums them; the in-lane interleaves of T's and M's and one
//     more addition leave (T, M) of row r in float64 lanes 2r and 2r+1.
//
// Every value before the d and dmin products is an integer below 2^53, so each step there is
// exact; from d·T on, each lane rounds exactly as dotQ4K's float64 steps do.
func (k *q4KRows4) end(head, sm reg.VecVirtual, lo, hi [4]reg.VecVirtual) {
	c := k.consts
	// T's partial sums: ta for rows 0-1, tb for rows 2-3.
	flo, fhi := foldLanes(lo), foldLanes(hi)
	var t [2][2]reg.VecVirtual // [lo, hi][rows 0-1, rows 2-3], 2^52 + 2^31 + x
	for i, f := range []reg.VecVirtual{flo, fhi} {
		VPXORD_BCST(c.bias, f, f)
		t[i][0], t[i][1] = ZMM(), ZMM()
		VPUNPCKLDQ_BCST(c.magic, f, t[i][0])
		VPUNPCKHDQ_BCST(c.magic, f, t[i][1])
	}
	var tm [2][2]reg.VecVirtual // [T, M][rows 0-1, rows 2-3]
	for i := range 2 {
		VSUBPD_BCST(c.offset, t[0][i], t[0][i])
		VSUBPD_BCST(c.offset, t[1][i], t[1][i])
		VFMADD231PD_BCST(k.s.f64Digit, t[1][i], t[0][i]) // exact: an integer below 2^48
		tm[0][i] = t[0][i]
	}
	// M's partial sums in the same layout: m_{2l}·S_{2l} + m_{2l+1}·S_{2l+1} (exact).
	se, so := ZMM(), ZMM()
	VMOVDDUP(k.sums, se)
	VPERMILPD(U8(0xff), k.sums, so)
	for i := range 2 {
		md := ZMM()
		if k.vnni {
			VPERMB_Z(sm, k.mins[i], k.low, md)
		} else {
			VPERMQ(sm, k.mins[i], md)
			VPSHUFB(k.minsShuffle, md, md)
		}
		me, mo := ZMM(), ZMM()
		VPUNPCKLDQ_BCST(c.magic, md, me)
		VPUNPCKHDQ_BCST(c.magic, md, mo)
		VSUBPD_BCST(c.two52, me, me)
		VSUBPD_BCST(c.two52, mo, mo)
		VMULPD(se, me, me)
		VFMADD231PD(so, mo, me)
		tm[1][i] = me
	}
	// Row r's partial sums in 128-bit lane r, then (T, M) of row r in float64 lanes 2r, 2r+1.
	var h [2]reg.VecVirtual
	for q := range 2 {
		a, b := ZMM(), ZMM()
		VMOVDQU64(c.pairs, a)
		VPERMI2PD(tm[q][1], tm[q][0], a)
		VMOVDQU64(c.pairs.Offset(64), b)
		VPERMI2PD(tm[q][1], tm[q][0], b)
		VADDPD(b, a, a)
		h[q] = a
	}
	u, v := ZMM(), ZMM()
	VUNPCKLPD(h[1], h[0], u)
	VUNPCKHPD(h[1], h[0], v)
	VADDPD(v, u, u)
	// d and dmin of row r in lanes 2r and 2r+1.
	dd := ZMM()
	VPERMD(head, k.heads, dd)
	q4KBlockValues(halvesToF64(dd.AsX()), u, v)
	VMULPD_BCST(k.scale, u, u)
	VADDPD(u, k.y, k.y)
}

// foldLanes adds the 16 dwords of each of the four rows' registers a down to four, in-lane:
// dword r of 128-bit lane l of the result is the sum of lane l of a[r].
func foldLanes(a [4]reg.VecVirtual) reg.VecVirtual {
	pair := func(x, y reg.VecVirtual) reg.VecVirtual {
		l, h := ZMM(), ZMM()
		VPUNPCKLDQ(y, x, l) // x0 y0 x1 y1
		VPUNPCKHDQ(y, x, h) // x2 y2 x3 y3
		VPADDD(h, l, l)
		return l
	}
	ab, cd := pair(a[0], a[1]), pair(a[2], a[3])
	l, h := ZMM(), ZMM()
	VPUNPCKLQDQ(cd, ab, l) // a(0+2) b(0+2) c(0+2) d(0+2)
	VPUNPCKHQDQ(cd, ab, h) // a(1+3) b(1+3) c(1+3) d(1+3)
	VPADDD(h, l, l)
	return l
}
