package main

import (
	"fmt"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	"github.com/mmcloughlin/avo/reg"
)

// panelMaxTokens is the most tokens a panel tile runs at once: one accumulator each, with the
// weight vector and the products' registers beside them in AVX-512's 32.
const panelMaxTokens = 24

// panelKernels emits the AVX-512 panel tiles for every token count 1 to panelMaxTokens and the
// panel row writers of the float-lane types; s is the AVX-512 isa.
func panelKernels(s isa) {
	for t := 1; t <= panelMaxTokens; t++ {
		panelTileKernel(t)
	}
	for _, k := range laneTypes(s) {
		panelRowKernel(s, k.name, k.unit, k.body)
	}
	panelPackKernel()
}

// panelRowKernel emits
//
//	func panelRow<name>AVX512(rows []float32, w []byte, r, ahead int)
//
// which writes the exact float32 weights of the whole units of w, the same values the lanes
// kernels multiply, as row r of 16 rows grouped by 16 elements: rows[(m·17+r)·16+j] =
// w[16m+j] (a vector of padding after each group: with groups a power of two apart a row's
// stores would fall in few L1 sets). panelPackAVX512 then transposes each group m of the 16
// rows into the panel. It prefetches the bytes ahead bytes past each unit it reads (the same
// bytes of the row 16 ahead: the next panel's), which no stream prefetcher foresees.
func panelRowKernel(s isa, name string, unit int, body block) {
	fn := "panelRow" + name + s.suffix
	declare(fn, NOSPLIT, "func(rows []float32, w []byte, r, ahead int)",
		fmt.Sprintf("%s writes the weights of the whole %d-byte units of w as row r of 16 rows grouped by 16 elements (see panelRowKernel).", fn, unit))
	base := Load(Param("rows").Base(), GP64())
	w := Load(Param("w").Base(), GP64())
	n := Load(Param("w").Len(), GP64())
	r := Load(Param("r"), GP64())
	ahead := Load(Param("ahead"), GP64())
	SHLQ(U8(6), r)
	ADDQ(r, base)
	unitLoop(unit, n, func() {
		prefetch(Mem{Base: w, Index: ahead, Scale: 1}, unit)
		floats := body(w, func(v reg.VecVirtual, p, elem int) {
			VMOVUPS(v, Mem{Base: base, Disp: elem / 16 * 1088})
		})
		ADDQ(U32(unit), w)
		ADDQ(U32(floats/16*1088), base)
	})
	VZEROUPPER()
	RET()
}

// panelPackKernel emits
//
//	func panelPackAVX512(panel, rows []float32, groups, stride int)
//
// which transposes groups groups of the 16 rows that panelRow wrote into the panel, whose
// phases lie stride floats apart: panel[p·stride+16m+r] = rows[(m·17+r)·16+p], one 16×16
// transpose in registers a group. (The panel pads each phase's run by one vector: with
// phases a power of two apart its stores would fall in few L1 sets.)
func panelPackKernel() {
	declare("panelPackAVX512", NOSPLIT, "func(panel, rows []float32, groups, stride int)",
		"panelPackAVX512 transposes 16 rows grouped by 16 elements into a panel (see panelPackKernel).")
	q := Load(Param("panel").Base(), GP64())
	src := Load(Param("rows").Base(), GP64())
	nm := Load(Param("groups"), GP64())
	stride := Load(Param("stride"), GP64()) // in bytes from here on
	SHLQ(U8(2), stride)
	// Phase k's vector goes to q + k·stride: bases at 0, 3, 6, 7 and 12 strides reach every k
	// with an index scale of 1, 2, 4 or 8.
	offs := []int{0, 3, 6, 7, 12}
	bases := map[int]reg.GPVirtual{}
	for _, off := range offs {
		b := GP64()
		IMUL3Q(U32(off), stride, b)
		ADDQ(q, b)
		bases[off] = b
	}
	Label("group")
	TESTQ(nm, nm)
	JZ(LabelRef("done"))
	r := make([]reg.VecVirtual, 16)
	for i := range r {
		r[i] = ZMM()
		VMOVUPS(Mem{Base: src, Disp: 64 * i}, r[i])
	}
	t := make([]reg.VecVirtual, 16)
	for i := range 8 {
		t[2*i], t[2*i+1] = ZMM(), ZMM()
		VUNPCKLPS(r[2*i+1], r[2*i], t[2*i])
		VUNPCKHPS(r[2*i+1], r[2*i], t[2*i+1])
	}
	u := make([]reg.VecVirtual, 16)
	for i := range 4 {
		for j := range 4 {
			u[4*i+j] = ZMM()
		}
		VUNPCKLPD(t[4*i+2], t[4*i], u[4*i])
		VUNPCKHPD(t[4*i+2], t[4*i], u[4*i+1])
		VUNPCKLPD(t[4*i+3], t[4*i+1], u[4*i+2])
		VUNPCKHPD(t[4*i+3], t[4*i+1], u[4*i+3])
	}
	v := make([]reg.VecVirtual, 16)
	for i := range 4 {
		for _, j := range []int{i, i + 4, 8 + i, 12 + i} {
			v[j] = ZMM()
		}
		VSHUFF32X4(U8(0x88), u[i+4], u[i], v[i])
		VSHUFF32X4(U8(0xdd), u[i+4], u[i], v[i+4])
		VSHUFF32X4(U8(0x88), u[12+i], u[8+i], v[8+i])
		VSHUFF32X4(U8(0xdd), u[12+i], u[8+i], v[12+i])
	}
	for i := range 8 {
		for _, k := range []int{i, i + 8} {
			o := ZMM()
			VSHUFF32X4(U8(map[bool]int{true: 0x88, false: 0xdd}[k == i]), v[8+i], v[i], o)
			VMOVUPS(o, phaseAddr(bases, stride, k))
		}
	}
	for _, off := range offs { // in order: the generated file must not depend on map order
		ADDQ(U8(64), bases[off])
	}
	ADDQ(U32(1088), src)
	DECQ(nm)
	JMP(LabelRef("group"))
	Label("done")
	VZEROUPPER()
	RET()
}

