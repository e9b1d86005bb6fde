package main

import (
	"fmt"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	"github.com/mmcloughlin/avo/reg"
)

// q6KTileConsts are the read-only tables of the integer Q6_K tiles.
type q6KTileConsts struct {
	scaleIdx Mem // VPSHUFB indices, 64 bytes for each pair g of sub-blocks (g = G mod 4, see q6KTileKernel)
	highIdx  Mem // VPERMB indices: byte 32i+j into the high byte of word j, 64 bytes for each i < 2
}

// q6KTileIntKernels emits the exact-integer Q6_K tiles (dotQ6K against prepared inputs) of the
// two AVX-512 tiers: with suffix AVX512 (F/BW/VL/DQ only) and AVX512VNNI (which has VBMI too).
func q6KTileIntKernels(s isa) {
	c := q6KTileConsts{scaleIdx: GLOBL("q6KTileScaleIdx", RODATA|NOPTR)}
	for g := range 4 {
		for b := range 64 { // lane L of the register takes word 2g (L < 2) or 2g+1 of its source
			lane, pos := b/16, b%16
			DATA(64*g+b, U8(2*(2*g+lane/2)+pos%2))
		}
	}
	c.highIdx = GLOBL("q6KTileHighIdx", RODATA|NOPTR)
	for i := range 2 {
		for j := range 32 {
			DATA(64*i+2*j, U8(0))
			DATA(64*i+2*j+1, U8(32*i+j))
		}
	}
	for _, vnni := range []bool{false, true} {
		suffix := s.suffix
		if vnni {
			suffix += "VNNI"
		}
		q6KTileKernel(s, vnni, c, "q6KTile4"+suffix, 4)
		q6KTileKernel(s, vnni, c, "q6KTile8"+suffix, 8)
	}
	q6KPanelBuildKernel(c)
	q6KPanelTileKernel(s, 4)
}

