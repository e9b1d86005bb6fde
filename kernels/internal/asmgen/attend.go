package main

import (
	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	"github.com/mmcloughlin/avo/reg"
)

// attendCols is the most outputs one attendValues call computes: its lanes fill 16 KiB of
// its frame (kernels.attendCols is the same number).
const attendCols = 256

// attendKernel emits
//
//	func attendValues<suffix>(out, values, a []float32, stride int)
//
// which writes, for each output i < len(out) (a whole number of registers, at most attendCols),
// out[i] = the 16-lane
// sum over positions t < len(a) of float32(a[t]·values[t·stride + i]): position t goes to lane
// t mod 16, each lane adds its positions in increasing t from +0, and the lanes are joined by the
// contract's tree, as attendValues defines it. The frame holds the lanes (16 KiB, so the
// function is not NOSPLIT: it grows the goroutine's stack when it must): lane j of output i at
// acc[j·len(out) + i].
//
// The positions are walked once, in order, each value row read whole and added into its lane's
// row of acc (which stays in L1): the value rows stream from RAM front to back, and the next
// rows are prefetched 4 KiB ahead. (A form that kept the 16 lanes of one register-wide block in
// registers had to walk every position once per block, reading each row a column at a time.)
func attendKernel(s isa) {
	name := "attendValues" + s.suffix
	declare(name, 0, "func(out, values, a []float32, stride int)",
		name+" writes the 16-lane weighted sums over positions of out's register-wide blocks (at most 256 outputs).")
	out := Load(Param("out").Base(), GP64())
	nOut := Load(Param("out").Len(), GP64())
	vals := Load(Param("values").Base(), GP64())
	aBase := Load(Param("a").Base(), GP64())
	npos := Load(Param("a").Len(), GP64())
	acc := GP64()
	LEAQ(AllocLocal(16*4*attendCols), acc)
	stride := Load(Param("stride"), GP64())
	SHLQ(U8(2), stride) // bytes
	W := 4 * s.width()  // bytes a register
	rowBytes := GP64()  // bytes of one lane's row of acc
	MOVQ(nOut, rowBytes)
	SHLQ(U8(2), rowBytes)
	TESTQ(rowBytes, rowBytes)
	JZ(LabelRef("done"))

	// Every lane starts at +0.
	zero := s.vec()
	s.xor(zero, zero, zero)
	end, p := GP64(), GP64()
	MOVQ(rowBytes, end)
	SHLQ(U8(4), end)
	ADDQ(acc, end)
	MOVQ(acc, p)
	Label("zero")
	VMOVUPS(zero, Mem{Base: p})
	ADDQ(U32(W), p)
	CMPQ(p, end)
	JB(LabelRef("zero"))

	// Position t into lane t mod 16: acc row (t & 15).
	t, lane, off := GP64(), GP64(), GP64()
	XORQ(t, t)
	Label("pos")
	CMPQ(t, npos)
	JAE(LabelRef("tree"))
	w := s.vec()
	VBROADCASTSS(Mem{Base: aBase, Index: t, Scale: 4}, w)
	MOVQ(t, lane)
	ANDQ(U8(15), lane)
	IMULQ(rowBytes, lane)
	ADDQ(acc, lane)
	XORQ(off, off)
	Label("cols")
	PREFETCHT0(Mem{Base: vals, Index: off, Scale: 1, Disp: prefetchAhead})
	v := s.vec()
	VMULPS(Mem{Base: vals, Index: off, Scale: 1}, w, v)
	VADDPS(Mem{Base: lane, Index: off, Scale: 1}, v, v)
	VMOVUPS(v, Mem{Base: lane, Index: off, Scale: 1})
	ADDQ(U32(W), off)
	CMPQ(off, rowBytes)
	JB(LabelRef("cols"))
	ADDQ(stride, vals)
	INCQ(t)
	JMP(LabelRef("pos"))

	// The tree, a register-wide block at a time: ((l0+l1)+(l2+l3))+((l4+l5)+(l6+l7)), the
	// same over 8-15, then lo + hi.
	Label("tree")
	// Lane 4m+k of the current block sits at base[m] + k·rowBytes.
	rb3 := GP64()
	LEAQ(Mem{Base: rowBytes, Index: rowBytes, Scale: 2}, rb3)
	base := []reg.Register{acc, GP64(), GP64(), GP64()}
	for m := 1; m < 4; m++ {
		LEAQ(Mem{Base: base[m-1], Index: rowBytes, Scale: 4}, base[m])
	}
	lanes := func(j int) Mem {
		b := base[j/4]
		switch j % 4 {
		case 1:
			return Mem{Base: b, Index: rowBytes, Scale: 1}
		case 2:
			return Mem{Base: b, Index: rowBytes, Scale: 2}
		case 3:
			return Mem{Base: b, Index: rb3, Scale: 1}
		}
		return Mem{Base: b}
	}
	stop := GP64()
	MOVQ(out, stop)
	ADDQ(rowBytes, stop)
	Label("block")
	half := func(b int) reg.VecVirtual {
		var q [4]reg.VecVirtual
		for k := range 4 {
			q[k] = s.vec()
			VMOVUPS(lanes(b+2*k), q[k])
			VADDPS(lanes(b+2*k+1), q[k], q[k])
		}
		VADDPS(q[1], q[0], q[0])
		VADDPS(q[3], q[2], q[2])
		VADDPS(q[2], q[0], q[0])
		return q[0]
	}
	lo := half(0)
	hi := half(8)
	VADDPS(hi, lo, lo)
	VMOVUPS(lo, Mem{Base: out})
	for _, b := range base {
		ADDQ(U32(W), b)
	}
	ADDQ(U32(W), out)
	CMPQ(out, stop)
	JB(LabelRef("block"))
	Label("done")
	VZEROUPPER()
	RET()
}
