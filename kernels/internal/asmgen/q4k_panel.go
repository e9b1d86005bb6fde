package main

import (
	. "github.com/mmcloughlin/avo/build"
	"github.com/mmcloughlin/avo/ir"
	. "github.com/mmcloughlin/avo/operand"
	"github.com/mmcloughlin/avo/reg"
)

// The Q4_K panel: sixteen weight rows in sixteen dword lanes, so that a prompt tile needs no
// horizontal sums. Per block of 256 columns a panel holds q4KPanelBlock bytes:
//
//   - at 64·p, p = 16j+u (sub-block j, column pair u), one vector whose dword lane r holds row
//     r's words sc_j·q for columns 32j+2u and 32j+2u+1 (at most 945 each), ready for VPDPWSSD
//     against an input's digit pair broadcast to every lane;
//   - at 8192, d of the sixteen rows as float64; at 8320 dmin; at 8448+128j the mins m_j.
const (
	q4KPanelD     = 8192
	q4KPanelDMin  = 8320
	q4KPanelMins  = 8448
	q4KPanelBlock = 9472
)

// q4KPanelTileKernel emits
//
//	func q4KPanel4<suffix>(panel []byte, in [12]*byte, nb, rows int) [4][16]float32
//
// which computes DotQ4K of the sixteen rows of a panel (nb blocks) against four prepared
// inputs (in[t] digits, in[4+t] sums, in[8+t] scales), [t][r] for input t and row r. Only the
// first rows lanes hold weights (the callers' product counts use rows); the kernel computes
// all sixteen, and the caller drops the others. Per
// 64-column window each input has two dword accumulators (low and high digit), lane r row r's;
// every column pair is one panel load and eight VPDPWSSD against digit pairs broadcast from
// memory. A lane sums 64 products of at most 945·32768 a window, below 2^31, and is then added
// to T in float64 (T = lo + 65536·hi, exact below 2^53); M comes from exact float64 products
// of the mins and the sub-block sums, and the float64 steps of DotQ4K follow sixteen rows at a
// time, with no horizontal sum anywhere.
func q4KPanelTileKernel(s isa, name string) {
	TEXT(name, NOSPLIT, "func(panel []byte, in [12]*byte, nb, rows int) [4][16]float32")
	Pragma("noescape")
	Doc(name + " returns DotQ4K of the sixteen rows of a Q4_K panel against four prepared inputs.")
	p := Load(Param("panel").Base(), GP64())
	args := frameAddr(Param("in"))
	n := Load(Param("nb"), GP64())
	dig := make([]reg.GPVirtual, 4)
	for i := range dig {
		dig[i] = GP64()
		MOVQ(Mem{Base: args, Disp: 8 * i}, dig[i])
	}
	bOff := GP64() // the block's offset into sums (64 bytes a block) and, /8, into scales
	XORQ(bOff, bOff)
	digit := ZMM()
	VBROADCASTSD(s.f64Digit, digit)
	// Accumulators start as copies of zero: zeroing each by xor with itself would read it
	// before it is written, which the register allocator takes as live from the start.
	zero := ZMM()
	VPXORD(zero, zero, zero)
	y := make([][2]reg.VecVirtual, 4)
	for i := range y {
		y[i] = [2]reg.VecVirtual{ZMM(), ZMM()}
		VMOVDQA64(zero, y[i][0])
		VMOVDQA64(zero, y[i][1])
	}
	Label("block")
	TESTQ(n, n)
	JZ(LabelRef("done"))
	tf := make([][2]reg.VecVirtual, 4)
	for i := range tf {
		tf[i] = [2]reg.VecVirtual{ZMM(), ZMM()}
		VMOVDQA64(zero, tf[i][0])
		VMOVDQA64(zero, tf[i][1])
	}
	for c := range 4 {
		lo, hi := make([]reg.VecVirtual, 4), make([]reg.VecVirtual, 4)
		for i := range lo {
			lo[i], hi[i] = ZMM(), ZMM()
			VMOVDQA64(zero, lo[i])
			VMOVDQA64(zero, hi[i])
		}
		for j := 2 * c; j < 2*c+2; j++ {
			for u := range 16 {
				wv := ZMM()
				VMOVDQU32(Mem{Base: p, Disp: 64 * (16*j + u)}, wv)
				for i := range 4 {
					vpdpwssdBcast(Mem{Base: dig[i], Disp: 128*j + 4*u}, wv, lo[i])
					vpdpwssdBcast(Mem{Base: dig[i], Disp: 128*j + 64 + 4*u}, wv, hi[i])
				}
			}
		}
		for i := range 4 {
			for h := range 2 {
				var a, b Op = lo[i].AsY(), hi[i].AsY()
				if h == 1 {
					a, b = YMM(), YMM()
					VEXTRACTI64X4(U8(1), lo[i], a)
					VEXTRACTI64X4(U8(1), hi[i], b)
				}
				fa, fb := ZMM(), ZMM()
				VCVTDQ2PD(a, fa)
				VCVTDQ2PD(b, fb)
				VADDPD(fa, tf[i][h], tf[i][h])
				VFMADD231PD(digit, fb, tf[i][h]) // exact: integers below 2^53
			}
		}
	}
	for i := range 4 {
		sums := GP64()
		MOVQ(Mem{Base: args, Disp: 8 * (4 + i)}, sums)
		m := [2]reg.VecVirtual{ZMM(), ZMM()}
		for j := range 8 {
			sj := ZMM()
			VBROADCASTSD(Mem{Base: sums, Index: bOff, Scale: 1, Disp: 8 * j}, sj)
			for h := range 2 {
				mj := Mem{Base: p, Disp: q4KPanelMins + 128*j + 64*h}
				if j == 0 {
					VMULPD(mj, sj, m[h])
				} else {
					VFMADD231PD(mj, sj, m[h]) // exact: integers below 2^53
				}
			}
		}
		sc := GP64()
		MOVQ(Mem{Base: args, Disp: 8 * (8 + i)}, sc)
		scb := GP64()
		MOVQ(bOff, scb)
		SHRQ(U8(3), scb)
		for h := range 2 {
			VMULPD(Mem{Base: p, Disp: q4KPanelD + 64*h}, tf[i][h], tf[i][h])
			VMULPD(Mem{Base: p, Disp: q4KPanelDMin + 64*h}, m[h], m[h])
			VSUBPD(m[h], tf[i][h], tf[i][h])
			VMULPD_BCST(Mem{Base: sc, Index: scb, Scale: 1}, tf[i][h], tf[i][h])
			VADDPD(tf[i][h], y[i][h], y[i][h])
		}
	}
	for i := range dig {
		ADDQ(U32(1024), dig[i])
	}
	ADDQ(U32(q4KPanelBlock), p)
	ADDQ(U8(64), bOff)
	DECQ(n)
	JMP(LabelRef("block"))
	Label("done")
	out := frameAddr(ReturnIndex(0))
	for i := range y {
		for h := range 2 {
			f := YMM()
			VCVTPD2PS(y[i][h], f)
			VMOVUPS(f, Mem{Base: out, Disp: 64*i + 32*h})
		}
	}
	VZEROUPPER()
	RET()
}

