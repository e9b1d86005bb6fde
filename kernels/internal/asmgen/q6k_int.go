package main

import (
	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	"github.com/mmcloughlin/avo/reg"
)

// q6KIntKernels emits the AVX-512 decode kernels of the exact-integer Q6_K definition
// (dotQ6K), for the avx512 tier (suffix AVX512: F, BW, VL and DQ only) and the avx512vnni tier
// (suffix AVX512VNNI: the products take VPDPWSSD):
//
//	func q6KPair<suffix>(w0, w1 []byte, digits []int16, scale []float64) [2]float32
//	func q6KRows4<suffix>(w []byte, rowBytes int, digits []int16, scale []float64, dst []float32)
//
// q6KPair returns dotQ6K of the rows w0 and w1 (the same row twice for one) against one
// prepared input, its q4KWide digits and its len(scale) block scales; q6KRows4 stores in dst
// dotQ6K of len(dst)/4 groups of four rows laid one after another in w, rowBytes bytes each,
// all of them in one call (decode: one token meets every row of a matrix).
//
// A block's T = Σ_j sc_j·Σ_{k in sub-block j} (q_k − 32)·X_k is formed in int32 lanes, 32
// elements a register, with each X as its two digits lo + 65536·hi:
//
//   - The weight bytes 4·(q−32) come from q6KNibbles' bit logic, 64 at a time (VPTERNLOGD's
//     masks broadcast from memory), and VPUNPCKLBW and VPUNPCKHBW with a zero register put each
//     in the high byte of a word: 1024·(q−32).
//   - VPMULHW with the words 64·sc leaves the high half of 65536·sc·(q−32): the weight word
//     sc·(q−32), exactly. Each row's 16 scales, widened and shifted (64·sc is within
//     [−8192, 8128]), are spread with VPERMW so that one VPSHUFD with an immediate gives a
//     register's scales.
//   - VPDPWSSD (or VPMADDWD and VPADDD) adds the weight words times the low and the high
//     digits into two dword accumulators a row. A block puts exactly 16 products into each
//     dword, each of magnitude at most 4096·32768 = 2^27, so no sum leaves the int32 range
//     (the largest, −16·4096·32768, is −2^31), and no two dwords may be added in int32: the
//     block end widens them to float64 first, where every sum is an exact integer below 2^53.
//   - The block end then folds each row's lanes, forms T with one exact multiply-add by
//     65536, and does v = fl64(d·T), v·2^-sh and the addition to y as one instruction for all
//     the rows, each lane rounding as dotQ6K's float64 steps do; float32(y) at the end.
//
// Measured, these kernels are bound by their instruction count, as the float-lane ones are, and
// the products' layout decides how many they take. The unpacks interleave within 128-bit lanes:
//
//   - Lane layout (q6KRows4 on rows of at most q6KCacheBlocks blocks): the ql and qh bytes are
//     loaded as they lie, so each 128-bit lane of an unpacked register holds 8 elements of one
//     sub-block of 16, both registers of a 64-element group take the same scale register
//     (lane L: sc_4g+L), and one VPSHUFD serves 64 elements. The digits do not lie that way:
//     the kernel rearranges the input's digits once a call into a 64-byte aligned buffer on
//     its stack (two VSHUFI64X2 a 64-byte piece: 40 instructions a block, once for all the
//     rows of the call), and the products read them from there. 313 instructions for a block
//     of four rows; 5-8% faster a row than the memory-order layout in cache (with the buffer
//     unaligned, every 64-byte load crossing cache lines, it was 5-10% slower instead).
//   - Memory order (q6KPair, and q6KRows4 on longer rows): ql and qh are loaded by VPERMQ with
//     their qwords reordered (0, 4, 1, 5, 2, 6, 3, 7; the qh qwords to match), so that the
//     unpacks leave elements 0-31 and 32-63 of the group in order and the products read the
//     digits straight from the input; the reordering costs nothing, the loads were needed
//     anyway. A register of 32 elements then spans two sub-blocks, its 256-bit halves taking
//     sc_2e and sc_2e+1: one VPSHUFD a register, 333 instructions for four rows' block.
//     Spreading each register's scales with its own VPERMW instead (8 more index registers)
//     measured no faster.
//
// The float-lane four-row kernel it replaced (since removed) took 452 instructions for a
// block of four rows (500 without VNNI, against 369 and 389 here). Against that float-lane
// decode path on one thread (BenchmarkQ6KIntDecode then), q6KRows4 was 1.44-1.61× faster a
// row in cache and 1.17-1.48× streamed from RAM, where it read 20-24 GB/s, about what a plain
// Go read of the same bytes streams on this machine (BenchmarkStreamPrefetch's goread):
// decode's Q6_K matrices are then bound by memory, not instructions.
func q6KIntKernels(s isa) {
	t := q6KIntConstants()
	for _, vnni := range []bool{false, true} {
		q6KIntKernel(s, t, vnni, 2)
		q6KIntKernel(s, t, vnni, 4)
	}
}