// q6KTileKernel emits, for inputs = 4,
//
//	func q6KTile4<suffix>(w []byte, in [8]*byte, nb int) [4]float32
//
// dotQ6K of the Q6_K row w (nb blocks) against four prepared inputs (in[t] points at input t's
// q4KWide digits, in[4+t] at its block scales), and for inputs = 8
//
//	func q6KTile8<suffix>(w []byte, in [8]*byte, scales []float64, y [8]float64) [8]float64
//
// which continues dotQ6K's float64 sums y of eight inputs over the len(scales)/8 blocks of w
// (in[t] points at input t's digits of the first of them, scales[8b+t] is its scale of block
// b) and leaves the rounding to float32 to the caller, so that a row runs a span of blocks at a
// time while the eight inputs' digits of the span stay in L1 (see q6KTile8 in simd_q6k.go).
//
// vnni selects the tier with VNNI and VBMI. Each block's weights are decoded and scaled once
// for all the inputs:
//
//   - q6KNibbles (q6k.go) forms the bytes 4·(q−32) of 64 elements at a time, elements 32G to
//     32G+63 for G = 4h+2k (h the half, k the nibble), two digit sub-blocks of 32.
//   - Each sub-block G becomes 32 words sc·(q−32) in the digits' order, the word of element
//     32G+l scaled by sc_(2G+l/16): with VBMI one zero-masked VPERMB puts byte l in the high
//     byte of word l, an exact 1024·(q−32), and VPMULHW with the words 64·sc keeps the top
//     half of the product, exactly sc·(q−32); without it VPMOVSXBW widens the bytes, VPSRAW
//     drops the factor 4 (exactly) and VPMULLW multiplies by sc. The scale words come from the
//     16 scales widened once a block, their two 128-bit halves broadcast to two registers,
//     and one VPSHUFB a sub-block.
//   - Each input has two dword accumulators, low and high digit: VPMADDWD starts them with
//     sub-block 0, VPDPWSSD (or VPMADDWD and VPADDD) adds the seven others, so a lane sums
//     exactly 16 products of at most 4096·32768, within int32 (-16·4096·32768 = -2^31 is the
//     only sum that reaches the bound). No two lanes are added in int32.
//   - Each accumulator goes to float64 whole (its two halves converted and added: exact), and
//     T's eight partial sums of an input are lo + 65536·hi, one exact FMA (below 2^48). A
//     transposing tree of unpacks, lane shuffles and adds folds the inputs' partial sums
//     together, leaving T of input t in float64 lane t (lanes 0-1 and 4-5 for four inputs):
//     every partial sum is an integer below 2^51, so no addition rounds.
//   - v = fl64(d·T), then y = fl64(y + fl64(v·2^-sh)) in block order, each lane exactly as
//     dotQ6K computes it; d is the row's, shared by the inputs.
func q6KTileKernel(s isa, vnni bool, c q6KTileConsts, name string, inputs int) {
	wide := inputs == 8
	declareTile(name, wide,
		"func(w []byte, in [8]*byte, scales []float64, y [8]float64) [8]float64", " continues dotQ6K's float64 sums y of the Q6_K row w against eight prepared inputs, len(scales)/8 blocks.",
		"func(w []byte, in [8]*byte, nb int) [4]float32", " returns dotQ6K of the Q6_K row w against four prepared inputs.")
	w := Load(Param("w").Base(), GP64())
	args := frameAddr(Param("in"))
	var n, scales, scOff reg.Register
	if wide {
		scales = Load(Param("scales").Base(), GP64())
		n = Load(Param("scales").Len(), GP64())
		SHRQ(U8(3), n)
	} else {
		n = Load(Param("nb"), GP64())
		scOff = GP64() // the block's offset into the inputs' scales, in bytes
		XORQ(scOff, scOff)
	}
	dig := loadPointers(args, inputs)
	m := q6KMasks(q6KTables)
	var high []reg.VecVirtual
	var odd reg.OpmaskVirtual
	if vnni {
		high = []reg.VecVirtual{ZMM(), ZMM()}
		for i, h := range high {
			VMOVDQU64(c.highIdx.Offset(64*i), h)
		}
		odd = K()
		bits := GP64()
		MOVQ(U64(0xaaaaaaaaaaaaaaaa), bits)
		KMOVQ(bits, odd)
	}
	y := ZMM()
	if wide {
		VMOVUPD(Mem{Base: frameAddr(Param("y"))}, y)
	} else {
		VXORPD(y, y, y)
	}

	blockLoop(n, func() {
		prefetch(Mem{Base: w, Disp: prefetchAhead}, 210)
		// The scales as words (times 64 for VPMULHW), their halves broadcast: sub-blocks 0-7 of
		// the block, then 8-15.
		s16 := YMM()
		VPMOVSXBW(Mem{Base: w, Disp: 192}, s16)
		if vnni {
			VPSLLW(U8(6), s16, s16)
		}
		halves := []reg.VecVirtual{ZMM(), ZMM()}
		VSHUFI64X2(U8(0x00), s16.AsZ(), s16.AsZ(), halves[0])
		VSHUFI64X2(U8(0x55), s16.AsZ(), s16.AsZ(), halves[1])

		lo, hi := make([]reg.VecVirtual, inputs), make([]reg.VecVirtual, inputs)
		for t := range lo {
			lo[t], hi[t] = ZMM(), ZMM()
		}
		for h := range 2 {
			l, hb := q6KLoadHalf(w, h)
			for k := range 2 {
				bytes := q6KNibbles(q6KTables, m, l, hb, k)
				for i := range 2 {
					G := 4*h + 2*k + i
					sc := ZMM()
					VPSHUFB(c.scaleIdx.Offset(64*(G%4)), halves[h], sc)
					q := ZMM()
					if vnni {
						VPERMB_Z(bytes, high[i], odd, q)
						VPMULHW(sc, q, q)
					} else {
						VPMOVSXBW(halfOf(bytes, i), q)
						VPSRAW(U8(2), q, q)
						VPMULLW(sc, q, q)
					}
					for t := range inputs {
						for j, acc := range []reg.VecVirtual{lo[t], hi[t]} {
							startOrMadd(s, vnni, G == 0, q, Mem{Base: dig[t], Disp: 128*G + 64*j}, acc)
						}
					}
				}
			}
		}

		part := make([]reg.VecVirtual, inputs) // T's eight partial sums of each input, float64
		for t := range part {
			part[t] = widenSum(lo[t])
			VFMADD231PD_BCST(s.f64Digit, widenSum(hi[t]), part[t]) // exact: an integer below 2^48
		}
		var T reg.VecVirtual
		if wide {
			T = q6KFoldInputs(part)
		} else {
			r := q6KFoldInputs(part) // (T0, T1) halves in lanes 0-1 and 2-3, (T2, T3) in 4-5, 6-7
			u := ZMM()
			VSHUFF64X2(U8(0xb1), r, r, u)
			VADDPD(u, r, r)
			T = r
		}
		dh := XMM()
		VPBROADCASTW(Mem{Base: w, Disp: 208}, dh)
		VMULPD(halvesToF64(dh), T, T)
		if wide {
			VMULPD(Mem{Base: scales}, T, T)
			ADDQ(U8(64), scales)
		} else {
			// The inputs' 2^-sh: inputs 0 and 1 in lanes 0-1, 2 and 3 in lanes 4-5.
			pair := []reg.VecVirtual{XMM(), XMM()}
			for p, x := range pair {
				a, b := GP64(), GP64()
				MOVQ(Mem{Base: args, Disp: 8 * (4 + 2*p)}, a)
				MOVQ(Mem{Base: args, Disp: 8 * (5 + 2*p)}, b)
				VMOVSD(Mem{Base: a, Index: scOff, Scale: 1}, x)
				VMOVHPD(Mem{Base: b, Index: scOff, Scale: 1}, x, x)
			}
			sv := ZMM()
			VINSERTF64X2(U8(2), pair[1], pair[0].AsZ(), sv)
			VMULPD(sv, T, T)
			ADDQ(U8(8), scOff)
		}
		VADDPD(T, y, y)
		ADDQ(U32(210), w)
		for _, d := range dig {
			ADDQ(U32(1024), d)
		}
	})
	if wide {
		VMOVUPD(y, Mem{Base: frameAddr(ReturnIndex(0))})
		VZEROUPPER()
		RET()
		return
	}
	out := frameAddr(ReturnIndex(0))
	f := YMM()
	VCVTPD2PS(y, f) // one rounding to nearest, as float32(y)
	x := XMM()
	VEXTRACTF32X4(U8(1), f, x)
	VMOVSD(f.AsX(), Mem{Base: out})
	VMOVSD(x, Mem{Base: out, Disp: 8})
	VZEROUPPER()
	RET()
}