// phaseAddr returns the address of phase k's vector: a base at off strides plus the rest as an
// index scale.
func phaseAddr(bases map[int]reg.GPVirtual, stride reg.Register, k int) Mem {
	for _, off := range []int{12, 7, 6, 3, 0} {
		switch d := k - off; d {
		case 0:
			return Mem{Base: bases[off]}
		case 1, 2, 4, 8:
			return Mem{Base: bases[off], Index: stride, Scale: uint8(d)}
		}
	}
	panic(fmt.Sprintf("phase %d has no base", k))
}

// panelTileKernel emits
//
//	func panelTile<T>AVX512(panel, xil, ph []float32)
//
// the "sixteen rows in sixteen lanes" product of a panel of 16 exact weight rows with T
// tokens. SIMD lane r follows weight row r: for each contract lane (phase) p, the panel holds
// the weights w_r[16m+p] of every m as one vector per m (panel[(p·(nm+1)+m)·16+r], nm =
// len(panel)/256 − 1, each phase's run padded by one vector as panelPack leaves it) and xil the
// inputs x_t[16m+p] (xil[(p·nm+m)·T+t]). Lane p of row r and token
// t starts at +0 and adds float32(w·x) for m in increasing order, VMULPS then VADDPS: the
// scalar lane, element by element. ph receives the 16·T phase vectors (ph[(p·T+t)·16+r]) and
// then, at ph[256·T:], the T results: the phases joined by the contract's tree, vectorized
// over the 16 rows (result t at ph[256·T+16t+r]).
func panelTileKernel(T int) {
	name := fmt.Sprintf("panelTile%dAVX512", T)
	declare(name, NOSPLIT, "func(panel, xil, ph []float32)",
		fmt.Sprintf("%s multiplies a panel of 16 weight rows with %d interleaved tokens (see panelTileKernel).", name, T))
	pp := Load(Param("panel").Base(), GP64())
	nm := Load(Param("panel").Len(), GP64())
	SHRQ(U8(8), nm)
	DECQ(nm)
	xp := Load(Param("xil").Base(), GP64())
	ph := Load(Param("ph").Base(), GP64())
	out := GP64()
	MOVQ(ph, out)
	phases := GP64()
	MOVQ(U32(16), phases)
	acc := make([]reg.VecVirtual, T)
	for t := range acc {
		acc[t] = ZMM()
	}
	Label("phase")
	for _, a := range acc {
		VPXORD(a, a, a)
	}
	m := GP64()
	MOVQ(nm, m)
	TESTQ(m, m)
	JZ(LabelRef("store"))
	Label("group")
	v := ZMM()
	VMOVUPS(Mem{Base: pp}, v)
	for t, a := range acc {
		p := ZMM()
		VMULPS_BCST(Mem{Base: xp, Disp: 4 * t}, v, p)
		VADDPS(p, a, a)
	}
	ADDQ(U8(64), pp)
	ADDQ(U32(4*T), xp)
	DECQ(m)
	JNZ(LabelRef("group"))
	Label("store")
	ADDQ(U8(64), pp) // the padding
	for t, a := range acc {
		VMOVUPS(a, Mem{Base: out, Disp: 64 * t})
	}
	ADDQ(U32(64*T), out)
	DECQ(phases)
	JNZ(LabelRef("phase"))
	// The join: out now points at the results, ph at the phase vectors.
	for t := range T {
		l := make([]reg.VecVirtual, 16)
		for p := range l {
			l[p] = ZMM()
			VMOVUPS(Mem{Base: ph, Disp: 64 * (p*T + t)}, l[p])
		}
		for _, w := range []int{1, 2, 4, 8} { // pairs, then pairs of pairs: the contract's tree
			for p := 0; p < 16; p += 2 * w {
				VADDPS(l[p+w], l[p], l[p])
			}
		}
		VMOVUPS(l[0], Mem{Base: out, Disp: 64 * t})
	}
	VZEROUPPER()
	RET()
}