// q6KIntTables are the read-only tables of the integer Q6_K kernels.
type q6KIntTables struct {
	qlOrder Mem    // VPERMQ indices of the ql qwords: 0, 4, 1, 5, 2, 6, 3, 7
	qhOrder [2]Mem // VPERMQ indices of half h's qh qwords in the 64 qh bytes: 4h + (0, 0, 1, 1, 2, 2, 3, 3)
	shifts  Mem    // words: the qh shifts of the reordered low nibbles' qwords (6, 4 alternating), then the high ones' (2, 0)
	scales  [2]Mem // VPERMW indices of half h's scale words in memory order (see q6KIntConstants)
	lanes   Mem    // VPERMW indices of the scale words in the lane layout
	nibble  Mem    // 0x3c in every byte: a nibble shifted left 2
	sign    Mem    // 0x80 in every byte
}

func q6KIntConstants() q6KIntTables {
	var t q6KIntTables
	order := []int{0, 4, 1, 5, 2, 6, 3, 7}
	t.qlOrder = GLOBL("q6KInt_qlOrder", RODATA|NOPTR)
	for m, q := range order {
		DATA(8*m, U64(uint64(q)))
	}
	for h := range 2 {
		t.qhOrder[h] = GLOBL([]string{"q6KInt_qhOrder0", "q6KInt_qhOrder1"}[h], RODATA|NOPTR)
		for m, q := range order {
			DATA(8*m, U64(uint64(4*h+q%4)))
		}
	}
	// Qword m of the reordered bytes holds elements of quarter c = 2k + m%2 of the half (k = 0
	// for the low nibbles, 1 for the high), whose qh bits 2c, 2c+1 shift left by 6 − 2c to
	// bits 6-7 of the byte.
	t.shifts = GLOBL("q6KInt_shifts", RODATA|NOPTR)
	for k := range 2 {
		for i := range 32 {
			c := 2*k + i/4%2
			DATA(64*k+2*i, U16(uint16(6-2*c)))
		}
	}
	// Word 8L + 2c + p of half h's scale register (128-bit lane L, dword c) is 64·sc_j of
	// sub-block j = 2(4h + c) + L/2: VPSHUFD's broadcast of dword c gives register 4h + c its
	// scales, sc_2e in the low 256 bits and sc_2e+1 in the high.
	for h := range 2 {
		t.scales[h] = GLOBL([]string{"q6KInt_scales0", "q6KInt_scales1"}[h], RODATA|NOPTR)
		for i := range 32 {
			L, c := i/8, i%8/2
			DATA(2*i, U16(uint16(2*(4*h+c)+L/2)))
		}
	}
	// Word 8L + 2g + p of the lane layout's scale register (128-bit lane L, dword g) is
	// 64·sc_4g+L: VPSHUFD's broadcast of dword g gives group g its scales, sub-block 4g+L in
	// lane L.
	t.lanes = GLOBL("q6KInt_lanes", RODATA|NOPTR)
	for i := range 32 {
		L, g := i/8, i%8/2
		DATA(2*i, U16(uint16(4*g+L)))
	}
	t.nibble = ConstData("q6KInt_nibble", U32(0x3c3c3c3c))
	t.sign = ConstData("q6KInt_sign", U32(0x80808080))
	return t
}

// q6KInt holds the registers of one integer Q6_K kernel.
type q6KInt struct {
	s      isa
	vnni   bool
	rows   int
	t      q6KIntTables
	row    func(r, disp int) Mem // the current block of row r, plus disp
	dig    reg.Register          // the input's digits (or the rearranged ones) at the current block
	scale  Mem                   // the input's scale at the current block
	order  reg.VecVirtual        // t.qlOrder (memory order)
	qh     [2]reg.VecVirtual     // t.qhOrder (memory order)
	spread [2]reg.VecVirtual     // t.scales (memory order), or t.lanes in spread[0] (lane layout)
	high   reg.VecVirtual        // 0xc0 in every byte: the qh pair's bits
	zero   reg.VecVirtual
	y      reg.VecVirtual // the rows' sums: row r in float64 lanes 2r, 2r+1 (four rows) or 4r..4r+3 (two)
}

