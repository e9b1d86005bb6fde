package main

import (
	"fmt"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	"github.com/mmcloughlin/avo/reg"
)

// lanesKernel emits
//
//	func lanes<name><suffix>(l [16]float32, w []byte, x []float32) [16]float32
//
// which continues the lanes l over the len(w)/unit whole units of w against x.
func lanesKernel(s isa, name string, unit int, body block) {
	TEXT("lanes"+name+s.suffix, NOSPLIT, "func(l [16]float32, w []byte, x []float32) [16]float32")
	Pragma("noescape")
	Doc(fmt.Sprintf("lanes%s%s continues the lanes l with the products of the len(w)/%d whole units of w with x.", name, s.suffix, unit))
	l := frameAddr(Param("l"))
	w := Load(Param("w").Base(), GP64())
	n := Load(Param("w").Len(), GP64())
	x := Load(Param("x").Base(), GP64())
	acc := loadLanes(s, l)
	Label("loop") // n counts the bytes left; a partial unit is left alone
	CMPQ(n, U32(unit))
	JB(LabelRef("done"))
	floats := body(w, addInto(s, acc, x))
	ADDQ(U32(unit), w)
	ADDQ(U32(4*floats), x)
	SUBQ(U32(unit), n)
	JMP(LabelRef("loop"))
	Label("done")
	storeLanes(frameAddr(ReturnIndex(0)), acc)
	VZEROUPPER()
	RET()
}

// lanes2Kernel emits
//
//	func lanes2<name><suffix>(w0, w1 []byte, x []float32) [2][16]float32
//
// which returns the lanes, from +0, of the len(w0)/unit whole units of w0 and of as many of w1,
// both against x. The two rows' add chains are independent, so the core overlaps them:
// one row's 16 lanes are one chain of dependent VADDPS (the contract fixes each lane's order).
func lanes2Kernel(s isa, name string, unit int, body block) {
	TEXT("lanes2"+name+s.suffix, NOSPLIT, "func(w0, w1 []byte, x []float32) [2][16]float32")
	Pragma("noescape")
	Doc(fmt.Sprintf("lanes2%s%s returns the lanes of the products of the len(w0)/%d whole units of w0 and of as many of w1 with x.", name, s.suffix, unit))
	w := []reg.Register{Load(Param("w0").Base(), GP64()), Load(Param("w1").Base(), GP64())}
	n := Load(Param("w0").Len(), GP64())
	x := Load(Param("x").Base(), GP64())
	acc := make([][]reg.VecVirtual, 2)
	for r := range acc {
		for range s.parts {
			v := s.vec()
			s.xor(v, v, v)
			acc[r] = append(acc[r], v)
		}
	}
	Label("loop")
	CMPQ(n, U32(unit))
	JB(LabelRef("done"))
	var floats int
	for r := range 2 {
		for off := 0; off < unit; off += 64 {
			PREFETCHT0(Mem{Base: w[r], Disp: prefetchAhead + off})
		}
		floats = body(w[r], addInto(s, acc[r], x))
	}
	for r := range 2 {
		ADDQ(U32(unit), w[r])
	}
	ADDQ(U32(4*floats), x)
	SUBQ(U32(unit), n)
	JMP(LabelRef("loop"))
	Label("done")
	out := frameAddr(ReturnIndex(0))
	storeLanes(out, acc[0])
	for p, a := range acc[1] {
		VMOVUPS(a, Mem{Base: out, Disp: 64 + 4*16/len(acc[1])*p})
	}
	VZEROUPPER()
	RET()
}

