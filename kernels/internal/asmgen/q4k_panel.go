package main

import (
	. "github.com/mmcloughlin/avo/build"
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
// which computes dotQ4K of the sixteen rows of a panel (nb blocks) against four prepared
// inputs (in[t] digits, in[4+t] sums, in[8+t] scales), [t][r] for input t and row r. Only the
// first rows lanes hold weights (the callers' product counts use rows); the kernel computes
// all sixteen, and the caller drops the others. Per
// 64-column window each input has two dword accumulators (low and high digit), lane r row r's;
// every column pair is one panel load and eight VPDPWSSD against digit pairs broadcast from
// memory. A lane sums 64 products of at most 945·32768 a window, below 2^31, and is then added
// to T in float64 (T = lo + 65536·hi, exact below 2^53); M comes from exact float64 products
// of the mins and the sub-block sums, and the float64 steps of dotQ4K follow sixteen rows at a
// time, with no horizontal sum anywhere.
func q4KPanelTileKernel(s isa, name string) {
	declare(name, NOSPLIT, "func(panel []byte, in [12]*byte, nb, rows int) [4][16]float32",
		name+" returns dotQ4K of the sixteen rows of a Q4_K panel against four prepared inputs.")
	p := Load(Param("panel").Base(), GP64())
	args := frameAddr(Param("in"))
	n := Load(Param("nb"), GP64())
	dig := loadPointers(args, 4)
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
		y[i] = [2]reg.VecVirtual{copyOf(zero), copyOf(zero)}
	}
	blockLoop(n, func() {
		tf := make([][2]reg.VecVirtual, 4)
		for i := range tf {
			tf[i] = [2]reg.VecVirtual{copyOf(zero), copyOf(zero)}
		}
		for c := range 4 {
			lo, hi := make([]reg.VecVirtual, 4), make([]reg.VecVirtual, 4)
			for i := range lo {
				lo[i], hi[i] = copyOf(zero), copyOf(zero)
			}
			for j := 2 * c; j < 2*c+2; j++ {
				for u := range 16 {
					panelProducts(p, dig, j, u, lo, hi)
				}
			}
			for i := range 4 {
				for h := range 2 {
					a, b := halfOf(lo[i], h), halfOf(hi[i], h)
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
	})
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

// copyOf returns a new register holding a copy of zero, an accumulator at 0 (see
// q4KPanelTileKernel for why not one zeroed by xor).
func copyOf(zero reg.VecVirtual) reg.VecVirtual {
	r := ZMM()
	VMOVDQA64(zero, r)
	return r
}

// panelProducts adds the products of column pair u of digit sub-block j of the panel at p
// (one vector, a row a dword lane) with each input i's digit pair of those columns, broadcast
// from dig[i], into its accumulators lo[i] (low digit) and hi[i] (high digit).
func panelProducts(p reg.Register, dig []reg.GPVirtual, j, u int, lo, hi []reg.VecVirtual) {
	wv := ZMM()
	VMOVDQU32(Mem{Base: p, Disp: 64 * (16*j + u)}, wv)
	for i := range dig {
		vpdpwssdBcast(Mem{Base: dig[i], Disp: 128*j + 4*u}, wv, lo[i])
		vpdpwssdBcast(Mem{Base: dig[i], Disp: 128*j + 64 + 4*u}, wv, hi[i])
	}
}

// vpdpwssdBcast emits VPDPWSSD with its memory operand, one dword, broadcast to every lane.
func vpdpwssdBcast(a Mem, b, acc reg.VecVirtual) { vnniInstruction("VPDPWSSD.BCST", a, b, acc) }

// q4KPanelBuildKernel emits
//
//	func q4KPanelBuild<suffix>(panel []byte, rows [16]*byte, nb int)
//
// which writes sixteen Q4_K rows (nb blocks each) into a panel, row r into lane r. Per
// sub-block the sixteen rows' scaled words are formed a row to a register, as
// q4KQuadKernel does, and turned into the sixteen column-pair vectors by transposeDwords.
func q4KPanelBuildKernel(s isa, name string) {
	declare(name, NOSPLIT, "func(panel []byte, rows [16]*byte, nb int)",
		name+" writes sixteen Q4_K rows into a Q4_K panel, row r into lane r.")
	tables := q4KScaleTables(name)
	spread, lowBytes := q4KSpreadTable(name, 1), q4KLowBytesTable(name, 8)
	minIdx := GLOBL(name+"_mins", RODATA|NOPTR)
	for j := range 8 {
		DATA(4*j, U32(uint32(128*j)))
	}
	b := newPanelBuild()
	p, off := b.p, b.off
	words := AllocLocal(16 * 32) // row r's 8 scales as dwords at 32r
	mask := broadcast(s, 0x000f000f)
	k := K()
	rowHead := func(r int, w reg.Register) {
		head := XMM()
		VMOVDQU32(Mem{Base: w, Index: off, Scale: 1}, head)
		sm := XMM()
		tables.unpack(head, sm)
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
		mins := q4KMinsF64(sm)
		mi := YMM()
		VMOVDQU32(minIdx, mi)
		KXNORW(k, k, k)
		VSCATTERDPD(mins, k, Mem{Base: p, Index: mi, Scale: 1, Disp: q4KPanelMins + 8*r})
	}
	rowWords := func(j, r int, w reg.Register) reg.VecVirtual {
		q := ZMM()
		VPMOVZXBW(Mem{Base: w, Index: off, Scale: 1, Disp: 16 + 32*(j/2)}, q)
		if j%2 == 0 {
			VPANDD(mask, q, q)
		} else {
			VPSRLW(U8(4), q, q)
		}
		sc := ZMM()
		VPBROADCASTD(words.Offset(32*r+4*j), sc)
		v := ZMM()
		VPMULLW(sc, q, v)
		return v
	}
	b.blocks(144, q4KPanelBlock, rowHead, rowWords)
}

// panelBuild holds the registers of a panel builder (q4KPanelBuildKernel,
// q6KPanelBuildKernel): func(panel []byte, rows [16]*byte, nb int).
type panelBuild struct {
	p, args, n reg.Register // the panel at the current block, the rows' pointers, the blocks left
	off        reg.Register // the current block's offset into each row
}

// newPanelBuild loads a panel builder's arguments.
func newPanelBuild() panelBuild {
	var b panelBuild
	b.p = Load(Param("panel").Base(), GP64())
	b.args = frameAddr(Param("rows"))
	b.n = Load(Param("nb"), GP64())
	b.off = GP64()
	XORQ(b.off, b.off)
	return b
}

// blocks emits a panel builder's loop over the blocks of the sixteen rows, rowBlock bytes a
// block, into panelBlock bytes of panel a block: per block it runs head for each row r (w the
// row's pointer), then, for each digit sub-block j, forms the sixteen rows' words sc·q, row r's
// 32 as words(j, r, w) returns them, and transposes them into the sixteen column-pair vectors
// of the sub-block.
func (b panelBuild) blocks(rowBlock, panelBlock int, head func(r int, w reg.Register), words func(j, r int, w reg.Register) reg.VecVirtual) {
	blockLoop(b.n, func() {
		for r := range 16 {
			head(r, b.row(r))
		}
		for j := range 8 {
			v := make([]reg.VecVirtual, 16)
			for r := range v {
				v[r] = words(j, r, b.row(r))
			}
			transposeDwords(v, func(u int, o reg.VecVirtual) {
				VMOVDQU32(o, Mem{Base: b.p, Disp: 64 * (16*j + u)})
			})
		}
		ADDQ(U32(rowBlock), b.off)
		ADDQ(U32(panelBlock), b.p)
	})
	VZEROUPPER()
	RET()
}

// row loads the pointer to row r.
func (b panelBuild) row(r int) reg.Register {
	w := GP64()
	MOVQ(Mem{Base: b.args, Disp: 8 * r}, w)
	return w
}

// transposeDwords hands store the sixteen dword columns of the 16×16 dword matrix whose row r
// is v[r] (column u as a register whose lane r is v[r]'s dword u), with dword, qword and two
// 128-bit shuffle rounds: 64 shuffles where sixteen scatters would do the same.
func transposeDwords(v []reg.VecVirtual, store func(u int, o reg.VecVirtual)) {
	// Dwords: t[2k] = a0 b0 a1 b1, t[2k+1] = a2 b2 a3 b3 per 128-bit lane (a, b rows 2k, 2k+1).
	t := make([]reg.VecVirtual, 16)
	for kk := range 8 {
		t[2*kk], t[2*kk+1] = ZMM(), ZMM()
		VPUNPCKLDQ(v[2*kk+1], v[2*kk], t[2*kk])
		VPUNPCKHDQ(v[2*kk+1], v[2*kk], t[2*kk+1])
	}
	// Qwords: x[m][e] holds, in 128-bit lane L, rows 4m..4m+3 of column 4L+e.
	x := make([][4]reg.VecVirtual, 4)
	for m := range 4 {
		a, b, c, d := t[4*m], t[4*m+1], t[4*m+2], t[4*m+3]
		for e := range 4 {
			x[m][e] = ZMM()
		}
		VPUNPCKLQDQ(c, a, x[m][0])
		VPUNPCKHQDQ(c, a, x[m][1])
		VPUNPCKLQDQ(d, b, x[m][2])
		VPUNPCKHQDQ(d, b, x[m][3])
	}
	// 128-bit lanes: column 4L+e takes lane L of x[0..3][e].
	for e := range 4 {
		p0, p1, p2, p3 := ZMM(), ZMM(), ZMM(), ZMM()
		VSHUFI32X4(U8(0x44), x[1][e], x[0][e], p0) // x0.L0 x0.L1 x1.L0 x1.L1
		VSHUFI32X4(U8(0xee), x[1][e], x[0][e], p1) // x0.L2 x0.L3 x1.L2 x1.L3
		VSHUFI32X4(U8(0x44), x[3][e], x[2][e], p2)
		VSHUFI32X4(U8(0xee), x[3][e], x[2][e], p3)
		for L, src := range [][2]reg.VecVirtual{{p0, p2}, {p0, p2}, {p1, p3}, {p1, p3}} {
			o := ZMM()
			VSHUFI32X4(U8([]uint8{0x88, 0xdd}[L%2]), src[1], src[0], o)
			store(4*L+e, o)
		}
	}
}
