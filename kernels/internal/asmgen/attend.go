package main

import (
	"fmt"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	"github.com/mmcloughlin/avo/reg"
)

// attendKernel emits
//
//	func attendValues<suffix>(out, values, a []float32, stride int)
//
// which writes, for each whole block of one register's width of out, out[i] = the 16-lane sum
// over positions t < len(a) of float32(a[t]·values[t·stride + i]): position t goes to lane
// t mod 16, each lane adds its positions in increasing t from +0, and the lanes are joined by
// the contract's tree, as attendValues defines it. The lanes of a block live in 16 registers,
// one per lane, each holding that lane for a register's width of outputs; the AVX2 form runs
// the positions twice, lanes 0-7 and then 8-15, since 16 ymm leave no room for a temporary.
func attendKernel(s isa) {
	name := "attendValues" + s.suffix
	TEXT(name, NOSPLIT, "func(out, values, a []float32, stride int)")
	Pragma("noescape")
	Doc(name + " writes the 16-lane weighted sums over positions of the whole register-wide blocks of out.")
	out := Load(Param("out").Base(), GP64())
	nOut := Load(Param("out").Len(), GP64())
	vals := Load(Param("values").Base(), GP64())
	aBase := Load(Param("a").Base(), GP64())
	npos := Load(Param("a").Len(), GP64())
	stride := Load(Param("stride"), GP64())
	SHLQ(U8(2), stride) // bytes
	stride16 := GP64()
	MOVQ(stride, stride16)
	SHLQ(U8(4), stride16)
	W := s.width()
	perPass := 16 / s.parts
	saved := AllocLocal(4 * W * 8) // the first pass's lanes (AVX2)
	Label("block")
	CMPQ(nOut, U32(W))
	JB(LabelRef("done"))
	var lanes []reg.VecVirtual
	for pass := range s.parts {
		first := perPass * pass
		acc := make([]reg.VecVirtual, perPass)
		for j := range acc {
			acc[j] = s.vec()
			s.xor(acc[j], acc[j], acc[j])
		}
		ap, vp, rem := GP64(), GP64(), GP64()
		LEAQ(Mem{Base: aBase, Disp: 4 * first}, ap)
		MOVQ(vals, vp)
		for range first {
			ADDQ(stride, vp)
		}
		MOVQ(npos, rem)
		SUBQ(U32(first), rem)
		loop, end := fmt.Sprintf("pos%d", pass), fmt.Sprintf("lanesDone%d", pass)
		Label(loop)
		vq := GP64()
		MOVQ(vp, vq)
		for j := range perPass {
			CMPQ(rem, U32(j))
			JLE(LabelRef(end))
			t := s.vec()
			VBROADCASTSS(Mem{Base: ap, Disp: 4 * j}, t)
			VMULPS(Mem{Base: vq}, t, t)
			VADDPS(t, acc[j], acc[j])
			if j < perPass-1 {
				ADDQ(stride, vq)
			}
		}
		ADDQ(U8(64), ap)
		ADDQ(stride16, vp)
		SUBQ(U8(16), rem)
		JMP(LabelRef(loop))
		Label(end)
		if pass < s.parts-1 {
			for j, v := range acc {
				VMOVUPS(v, saved.Offset(4*W*j))
			}
		}
		lanes = append(lanes, acc...)
	}
	// The tree: ((l0+l1)+(l2+l3))+((l4+l5)+(l6+l7)), the same over 8-15, then lo + hi.
	get := func(i int) reg.VecVirtual {
		if s.parts == 2 && i < 8 {
			v := s.vec()
			VMOVUPS(saved.Offset(4*W*i), v)
			return v
		}
		return lanes[i]
	}
	half := func(b int) reg.VecVirtual {
		var q [4]reg.VecVirtual
		for k := range 4 {
			x, y := get(b+2*k), get(b+2*k+1)
			VADDPS(y, x, x)
			q[k] = x
		}
		VADDPS(q[1], q[0], q[0])
		VADDPS(q[3], q[2], q[2])
		VADDPS(q[2], q[0], q[0])
		return q[0]
	}
	hi := half(8)
	lo := half(0)
	VADDPS(hi, lo, lo)
	VMOVUPS(lo, Mem{Base: out})
	ADDQ(U32(4*W), out)
	ADDQ(U32(4*W), vals)
	SUBQ(U32(W), nOut)
	JMP(LabelRef("block"))
	Label("done")
	VZEROUPPER()
	RET()
}
