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

	. "github.com/mmcloughlin/avo/build"
	"github.com/mmcloughlin/avo/gotypes"
	"github.com/mmcloughlin/avo/ir"
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
	q6KShifts = GLOBL("q6KShifts", RODATA|NOPTR)
	for i := range 64 { // words: 0 then 2 (low nibbles' high bits), 4 then 6 (high nibbles')
		DATA(2*i, U16(2*(i/16)))
	}
	avx2 := isa{f64Digit: f64Digit, suffix: "AVX2", parts: 2, vec: YMM, and: VPAND, or: VPOR, xor: VPXOR, consts: consts}
	avx512 := isa{suffix: "AVX512", parts: 1, vec: ZMM, consts: consts, f64Digit: f64Digit,
		and: func(a, b, c Op) { VPANDD(a, b, c) },
		or:  func(a, b, c Op) { VPORD(a, b, c) },
		xor: func(a, b, c Op) { VPXORD(a, b, c) },
	}
	for _, s := range []isa{avx2, avx512} {
		for _, k := range []struct {
			name string
			unit int
			body block
		}{
			{"F32", 64, floatGroups(s, 4, loadF32)},
			{"F16", 32, floatGroups(s, 2, loadF16)},
			{"BF16", 32, floatGroups(s, 2, loadBF16)},
			{"Q8_0", 34, q8_0Block(s)},
			{"Q6K", 210, q6KBody(s)},
		} {
			lanesKernel(s, k.name, k.unit, k.body)
			lanes2Kernel(s, k.name, k.unit, k.body)
			lanes4Kernel(s, k.name, k.unit, k.body)
		}
		sumKernel(s)
	}
	q4KKernel(avx2, false)
	q4KKernel(avx512, false)
	q4KKernel(avx512, true)
	q4KTileKernel(avx2, false)
	q4KTileKernel(avx512, false)
	q4KTileKernel(avx512, true)
	expKernel(false)
	expKernel(true)
	attendKernel(avx2)
	attendKernel(avx512)
	Generate()
}

