package main

import (
	"strings"

	. "github.com/mmcloughlin/avo/build"
	"github.com/mmcloughlin/avo/ir"
	. "github.com/mmcloughlin/avo/operand"
	"github.com/mmcloughlin/avo/reg"
)

// vpdpwssd emits VPDPWSSD (AVX512_VNNI), which avo v0.5.0 does not list: acc += the sums of
// the two signed word products in each dword of a (a register or memory) and b.
func vpdpwssd(a Op, b, acc reg.VecVirtual) { vnniInstruction("VPDPWSSD", a, b, acc) }

// vnniInstruction emits the AVX512_VNNI instruction opcode, a b acc, which reads all three and
// writes acc.
func vnniInstruction(opcode string, a Op, b, acc reg.VecVirtual) {
	Instruction(&ir.Instruction{
		Opcode:   opcode,
		Operands: []Op{a, b, acc},
		Inputs:   []Op{a, b, acc},
		Outputs:  []Op{acc},
		ISA:      []string{"AVX512_VNNI"},
	})
}

// madd adds the products of the words of w and dig, pairwise, into the dwords of acc: one
// VPDPWSSD with VNNI, VPMADDWD and VPADDD without.
func madd(s isa, vnni bool, w reg.VecVirtual, dig Op, acc reg.VecVirtual) {
	if vnni {
		vpdpwssd(dig, w, acc)
		return
	}
	t := s.vec()
	VPMADDWD(dig, w, t)
	VPADDD(t, acc, acc)
}

// startOrMadd starts acc with the pairwise products of the words of w and dig (VPMADDWD)
// where start holds, the first products of a block, and adds them into acc with madd where
// it does not.
func startOrMadd(s isa, vnni, start bool, w reg.VecVirtual, dig Op, acc reg.VecVirtual) {
	if start {
		VPMADDWD(dig, w, acc)
		return
	}
	madd(s, vnni, w, dig, acc)
}

// q4KNibbleWords widens the weight bytes of chunk c of the Q4_K block at w (sub-block 2c in
// the low nibbles, 2c+1 in the high) to words and returns the words sc·q of both, ql of the
// low nibbles and q of the high; mask holds 0x000f in every word. The scale sc_j is
// broadcast from scales + size·j: a word (size 2) or a dword holding the word twice (size 4).
func q4KNibbleWords(s isa, w Mem, c int, mask reg.VecVirtual, scales Mem, size int) (ql, q reg.VecVirtual) {
	broadcast := VPBROADCASTW
	if size == 4 {
		broadcast = VPBROADCASTD
	}
	q = s.vec()
	VPMOVZXBW(w.Offset(16+32*c), q)
	ql = s.vec()
	s.and(mask, q, ql)
	VPSRLW(U8(4), q, q)
	sc := s.vec()
	broadcast(scales.Offset(size*(2*c)), sc)
	VPMULLW(sc, ql, ql)
	broadcast(scales.Offset(size*(2*c+1)), sc)
	VPMULLW(sc, q, q)
	return ql, q
}

// q4KChunkProducts adds the products of chunk c of a Q4_K block (see q4KNibbleWords) with an
// input's digits into the accumulators lo (low digit) and hi (high digit): the low-nibble
// words ql with d[0] and d[1], sub-block 2c's low and high digits, the high-nibble words q
// with d[2] and d[3], sub-block 2c+1's. Chunk 0's low nibbles start the sums.
func q4KChunkProducts(s isa, vnni bool, c int, ql, q reg.VecVirtual, d [4]Op, lo, hi reg.VecVirtual) {
	for i, p := range []struct{ q, acc reg.VecVirtual }{{ql, lo}, {ql, hi}, {q, lo}, {q, hi}} {
		startOrMadd(s, vnni, c == 0 && i < 2, p.q, d[i], p.acc)
	}
}

// q4KDigits returns the four digit operands of chunk c of the input's block at dig (see
// q4KChunkProducts): sub-block 2c's low and high digits, then 2c+1's.
func q4KDigits(dig Mem, c int) [4]Op {
	var d [4]Op
	for i := range d {
		d[i] = dig.Offset(128*(2*c+i/2) + 64*(i%2))
	}
	return d
}

// q4KNextBlock steps the rows w and the input's digits, sums and scale (pointers or offsets)
// one Q4_K block on.
func q4KNextBlock(w []reg.Register, dig, sums, scale reg.Register) {
	for _, r := range w {
		ADDQ(U32(144), r)
	}
	ADDQ(U32(1024), dig)
	ADDQ(U32(64), sums)
	ADDQ(U8(8), scale)
}

