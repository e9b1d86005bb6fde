package gpu

import (
	"fmt"
	"strings"
)

// ptxHeader targets compute capability 8.0 and later (the driver compiles it for the device it
// loads on); PTX ISA 7.0 is understood by every driver since CUDA 11.0.
const ptxHeader = ".version 7.0\n.target sm_80\n.address_size 64\n"

// ptx writes PTX text a line at a time.
type ptx struct{ b strings.Builder }

func (p *ptx) f(format string, args ...any) { fmt.Fprintf(&p.b, "\t"+format+"\n", args...) }

func (p *ptx) label(name string) { fmt.Fprintf(&p.b, "%s:\n", name) }

// lanedReduction emits the body shared by both attention kernels: sixteen float lanes
// %l0..%l15 that receive, for k = 0 .. n−1, the product of the floats at %rdA (stepping
// strideA bytes) and %rdB (stepping by the byte count in %rdS), element k into lane k mod 16,
// in increasing k, each product rounded (mul.rn) and added (add.rn): the contract's
// lanes.AddProducts. n is in %rN. Then the contract's tree (lanes.Sum) leaves the sum in %fs.
func (p *ptx) lanedReduction(prefix string, strideA int) {
	for j := range 16 {
		p.f("mov.f32 %%l%d, 0f00000000;", j)
	}
	p.f("and.b32 %%rW, %%rN, 0xFFFFFFF0;") // the elements of whole groups of sixteen
	p.f("mov.u32 %%rK, 0;")
	p.label(prefix + "_groups")
	p.f("setp.ge.u32 %%pG, %%rK, %%rW;")
	p.f("@%%pG bra %s_tail;", prefix)
	for j := range 16 {
		p.element(j, strideA)
	}
	p.f("add.u32 %%rK, %%rK, 16;")
	p.f("bra %s_groups;", prefix)
	p.label(prefix + "_tail")
	// The ragged end goes into the lanes its indices name, after the whole groups.
	p.f("sub.u32 %%rR, %%rN, %%rW;")
	for j := range 15 {
		p.f("setp.le.u32 %%pG, %%rR, %d;", j)
		p.f("@%%pG bra %s_sum;", prefix)
		p.element(j, strideA)
	}
	p.label(prefix + "_sum")
	// ((l0+l1)+(l2+l3))+((l4+l5)+(l6+l7)), the same for l8..l15, then lo+hi.
	for h := range 2 {
		o := 8 * h
		p.f("add.rn.f32 %%t0, %%l%d, %%l%d;", o, o+1)
		p.f("add.rn.f32 %%t1, %%l%d, %%l%d;", o+2, o+3)
		p.f("add.rn.f32 %%t0, %%t0, %%t1;")
		p.f("add.rn.f32 %%t2, %%l%d, %%l%d;", o+4, o+5)
		p.f("add.rn.f32 %%t3, %%l%d, %%l%d;", o+6, o+7)
		p.f("add.rn.f32 %%t2, %%t2, %%t3;")
		p.f("add.rn.f32 %%h%d, %%t0, %%t2;", h)
	}
	p.f("add.rn.f32 %%fs, %%h0, %%h1;")
}

// element adds one product into lane j and steps both pointers.
func (p *ptx) element(j, strideA int) {
	p.f("ld.global.f32 %%fa, [%%rdA];")
	p.f("ld.global.f32 %%fb, [%%rdB];")
	p.f("add.s64 %%rdA, %%rdA, %d;", strideA)
	p.f("add.s64 %%rdB, %%rdB, %%rdS;")
	p.f("mul.rn.f32 %%fa, %%fa, %%fb;")
	p.f("add.rn.f32 %%l%d, %%l%d, %%fa;", j, j)
}

// registers declares what lanedReduction and the kernels use.
func (p *ptx) registers() {
	p.f(".reg .pred %%pG;")
	p.f(".reg .b32 %%rN, %%rW, %%rK, %%rR, %%rI, %%rM, %%rP, %%rD, %%rX, %%rY, %%rZ;")
	p.f(".reg .b64 %%rdA, %%rdB, %%rdS, %%rdO, %%rdT;")
	p.f(".reg .f32 %%l<16>;")
	p.f(".reg .f32 %%t0, %%t1, %%t2, %%t3, %%h0, %%h1, %%fs, %%fa, %%fb, %%fc;")
}