// rows4Kernel emits
//
//	func lanesRows4<name><suffix>(w []byte, x []float32) [4][16]float32
//
// which returns the lanes, from +0, of four weight rows against x: w holds the rows one after
// another, len(w)/4 bytes each, and [i] covers the whole units of row i. One row's 16 lanes are
// one chain of dependent VADDPS (the contract fixes each lane's order), so four rows give the
// core four independent chains to overlap where two leave it waiting on the adds' latency. Each
// row prefetches the same bytes of the row four ahead, which the next call reads: a whole call
// ahead of every stream (the rows of a call are contiguous, so a fixed distance would land
// mostly inside this call's own rows).
func rows4Kernel(s isa, name string, unit int, body block) {
	TEXT("lanesRows4"+name+s.suffix, NOSPLIT, "func(w []byte, x []float32) [4][16]float32")
	Pragma("noescape")
	Doc(fmt.Sprintf("lanesRows4%s%s returns the lanes of the products of the whole %d-byte units of the four rows of w (len(w)/4 bytes each) with x.", name, s.suffix, unit))
	w0 := Load(Param("w").Base(), GP64())
	size := Load(Param("w").Len(), GP64())
	x := Load(Param("x").Base(), GP64())
	rowBytes := GP64()
	MOVQ(size, rowBytes)
	SHRQ(U8(2), rowBytes)
	w := []reg.Register{w0}
	for r := 1; r < 4; r++ {
		wr := GP64()
		LEAQ(Mem{Base: w[r-1], Index: rowBytes, Scale: 1}, wr)
		w = append(w, wr)
	}
	n := rowBytes // the bytes left in each row; a partial unit is left alone
	acc := make([][]reg.VecVirtual, 4)
	for r := range acc {
		for range s.parts {
			v := s.vec()
			s.xor(v, v, v)
			acc[r] = append(acc[r], v)
		}
	}
	Label("loop")
	CMPQ(n, U32(unit))
	JB(LabelRef("done"))
	var floats int
	for r := range 4 {
		for off := 0; off < unit; off += 64 {
			PREFETCHT0(Mem{Base: w[r], Index: size, Scale: 1, Disp: off})
		}
		floats = body(w[r], addInto(s, acc[r], x))
	}
	for r := range 4 {
		ADDQ(U32(unit), w[r])
	}
	ADDQ(U32(4*floats), x)
	SUBQ(U32(unit), n)
	JMP(LabelRef("loop"))
	Label("done")
	out := frameAddr(ReturnIndex(0))
	for r := range acc {
		for p, a := range acc[r] {
			VMOVUPS(a, Mem{Base: out, Disp: 64*r + 4*s.width()*p})
		}
	}
	VZEROUPPER()
	RET()
}

// loader loads register p of a group of 16 weights (bytes per weight) from m into v.
type loader func(v reg.VecVirtual, m Mem)

func loadF32(v reg.VecVirtual, m Mem) { VMOVUPS(m, v) }

// loadF16 widens halves exactly (F16C; subnormals included, the rounding mode plays no part).
func loadF16(v reg.VecVirtual, m Mem) { VCVTPH2PS(m, v) }

func loadBF16(v reg.VecVirtual, m Mem) {
	VPMOVZXWD(m, v)
	VPSLLD(U8(16), v, v)
}