// q6KIntKernel emits q6KPair<suffix> (rows = 2) or q6KRows4<suffix> (rows = 4); see
// q6KIntKernels.
func q6KIntKernel(s isa, t q6KIntTables, vnni bool, rows int) {
	if vnni {
		s.suffix += "VNNI"
	}
	k := &q6KInt{s: s, vnni: vnni, rows: rows, t: t}
	if rows == 2 {
		k.pair()
	} else {
		k.quad()
	}
}

// constants loads the tables the blocks of the memory order (or, lanes set, the lane layout)
// use into registers and clears y.
func (k *q6KInt) constants(lanes bool) {
	if lanes {
		k.spread[0] = ZMM()
		VMOVDQU64(k.t.lanes, k.spread[0])
	} else {
		k.order = ZMM()
		VMOVDQU64(k.t.qlOrder, k.order)
		for h := range 2 {
			k.qh[h], k.spread[h] = ZMM(), ZMM()
			VMOVDQU64(k.t.qhOrder[h], k.qh[h])
			VMOVDQU64(k.t.scales[h], k.spread[h])
		}
	}
	k.high = ZMM()
	VPBROADCASTD(q6KTables.mC0, k.high)
	k.zero = ZMM()
	VPXORD(k.zero, k.zero, k.zero)
	k.y = ZMM()
	VXORPD(k.y, k.y, k.y)
}

// pair emits q6KPair: the two rows' blocks in step.
func (k *q6KInt) pair() {
	name := "q6KPair" + k.s.suffix
	declare(name, NOSPLIT, "func(w0, w1 []byte, digits []int16, scale []float64) [2]float32",
		name+" returns dotQ6K of the Q6_K rows w0 and w1 against a prepared input.")
	w := []reg.Register{Load(Param("w0").Base(), GP64()), Load(Param("w1").Base(), GP64())}
	k.row = func(r, disp int) Mem { return Mem{Base: w[r], Disp: disp} }
	k.dig = Load(Param("digits").Base(), GP64())
	scale := Load(Param("scale").Base(), GP64())
	k.scale = Mem{Base: scale}
	n := Load(Param("scale").Len(), GP64())
	k.constants(false)
	TESTQ(n, n)
	JZ(LabelRef("done"))
	Label("block")
	for r := range 2 {
		prefetch(Mem{Base: w[r], Disp: prefetchAhead}, q6KSize)
	}
	k.end(k.products())
	for r := range 2 {
		ADDQ(U32(q6KSize), w[r])
	}
	ADDQ(U32(1024), k.dig)
	ADDQ(U8(8), scale)
	DECQ(n)
	JNZ(LabelRef("block"))
	Label("done")
	storeSumPair(k.y, frameAddr(ReturnIndex(0)), 0)
	VZEROUPPER()
	RET()
}

// q6KSize is the size of a Q6_K block in bytes.
const q6KSize = 210

// q6KCacheBlocks is the longest row, in blocks, whose digits q6KRows4 rearranges on its stack
// for the lane layout (16 KiB; 4096 elements, OLMoE's longest rows are 2048).
const q6KCacheBlocks = 16

