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
	declare("lanes"+name+s.suffix, NOSPLIT, "func(l [16]float32, w []byte, x []float32) [16]float32",
		fmt.Sprintf("lanes%s%s continues the lanes l with the products of the len(w)/%d whole units of w with x.", name, s.suffix, unit))
	l := frameAddr(Param("l"))
	w := Load(Param("w").Base(), GP64())
	n := Load(Param("w").Len(), GP64())
	x := Load(Param("x").Base(), GP64())
	acc := loadLanes(s, l)
	rowLanes(s, unit, body, []reg.Register{w}, x, n, [][]reg.VecVirtual{acc}, nil)
	storeLanes(frameAddr(ReturnIndex(0)), acc)
	VZEROUPPER()
	RET()
}

// rowLanes emits the loop of the kernels that run weight rows against one input x: for each
// whole unit left in the rows (n counts the bytes left in each), it adds the products of row
// r's unit with x into the lanes acc[r], first prefetching the unit's bytes from ahead(w[r])
// where ahead is not nil, and then steps the rows a unit on and x as many floats.
func rowLanes(s isa, unit int, body block, w []reg.Register, x, n reg.Register, acc [][]reg.VecVirtual, ahead func(w reg.Register) Mem) {
	unitLoop(unit, n, func() {
		var floats int
		for r := range w {
			if ahead != nil {
				prefetch(ahead(w[r]), unit)
			}
			floats = body(w[r], addInto(s, acc[r], x))
		}
		for _, r := range w {
			ADDQ(U32(unit), r)
		}
		ADDQ(U32(4*floats), x)
	})
}

// zeroLaneRows returns the lanes of n rows (or inputs), each at +0.
func zeroLaneRows(s isa, n int) [][]reg.VecVirtual {
	acc := make([][]reg.VecVirtual, n)
	for r := range acc {
		for range s.parts {
			v := s.vec()
			s.xor(v, v, v)
			acc[r] = append(acc[r], v)
		}
	}
	return acc
}

// storeLaneRows stores the lanes acc[r] of each row r at out+64r: an [n][16]float32 result.
func storeLaneRows(out reg.Register, acc [][]reg.VecVirtual) {
	for r, a := range acc {
		for p, v := range a {
			VMOVUPS(v, Mem{Base: out, Disp: 64*r + 4*16/len(a)*p})
		}
	}
}

// pointerChain returns first and the n-1 pointers that follow it, each step bytes past the one
// before.
func pointerChain(first, step reg.Register, n int) []reg.Register {
	p := []reg.Register{first}
	for i := 1; i < n; i++ {
		r := GP64()
		LEAQ(Mem{Base: p[i-1], Index: step, Scale: 1}, r)
		p = append(p, r)
	}
	return p
}

// lanes2Kernel emits
//
//	func lanes2<name><suffix>(w0, w1 []byte, x []float32) [2][16]float32
//
// which returns the lanes, from +0, of the len(w0)/unit whole units of w0 and of as many of w1,
// both against x. The two rows' add chains are independent, so the core overlaps them:
// one row's 16 lanes are one chain of dependent VADDPS (the contract fixes each lane's order).
func lanes2Kernel(s isa, name string, unit int, body block) {
	declare("lanes2"+name+s.suffix, NOSPLIT, "func(w0, w1 []byte, x []float32) [2][16]float32",
		fmt.Sprintf("lanes2%s%s returns the lanes of the products of the len(w0)/%d whole units of w0 and of as many of w1 with x.", name, s.suffix, unit))
	w := []reg.Register{Load(Param("w0").Base(), GP64()), Load(Param("w1").Base(), GP64())}
	n := Load(Param("w0").Len(), GP64())
	x := Load(Param("x").Base(), GP64())
	acc := zeroLaneRows(s, 2)
	rowLanes(s, unit, body, w, x, n, acc, func(w reg.Register) Mem { return Mem{Base: w, Disp: prefetchAhead} })
	storeLaneRows(frameAddr(ReturnIndex(0)), acc)
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
	declare("lanesRows4"+name+s.suffix, NOSPLIT, "func(w []byte, x []float32) [4][16]float32",
		fmt.Sprintf("lanesRows4%s%s returns the lanes of the products of the whole %d-byte units of the four rows of w (len(w)/4 bytes each) with x.", name, s.suffix, unit))
	w0 := Load(Param("w").Base(), GP64())
	size := Load(Param("w").Len(), GP64())
	x := Load(Param("x").Base(), GP64())
	rowBytes := GP64()
	MOVQ(size, rowBytes)
	SHRQ(U8(2), rowBytes)
	w := pointerChain(w0, rowBytes, 4)
	n := rowBytes // the bytes left in each row
	acc := zeroLaneRows(s, 4)
	// Row r prefetches the same bytes of row r+4, len(w) bytes on: the next call's.
	rowLanes(s, unit, body, w, x, n, acc, func(w reg.Register) Mem { return Mem{Base: w, Index: size, Scale: 1} })
	storeLaneRows(frameAddr(ReturnIndex(0)), acc)
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
	declare("lanes4"+name+s.suffix, NOSPLIT, "func(w []byte, x []float32, stride int) [4][16]float32",
		fmt.Sprintf("lanes4%s%s returns the lanes of the products of the len(w)/%d whole units of w with the rows x[t·stride:], t < 4.", name, s.suffix, unit))
	w := Load(Param("w").Base(), GP64())
	n := Load(Param("w").Len(), GP64())
	stride := Load(Param("stride"), GP64())
	SHLQ(U8(2), stride)
	x := pointerChain(Load(Param("x").Base(), GP64()), stride, 4)
	acc := zeroLaneRows(s, 4)
	unitLoop(unit, n, func() {
		floats := body(w, func(v reg.VecVirtual, p, elem int) {
			for t := range 4 {
				addInto(s, acc[t], x[t])(v, p, elem)
			}
		})
		ADDQ(U32(unit), w)
		for t := range 4 {
			ADDQ(U32(4*floats), x[t])
		}
	})
	storeLaneRows(frameAddr(ReturnIndex(0)), acc)
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
	declare("sumLanes"+s.suffix, NOSPLIT, "func(l [16]float32, v []float32) [16]float32",
		"sumLanes"+s.suffix+" continues the lanes l with the len(v)/16 whole groups of v.")
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
