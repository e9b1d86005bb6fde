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
}

func (s isa) width() int { return 16 / s.parts } // floats per register

func main() {
	consts := map[uint32]Mem{}
	for _, v := range []uint32{3, 15, 32, 0x8000} {
		consts[v] = ConstData(fmt.Sprintf("const%d", v), U32(v))
	}
	avx2 := isa{suffix: "AVX2", parts: 2, vec: YMM, and: VPAND, or: VPOR, xor: VPXOR, consts: consts}
	avx512 := isa{suffix: "AVX512", parts: 1, vec: ZMM, consts: consts,
		and: func(a, b, c Op) { VPANDD(a, b, c) },
		or:  func(a, b, c Op) { VPORD(a, b, c) },
		xor: func(a, b, c Op) { VPXORD(a, b, c) },
	}
	for _, s := range []isa{avx2, avx512} {
		lanesKernel(s, "F32", 64, floatGroups(s, 4, loadF32))
		lanesKernel(s, "F16", 32, floatGroups(s, 2, loadF16))
		lanesKernel(s, "BF16", 32, floatGroups(s, 2, loadBF16))
		lanesKernel(s, "Q8_0", 34, q8_0Block(s))
		lanesKernel(s, "Q6K", 210, q6KBlock(s))
		sumKernel(s)
	}
	q4KKernel(avx2, false)
	q4KKernel(avx512, false)
	q4KKernel(avx512, true)
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

// block emits the body for one unit of the weight row at w (unit bytes long) against the floats
// at x, adding into acc; it returns how many floats of x the unit consumes.
type block func(acc []reg.VecVirtual, w, x reg.Register) int

// lanesKernel emits
//
//	func lanes<name><suffix>(l *[16]float32, w []byte, x []float32)
//
// which continues the lanes l over the len(w)/unit whole units of w against x.
func lanesKernel(s isa, name string, unit int, body block) {
	TEXT("lanes"+name+s.suffix, NOSPLIT, "func(l *[16]float32, w []byte, x []float32)")
	Pragma("noescape")
	Doc(fmt.Sprintf("lanes%s%s adds the products of the len(w)/%d whole units of w with x into the lanes l.", name, s.suffix, unit))
	l := Load(Param("l"), GP64())
	w := Load(Param("w").Base(), GP64())
	n := Load(Param("w").Len(), GP64())
	x := Load(Param("x").Base(), GP64())
	acc := loadLanes(s, l)
	Label("loop") // n counts the bytes left; a partial unit is left alone
	CMPQ(n, U32(unit))
	JB(LabelRef("done"))
	floats := body(acc, w, x)
	ADDQ(U32(unit), w)
	ADDQ(U32(4*floats), x)
	SUBQ(U32(unit), n)
	JMP(LabelRef("loop"))
	Label("done")
	storeLanes(l, acc)
	VZEROUPPER()
	RET()
}

// mulAdd adds the products of the weights in v with the floats at x into lane register a:
// VMULPS then VADDPS, two roundings, as the contract says.
func mulAdd(a, v reg.VecVirtual, x Mem) {
	VMULPS(x, v, v)
	VADDPS(v, a, a)
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

// floatGroups is the body for a group of 16 weights stored size bytes each.
func floatGroups(s isa, size int, load loader) block {
	return func(acc []reg.VecVirtual, w, x reg.Register) int {
		for p := range s.parts {
			v := s.vec()
			load(v, Mem{Base: w, Disp: size * s.width() * p})
			mulAdd(acc[p], v, Mem{Base: x, Disp: 4 * s.width() * p})
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
	return func(acc []reg.VecVirtual, w, x reg.Register) int {
		d := halfScale(s, Mem{Base: w})
		for g := range 2 {
			for p := range s.parts {
				e := 16*g + s.width()*p
				v := s.vec()
				VPMOVSXBD(Mem{Base: w, Disp: 2 + e}, v)
				VCVTDQ2PS(v, v)
				VMULPS(d, v, v)
				mulAdd(acc[p], v, Mem{Base: x, Disp: 4 * e})
			}
		}
		return 32
	}
}

// q6KBlock: 128 bytes of low nibbles, 64 of high bit pairs, 16 int8 scales, f16 d. Element
// i = 128h + 32c + l has q = (ql[64h+32(c&1)+l] >> 4(c>>1)) & 15 | ((qh[32h+l] >> 2c) & 3) << 4
// and weight (d·sc[i/16])·(q−32), each product rounded (as decodeQ6K).
func q6KBlock(s isa) block {
	return func(acc []reg.VecVirtual, w, x reg.Register) int {
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
						mulAdd(acc[p], q, Mem{Base: x, Disp: 4 * (128*h + 32*c + e)})
					}
				}
			}
		}
		return 256
	}
}

// sumKernel emits func sumLanes<suffix>(l *[16]float32, v []float32): v's whole groups of 16
// added into the lanes.
func sumKernel(s isa) {
	TEXT("sumLanes"+s.suffix, NOSPLIT, "func(l *[16]float32, v []float32)")
	Pragma("noescape")
	Doc("sumLanes" + s.suffix + " adds the len(v)/16 whole groups of v into the lanes l.")
	l := Load(Param("l"), GP64())
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
	storeLanes(l, acc)
	VZEROUPPER()
	RET()
}

// vpdpwssd emits VPDPWSSD (AVX512_VNNI), which avo v0.5.0 does not list: acc += the sums of
// the two signed word products in each dword of a and b.
func vpdpwssd(a, b, acc reg.VecVirtual) {
	Instruction(&ir.Instruction{
		Opcode:   "VPDPWSSD",
		Operands: []Op{a, b, acc},
		Inputs:   []Op{a, b, acc},
		Outputs:  []Op{acc},
		ISA:      []string{"AVX512_VNNI"},
	})
}

