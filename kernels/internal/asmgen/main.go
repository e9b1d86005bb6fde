// Command asmgen writes the amd64 assembly of package kernels' SIMD tiers (kernels_amd64.s and
// its Go declarations) with avo. Run it through go generate in package kernels:
//
//	go run ./internal/asmgen -out kernels_amd64.s -stubs kernels_stubs_amd64.go -pkg kernels
//
// Every float kernel reproduces the scalar contract (see package kernels and docs/NUMERICS.md):
// the 16 lanes live in one zmm register or two ymm registers (lanes 0-7 and 8-15), each group of
// 16 elements is multiplied (VMULPS, one rounding) and then added (VADDPS, one rounding) into
// the lanes its indices name, groups in increasing order. There is no FMA anywhere: a fused
// multiply-add rounds once and would change the bits. The kernels only run whole groups (or
// blocks); the Go side adds a ragged tail and joins the lanes with the scalar tree.
//
// The AVX2 functions may use only the registers 0-15 that VEX encodings reach; avo's allocator
// hands out the lowest free register first, and TestAsmRegisters in package kernels checks that
// no AVX2 function touches a higher one.
package main

import (
	"fmt"

	"github.com/mmcloughlin/avo/attr"
	. "github.com/mmcloughlin/avo/build"
	"github.com/mmcloughlin/avo/gotypes"
	. "github.com/mmcloughlin/avo/operand"
	"github.com/mmcloughlin/avo/reg"
)

// isa describes one vector width: 16 contract lanes in parts registers of 16/parts floats.
type isa struct {
	suffix string
	parts  int
	vec    func() reg.VecVirtual
	and    func(a, b, c Op) // VPAND (VEX) or VPANDD (EVEX)
	or     func(a, b, c Op)
	xor    func(a, b, c Op)
	consts map[uint32]Mem // 4-byte read-only constants for broadcasts

	f64Digit Mem // four float64 65536, the weight of a high digit
}

const prefetchAhead = 4096

// prefetch emits a PREFETCHT0 for each 64-byte line of the n bytes at m.
func prefetch(m Mem, n int) {
	for off := 0; off < n; off += 64 {
		PREFETCHT0(m.Offset(off))
	}
}

func (s isa) width() int { return 16 / s.parts } // floats per register

func main() {
	consts := map[uint32]Mem{}
	for _, v := range []uint32{3, 15, 32, 0x000f000f, 0x03030303, 0x0f0f0f0f, 0x20202020} {
		consts[v] = ConstData(fmt.Sprintf("const%d", v), U32(v))
	}
	f64Digit := GLOBL("f64_65536", RODATA|NOPTR)
	for i := range 4 { // the float64 65536 four times, a ymm operand
		DATA(8*i, U64(0x40f0000000000000))
	}
	q6KTables = q6KConstants()
	avx2 := isa{f64Digit: f64Digit, suffix: "AVX2", parts: 2, vec: YMM, and: VPAND, or: VPOR, xor: VPXOR, consts: consts}
	avx512 := isa{suffix: "AVX512", parts: 1, vec: ZMM, consts: consts, f64Digit: f64Digit,
		and: func(a, b, c Op) { VPANDD(a, b, c) },
		or:  func(a, b, c Op) { VPORD(a, b, c) },
		xor: func(a, b, c Op) { VPXORD(a, b, c) },
	}
	for _, s := range []isa{avx2, avx512} {
		for _, k := range laneTypes(s) {
			lanesKernel(s, k.name, k.unit, k.body)
			lanes2Kernel(s, k.name, k.unit, k.body)
			lanes4Kernel(s, k.name, k.unit, k.body)
			if s.parts == 1 { // four rows' lanes and a decode need AVX-512's 32 registers
				rows4Kernel(s, k.name, k.unit, k.body)
			}
		}
		sumKernel(s)
	}
	q6KTileIntKernels(avx512)
	q4KKernel(avx2, false)
	q4KKernel(avx512, false)
	q4KKernel(avx512, true)
	q4KTileKernel(avx2, false)
	q6KAVX2Kernels(avx2)
	q4KTileKernel(avx512, false)
	q4KTileKernel(avx512, true)
	q4KRows4Kernel(avx512, false)
	q4KRows4Kernel(avx512, true)
	q6KIntKernels(avx512)
	expKernel(false)
	expKernel(true)
	attendKernel(avx2)
	attendKernel(avx512)
	scoresKernel(avx2)
	scoresKernel(avx512)
	panelKernels(avx512)
	q4KPrepKernel(avx512)
	q4KPrepKernel(avx2)
	Generate()
}

// blockLoop emits a loop that runs block n times, n counting down to zero (it may start at
// zero). Its labels are block and done.
func blockLoop(n reg.Register, block func()) {
	Label("block")
	TESTQ(n, n)
	JZ(LabelRef("done"))
	block()
	DECQ(n)
	JMP(LabelRef("block"))
	Label("done")
}

// unitLoop emits a loop that runs unit while n, the bytes left, holds a whole unit of size
// bytes, and takes size off n each time; a partial unit is left alone. Its labels are loop
// and done.
func unitLoop(size int, n reg.Register, unit func()) {
	Label("loop")
	CMPQ(n, U32(size))
	JB(LabelRef("done"))
	unit()
	SUBQ(U32(size), n)
	JMP(LabelRef("loop"))
	Label("done")
}