// quad emits q6KRows4: every group of four rows of the call, a group's blocks in step, in the
// lane layout where the rows are at most q6KCacheBlocks blocks long and in memory order where
// they are longer. The prefetch runs one stream over the rows' bytes, four rows' blocks a
// block, a whole number of groups ahead (at least prefetchAhead bytes), as
// q4KRows4Kernel's does: the rows of a call are contiguous, and so are the calls of a decode
// pass. At least 2, 8 or 16 KiB ahead streamed no faster; leaving the prefetch out was 4-6%
// slower even on weights in L3.
func (k *q6KInt) quad() {
	name := "q6KRows4" + k.s.suffix
	// Not NOSPLIT: the digits' buffer makes the frame larger than a NOSPLIT function may use,
	// so this one checks the stack on entry.
	declare(name, 0, "func(w []byte, rowBytes int, digits []int16, scale []float64, dst []float32)",
		name+" stores in dst dotQ6K of len(dst)/4 groups of four contiguous Q6_K rows of w (rowBytes each) against a prepared input.")
	cache := AllocLocal(q6KCacheBlocks*1024 + 64)
	groups := Load(Param("dst").Len(), GP64())
	SHRQ(U8(2), groups)
	JZ(LabelRef("done"))
	w := Load(Param("w").Base(), GP64())
	rb := Load(Param("rowBytes"), GP64())
	scale := Load(Param("scale").Base(), GP64())
	n := Load(Param("scale").Len(), GP64())
	dst := Load(Param("dst").Base(), GP64())
	rb3 := GP64()
	LEAQ(Mem{Base: rb, Index: rb, Scale: 2}, rb3)
	k.row = func(r, disp int) Mem {
		switch r {
		case 0:
			return Mem{Base: w, Disp: disp}
		case 3:
			return Mem{Base: w, Index: rb3, Scale: 1, Disp: disp}
		}
		return Mem{Base: w, Index: rb, Scale: uint8(r), Disp: disp}
	}
	// The block's offset from the end of scale, in bytes, counts up to zero: the loop's
	// counter and the index of the input's scale.
	off := GP64()
	SHLQ(U8(3), n)
	ADDQ(n, scale)
	k.scale = Mem{Base: scale, Index: off, Scale: 1}
	// The prefetch distance: whole groups (4·rowBytes) until it reaches prefetchAhead (with
	// empty rows there is nothing to prefetch, and the distance would never grow).
	ahead := GP64()
	MOVQ(U32(prefetchAhead), ahead)
	TESTQ(rb, rb)
	JZ(LabelRef("far"))
	XORQ(ahead, ahead)
	Label("ahead")
	LEAQ(Mem{Base: ahead, Index: rb, Scale: 4}, ahead)
	CMPQ(ahead, U32(prefetchAhead))
	JB(LabelRef("ahead"))
	Label("far")
	CMPQ(n, U32(8*q6KCacheBlocks))
	JA(LabelRef("memory"))

	// The lane layout: the digits of each block rearranged into the 64-byte aligned buffer,
	// 256 bytes a group of 64 elements g: the low digits of elements 16L..16L+7 (L < 4: one
	// sub-block a 128-bit lane), of 16L+8..16L+15, then the same of the high digits.
	buf := GP64()
	LEAQ(cache.Offset(63), buf)
	ANDQ(I32(-64), buf)
	src := Load(Param("digits").Base(), GP64())
	p, end := GP64(), GP64()
	MOVQ(buf, p)
	MOVQ(n, end)
	SHLQ(U8(7), end) // n/8 blocks of 1024 bytes
	ADDQ(buf, end)
	JMP(LabelRef("fillcheck"))
	Label("fill")
	for g := range 4 {
		for d := range 2 { // the low digits, then the high
			// The memory layout's 128-bit lanes hold elements 0-7, 8-15, 16-23, 24-31 of
			// sub-block 2g of 32 (first), and the same of 2g+1 (second).
			first, even, odd := ZMM(), ZMM(), ZMM()
			second := Mem{Base: src, Disp: 256*g + 128 + 64*d}
			VMOVDQU64(Mem{Base: src, Disp: 256*g + 64*d}, first)
			VSHUFI64X2(U8(0x88), second, first, even) // lanes 0 and 2 of each
			VSHUFI64X2(U8(0xdd), second, first, odd)  // lanes 1 and 3
			VMOVDQA64(even, Mem{Base: p, Disp: 256*g + 128*d})
			VMOVDQA64(odd, Mem{Base: p, Disp: 256*g + 128*d + 64})
		}
	}
	ADDQ(U32(1024), src)
	ADDQ(U32(1024), p)
	Label("fillcheck")
	CMPQ(p, end)
	JB(LabelRef("fill"))
	k.constants(true)
	k.groups("lanes", buf, n, off, w, ahead, rb3, dst, groups, k.laneProducts)
	JMP(LabelRef("done"))

	Label("memory")
	k.constants(false)
	k.groups("memory", nil, n, off, w, ahead, rb3, dst, groups, k.products)
	Label("done")
	RET()
}