// vpdpwssdBcast emits VPDPWSSD with its memory operand, one dword, broadcast to every lane.
func vpdpwssdBcast(a Mem, b, acc reg.VecVirtual) {
	Instruction(&ir.Instruction{
		Opcode:   "VPDPWSSD.BCST",
		Operands: []Op{a, b, acc},
		Inputs:   []Op{a, b, acc},
		Outputs:  []Op{acc},
		ISA:      []string{"AVX512_VNNI"},
	})
}

// q4KPanelBuildKernel emits
//
//	func q4KPanelBuild<suffix>(panel []byte, rows [16]*byte, nb int)
//
// which writes sixteen Q4_K rows (nb blocks each) into a panel, row r into lane r. Per
// sub-block the sixteen rows' scaled words are formed a row to a register, as
// q4KQuadKernel does, and turned into the sixteen column-pair vectors by a 16×16 dword
// transpose in registers (dword, qword and two 128-bit shuffle rounds): 64 shuffles a
// sub-block instead of sixteen scatters.
func q4KPanelBuildKernel(s isa, name string) {
	TEXT(name, NOSPLIT, "func(panel []byte, rows [16]*byte, nb int)")
	Pragma("noescape")
	Doc(name + " writes sixteen Q4_K rows into a Q4_K panel, row r into lane r.")
	pick, pickHigh, pickTop, keep, top := q4KScaleTables(name)
	spread := GLOBL(name+"_spread", RODATA|NOPTR)
	for p := range 32 {
		DATA(p, U8(p/4))
	}
	lowBytes := GLOBL(name+"_lowBytes", RODATA|NOPTR)
	for i := range 8 {
		DATA(4*i, U32(0x00ff00ff))
	}
	minIdx := GLOBL(name+"_mins", RODATA|NOPTR)
	for j := range 8 {
		DATA(4*j, U32(uint32(128*j)))
	}
	p := Load(Param("panel").Base(), GP64())
	args := frameAddr(Param("rows"))
	n := Load(Param("nb"), GP64())
	off := GP64() // the block's offset into each row
	XORQ(off, off)
	words := AllocLocal(16 * 32) // row r's 8 scales as dwords at 32r
	mask := broadcast(s, 0x000f000f)
	k := K()
	Label("block")
	TESTQ(n, n)
	JZ(LabelRef("done"))
	for r := range 16 {
		w := GP64()
		MOVQ(Mem{Base: args, Disp: 8 * r}, w)
		head := XMM()
		VMOVDQU32(Mem{Base: w, Index: off, Scale: 1}, head)
		sm := XMM()
		VPSHUFB(pick, head, sm)
		t := XMM()
		VPSRLW(U8(4), head, t)
		VPSHUFB(pickHigh, t, t)
		VPTERNLOGD(U8(0xa8), keep, t, sm)
		VPSRLW(U8(2), head, t)
		VPSHUFB(pickTop, t, t)
		VPTERNLOGD(U8(0xf8), top, t, sm)
		sp, sw := YMM(), YMM()
		VMOVDQU32(spread, sp)
		VPERMB(sm.AsY(), sp, sw)
		VPANDD(lowBytes, sw, sw)
		VMOVDQU32(sw, words.Offset(32*r))
		dh := XMM()
		VCVTPH2PS(head, dh)
		dd := XMM()
		VCVTPS2PD(dh, dd)
		VMOVSD(dd, Mem{Base: p, Disp: q4KPanelD + 8*r})
		VMOVHPD(dd, Mem{Base: p, Disp: q4KPanelDMin + 8*r})
		mb := XMM()
		VPSRLDQ(U8(8), sm, mb)
		md := YMM()
		VPMOVZXBD(mb, md)
		mins := ZMM()
		VCVTDQ2PD(md, mins)
		mi := YMM()
		VMOVDQU32(minIdx, mi)
		KXNORW(k, k, k)
		VSCATTERDPD(mins, k, Mem{Base: p, Index: mi, Scale: 1, Disp: q4KPanelMins + 8*r})
	}
	for j := range 8 {
		c := j / 2
		v := make([]reg.VecVirtual, 16)
		for r := range v {
			w := GP64()
			MOVQ(Mem{Base: args, Disp: 8 * r}, w)
			q := ZMM()
			VPMOVZXBW(Mem{Base: w, Index: off, Scale: 1, Disp: 16 + 32*c}, q)
			if j%2 == 0 {
				VPANDD(mask, q, q)
			} else {
				VPSRLW(U8(4), q, q)
			}
			sc := ZMM()
			VPBROADCASTD(words.Offset(32*r+4*j), sc)
			v[r] = ZMM()
			VPMULLW(sc, q, v[r])
		}
		// Dwords: t[2k] = a0 b0 a1 b1, t[2k+1] = a2 b2 a3 b3 per 128-bit lane (a, b rows 2k, 2k+1).
		t := make([]reg.VecVirtual, 16)
		for kk := range 8 {
			t[2*kk], t[2*kk+1] = ZMM(), ZMM()
			VPUNPCKLDQ(v[2*kk+1], v[2*kk], t[2*kk])
			VPUNPCKHDQ(v[2*kk+1], v[2*kk], t[2*kk+1])
		}
		// Qwords: x[m][e] holds, in 128-bit lane L, rows 4m..4m+3 of pair 4L+e.
		x := make([][4]reg.VecVirtual, 4)
		for m := range 4 {
			a, b, c2, d := t[4*m], t[4*m+1], t[4*m+2], t[4*m+3]
			for e := range 4 {
				x[m][e] = ZMM()
			}
			VPUNPCKLQDQ(c2, a, x[m][0])
			VPUNPCKHQDQ(c2, a, x[m][1])
			VPUNPCKLQDQ(d, b, x[m][2])
			VPUNPCKHQDQ(d, b, x[m][3])
		}
		// 128-bit lanes: pair 4L+e takes lane L of x[0..3][e].
		for e := range 4 {
			p0, p1, p2, p3 := ZMM(), ZMM(), ZMM(), ZMM()
			VSHUFI32X4(U8(0x44), x[1][e], x[0][e], p0) // x0.L0 x0.L1 x1.L0 x1.L1
			VSHUFI32X4(U8(0xee), x[1][e], x[0][e], p1) // x0.L2 x0.L3 x1.L2 x1.L3
			VSHUFI32X4(U8(0x44), x[3][e], x[2][e], p2)
			VSHUFI32X4(U8(0xee), x[3][e], x[2][e], p3)
			for L, src := range [][2]reg.VecVirtual{{p0, p2}, {p0, p2}, {p1, p3}, {p1, p3}} {
				o := ZMM()
				VSHUFI32X4(U8([]uint8{0x88, 0xdd}[L%2]), src[1], src[0], o)
				VMOVDQU32(o, Mem{Base: p, Disp: 64 * (16*j + 4*L + e)})
			}
		}
	}
	ADDQ(U32(144), off)
	ADDQ(U32(q4KPanelBlock), p)
	DECQ(n)
	JMP(LabelRef("block"))
	Label("done")
	VZEROUPPER()
	RET()
}