// q4KKernel emits
//
//	func q4KDot2<suffix>(w0, w1 []byte, digits []int16, sums, scale []float64) [2]float32
//
// which computes dotQ4K of the two Q4_K rows w0 and w1 against one prepared input (its q4KWide
// digits and sums and its len(scale) block scales), the whole definition. The AVX-512 tiers get
// q4KPairKernel; the AVX2 form, with 16 registers, works a row at a time:
//
//   - The 6-bit scales and mins of a block are unpacked in general registers (the bit moves of
//     scaleMinK4, four bytes at a time) and the scales widened to words on the stack.
//   - Each weight nibble q becomes the word sc·q (<= 945) and is multiplied pairwise with the
//     digit words (VPDPWSSD or VPMADDWD), four dword accumulators a row: low digit and high
//     digit for the low and the high nibbles. After a block the lanes are folded to four dwords
//     per digit, each the sum of 64 products of at most 945·32768, so below 2^31: exact.
//   - The four lanes go to float64 and T = Σlo + 65536·Σhi, M = Σ m_j·sums_j are formed with
//     exact float64 products and sums (every value an integer below 2^53, so no rounding).
//   - v = fl64(d·T) − fl64(dmin·M) and y = y + v·2^-sh in block order, as dotQ4K; then one
//     rounding to float32.
func q4KKernel(s isa, vnni bool) {
	name := "q4KDot2" + s.suffix
	if vnni {
		name += "VNNI"
	}
	if s.parts == 1 {
		q4KPairKernel(s, vnni, name)
		return
	}
	declare(name, NOSPLIT, "func(w0, w1 []byte, digits []int16, sums, scale []float64) [2]float32",
		name+" returns dotQ4K of the Q4_K rows w0 and w1 against a prepared input.")
	w := []reg.Register{Load(Param("w0").Base(), GP64()), Load(Param("w1").Base(), GP64())}
	dig := Load(Param("digits").Base(), GP64())
	sums := Load(Param("sums").Base(), GP64())
	scale := Load(Param("scale").Base(), GP64())
	n := Load(Param("scale").Len(), GP64())
	words := AllocLocal(32) // the 8 scales of each row as words
	mask := broadcast(s, 0x000f000f)
	y := []reg.VecVirtual{XMM(), XMM()}
	for _, r := range y {
		VXORPD(r, r, r)
	}
	blockLoop(n, func() {
		mins := make([]reg.VecVirtual, 2)
		for r := range 2 {
			prefetch(Mem{Base: w[r], Disp: prefetchAhead}, 144)
			mins[r] = unpackScales(w[r], words.Offset(16*r))
		}
		type accs struct{ lo1, hi1, lo2, hi2 reg.VecVirtual } // digit (lo, hi) × nibble (low 1, high 2)
		acc := make([]accs, 2)
		for r := range acc {
			acc[r] = accs{s.vec(), s.vec(), s.vec(), s.vec()}
			for _, a := range []reg.VecVirtual{acc[r].lo1, acc[r].hi1, acc[r].lo2, acc[r].hi2} {
				s.xor(a, a, a)
			}
		}
		wordsPerReg := 2 * s.width()
		for c := range 4 {
			for p := range s.parts {
				e := wordsPerReg * p // first element of this register within the sub-block
				// Digits of sub-blocks 2c (low nibbles) and 2c+1 (high nibbles).
				d := q4KDigits(Mem{Base: dig, Disp: 2 * e}, c)
				for r := range 2 {
					ql, q := q4KNibbleWords(s, Mem{Base: w[r], Disp: e}, c, mask, words.Offset(16*r), 2)
					madd(s, vnni, ql, d[0], acc[r].lo1)
					madd(s, vnni, ql, d[1], acc[r].hi1)
					madd(s, vnni, q, d[2], acc[r].lo2)
					madd(s, vnni, q, d[3], acc[r].hi2)
				}
			}
		}
		for r := range 2 {
			a := acc[r]
			VPADDD(a.lo2, a.lo1, a.lo1)
			VPADDD(a.hi2, a.hi1, a.hi1)
			v := q4KBlockEnd(s, a.lo1, a.hi1, mins[r], Mem{Base: sums}, Mem{Base: w[r]}, Mem{Base: scale})
			VADDSD(v, y[r], y[r])
		}
		q4KNextBlock(w, dig, sums, scale)
	})
	out := frameAddr(ReturnIndex(0))
	for r := range 2 {
		VCVTSD2SS(y[r], y[r], y[r])
		VMOVSS(y[r], Mem{Base: out, Disp: 4 * r})
	}
	VZEROUPPER()
	RET()
}