// broadcast loads a 4-byte constant into every dword of a new register.
func broadcast(s isa, v uint32) reg.VecVirtual {
	r := s.vec()
	VPBROADCASTD(s.consts[v], r)
	return r
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
	for p, a := range acc {
		VMOVUPS(a, Mem{Base: l, Disp: 4 * 16 / len(acc) * p})
	}
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

// halfScale broadcasts the f16 at m, widened, to every float of a new register.
func halfScale(s isa, m Mem) reg.VecVirtual {
	h := XMM()
	VPBROADCASTW(m, h)
	VCVTPH2PS(h, h)
	d := s.vec()
	VBROADCASTSS(h, d)
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

// q6KShifts holds, as words, the right shifts that bring the high bit pairs of Q6_K's qh bytes
// down for the four 32-element quarters of a 128-element half block: 0, 2 (the low nibbles of
// the ql bytes), then 4, 6 (the high nibbles).
var q6KShifts Mem

// q6KBody is the Q6_K block body of a tier: the byte-wide decode where AVX-512 BW has it.
func q6KBody(s isa) block {
	if s.parts == 1 {
		return q6KBlockBytes(s)
	}
	return q6KBlock(s)
}

// q6KBlockBytes is the AVX-512 Q6_K body. It assembles the 6-bit values 64 at a time as bytes:
// the 64 ql bytes of a half block give the low nibbles of elements 0-63 (and), the high
// nibbles of 64-127 (shift); the 32 qh bytes, broadcast to both 256-bit halves and shifted per
// word by 0|2 or 4|6, give their high bit pairs. Each group of 16 bytes q−32 is then widened,
// converted and scaled as q6KBlock does: the same values, the same products, the same order of
// additions.
func q6KBlockBytes(s isa) block {
	return func(w reg.Register, use func(v reg.VecVirtual, p, elem int)) int {
		ds := AllocLocal(64)
		d := halfScale(s, Mem{Base: w, Disp: 208})
		v := s.vec()
		VPMOVSXBD(Mem{Base: w, Disp: 192}, v)
		VCVTDQ2PS(v, v)
		VMULPS(d, v, v)
		VMOVUPS(v, ds)
		m15, m3, c32 := broadcast(s, 0x0f0f0f0f), broadcast(s, 0x03030303), broadcast(s, 0x20202020)
		for h := range 2 {
			l := ZMM()
			VMOVDQU64(Mem{Base: w, Disp: 64 * h}, l)
			hb := ZMM()
			VBROADCASTI64X4(Mem{Base: w, Disp: 128 + 32*h}, hb)
			lowN, highN := ZMM(), ZMM()
			VPANDD(m15, l, lowN)
			VPSRLW(U8(4), l, highN)
			VPANDD(m15, highN, highN)
			for k, nib := range []reg.VecVirtual{lowN, highN} {
				t := ZMM()
				VPSRLVW(q6KShifts.Offset(64*k), hb, t)
				VPANDD(m3, t, t)
				VPSLLW(U8(4), t, t)
				VPORD(t, nib, nib)
				VPSUBB(c32, nib, nib)
				for j := range 4 { // the four groups of 16 elements in nib
					g := 8*h + 4*k + j
					src := nib.AsX()
					if j > 0 {
						src = XMM()
						VEXTRACTI32X4(U8(j), nib, src)
					}
					q := s.vec()
					VPMOVSXBD(src, q)
					VCVTDQ2PS(q, q)
					sc := s.vec()
					VBROADCASTSS(ds.Offset(4*g), sc)
					VMULPS(sc, q, q)
					use(q, 0, 16*g)
				}
			}
		}
		return 256
	}
}

// q6KBlock: 128 bytes of low nibbles, 64 of high bit pairs, 16 int8 scales, f16 d. Element
// i = 128h + 32c + l has q = (ql[64h+32(c&1)+l] >> 4(c>>1)) & 15 | ((qh[32h+l] >> 2c) & 3) << 4
// and weight (d·sc[i/16])·(q−32), each product rounded (as decodeQ6K).
func q6KBlock(s isa) block {
	return func(w reg.Register, use func(v reg.VecVirtual, p, elem int)) int {
		ds := AllocLocal(64)
		d := halfScale(s, Mem{Base: w, Disp: 208})
		for p := range s.parts {
			v := s.vec()
			VPMOVSXBD(Mem{Base: w, Disp: 192 + s.width()*p}, v)
			VCVTDQ2PS(v, v)
			VMULPS(d, v, v)
			VMOVUPS(v, ds.Offset(4*s.width()*p))
		}
		mask15, mask3, c32 := broadcast(s, 15), broadcast(s, 3), broadcast(s, 32)
		for h := range 2 {
			for c := range 4 {
				for g := range 2 {
					for p := range s.parts {
						e := 16*g + s.width()*p
						q := s.vec()
						VPMOVZXBD(Mem{Base: w, Disp: 64*h + 32*(c&1) + e}, q)
						if c >= 2 {
							VPSRLD(U8(4), q, q)
						}
						s.and(mask15, q, q)
						hi := s.vec()
						VPMOVZXBD(Mem{Base: w, Disp: 128 + 32*h + e}, hi)
						if c > 0 {
							VPSRLD(U8(2*c), hi, hi)
						}
						s.and(mask3, hi, hi)
						VPSLLD(U8(4), hi, hi)
						s.or(hi, q, q)
						VPSUBD(c32, q, q)
						VCVTDQ2PS(q, q)
						sc := s.vec()
						VBROADCASTSS(ds.Offset(4*(8*h+2*c+g)), sc)
						VMULPS(sc, q, q)
						use(q, p, 128*h+32*c+e)
					}
				}
			}
		}
		return 256
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

// vpdpwssd emits VPDPWSSD (AVX512_VNNI), which avo v0.5.0 does not list: acc += the sums of
// the two signed word products in each dword of a (a register or memory) and b.
func vpdpwssd(a Op, b, acc reg.VecVirtual) {
	Instruction(&ir.Instruction{
		Opcode:   "VPDPWSSD",
		Operands: []Op{a, b, acc},
		Inputs:   []Op{a, b, acc},
		Outputs:  []Op{acc},
		ISA:      []string{"AVX512_VNNI"},
	})
}

// madd adds the products of the words of w and dig, pairwise, into the dwords of acc: one
// VPDPWSSD with VNNI, VPMADDWD and VPADDD without.
func madd(s isa, vnni bool, w reg.VecVirtual, dig Op, acc reg.VecVirtual) {
	if vnni {
		vpdpwssd(dig, w, acc)
		return
	}
	t := s.vec()
	VPMADDWD(dig, w, t)
	VPADDD(t, acc, acc)
}

// q4KKernel emits
//
//	func q4KDot2<suffix>(w0, w1 []byte, digits []int16, sums, scale []float64) [2]float32
//
// which computes DotQ4K of the two Q4_K rows w0 and w1 against one prepared input (its q4KWide
// digits and sums and its len(scale) block scales), the whole definition:
//
//   - The 6-bit scales and mins of a block are unpacked in general registers (the bit moves of
//     scaleMinK4, four bytes at a time) and the scales widened to words on the stack.
//   - Each weight nibble q becomes the word sc·q (<= 945) and is multiplied pairwise with the
//     digit words (VPDPWSSD or VPMADDWD), four dword accumulators a row: low digit and high
//     digit for the low and the high nibbles. After a block the lanes are folded to four dwords
//     per digit, each the sum of 64 products of at most 945·32768, so below 2^31: exact.
//   - The four lanes go to float64 and T = Σlo + 65536·Σhi, M = Σ m_j·sums_j are formed with
//     exact float64 products and sums (every value an integer below 2^53, so no rounding).
//   - v = fl64(d·T) − fl64(dmin·M) and y = y + v·2^-sh in block order, as DotQ4K; then one
//     rounding to float32.
func q4KKernel(s isa, vnni bool) {
	name := "q4KDot2" + s.suffix
	if vnni {
		name += "VNNI"
	}
	TEXT(name, NOSPLIT, "func(w0, w1 []byte, digits []int16, sums, scale []float64) [2]float32")
	Pragma("noescape")
	Doc(name + " returns DotQ4K of the Q4_K rows w0 and w1 against a prepared input.")
	w := []reg.Register{Load(Param("w0").Base(), GP64()), Load(Param("w1").Base(), GP64())}
	dig := Load(Param("digits").Base(), GP64())
	sums := Load(Param("sums").Base(), GP64())
	scale := Load(Param("scale").Base(), GP64())
	n := Load(Param("scale").Len(), GP64())
	words := AllocLocal(32) // the 8 scales of each row as words
	mask := broadcast(s, 0x000f000f)
	y := []reg.VecVirtual{XMM(), XMM()}
	for _, r := range y {
		VXORPD(r, r, r)
	}
	Label("block")
	TESTQ(n, n)
	JZ(LabelRef("done"))
	mins := make([]reg.VecVirtual, 2)
	for r := range 2 {
		for off := 0; off < 144; off += 64 {
			PREFETCHT0(Mem{Base: w[r], Disp: prefetchAhead + off})
		}
		mins[r] = unpackScales(w[r], words.Offset(16*r))
	}
	type accs struct{ lo1, hi1, lo2, hi2 reg.VecVirtual } // digit (lo, hi) × nibble (low 1, high 2)
	acc := make([]accs, 2)
	for r := range acc {
		acc[r] = accs{s.vec(), s.vec(), s.vec(), s.vec()}
		for _, a := range []reg.VecVirtual{acc[r].lo1, acc[r].hi1, acc[r].lo2, acc[r].hi2} {
			s.xor(a, a, a)
		}
	}
	wordsPerReg := 2 * s.width()
	for c := range 4 {
		for p := range s.parts {
			e := wordsPerReg * p // first element of this register within the sub-block
			// Digits of sub-blocks 2c (low nibbles) and 2c+1 (high nibbles).
			dLo1 := Mem{Base: dig, Disp: 128*(2*c) + 2*e}
			dHi1 := Mem{Base: dig, Disp: 128*(2*c) + 64 + 2*e}
			dLo2 := Mem{Base: dig, Disp: 128*(2*c+1) + 2*e}
			dHi2 := Mem{Base: dig, Disp: 128*(2*c+1) + 64 + 2*e}
			for r := range 2 {
				q := s.vec()
				VPMOVZXBW(Mem{Base: w[r], Disp: 16 + 32*c + e}, q)
				ql := s.vec()
				s.and(mask, q, ql)
				VPSRLW(U8(4), q, q)
				sc := s.vec()
				VPBROADCASTW(words.Offset(16*r+2*(2*c)), sc)
				VPMULLW(sc, ql, ql)
				VPBROADCASTW(words.Offset(16*r+2*(2*c+1)), sc)
				VPMULLW(sc, q, q)
				madd(s, vnni, ql, dLo1, acc[r].lo1)
				madd(s, vnni, ql, dHi1, acc[r].hi1)
				madd(s, vnni, q, dLo2, acc[r].lo2)
				madd(s, vnni, q, dHi2, acc[r].hi2)
			}
		}
	}
	for r := range 2 {
		a := acc[r]
		VPADDD(a.lo2, a.lo1, a.lo1)
		VPADDD(a.hi2, a.hi1, a.hi1)
		v := q4KBlockEnd(s, a.lo1, a.hi1, mins[r], Mem{Base: sums}, Mem{Base: w[r]}, Mem{Base: scale})
		VADDSD(v, y[r], y[r])
	}
	for r := range 2 {
		ADDQ(U32(144), w[r])
	}
	ADDQ(U32(1024), dig)
	ADDQ(U32(64), sums)
	ADDQ(U8(8), scale)
	DECQ(n)
	JMP(LabelRef("block"))
	Label("done")
	out := frameAddr(ReturnIndex(0))
	for r := range 2 {
		VCVTSD2SS(y[r], y[r], y[r])
		VMOVSS(y[r], Mem{Base: out, Disp: 4 * r})
	}
	VZEROUPPER()
	RET()
}

// q4KBlockEnd finishes a Q4_K block of one row against one input: lo and hi hold the dword
// partial sums of T's low and high digits, mins the block's 8 mins as bytes, sums the input's 8
// sub-block sums, blk the block (its d and dmin), scale the input's 2^-sh; it returns v·2^-sh
// (exact), to be added to the row's sum.
func q4KBlockEnd(s isa, lo, hi, mins reg.VecVirtual, sums, blk, scale Mem) reg.VecVirtual {
	l4, h4 := foldToFour(s, lo), foldToFour(s, hi)
	t, h := YMM(), YMM()
	VCVTDQ2PD(l4, t)
	VCVTDQ2PD(h4, h)
	VMULPD(s.f64Digit, h, h)
	VADDPD(h, t, t) // four exact partial sums of T
	m := minsTimesSums(s, mins, sums)
	// (t0+t1, m0+m1, t2+t3, m2+m3), then (T, M): exact. (VHADDPD and VEXTRACTF128 have no
	// EVEX form, and the AVX-512 kernels may be handed registers above 15.)
	u := YMM()
	VUNPCKHPD(m, t, u)
	VUNPCKLPD(m, t, t)
	VADDPD(u, t, t)
	tm := XMM()
	if s.parts == 1 {
		VEXTRACTF64X2(U8(1), t, tm)
	} else {
		VEXTRACTF128(U8(1), t, tm)
	}
	VADDPD(t.AsX(), tm, tm)
	dd := XMM()
	VMOVD(blk, dd)
	VCVTPH2PS(dd, dd)
	VCVTPS2PD(dd, dd)
	VMULPD(dd, tm, tm) // (fl64(d·T), fl64(dmin·M))
	dm := XMM()
	VPERMILPD(U8(1), tm, dm)
	VSUBSD(dm, tm, tm)
	VMULSD(scale, tm, tm)
	return tm
}

// q4KTileKernel emits
//
//	func q4KDot4<suffix>(w []byte, in [12]*byte, nb int) [4]float32
//
// which computes DotQ4K of the Q4_K row w (nb blocks) against four prepared inputs, in[t] their
// q4KWide digits, in[4+t] their sums and in[8+t] their block scales: the row's nibbles are
// widened and scaled once for the four. It follows q4KKernel with two dword accumulators per
// input (low and high digit): a lane still sums 16 products a block before the fold.
func q4KTileKernel(s isa, vnni bool) {
	name := "q4KDot4" + s.suffix
	if vnni {
		name += "VNNI"
	}
	TEXT(name, NOSPLIT, "func(w []byte, in [12]*byte, nb int) [4]float32")
	Pragma("noescape")
	Doc(name + " returns DotQ4K of the Q4_K row w against four prepared inputs.")
	w := Load(Param("w").Base(), GP64())
	args := frameAddr(Param("in"))
	n := Load(Param("nb"), GP64())
	dOff, sOff, scOff := GP64(), GP64(), GP64() // the block's offsets into digits, sums, scale
	XORQ(dOff, dOff)
	XORQ(sOff, sOff)
	XORQ(scOff, scOff)
	words := AllocLocal(16)
	mask := broadcast(s, 0x000f000f)
	y := AllocLocal(32) // the four sums, on the stack: AVX2 has no register to spare
	for t := range 4 {
		MOVQ(U32(0), y.Offset(8*t))
	}
	Label("block")
	TESTQ(n, n)
	JZ(LabelRef("done"))
	mins := unpackScales(w, words)
	lo, hi := make([]reg.VecVirtual, 4), make([]reg.VecVirtual, 4)
	for t := range 4 {
		lo[t], hi[t] = s.vec(), s.vec()
		s.xor(lo[t], lo[t], lo[t])
		s.xor(hi[t], hi[t], hi[t])
	}
	wordsPerReg := 2 * s.width()
	for c := range 4 {
		for p := range s.parts {
			e := wordsPerReg * p
			q := s.vec()
			VPMOVZXBW(Mem{Base: w, Disp: 16 + 32*c + e}, q)
			ql := s.vec()
			s.and(mask, q, ql)
			VPSRLW(U8(4), q, q)
			sc := s.vec()
			VPBROADCASTW(words.Offset(2*(2*c)), sc)
			VPMULLW(sc, ql, ql)
			VPBROADCASTW(words.Offset(2*(2*c+1)), sc)
			VPMULLW(sc, q, q)
			for t := range 4 {
				d := GP64()
				MOVQ(Mem{Base: args, Disp: 8 * t}, d)
				madd(s, vnni, ql, Mem{Base: d, Index: dOff, Scale: 1, Disp: 128*(2*c) + 2*e}, lo[t])
				madd(s, vnni, ql, Mem{Base: d, Index: dOff, Scale: 1, Disp: 128*(2*c) + 64 + 2*e}, hi[t])
				madd(s, vnni, q, Mem{Base: d, Index: dOff, Scale: 1, Disp: 128*(2*c+1) + 2*e}, lo[t])
				madd(s, vnni, q, Mem{Base: d, Index: dOff, Scale: 1, Disp: 128*(2*c+1) + 64 + 2*e}, hi[t])
			}
		}
	}
	for t := range 4 {
		sp, scp := GP64(), GP64()
		MOVQ(Mem{Base: args, Disp: 8 * (4 + t)}, sp)
		MOVQ(Mem{Base: args, Disp: 8 * (8 + t)}, scp)
		v := q4KBlockEnd(s, lo[t], hi[t], mins, Mem{Base: sp, Index: sOff, Scale: 1}, Mem{Base: w}, Mem{Base: scp, Index: scOff, Scale: 1})
		VADDSD(y.Offset(8*t), v, v)
		VMOVSD(v, y.Offset(8*t))
	}
	ADDQ(U32(144), w)
	ADDQ(U32(1024), dOff)
	ADDQ(U32(64), sOff)
	ADDQ(U8(8), scOff)
	DECQ(n)
	JMP(LabelRef("block"))
	Label("done")
	out := frameAddr(ReturnIndex(0))
	for t := range 4 {
		v := XMM()
		VMOVSD(y.Offset(8*t), v)
		VCVTSD2SS(v, v, v)
		VMOVSS(v, Mem{Base: out, Disp: 4 * t})
	}
	VZEROUPPER()
	RET()
}

// unpackScales unpacks the 12 scale bytes of the Q4_K block at w (scaleMinK4 four bytes at a
// time), stores its 8 scales as words at st and returns its 8 mins as bytes in an xmm register.
func unpackScales(w reg.Register, st Mem) reg.VecVirtual {
	a0, a1, a2 := GP32(), GP32(), GP32()
	MOVL(Mem{Base: w, Disp: 4}, a0)
	MOVL(Mem{Base: w, Disp: 8}, a1)
	MOVL(Mem{Base: w, Disp: 12}, a2)
	// high parts: bits 4-5 of sc_j (j >= 4) come from bits 6-7 of s[j-4], of m_j from s[j].
	highBits := func(src reg.GPVirtual) reg.GPVirtual {
		t := GP32()
		MOVL(src, t)
		SHRL(U8(6), t)
		ANDL(U32(0x03030303), t)
		SHLL(U8(4), t)
		return t
	}
	scHi, mHi := highBits(a0), highBits(a1)
	t := GP32()
	MOVL(a2, t)
	ANDL(U32(0x0f0f0f0f), t)
	ORL(t, scHi)
	SHRL(U8(4), a2)
	ANDL(U32(0x0f0f0f0f), a2)
	ORL(a2, mHi)
	ANDL(U32(0x3f3f3f3f), a0)
	ANDL(U32(0x3f3f3f3f), a1)
	sc, m := a0.As64(), a1.As64() // the 32-bit operations cleared the upper halves
	SHLQ(U8(32), scHi.As64())
	ORQ(scHi.As64(), sc)
	SHLQ(U8(32), mHi.As64())
	ORQ(mHi.As64(), m)
	x := XMM()
	VMOVQ(sc, x)
	VPMOVZXBW(x, x)
	VMOVDQU(x, st)
	mins := XMM()
	VMOVQ(m, mins)
	return mins
}

// foldToFour adds the dword lanes of a down to four (an xmm register).
func foldToFour(s isa, a reg.VecVirtual) reg.VecVirtual {
	var y reg.VecVirtual
	if s.parts == 1 {
		y = YMM()
		VEXTRACTI64X4(U8(1), a, y)
		VPADDD(a.AsY(), y, y)
	} else {
		y = a
	}
	x := XMM()
	if s.parts == 1 {
		VEXTRACTI32X4(U8(1), y, x)
	} else {
		VEXTRACTI128(U8(1), y, x)
	}
	VPADDD(y.AsX(), x, x)
	return x
}

// minsTimesSums returns the four exact float64 partial sums of M = Σ_j m_j·sums_j, the 8 min
// bytes in mins and the 8 sums at sums.
func minsTimesSums(s isa, mins reg.VecVirtual, sums Mem) reg.VecVirtual {
	d := YMM()
	VPMOVZXBD(mins, d)
	if s.parts == 1 {
		z := ZMM()
		VCVTDQ2PD(d, z)
		VMULPD(sums, z, z)
		m := YMM()
		VEXTRACTF64X4(U8(1), z, m)
		VADDPD(z.AsY(), m, m)
		return m
	}
	lo, hi := YMM(), YMM()
	VCVTDQ2PD(d.AsX(), lo)
	x := XMM()
	VEXTRACTI128(U8(1), d, x)
	VCVTDQ2PD(x, hi)
	VMULPD(sums, lo, lo)
	VMULPD(sums.Offset(32), hi, hi)
	VADDPD(hi, lo, lo)
	return lo
}

// The slots of the table the exp kernels read (see expTable in package kernels): 64 powers
// 2^(j/64), then the constants of expFloat64 and Exp, float64 unless noted.
const (
	expInvLn2By64 = 64 + iota
	expShifter    // also read as its bits: k = bits(x·64/ln2 + shifter) − bits(shifter)
	expLn2Hi
	expLn2Lo
	expC120
	expC24
	expC6
	expHalf
	expBelow        // 1 − 2^-50
	expAbove        // 1 + 2^-50
	expOverflowF32  // float32 bits in the low half
	expUnderflowF32 // float32 bits in the low half
	expBiasK        // int64 1023·64: (k + 1023·64) >> 6 is the biased exponent of 2^(k>>6)
	expInfF32       // float32 +Inf bits in the low half
	expSignF32      // float32 sign bit in the low half
	expOneF32       // float32 1 in the low half
)

// expKernel emits one of the vector Exp kernels (AVX2 encodings, so every SIMD tier can use
// them):
//
//	func expShiftAVX2(dst, src []float32, shift float32, tab *[80]float64) int
//	func swiGLUAVX2(dst, gate, up []float32, tab *[80]float64) int
//
// expShift writes dst[i] = Exp(src[i] − shift) (the difference rounded to float32, as Softmax
// computes it); swiGLU writes dst[i] = (g/(1 + Exp(−g)))·up[i] with g = gate[i], each
// operation rounded to float32 (SiLU and SwiGLU). Both run groups of 8 over the whole groups of
// their first slice and return how many elements they wrote: all whole groups, or fewer when a
// group holds an element they leave to the scalar Exp (a NaN, or one of the arguments whose
// float64 value lies too near a float32 rounding boundary); the caller computes that group
// with the scalar code and calls again after it.
//
// Each lane computes expFloat64 step for step (the same float64 operations, each rounded, no
// FMA, the table 2^(j/64) gathered by j = k & 63) and Exp's rounding test; arguments above
// expOverflow give +Inf and below expUnderflow +0, as in Exp.
func expKernel(swiglu bool) {
	name := "expShiftAVX2"
	sig := "func(dst, src []float32, shift float32, tab *[80]float64) int"
	doc := "expShiftAVX2 writes Exp(src[i] − shift) into dst for the whole groups of 8 of src up to the first it leaves to the scalar Exp, and returns how many it wrote."
	if swiglu {
		name = "swiGLUAVX2"
		sig = "func(dst, gate, up []float32, tab *[80]float64) int"
		doc = "swiGLUAVX2 writes SiLU(gate[i])·up[i] into dst for the whole groups of 8 of gate up to the first it leaves to the scalar code, and returns how many it wrote."
	}
	TEXT(name, NOSPLIT, sig)
	Pragma("noescape")
	Doc(doc)
	dst := Load(Param("dst").Base(), GP64())
	var src, up reg.Register
	var n reg.Register
	if swiglu {
		src = Load(Param("gate").Base(), GP64())
		n = Load(Param("gate").Len(), GP64())
		up = Load(Param("up").Base(), GP64())
	} else {
		src = Load(Param("src").Base(), GP64())
		n = Load(Param("src").Len(), GP64())
	}
	tab := Load(Param("tab"), GP64())
	slot := func(i int) Mem { return Mem{Base: tab, Disp: 8 * i} }
	SHRQ(U8(3), n) // whole groups
	done := GP64()
	XORQ(done, done)
	Label("group")
	TESTQ(n, n)
	JZ(LabelRef("out"))
	g := YMM() // the gate (SwiGLU) or the argument
	VMOVUPS(Mem{Base: src, Index: done, Scale: 4}, g)
	xs := YMM()
	if swiglu {
		VBROADCASTSS(slot(expSignF32), xs)
		VXORPS(g, xs, xs) // −g, exactly
	} else {
		sf := Load(Param("shift"), XMM())
		VBROADCASTSS(sf, xs)
		VSUBPS(xs, g, xs) // src − shift, rounded
	}
	lim, over, under := YMM(), YMM(), YMM()
	VBROADCASTSS(slot(expOverflowF32), lim)
	VCMPPS(U8(0x1e), lim, xs, over) // xs > expOverflow (ordered)
	VBROADCASTSS(slot(expUnderflowF32), lim)
	VCMPPS(U8(0x11), lim, xs, under) // xs < expUnderflow (ordered)
	inr := YMM()
	VCMPPS(U8(0x07), xs, xs, inr) // ordered: not a NaN
	VORPS(under, over, lim)
	VANDNPS(inr, lim, inr) // in range: not NaN, not over, not under
	xc := YMM()
	VANDPS(inr, xs, xc) // out-of-range lanes become +0, harmless below
	lo, hi := YMM(), YMM()
	for h := range 2 {
		xh := XMM()
		if h == 0 {
			VMOVAPS(xc.AsX(), xh)
		} else {
			VEXTRACTF128(U8(1), xc, xh)
		}
		l, u := expCore(xh, slot, tab)
		if h == 0 {
			VMOVAPS(l, lo.AsX())
			VMOVAPS(u, hi.AsX())
		} else {
			VINSERTF128(U8(1), l, lo, lo)
			VINSERTF128(U8(1), u, hi, hi)
		}
	}
	eq := YMM()
	VCMPPS(U8(0x00), hi, lo, eq) // the error interval rounds to one float32
	VANDPS(inr, eq, eq)
	// Lanes left to the scalar code: neither decided here nor out of range.
	all := YMM()
	VORPS(over, eq, all)
	VORPS(under, all, all)
	mask := GP32()
	VMOVMSKPS(all, mask)
	CMPL(mask, U8(0xff))
	JNE(LabelRef("out"))
	res := YMM()
	VANDPS(eq, lo, res)
	inf := YMM()
	VBROADCASTSS(slot(expInfF32), inf)
	VANDPS(over, inf, inf)
	VORPS(inf, res, res) // +Inf above the range; +0 below it (res is masked)
	if swiglu {
		one := YMM()
		VBROADCASTSS(slot(expOneF32), one)
		VADDPS(one, res, res) // 1 + Exp(−g)
		VDIVPS(res, g, res)   // g / (1 + Exp(−g))
		VMULPS(Mem{Base: up, Index: done, Scale: 4}, res, res)
	}
	VMOVUPS(res, Mem{Base: dst, Index: done, Scale: 4})
	ADDQ(U8(8), done)
	DECQ(n)
	JMP(LabelRef("group"))
	Label("out")
	Store(done, ReturnIndex(0))
	VZEROUPPER()
	RET()
}

// expCore evaluates four lanes of Exp's float64 steps for the float32 arguments in x (all
// within Exp's range) and returns the two float32 roundings Exp compares, of y·(1 − 2^-50) and
// y·(1 + 2^-50).
func expCore(x reg.VecVirtual, slot func(int) Mem, tab reg.Register) (lo, hi reg.VecVirtual) {
	xd := YMM()
	VCVTPS2PD(x, xd)
	kd := YMM()
	VBROADCASTSD(slot(expInvLn2By64), kd)
	VMULPD(xd, kd, kd)
	sh := YMM()
	VBROADCASTSD(slot(expShifter), sh)
	VADDPD(sh, kd, kd) // its low bits hold k
	k := YMM()
	VPSUBQ(sh, kd, k)  // k = bits(kd) − bits(shifter), an int64
	VSUBPD(sh, kd, kd) // kd = k as a float64
	t := YMM()
	VBROADCASTSD(slot(expLn2Hi), t)
	VMULPD(kd, t, t)
	r := YMM()
	VSUBPD(t, xd, r)
	VBROADCASTSD(slot(expLn2Lo), t)
	VMULPD(kd, t, t)
	VSUBPD(t, r, r)
	q := YMM()
	VBROADCASTSD(slot(expC120), q)
	VMULPD(r, q, q)
	VBROADCASTSD(slot(expC24), t)
	VADDPD(t, q, q)
	VMULPD(r, q, q)
	VBROADCASTSD(slot(expC6), t)
	VADDPD(t, q, q)
	VMULPD(r, q, q)
	VBROADCASTSD(slot(expHalf), t)
	VADDPD(t, q, q)
	VMULPD(r, r, t)
	VMULPD(q, t, t)
	VADDPD(r, t, t) // p
	// 2^(j/64) for j = k & 63 (all ones shifted right by 58: the low 6 bits of each qword).
	j := YMM()
	VPCMPEQQ(j, j, j)
	VPSRLQ(U8(58), j, j)
	VPAND(k, j, j)
	m := YMM()
	VPCMPEQQ(m, m, m)
	p2 := YMM()
	VXORPD(p2, p2, p2)
	VGATHERQPD(m, Mem{Base: tab, Index: j, Scale: 8}, p2)
	VMULPD(p2, t, t)
	VADDPD(p2, t, t) // y = t + t·p
	// 2^(k>>6) as bits: (k + 1023·64) >> 6 is the biased exponent (k > −65472 here).
	b := YMM()
	VPBROADCASTQ(slot(expBiasK), b)
	VPADDQ(b, k, k)
	VPSRLQ(U8(6), k, k)
	VPSLLQ(U8(52), k, k)
	VMULPD(k, t, t) // y·2^(k>>6), exact
	lo, hi = XMM(), XMM()
	u := YMM()
	VBROADCASTSD(slot(expBelow), u)
	VMULPD(t, u, u)
	VCVTPD2PSY(u, lo)
	VBROADCASTSD(slot(expAbove), u)
	VMULPD(t, u, u)
	VCVTPD2PSY(u, hi)
	return lo, hi
}

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