// q6KFoldInputs adds up the float64 lanes of each register of part (four or eight, one per
// input) with a transposing tree. For eight it returns input t's sum in lane t. For four it
// stops a step short: 128-bit lane 0 holds inputs 0 and 1 summed over their lanes 0-3, lane 1
// the same over 4-7, lanes 2 and 3 the same for inputs 2 and 3.
func q6KFoldInputs(part []reg.VecVirtual) reg.VecVirtual {
	var pairs []reg.VecVirtual // inputs a, b: (a0+a1, b0+b1, a2+a3, b2+b3, ...)
	for t := 0; t < len(part); t += 2 {
		u, v := ZMM(), ZMM()
		VUNPCKLPD(part[t+1], part[t], u)
		VUNPCKHPD(part[t+1], part[t], v)
		VADDPD(v, u, u)
		pairs = append(pairs, u)
	}
	// Two pairs: 128-bit lanes (a, b) over elements 0-3, 4-7, then (c, d) over 0-3, 4-7.
	quad := func(ab, cd reg.VecVirtual) reg.VecVirtual {
		u, v := ZMM(), ZMM()
		VSHUFF64X2(U8(0x88), cd, ab, u)
		VSHUFF64X2(U8(0xdd), cd, ab, v)
		VADDPD(v, u, u)
		return u
	}
	r := quad(pairs[0], pairs[1])
	if len(pairs) == 2 {
		return r
	}
	return quad(r, quad(pairs[2], pairs[3]))
}