// threadIndex leaves blockIdx.x·blockDim.x + threadIdx.x in %rI.
func (p *ptx) threadIndex() {
	p.f("mov.u32 %%rX, %%ctaid.x;")
	p.f("mov.u32 %%rY, %%ntid.x;")
	p.f("mov.u32 %%rZ, %%tid.x;")
	p.f("mad.lo.u32 %%rI, %%rX, %%rY, %%rZ;")
}

// beginEntry opens the kernel declared by signature, its thread index in %rI; threads at or
// past the count in parameter count branch to done.
func (p *ptx) beginEntry(signature, count string) {
	p.b.WriteString(signature)
	p.registers()
	p.threadIndex()
	p.f("ld.param.u32 %%rM, [%s];", count)
	p.f("setp.ge.u32 %%pG, %%rI, %%rM;")
	p.f("@%%pG bra done;")
}

// loadLengthAndStrides loads the length of the sum from parameter length into %rN and the
// position and dimension strides (pPos, pD) into %rP and %rD.
func (p *ptx) loadLengthAndStrides(length string) {
	p.f("ld.param.u32 %%rN, [%s];", length)
	p.f("ld.param.u32 %%rP, [pPos];")
	p.f("ld.param.u32 %%rD, [pD];")
}

// globalPointer loads the pointer parameter param into %reg as a global address.
func (p *ptx) globalPointer(reg, param string) {
	p.f("ld.param.u64 %%%s, [%s];", reg, param)
	p.f("cvta.to.global.u64 %%%s, %%%s;", reg, reg)
}

// advanceByThread moves the float pointer %rdB on by %rI times the count in %stride.
func (p *ptx) advanceByThread(stride string) {
	p.f("mul.wide.u32 %%rdT, %%rI, %%%s;", stride)
	p.f("shl.b64 %%rdT, %%rdT, 2;")
	p.f("add.s64 %%rdB, %%rdB, %%rdT;")
}

// storeSumAndReturn stores %fs at pOut[%rI] and ends the kernel, label done included.
func (p *ptx) storeSumAndReturn() {
	p.globalPointer("rdO", "pOut")
	p.f("mul.wide.u32 %%rdT, %%rI, 4;")
	p.f("add.s64 %%rdO, %%rdO, %%rdT;")
	p.f("st.global.f32 [%%rdO], %%fs;")
	p.label("done")
	p.f("ret;")
	p.b.WriteString("}\n")
}

// attentionPTX returns the module of the attention kernels.
//
// scores(out, q, keys, npos, dim, posStride, dimStride, scale): thread t < npos writes
// out[t] = float32(DotF32(q[:dim], key_t) · scale), key_t's element k at
// keys[t·posStride + k·dimStride] — kernels.Attend's scores.
//
// values(out, values, a, npos, nout, posStride, dimStride): thread i < nout writes out[i] =
// the contract's sum over t < npos of float32(a[t] · values[t·posStride + i·dimStride]) —
// kernels.Attend's weighted sum.
func attentionPTX() string {
	var p ptx
	p.b.WriteString(ptxHeader)

	p.beginEntry("\n.visible .entry scores(.param .u64 pOut, .param .u64 pQ, .param .u64 pKeys, "+
		".param .u32 pN, .param .u32 pDim, .param .u32 pPos, .param .u32 pD, .param .f32 pScale)\n{\n", "pN")
	p.loadLengthAndStrides("pDim")
	p.globalPointer("rdA", "pQ")
	p.globalPointer("rdB", "pKeys")
	p.advanceByThread("rP") // key t starts t·posStride floats in
	p.f("mul.wide.u32 %%rdS, %%rD, 4;")
	p.lanedReduction("s", 4)
	p.f("ld.param.f32 %%fc, [pScale];")
	p.f("mul.rn.f32 %%fs, %%fs, %%fc;")
	p.storeSumAndReturn()

	p.beginEntry("\n.visible .entry values(.param .u64 pOut, .param .u64 pValues, .param .u64 pA, "+
		".param .u32 pN, .param .u32 pOutN, .param .u32 pPos, .param .u32 pD)\n{\n", "pOutN")
	p.loadLengthAndStrides("pN")
	p.globalPointer("rdA", "pA")
	p.globalPointer("rdB", "pValues")
	p.advanceByThread("rD") // output i's column starts i·dimStride floats in
	p.f("mul.wide.u32 %%rdS, %%rP, 4;")
	p.lanedReduction("v", 4)
	p.storeSumAndReturn()
	return p.b.String()
}
