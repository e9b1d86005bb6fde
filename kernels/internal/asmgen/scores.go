package main

import (
	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	"github.com/mmcloughlin/avo/reg"
)

// scoresKernel emits
//
//	func attendScores<suffix>(out, q, keys []float32, stride int, scale float32)
//
// which writes out[t] = float32(dot(q, keys[t·stride:]) · scale) for t < len(out): attention's
// scores, each the contract dot (element k into lane k mod 16, VMULPS then VADDPS, groups in
// increasing order) joined by the contract's tree and then multiplied by scale, one rounding.
// len(q) must be a whole number of groups of 16. Four positions run at once, so four
// independent add chains overlap; the rest one at a time.
//
// The tree is done in the register: adding the register to itself with adjacent lanes swapped
// leaves l0+l1 in lane 0 (and l2+l3 in lane 2, ...); swapping pairs of lanes then gives
// (l0+l1)+(l2+l3) in lane 0; swapping 128-bit blocks gives lo = ((l0+l1)+(l2+l3)) +
// ((l4+l5)+(l6+l7)) in lane 0 and hi in lane 8; swapping the 256-bit halves gives lo + hi. Float
// addition is commutative, so each sum has the tree's bits whichever operand comes first.
func scoresKernel(s isa) {
	name := "attendScores" + s.suffix
	declare(name, NOSPLIT, "func(out, q, keys []float32, stride int, scale float32)",
		name+" writes attention's scores: the contract dot of q with each key row, times scale.")
	out := Load(Param("out").Base(), GP64())
	npos := Load(Param("out").Len(), GP64())
	qp := Load(Param("q").Base(), GP64())
	dBytes := Load(Param("q").Len(), GP64())
	SHLQ(U8(2), dBytes)
	k0 := Load(Param("keys").Base(), GP64())
	stride := Load(Param("stride"), GP64())
	SHLQ(U8(2), stride) // bytes
	// A VEX load: no SSE/AVX transition (see expKernel).
	scale := XMM()
	VMOVSS(paramAddr("scale"), scale)
	W := 4 * s.width() // bytes per register

	// rows runs n positions (1 or 4) from the key rows at ptrs, stores their scores at out.
	rows := func(n int, label string, ptrs []reg.Register) {
		acc := zeroLaneRows(s, n)
		off := GP64()
		XORQ(off, off)
		Label(label)
		// The key rows stream from RAM (a session's cache is far larger than the caches): fetch
		// 4 KiB ahead, the next positions' rows when rows are contiguous.
		for j := range n {
			PREFETCHT0(Mem{Base: ptrs[j], Index: off, Scale: 1, Disp: prefetchAhead})
		}
		for p := range s.parts {
			qv := s.vec()
			VMOVUPS(Mem{Base: qp, Index: off, Scale: 1, Disp: W * p}, qv)
			for j := range n {
				t := s.vec()
				VMULPS(Mem{Base: ptrs[j], Index: off, Scale: 1, Disp: W * p}, qv, t)
				VADDPS(t, acc[j][p], acc[j][p])
			}
		}
		ADDQ(U8(64), off)
		CMPQ(off, dBytes)
		JB(LabelRef(label))
		for j := range n {
			r := treeSum(s, acc[j])
			VMULSS(scale, r, r)
			VMOVSS(r, Mem{Base: out, Disp: 4 * j})
		}
	}

	k1, k2, k3 := GP64(), GP64(), GP64()
	Label("four")
	CMPQ(npos, U8(4))
	JB(LabelRef("one"))
	LEAQ(Mem{Base: k0, Index: stride, Scale: 1}, k1)
	LEAQ(Mem{Base: k1, Index: stride, Scale: 1}, k2)
	LEAQ(Mem{Base: k2, Index: stride, Scale: 1}, k3)
	rows(4, "groups4", []reg.Register{k0, k1, k2, k3})
	LEAQ(Mem{Base: k3, Index: stride, Scale: 1}, k0)
	ADDQ(U8(16), out)
	SUBQ(U8(4), npos)
	JMP(LabelRef("four"))

	Label("one")
	TESTQ(npos, npos)
	JZ(LabelRef("done"))
	rows(1, "groups1", []reg.Register{k0})
	ADDQ(stride, k0)
	ADDQ(U8(4), out)
	DECQ(npos)
	JMP(LabelRef("one"))

	Label("done")
	VZEROUPPER()
	RET()
}

// treeSum joins the 16 lanes in parts (one zmm, or two ymm: lanes 0-7 and 8-15) by the
// contract's tree and returns a register whose lowest float is the sum.
func treeSum(s isa, parts []reg.VecVirtual) reg.Register {
	// pairs adds to each lane its neighbour, then its neighbouring pair, then (within 256
	// bits) its neighbouring 128-bit block.
	pairs := func(a reg.VecVirtual, ymm bool) {
		t := s.vec()
		VPERMILPS(U8(0xb1), a, t) // lanes 1,0,3,2
		VADDPS(t, a, a)
		VPERMILPS(U8(0x4e), a, t) // lanes 2,3,0,1
		VADDPS(t, a, a)
		if ymm {
			VPERM2F128(U8(0x01), a, a, t) // the two 128-bit halves swapped
		} else {
			VSHUFF32X4(U8(0xb1), a, a, t) // 128-bit blocks 1,0,3,2
		}
		VADDPS(t, a, a)
	}
	if s.parts == 2 {
		pairs(parts[0], true) // lo in lane 0
		pairs(parts[1], true) // hi in lane 0
		VADDPS(parts[1], parts[0], parts[0])
		return parts[0].AsX()
	}
	a := parts[0]
	pairs(a, false) // lo in lane 0, hi in lane 8
	t := s.vec()
	VSHUFF32X4(U8(0x4e), a, a, t) // the 256-bit halves swapped
	VADDPS(t, a, a)
	return a.AsX()
}