// q4KKernel emits
//
//	func q4KBlocks<suffix>(t []int64, w []byte, x []int32, sc []uint32)
//
// which writes, for each of the len(t) Q4_K blocks of w, the exact integer
// T = Σ_j sc_j · Σ_{k in sub-block j} q_k·X_k with X the prepared input (256 per block) and sc
// the 6-bit sub-block scales (8 per block, unpacked by the caller).
//
// X is split into two signed 16-bit digits X = 65536·Xh + Xl (Xl the sign-extended low half;
// |Xh| <= 31830 because |X| <= 2085998640). The word pair of a dword of X + 2·(X & 0x8000) is
// then (Xl, Xh), so VPMADDWD against w = sc·q placed in the low word gives w·Xl, and in the high
// word w·Xh. Over one 64-element window the int32 sums stay below 945·32768·64 < 2^31, so they
// are exact; each window is widened to int64 before the next.
func q4KKernel(s isa, vnni bool) {
	name := "q4KBlocks" + s.suffix
	if vnni {
		name += "VNNI"
	}
	TEXT(name, NOSPLIT, "func(t []int64, w []byte, x []int32, sc []uint32)")
	Pragma("noescape")
	Doc(name + " writes the exact integer weighted sums T of the len(t) Q4_K blocks of w against x.")
	tp := Load(Param("t").Base(), GP64())
	n := Load(Param("t").Len(), GP64())
	w := Load(Param("w").Base(), GP64())
	x := Load(Param("x").Base(), GP64())
	scp := Load(Param("sc").Base(), GP64())
	mask15, mask8000 := broadcast(s, 15), broadcast(s, 0x8000)
	Label("block")
	TESTQ(n, n)
	JZ(LabelRef("done"))
	lo64, hi64 := s.vec(), s.vec()
	s.xor(lo64, lo64, lo64)
	s.xor(hi64, hi64, hi64)
	for c := range 4 {
		accL, accH := s.vec(), s.vec()
		s.xor(accL, accL, accL)
		s.xor(accH, accH, accH)
		for half := range 2 { // low nibbles (sub-block 2c), then high (2c+1)
			sc := s.vec()
			VPBROADCASTD(Mem{Base: scp, Disp: 4 * (2*c + half)}, sc)
			for e := 0; e < 32; e += s.width() {
				q := s.vec()
				VPMOVZXBD(Mem{Base: w, Disp: 16 + 32*c + e}, q)
				if half == 1 {
					VPSRLD(U8(4), q, q)
				} else {
					s.and(mask15, q, q)
				}
				VPMULLD(sc, q, q) // w = sc·q <= 945, in the low word
				X := s.vec()
				VMOVUPS(Mem{Base: x, Disp: 4 * (64*c + 32*half + e)}, X)
				t := s.vec()
				s.and(mask8000, X, t)
				VPADDD(t, t, t)
				VPADDD(t, X, X) // word pair (Xl, Xh)
				qh := s.vec()
				VPSLLD(U8(16), q, qh) // w in the high word
				if vnni {
					vpdpwssd(q, X, accL)
					vpdpwssd(qh, X, accH)
				} else {
					VPMADDWD(q, X, q)
					VPADDD(q, accL, accL)
					VPMADDWD(qh, X, qh)
					VPADDD(qh, accH, accH)
				}
			}
		}
		widenAdd(s, accL, lo64)
		widenAdd(s, accH, hi64)
	}
	// T = Σ lo + 65536·Σ hi, summed across the qwords.
	VPSLLQ(U8(16), hi64, hi64)
	VPADDQ(hi64, lo64, lo64)
	if s.parts == 1 {
		y := YMM()
		VEXTRACTI64X4(U8(1), lo64, y)
		VPADDQ(y, lo64.AsY(), y)
		xr := XMM()
		VEXTRACTI128(U8(1), y, xr)
		VPADDQ(xr, y.AsX(), xr)
		hsumStore(xr, tp)
	} else {
		xr := XMM()
		VEXTRACTI128(U8(1), lo64, xr)
		VPADDQ(xr, lo64.AsX(), xr)
		hsumStore(xr, tp)
	}
	ADDQ(U8(8), tp)
	ADDQ(U32(144), w)
	ADDQ(U32(4*256), x)
	ADDQ(U8(32), scp)
	DECQ(n)
	JMP(LabelRef("block"))
	Label("done")
	VZEROUPPER()
	RET()
}

// widenAdd sign-extends the dwords of a to qwords and adds them into sum.
func widenAdd(s isa, a, sum reg.VecVirtual) {
	if s.parts == 1 {
		y := YMM()
		VEXTRACTI64X4(U8(1), a, y)
		w := ZMM()
		VPMOVSXDQ(y, w)
		VPADDQ(w, sum, sum)
		VPMOVSXDQ(a.AsY(), w)
		VPADDQ(w, sum, sum)
		return
	}
	xr := XMM()
	VEXTRACTI128(U8(1), a, xr)
	w := YMM()
	VPMOVSXDQ(xr, w)
	VPADDQ(w, sum, sum)
	VPMOVSXDQ(a.AsX(), w)
	VPADDQ(w, sum, sum)
}

// hsumStore adds the two qwords of x and stores the sum at p.
func hsumStore(x reg.VecVirtual, p reg.Register) {
	h := XMM()
	VPUNPCKHQDQ(x, x, h)
	VPADDQ(h, x, x)
	VMOVQ(x, Mem{Base: p})
}