// q4KBlockEnd finishes a Q4_K block of one row against one input in the AVX2 kernels: lo and
// hi hold the dword partial sums of T's low and high digits, mins the block's 8 mins as bytes, sums the input's 8
// sub-block sums, blk the block (its d and dmin), scale the input's 2^-sh; it returns v·2^-sh
// (exact), to be added to the row's sum.
func q4KBlockEnd(s isa, lo, hi, mins reg.VecVirtual, sums, blk, scale Mem) reg.VecVirtual {
	l4, h4 := foldToFour(lo), foldToFour(hi)
	t, h := YMM(), YMM()
	VCVTDQ2PD(l4, t)
	VCVTDQ2PD(h4, h)
	VMULPD(s.f64Digit, h, h)
	VADDPD(h, t, t) // four exact partial sums of T
	m := minsTimesSums(mins, sums)
	// (t0+t1, m0+m1, t2+t3, m2+m3), then (T, M): exact.
	u := YMM()
	VUNPCKHPD(m, t, u)
	VUNPCKLPD(m, t, t)
	VADDPD(u, t, t)
	tm := XMM()
	VEXTRACTF128(U8(1), t, tm)
	VADDPD(t.AsX(), tm, tm)
	dd := XMM()
	VMOVD(blk, dd)
	VCVTPH2PS(dd, dd)
	VCVTPS2PD(dd, dd)
	VMULPD(dd, tm, tm) // (fl64(d·T), fl64(dmin·M))
	dm := XMM()
	VPERMILPD(U8(1), tm, dm)
	VSUBSD(dm, tm, tm)
	VMULSD(scale, tm, tm)
	return tm
}

// q4KTileKernel emits
//
//	func q4KDot4<suffix>(w []byte, in [12]*byte, nb int) [4]float32
//
// which computes dotQ4K of the Q4_K row w (nb blocks) against four prepared inputs, in[t] their
// q4KWide digits, in[4+t] their sums and in[8+t] their block scales: the row's nibbles are
// widened and scaled once for the four. The AVX-512 tiers get q4KQuadKernel, and with it
// q4KDot8<suffix>, the same against eight inputs (AVX2 has too few registers); the AVX2 form
// follows q4KKernel with two dword accumulators per input (low and high digit): a lane still
// sums 16 products a block before the fold.
func q4KTileKernel(s isa, vnni bool) {
	name := "q4KDot4" + s.suffix
	if vnni {
		name += "VNNI"
	}
	if s.parts == 1 {
		q4KQuadKernel(s, vnni, name, 4)
		q4KQuadKernel(s, vnni, strings.Replace(name, "Dot4", "Dot8", 1), 8)
		if vnni {
			q4KPanelTileKernel(s, "q4KPanel4"+s.suffix+"VNNI")
			q4KPanelBuildKernel(s, "q4KPanelBuild"+s.suffix+"VNNI")
		}
		return
	}
	declare(name, NOSPLIT, "func(w []byte, in [12]*byte, nb int) [4]float32",
		name+" returns dotQ4K of the Q4_K row w against four prepared inputs.")
	w := Load(Param("w").Base(), GP64())
	args := frameAddr(Param("in"))
	n := Load(Param("nb"), GP64())
	dOff, sOff, scOff := GP64(), GP64(), GP64() // the block's offsets into digits, sums, scale
	XORQ(dOff, dOff)
	XORQ(sOff, sOff)
	XORQ(scOff, scOff)
	words := AllocLocal(16)
	mask := broadcast(s, 0x000f000f)
	y := AllocLocal(32) // the four sums, on the stack: AVX2 has no register to spare
	for t := range 4 {
		MOVQ(U32(0), y.Offset(8*t))
	}
	blockLoop(n, func() {
		mins := unpackScales(w, words)
		lo, hi := make([]reg.VecVirtual, 4), make([]reg.VecVirtual, 4)
		for t := range 4 {
			lo[t], hi[t] = s.vec(), s.vec()
			s.xor(lo[t], lo[t], lo[t])
			s.xor(hi[t], hi[t], hi[t])
		}
		wordsPerReg := 2 * s.width()
		for c := range 4 {
			for p := range s.parts {
				e := wordsPerReg * p
				ql, q := q4KNibbleWords(s, Mem{Base: w, Disp: e}, c, mask, words, 2)
				for t := range 4 {
					d := GP64()
					MOVQ(Mem{Base: args, Disp: 8 * t}, d)
					dt := q4KDigits(Mem{Base: d, Index: dOff, Scale: 1, Disp: 2 * e}, c)
					madd(s, vnni, ql, dt[0], lo[t])
					madd(s, vnni, ql, dt[1], hi[t])
					madd(s, vnni, q, dt[2], lo[t])
					madd(s, vnni, q, dt[3], hi[t])
				}
			}
		}
		for t := range 4 {
			sp, scp := GP64(), GP64()
			MOVQ(Mem{Base: args, Disp: 8 * (4 + t)}, sp)
			MOVQ(Mem{Base: args, Disp: 8 * (8 + t)}, scp)
			v := q4KBlockEnd(s, lo[t], hi[t], mins, Mem{Base: sp, Index: sOff, Scale: 1}, Mem{Base: w}, Mem{Base: scp, Index: scOff, Scale: 1})
			VADDSD(y.Offset(8*t), v, v)
			VMOVSD(v, y.Offset(8*t))
		}
		q4KNextBlock([]reg.Register{w}, dOff, sOff, scOff)
	})
	out := frameAddr(ReturnIndex(0))
	for t := range 4 {
		v := XMM()
		VMOVSD(y.Offset(8*t), v)
		VCVTSD2SS(v, v, v)
		VMOVSS(v, Mem{Base: out, Disp: 4 * t})
	}
	VZEROUPPER()
	RET()
}