// groups emits the loop over the groups of four rows (labels prefixed by l), each group's
// blocks through products. The digits are the input's, or the rearranged ones at buf where
// it is not nil.
func (k *q6KInt) groups(l string, buf, n, off, w, ahead, rb3, dst, groups reg.Register, products func() (lo, hi []reg.VecVirtual)) {
	Label(l + "group")
	VXORPD(k.y, k.y, k.y)
	if buf != nil {
		k.dig = GP64()
		MOVQ(buf, k.dig)
	} else {
		k.dig = Load(Param("digits").Base(), GP64())
	}
	MOVQ(n, off)
	NEGQ(off)
	JZ(LabelRef(l + "store"))

	Label(l + "block")
	prefetch(Mem{Base: w, Index: ahead, Scale: 1}, 4*q6KSize)
	k.end(products())
	ADDQ(U32(q6KSize), w)
	ADDQ(U32(1024), k.dig)
	ADDQ(U32(3*q6KSize), ahead) // the stream runs four rows' blocks a block
	ADDQ(U8(8), off)
	JNZ(LabelRef(l + "block"))

	Label(l + "store")
	// float32(y) of each row: float64 lanes 0, 2, 4, 6 round to float lanes 0, 2, 4, 6, which
	// VPMOVQD packs into four.
	f := YMM()
	VCVTPD2PS(k.y, f)
	VPMOVQD(f, Mem{Base: dst})
	ADDQ(U8(16), dst)
	// The block loop left w one row on (and the stream three rows further): on to the next
	// group, the prefetch distance as it was.
	ADDQ(rb3, w)
	SUBQ(rb3, ahead)
	DECQ(groups)
	JNZ(LabelRef(l + "group"))
	VZEROUPPER()
}

// laneProducts is products in the lane layout (see q6KIntKernels), the digits rearranged at
// k.dig: each row's scale register, then its two halves' ql and qh bytes as they lie, and for
// each group of 64 elements g one VPSHUFD for both registers.
func (k *q6KInt) laneProducts() (lo, hi []reg.VecVirtual) {
	lo, hi = make([]reg.VecVirtual, k.rows), make([]reg.VecVirtual, k.rows)
	for r := range k.rows {
		lo[r], hi[r] = ZMM(), ZMM()
		words := YMM()
		VPMOVSXBW(k.row(r, 192), words)
		VPSLLW(U8(6), words, words) // 64·sc
		sc := ZMM()
		VPERMW(words.AsZ(), k.spread[0], sc)
		for h := range 2 {
			ql, qh := ZMM(), ZMM()
			VMOVDQU64(k.row(r, 64*h), ql)
			VBROADCASTI64X4(k.row(r, 128+32*h), qh) // the half's 32 qh bytes in both 256-bit halves
			for n := range 2 {
				g := 2*h + n
				t := k.nibbles(ql, qh, q6KTables.shifts.Offset(64*n), n)
				m := ZMM()
				VPSHUFD(U8(0x55*g), sc, m)
				for u := range 2 { // elements 16L..16L+7 of sub-block 4g+L, then 16L+8..16L+15
					v := ZMM()
					if u == 0 {
						VPUNPCKLBW(t, k.zero, v)
					} else {
						VPUNPCKHBW(t, k.zero, v)
					}
					VPMULHW(m, v, v) // sc·(q−32)
					first := g == 0 && u == 0
					startOrMadd(k.s, k.vnni, first, v, Mem{Base: k.dig, Disp: 256*g + 64*u}, lo[r])
					startOrMadd(k.s, k.vnni, first, v, Mem{Base: k.dig, Disp: 256*g + 128 + 64*u}, hi[r])
				}
			}
		}
	}
	return lo, hi
}