// The integer Q6_K panel: sixteen weight rows in sixteen dword lanes, as the Q4_K panel
// (q4k_panel.go). Per block of 256 columns a panel holds q6KPanelBlock bytes: at 64·p, p =
// 16G+u (digit sub-block G of 32 columns, column pair u), one vector whose dword lane r holds
// row r's words sc·(q−32) for columns 32G+2u and 32G+2u+1; at 8192 the sixteen rows' d as
// float64.
const (
	q6KPanelD     = 8192
	q6KPanelBlock = 8320
)

// q6KPanelBuildKernel emits
//
//	func q6KPanelBuildAVX512VNNI(panel []byte, rows [16]*byte, nb int)
//
// which writes sixteen Q6_K rows (nb blocks each) into a panel, row r into lane r. Per digit
// sub-block the sixteen rows' words are formed a row to a register with q6KTileKernel's VBMI
// decode and turned into the sixteen column-pair vectors by transposeDwords.
func q6KPanelBuildKernel(c q6KTileConsts) {
	name := "q6KPanelBuildAVX512VNNI"
	declare(name, NOSPLIT, "func(panel []byte, rows [16]*byte, nb int)",
		name+" writes sixteen Q6_K rows into an integer Q6_K panel, row r into lane r.")
	b := newPanelBuild()
	p, off := b.p, b.off
	m := q6KMasks(q6KTables)
	odd := K()
	bits := GP64()
	MOVQ(U64(0xaaaaaaaaaaaaaaaa), bits)
	KMOVQ(bits, odd)
	rowHead := func(r int, w reg.Register) {
		h := XMM()
		VPBROADCASTW(Mem{Base: w, Index: off, Scale: 1, Disp: 208}, h)
		VCVTPH2PS(h, h)
		VCVTSS2SD(h, h, h)
		VMOVSD(h, Mem{Base: p, Disp: q6KPanelD + 8*r})
	}
	rowWords := func(G, r int, w reg.Register) reg.VecVirtual {
		h, k, i := G/4, G/2%2, G%2
		l, hb := ZMM(), ZMM()
		VMOVDQU64(Mem{Base: w, Index: off, Scale: 1, Disp: 64 * h}, l)
		VBROADCASTI64X4(Mem{Base: w, Index: off, Scale: 1, Disp: 128 + 32*h}, hb)
		bytes := q6KNibbles(q6KTables, m, l, hb, k)
		s16 := YMM()
		VPMOVSXBW(Mem{Base: w, Index: off, Scale: 1, Disp: 192}, s16)
		VPSLLW(U8(6), s16, s16)
		half := ZMM()
		VSHUFI64X2(U8([]uint8{0x00, 0x55}[h]), s16.AsZ(), s16.AsZ(), half)
		VPSHUFB(c.scaleIdx.Offset(64*(G%4)), half, half)
		idx := ZMM()
		VMOVDQU64(c.highIdx.Offset(64*i), idx)
		v := ZMM()
		VPERMB_Z(bytes, idx, odd, v)
		VPMULHW(half, v, v)
		return v
	}
	b.blocks(210, q6KPanelBlock, rowHead, rowWords)
}