// unpackScales unpacks the 12 scale bytes of the Q4_K block at w (scaleMinK4 four bytes at a
// time), stores its 8 scales as words at st and returns its 8 mins as bytes in an xmm register.
func unpackScales(w reg.Register, st Mem) reg.VecVirtual {
	a0, a1, a2 := GP32(), GP32(), GP32()
	MOVL(Mem{Base: w, Disp: 4}, a0)
	MOVL(Mem{Base: w, Disp: 8}, a1)
	MOVL(Mem{Base: w, Disp: 12}, a2)
	// high parts: bits 4-5 of sc_j (j >= 4) come from bits 6-7 of s[j-4], of m_j from s[j].
	highBits := func(src reg.GPVirtual) reg.GPVirtual {
		t := GP32()
		MOVL(src, t)
		SHRL(U8(6), t)
		ANDL(U32(0x03030303), t)
		SHLL(U8(4), t)
		return t
	}
	scHi, mHi := highBits(a0), highBits(a1)
	t := GP32()
	MOVL(a2, t)
	ANDL(U32(0x0f0f0f0f), t)
	ORL(t, scHi)
	SHRL(U8(4), a2)
	ANDL(U32(0x0f0f0f0f), a2)
	ORL(a2, mHi)
	ANDL(U32(0x3f3f3f3f), a0)
	ANDL(U32(0x3f3f3f3f), a1)
	sc, m := a0.As64(), a1.As64() // the 32-bit operations cleared the upper halves
	SHLQ(U8(32), scHi.As64())
	ORQ(scHi.As64(), sc)
	SHLQ(U8(32), mHi.As64())
	ORQ(mHi.As64(), m)
	x := XMM()
	VMOVQ(sc, x)
	VPMOVZXBW(x, x)
	VMOVDQU(x, st)
	mins := XMM()
	VMOVQ(m, mins)
	return mins
}

// foldToFour adds the eight dword lanes of the ymm register a down to four (an xmm register).
func foldToFour(a reg.VecVirtual) reg.VecVirtual {
	x := halfOf(a, 1)
	VPADDD(halfOf(a, 0), x, x)
	return x
}

// minsTimesSums returns the four exact float64 partial sums of M = Σ_j m_j·sums_j, the 8 min
// bytes in mins and the 8 sums at sums.
func minsTimesSums(mins reg.VecVirtual, sums Mem) reg.VecVirtual {
	d := YMM()
	VPMOVZXBD(mins, d)
	lo, hi := toFloat64(d)
	VMULPD(sums, lo, lo)
	VMULPD(sums.Offset(32), hi, hi)
	VADDPD(hi, lo, lo)
	return lo
}