// lanes4Kernel emits
//
//	func lanes4<name><suffix>(w []byte, x []float32, stride int) [4][16]float32
//
// which returns the lanes t, from +0, of the len(w)/unit whole units of w against the input row
// t at x[t·stride:], for t < 4: each weight group is decoded once and used for four tokens, and
// the four add chains are independent.
func lanes4Kernel(s isa, name string, unit int, body block) {
	TEXT("lanes4"+name+s.suffix, NOSPLIT, "func(w []byte, x []float32, stride int) [4][16]float32")
	Pragma("noescape")
	Doc(fmt.Sprintf("lanes4%s%s returns the lanes of the products of the len(w)/%d whole units of w with the rows x[t·stride:], t < 4.", name, s.suffix, unit))
	w := Load(Param("w").Base(), GP64())
	n := Load(Param("w").Len(), GP64())
	stride := Load(Param("stride"), GP64())
	SHLQ(U8(2), stride)
	x := []reg.Register{Load(Param("x").Base(), GP64())}
	for t := 1; t < 4; t++ {
		xt := GP64()
		LEAQ(Mem{Base: x[t-1], Index: stride, Scale: 1}, xt)
		x = append(x, xt)
	}
	acc := make([][]reg.VecVirtual, 4)
	for t := range acc {
		for range s.parts {
			v := s.vec()
			s.xor(v, v, v)
			acc[t] = append(acc[t], v)
		}
	}
	Label("loop")
	CMPQ(n, U32(unit))
	JB(LabelRef("done"))
	floats := body(w, func(v reg.VecVirtual, p, elem int) {
		for t := range 4 {
			addInto(s, acc[t], x[t])(v, p, elem)
		}
	})
	ADDQ(U32(unit), w)
	for t := range 4 {
		ADDQ(U32(4*floats), x[t])
	}
	SUBQ(U32(unit), n)
	JMP(LabelRef("loop"))
	Label("done")
	out := frameAddr(ReturnIndex(0))
	for t := range acc {
		for p, a := range acc[t] {
			VMOVUPS(a, Mem{Base: out, Disp: 64*t + 4*s.width()*p})
		}
	}
	VZEROUPPER()
	RET()
}

// floatGroups is the body for a group of 16 weights stored size bytes each.
func floatGroups(s isa, size int, load loader) block {
	return func(w reg.Register, use func(v reg.VecVirtual, p, elem int)) int {
		for p := range s.parts {
			v := s.vec()
			load(v, Mem{Base: w, Disp: size * s.width() * p})
			use(v, p, s.width()*p)
		}
		return 16
	}
}

// halfScale broadcasts the f16 at m, widened, to every float of a new register: the half
// broadcast to a register of halves half as wide, then widened whole (two µops, where
// widening one half and broadcasting the float takes three).
func halfScale(s isa, m Mem) reg.VecVirtual {
	d := s.vec()
	if s.parts == 1 {
		h := YMM()
		VPBROADCASTW(m, h)
		VCVTPH2PS(h, d)
	} else {
		h := XMM()
		VPBROADCASTW(m, h)
		VCVTPH2PS(h, d)
	}
	return d
}

// q8_0Block: f16 d, then 32 int8 q; the weight is d·q (exact), then the contract product.
func q8_0Block(s isa) block {
	return func(w reg.Register, use func(v reg.VecVirtual, p, elem int)) int {
		d := halfScale(s, Mem{Base: w})
		for g := range 2 {
			for p := range s.parts {
				e := 16*g + s.width()*p
				v := s.vec()
				VPMOVSXBD(Mem{Base: w, Disp: 2 + e}, v)
				VCVTDQ2PS(v, v)
				VMULPS(d, v, v)
				use(v, p, e)
			}
		}
		return 32
	}
}

// sumKernel emits func sumLanes<suffix>(l [16]float32, v []float32) [16]float32: v's whole
// groups of 16 added into the lanes.
func sumKernel(s isa) {
	TEXT("sumLanes"+s.suffix, NOSPLIT, "func(l [16]float32, v []float32) [16]float32")
	Pragma("noescape")
	Doc("sumLanes" + s.suffix + " continues the lanes l with the len(v)/16 whole groups of v.")
	l := frameAddr(Param("l"))
	v := Load(Param("v").Base(), GP64())
	n := Load(Param("v").Len(), GP64())
	SHRQ(U8(4), n)
	acc := loadLanes(s, l)
	Label("loop")
	TESTQ(n, n)
	JZ(LabelRef("done"))
	for p := range s.parts {
		VADDPS(Mem{Base: v, Disp: 4 * s.width() * p}, acc[p], acc[p])
	}
	ADDQ(U8(64), v)
	DECQ(n)
	JMP(LabelRef("loop"))
	Label("done")
	storeLanes(frameAddr(ReturnIndex(0)), acc)
	VZEROUPPER()
	RET()
}
