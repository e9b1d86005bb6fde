package main

import (
	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	"github.com/mmcloughlin/avo/reg"
)

// q4KQuadKernel emits the AVX-512 form of q4KDot4 (see q4KTileKernel), or with inputs = 8 of
//
//	func q4KDot8<suffix>(w []byte, in [24]*byte, nb int, y [8]float64) [8]float64
//
// which continues the float64 sums y of dotQ4K (y = y + v·2^-sh over the nb blocks of w, in
// order) for eight inputs and returns them, leaving the rounding to float32 to the caller: a row can then be
// run a span of blocks at a time, so the eight inputs' digits of a span stay in L1 while every
// row of a tile runs against them (eight inputs of 2048 columns hold 64 KiB of digits).
//
// Both take one Q4_K row against four (eight) prepared inputs, with the block's per-row work done once and
// the block ends of the inputs folded together, two inputs a register, as q4KPairKernel does
// for two rows:
//
//   - The block head is unpacked with the byte shuffles of q4KPairKernel (one lane), the
//     scales stored as dwords holding the word twice so that the products broadcast them with
//     a plain load.
//   - Each input has two dword accumulators (low and high digit); a lane sums 16 products a
//     block, and foldPairs leaves four dwords an input and digit, each below 2^31.
//   - Per pair of inputs, T's and M's exact partial sums go to float64 and are added to (T, M)
//     in float64 lanes 0-1 and 4-5; d and dmin are the row's, shared by the inputs, and
//     each lane rounds d·T, dmin·M, their difference and the product with its input's 2^-sh
//     exactly as dotQ4K does. The sums y stay in registers.
//
// Eight inputs take 16 of the 32 registers as accumulators and halve the decode per input
// (widening, masking and scaling the nibbles) against four.
func q4KQuadKernel(s isa, vnni bool, name string, inputs int) {
	carry := inputs == 8 // y comes in and goes out as float64 (see above)
	declareTile(name, carry,
		"func(w []byte, in [24]*byte, nb int, y [8]float64) [8]float64", " continues dotQ4K's float64 sums y of the Q4_K row w (nb blocks) against eight prepared inputs.",
		"func(w []byte, in [12]*byte, nb int) [4]float32", " returns dotQ4K of the Q4_K row w against four prepared inputs.")
	tables := q4KScaleTables(name)
	var spread, lowBytes Mem
	if vnni { // the byte permute of VBMI, which the avx512vnni tier assumes
		spread, lowBytes = q4KSpreadTable(name, 1), q4KLowBytesTable(name, 8)
	}
	w := Load(Param("w").Base(), GP64())
	args := frameAddr(Param("in"))
	n := Load(Param("nb"), GP64())
	// The block's offset into scales, in bytes; the sums' is eight times it. The digit
	// pointers advance themselves: eight inputs leave no general register for an offset.
	scOff := GP64()
	XORQ(scOff, scOff)
	dig := loadPointers(args, inputs)
	words := AllocLocal(32) // the 8 scales as dwords
	mask := broadcast(s, 0x000f000f)
	digit := ZMM()
	VBROADCASTSD(s.f64Digit, digit)
	var sp, lb reg.VecVirtual
	if vnni {
		sp, lb = YMM(), YMM()
		VMOVDQU32(spread, sp)
		VMOVDQU32(lowBytes, lb)
	}
	y := make([]reg.VecVirtual, inputs/2) // inputs 2p and 2p+1 in float64 lanes 0 and 4 of y[p]
	for p := range y {
		y[p] = ZMM()
		if !carry {
			VXORPD(y[p], y[p], y[p])
			continue
		}
		yp := frameAddr(Param("y"))
		a, b := XMM(), XMM()
		VMOVSD(Mem{Base: yp, Disp: 16 * p}, a)
		VMOVSD(Mem{Base: yp, Disp: 16*p + 8}, b)
		VINSERTF64X2(U8(2), b, a.AsZ(), y[p])
	}
	blockLoop(n, func() {
		prefetch(Mem{Base: w, Disp: prefetchAhead}, 144)
		head := XMM()
		VMOVDQU32(Mem{Base: w}, head)
		sm := XMM() // sc_0..7, m_0..7 as bytes
		tables.unpack(head, sm)
		VMOVDQU32(q4KScaleDwords(vnni, sm, sp, lb), words)

		lo, hi := make([]reg.VecVirtual, inputs), make([]reg.VecVirtual, inputs)
		for i := range lo {
			lo[i], hi[i] = ZMM(), ZMM()
		}
		for c := range 4 {
			ql, q := q4KNibbleWords(s, Mem{Base: w}, c, mask, words, 4)
			for i := range inputs {
				q4KChunkProducts(s, vnni, c, ql, q, q4KDigits(Mem{Base: dig[i]}, c), lo[i], hi[i])
			}
		}

		// The row's d and dmin as float64, twice in each 256-bit half; its mins as float64.
		dh := XMM()
		VPBROADCASTD(head, dh)
		dz := halvesToF64(dh)
		mins := q4KMinsF64(sm)
		for p := range inputs / 2 {
			a, b := 2*p, 2*p+1
			tm := q4KPartialT(lo[a], lo[b], hi[a], hi[b], digit)
			ma, mb := ZMM(), ZMM()
			for i, m := range []reg.VecVirtual{ma, mb} {
				sums := GP64()
				MOVQ(Mem{Base: args, Disp: 8 * (inputs + 2*p + i)}, sums)
				VMULPD(Mem{Base: sums, Index: scOff, Scale: 8}, mins, m)
			}
			u, v := q4KJoinTM(tm, ma, mb) // (T, M) of input a in float64 lanes 0-1, of input b in 4-5
			q4KBlockValues(dz, u, v)
			// The inputs' 2^-sh in lanes 0 and 4.
			sa, sb := XMM(), XMM()
			for i, x := range []reg.VecVirtual{sa, sb} {
				scp := GP64()
				MOVQ(Mem{Base: args, Disp: 8 * (2*inputs + 2*p + i)}, scp)
				VMOVSD(Mem{Base: scp, Index: scOff, Scale: 1}, x)
			}
			sv := ZMM()
			VINSERTF64X2(U8(2), sb, sa.AsZ(), sv)
			VMULPD(sv, u, u)
			VADDPD(u, y[p], y[p])
		}
		ADDQ(U32(144), w)
		for _, d := range dig {
			ADDQ(U32(1024), d)
		}
		ADDQ(U8(8), scOff)
	})
	if carry {
		yp := frameAddr(ReturnIndex(0))
		for p := range y {
			x := XMM()
			VEXTRACTF32X4(U8(2), y[p], x)
			VMOVSD(y[p].AsX(), Mem{Base: yp, Disp: 16 * p})
			VMOVSD(x, Mem{Base: yp, Disp: 16*p + 8})
		}
		VZEROUPPER()
		RET()
		return
	}
	out := frameAddr(ReturnIndex(0))
	for p := range inputs / 2 {
		storeSumPair(y[p], out, 8*p)
	}
	VZEROUPPER()
	RET()
}

// q4KMinsF64 returns the mins m_0..7 of the unpacked block head sm (bytes 8-15) as eight
// float64.
func q4KMinsF64(sm reg.VecVirtual) reg.VecVirtual {
	mb := XMM()
	VPSRLDQ(U8(8), sm, mb)
	md := YMM()
	VPMOVZXBD(mb, md)
	mins := ZMM()
	VCVTDQ2PD(md, mins)
	return mins
}