// products returns the dword sums of the current block's weight words times the low (lo[r])
// and the high (hi[r]) digits of each row r.
func (k *q6KInt) products() (lo, hi []reg.VecVirtual) {
	lo, hi = make([]reg.VecVirtual, k.rows), make([]reg.VecVirtual, k.rows)
	words := make([]reg.VecVirtual, k.rows)
	for r := range k.rows {
		lo[r], hi[r] = ZMM(), ZMM()
		// 64·sc: within [−8192, 8128], a word.
		words[r] = YMM()
		VPMOVSXBW(k.row(r, 192), words[r])
		VPSLLW(U8(6), words[r], words[r])
	}
	for h := range 2 {
		for r := range k.rows {
			sc := ZMM()
			VPERMW(words[r].AsZ(), k.spread[h], sc)
			ql, qh := ZMM(), ZMM()
			VPERMQ(k.row(r, 64*h), k.order, ql)
			VPERMQ(k.row(r, 128), k.qh[h], qh)
			for n := range 2 { // the low nibbles (quarters 0 and 1 of the half), then the high (2, 3)
				t := k.nibbles(ql, qh, k.t.shifts.Offset(64*n), n)
				for u := range 2 {
					c := 2*n + u
					e := 4*h + c // the register's 32 elements: sub-blocks 2e, 2e+1
					v := ZMM()
					if u == 0 {
						VPUNPCKLBW(t, k.zero, v)
					} else {
						VPUNPCKHBW(t, k.zero, v)
					}
					m := ZMM()
					VPSHUFD(U8(0x55*c), sc, m)
					VPMULHW(m, v, v) // sc·(q−32)
					startOrMadd(k.s, k.vnni, e == 0, v, Mem{Base: k.dig, Disp: 128 * e}, lo[r])
					startOrMadd(k.s, k.vnni, e == 0, v, Mem{Base: k.dig, Disp: 128*e + 64}, hi[r])
				}
			}
		}
	}
	return lo, hi
}

// nibbles returns the 64 bytes 4·(q−32) = (q XOR 32) << 2, read as signed bytes, of quarters
// 2n and 2n+1 of a half block from its ql and qh bytes, in whatever qword order the loads gave
// them, shifts holding the qh shifts of that order (see q6KNibbles, whose logic this is).
func (k *q6KInt) nibbles(ql, qh reg.VecVirtual, shifts Mem, n int) reg.VecVirtual {
	a, t := ZMM(), ZMM()
	if n == 0 {
		VPSLLW(U8(2), ql, a) // the word shifts carry bits across bytes only where the masks drop them
	} else {
		VPSRLW(U8(2), ql, a)
	}
	VPSLLVW(shifts, qh, t)
	VPTERNLOGD_BCST(U8(0x6a), k.t.sign, k.high, t) // (t & 0xc0) ^ 0x80
	VPTERNLOGD_BCST(U8(0xf8), k.t.nibble, a, t)    // t | (a & 0x3c)
	return t
}

// end finishes the current block of the rows and adds v·2^-sh to each row's sum.
func (k *q6KInt) end(lo, hi []reg.VecVirtual) {
	// Each row's eight partial sums of T in float64: the dwords widened before any addition.
	T := make([]reg.VecVirtual, k.rows)
	for r := range k.rows {
		T[r] = widenSum(lo[r])
		VFMADD231PD_BCST(k.s.f64Digit, widenSum(hi[r]), T[r]) // exact: an integer below 2^53
	}
	// Fold: each 128-bit lane pair of a and b added, a's in lanes 0-1, b's in 2-3.
	half := func(a, b reg.VecVirtual) reg.VecVirtual { return addHalves(VSHUFF64X2, VADDPD, a, b) }
	u, v := half(T[0], T[1]), ZMM()
	if k.rows == 4 {
		cd := half(T[2], T[3])
		ab := u
		u = ZMM()
		VSHUFF64X2(U8(0x88), cd, ab, u) // 128-bit lane r: row r's partial sums 0-1 and 4-5
		VSHUFF64X2(U8(0xdd), cd, ab, v) // and 2-3 and 6-7
	} else {
		VSHUFF64X2(U8(0xb1), u, u, v) // the lanes of each row exchanged
	}
	VADDPD(v, u, u)
	VPERMILPD(U8(0x55), u, v)
	VADDPD(v, u, u) // T of row r in each float64 lane of its own
	// d of each row in the same lanes: the halves (d0 d0 d1 d1 d2 d2 d3 d3) or (d0 ×4, d1 ×4).
	b := make([]reg.VecVirtual, k.rows)
	for r := range k.rows {
		b[r] = XMM()
		VPBROADCASTW(k.row(r, 208), b[r])
	}
	x := XMM()
	if k.rows == 4 {
		VPUNPCKLDQ(b[1], b[0], b[0])
		VPUNPCKLDQ(b[3], b[2], b[2])
		VPUNPCKLQDQ(b[2], b[0], x)
	} else {
		VPUNPCKLQDQ(b[1], b[0], x)
	}
	VMULPD(halvesToF64(x), u, u) // fl64(d·T)
	VMULPD_BCST(k.scale, u, u)
	VADDPD(u, k.y, k.y)
}