// q6KPanelTileKernel emits, for T tokens,
//
//	func q6KPanel<T>AVX512VNNI(panel []byte, in [2T]*byte, nb int, y []float32)
//
// which stores in y[16t+r] dotQ6K of row r of the sixteen rows of a panel (nb blocks) against
// prepared input t of T (in[t] digits, in[T+t] scales); len(y) must be at least 16T. Every
// column pair is one panel load and 2T VPDPWSSD against digit pairs broadcast from memory,
// into two dword accumulators an input (lo and hi digit), lane r row r's. main emits T = 4.
// A microbenchmark of independent VPDPWSSD chains gave 0.16 ns an instruction with twelve
// chains against 0.21 with eight, but neither six inputs (twelve accumulators; 3-7% slower
// in BenchmarkQ6KTileInt) nor two accumulators a digit (sixteen chains; within ±2%) ran
// faster here. Six inputs' results returned by value also made the ABI wrapper's frame
// exceed what a NOSPLIT function may use; hence y.
//
// A lane may sum only 16 products of up to 4096·32768 (see q6KTileKernel), so after every 16
// columns each accumulator is split exactly: its high half (arithmetic shift) moves on, lo's
// to M (weight 65536), hi's to N (weight 2^32), and its low half (below 2^16) stays, since
// 16·4064·32768 + 2^16 < 2^31 and −16·4096·32768 = −2^31: the next 16 products fit. After the
// block's 16 windows |M|, |N| < 2^20, and T = lo + 65536·(M + hi) + 2^32·N in float64 (exact:
// integers below 2^53); dotQ6K's float64 steps then run sixteen rows at a time, with no
// horizontal sum anywhere. The sums y stay on the stack.
func q6KPanelTileKernel(s isa, T int) {
	name := fmt.Sprintf("q6KPanel%dAVX512VNNI", T)
	// Not NOSPLIT: the sums on the stack and the frame exceed what a NOSPLIT function may use.
	declare(name, 0, fmt.Sprintf("func(panel []byte, in [%d]*byte, nb int, y []float32)", 2*T),
		fmt.Sprintf("%s stores in y dotQ6K of the sixteen rows of an integer Q6_K panel against %d prepared inputs.", name, T))
	p := Load(Param("panel").Base(), GP64())
	args := frameAddr(Param("in"))
	n := Load(Param("nb"), GP64())
	dig := loadPointers(args, T)
	scOff := GP64()
	XORQ(scOff, scOff)
	zero := ZMM()
	VPXORD(zero, zero, zero)
	low := ZMM()
	VPTERNLOGD(U8(0xff), low, low, low) // all ones
	VPSRLD(U8(16), low, low)            // 0xffff in every dword
	y := AllocLocal(128 * T)            // the sums, input t's sixteen float64 at 128t
	for i := range 2 * T {
		VMOVUPD(zero, y.Offset(64*i))
	}
	blockLoop(n, func() {
		lo, hi, M, N := make([]reg.VecVirtual, T), make([]reg.VecVirtual, T), make([]reg.VecVirtual, T), make([]reg.VecVirtual, T)
		for i := range T {
			lo[i], hi[i], M[i], N[i] = copyOf(zero), copyOf(zero), copyOf(zero), copyOf(zero)
		}
		for G := range 8 {
			for win := range 2 {
				for u := 8 * win; u < 8*win+8; u++ {
					panelProducts(p, dig, G, u, lo, hi)
				}
				for i := range T {
					for _, d := range []struct{ acc, to reg.VecVirtual }{{lo[i], M[i]}, {hi[i], N[i]}} {
						t := ZMM()
						VPSRAD(U8(16), d.acc, t)
						VPADDD(t, d.to, d.to)
						VPANDD(low, d.acc, d.acc)
					}
				}
			}
		}
		for i := range T {
			VPADDD(hi[i], M[i], M[i]) // hi below 2^16 after the last split
			sc := GP64()
			MOVQ(Mem{Base: args, Disp: 8 * (T + i)}, sc)
			for h := range 2 {
				part := func(v reg.VecVirtual) reg.VecVirtual {
					src := halfOf(v, h)
					f := ZMM()
					VCVTDQ2PD(src, f)
					return f
				}
				t, m, nn := part(lo[i]), part(M[i]), part(N[i])
				VFMADD231PD_BCST(s.f64Digit, m, t) // exact: integers below 2^53
				VMULPD_BCST(s.f64Digit, nn, nn)
				VFMADD231PD_BCST(s.f64Digit, nn, t)
				VMULPD(Mem{Base: p, Disp: q6KPanelD + 64*h}, t, t)
				VMULPD_BCST(Mem{Base: sc, Index: scOff, Scale: 1}, t, t)
				VADDPD(y.Offset(128*i+64*h), t, t)
				VMOVUPD(t, y.Offset(128*i+64*h))
			}
		}
		for i := range dig {
			ADDQ(U32(1024), dig[i])
		}
		ADDQ(U32(q6KPanelBlock), p)
		ADDQ(U8(8), scOff)
	})
	out := Load(Param("y").Base(), GP64())
	for i := range T {
		for h := range 2 {
			v, f := ZMM(), YMM()
			VMOVUPD(y.Offset(128*i+64*h), v)
			VCVTPD2PS(v, f)
			VMOVUPS(f, Mem{Base: out, Disp: 64*i + 32*h})
		}
	}
	VZEROUPPER()
	RET()
}