// declare starts the function name (attributes a) with the Go signature sig and the doc
// comment doc. Every kernel is noescape: none keeps a pointer it is passed.
func declare(name string, a attr.Attribute, sig, doc string) {
	TEXT(name, a, sig)
	Pragma("noescape")
	Doc(doc)
}

// paramAddr is the memory operand of the scalar parameter name, for a VEX instruction to read
// it directly (Load would emit a legacy-SSE MOVSS for a float32).
func paramAddr(name string) Mem {
	b, err := Param(name).Resolve()
	if err != nil {
		panic(err)
	}
	return b.Addr
}

// declareTile declares the tile kernel name: with eight inputs (eight set) the signature sig8
// and the doc name+doc8, else sig4 and name+doc4.
func declareTile(name string, eight bool, sig8, doc8, sig4, doc4 string) {
	if eight {
		declare(name, NOSPLIT, sig8, name+doc8)
		return
	}
	declare(name, NOSPLIT, sig4, name+doc4)
}

// broadcast loads a 4-byte constant into every dword of a new register.
func broadcast(s isa, v uint32) reg.VecVirtual {
	r := s.vec()
	VPBROADCASTD(s.consts[v], r)
	return r
}

// halfOf returns half h of the ymm or zmm register v: the low half is v itself, narrowed,
// and the high half is extracted into a new register.
func halfOf(v reg.VecVirtual, h int) reg.VecVirtual {
	switch {
	case v.Size() == 32 && h == 0:
		return v.AsX().(reg.VecVirtual)
	case v.Size() == 32:
		x := XMM()
		VEXTRACTI128(U8(1), v, x)
		return x
	case h == 0:
		return v.AsY().(reg.VecVirtual)
	}
	y := YMM()
	VEXTRACTI64X4(U8(1), v, y)
	return y
}

// vecOf returns a new vector register of size bytes: an xmm, a ymm or a zmm register.
func vecOf(size uint) reg.VecVirtual {
	switch size {
	case 16:
		return XMM()
	case 32:
		return YMM()
	}
	return ZMM()
}

// toFloat64 converts the dwords of v to float64 (exactly): those of its low half into lo,
// those of its high half into hi, two registers as wide as v.
func toFloat64(v reg.VecVirtual) (lo, hi reg.VecVirtual) {
	lo, hi = vecOf(v.Size()), vecOf(v.Size())
	VCVTDQ2PD(halfOf(v, 0), lo)
	VCVTDQ2PD(halfOf(v, 1), hi)
	return lo, hi
}

// widenSum returns the float64 sums of the dwords of v's two halves, pairwise: exact, since
// a sum of two dwords is below 2^32.
func widenSum(v reg.VecVirtual) reg.VecVirtual {
	lo, hi := toFloat64(v)
	VADDPD(hi, lo, lo)
	return lo
}

// loadLanes and storeLanes move the 16 lanes at l to and from registers.
func loadLanes(s isa, l reg.Register) []reg.VecVirtual {
	acc := make([]reg.VecVirtual, s.parts)
	for p := range acc {
		acc[p] = s.vec()
		VMOVUPS(Mem{Base: l, Disp: 4 * s.width() * p}, acc[p])
	}
	return acc
}

func storeLanes(l reg.Register, acc []reg.VecVirtual) {
	storeLaneRows(l, [][]reg.VecVirtual{acc})
}

// block emits the decode of one unit of the weight row at w (unit bytes long): each group of
// weights it forms in a register v (lane register p of the 16 contract lanes, the first of its
// elements elem within the unit) it hands to use, which multiplies and adds it into the lanes
// of one or more inputs and must leave v unchanged. It returns the elements of a unit.
type block func(w reg.Register, use func(v reg.VecVirtual, p, elem int)) int

// addInto returns the use function that adds the products of each group with the floats at x
// into the lane registers acc: VMULPS then VADDPS, two roundings, as the contract says.
func addInto(s isa, acc []reg.VecVirtual, x reg.Register) func(v reg.VecVirtual, p, elem int) {
	return func(v reg.VecVirtual, p, elem int) {
		t := s.vec()
		VMULPS(Mem{Base: x, Disp: 4 * elem}, v, t)
		VADDPS(t, acc[p], acc[p])
	}
}

// frameAddr returns a register holding the address of a parameter or result array in the
// argument frame (of its first element). The kernels take and return their lanes by value, so
// the Go side passes no pointer to a local: a pointer handed through a func value would make
// the local escape to the heap on every call.
func frameAddr(c gotypes.Component) reg.GPVirtual {
	for {
		if b, err := c.Resolve(); err == nil {
			r := GP64()
			LEAQ(b.Addr, r)
			return r
		}
		c = c.Index(0)
	}
}

// loadPointers loads the first n pointers of the array at args.
func loadPointers(args reg.Register, n int) []reg.GPVirtual {
	p := make([]reg.GPVirtual, n)
	for i := range p {
		p[i] = GP64()
		MOVQ(Mem{Base: args, Disp: 8 * i}, p[i])
	}
	return p
}

// laneType is a weight type whose products go through the contract lanes: its kernels' name
// part, the bytes of a unit and the unit's decode.
type laneType struct {
	name string
	unit int
	body block
}

// laneTypes lists the float-lane weight types of a tier, in the order their kernels are emitted.
func laneTypes(s isa) []laneType {
	return []laneType{
		{"F32", 64, floatGroups(s, 4, loadF32)},
		{"F16", 32, floatGroups(s, 2, loadF16)},
		{"BF16", 32, floatGroups(s, 2, loadBF16)},
		{"Q8_0", 34, q8_0Block(s)},
	}
}
