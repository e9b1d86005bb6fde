package kernels

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/klauspost/cpuid/v2"
	"github.com/trochilus-llm/trochilus/gguf"
)

// usableSIMD returns the SIMD tiers this CPU runs.
func usableSIMD() []*simdTier {
	var s []*simdTier
	for _, st := range simdTiers() {
		if st.usable() {
			s = append(s, st)
		}
	}
	return s
}

// TestTierSelection: Tiers lists exactly the tiers the CPU features allow, in tierNames order;
// Best is the fastest; the cap caps; an unknown cap is an error.
func TestTierSelection(t *testing.T) {
	want := []string{"scalar"}
	if runtime.GOARCH == "amd64" && cpuid.CPU.Supports(cpuid.AVX2, cpuid.F16C) {
		want = append(want, "avx2")
		if cpuid.CPU.Supports(cpuid.AVX512F, cpuid.AVX512BW, cpuid.AVX512VL, cpuid.AVX512DQ) {
			want = append(want, "avx512")
			if cpuid.CPU.Supports(cpuid.AVX512VNNI, cpuid.AVX512VBMI) {
				want = append(want, "avx512vnni")
			}
		}
	}
	var got []string
	for _, tier := range Tiers() {
		got = append(got, tier.Name)
	}
	t.Logf("CPU %q: tiers %v", cpuid.CPU.BrandName, got)
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("Tiers() = %v, want %v from the CPU features", got, want)
	}
	t.Setenv(CPUMaxEnv, "")
	best, err := Best()
	if err != nil || best.Name != want[len(want)-1] {
		t.Errorf("Best() = %v, %v; want %s", best, err, want[len(want)-1])
	}
	for i, name := range tierNames() {
		t.Setenv(CPUMaxEnv, name)
		best, err := Best()
		if err != nil {
			t.Fatalf("%s=%s: %v", CPUMaxEnv, name, err)
		}
		if wantName := want[min(i, len(want)-1)]; best.Name != wantName {
			t.Errorf("%s=%s: Best() = %s, want %s", CPUMaxEnv, name, best.Name, wantName)
		}
	}
	for _, bad := range []string{"avx", "AVX2", "sse", "avx512-novbmi", " scalar"} {
		t.Setenv(CPUMaxEnv, bad)
		if tier, err := Best(); err == nil || !strings.Contains(err.Error(), CPUMaxEnv) {
			t.Errorf("%s=%q: Best() = %v, %v; want an error naming the variable", CPUMaxEnv, bad, tier, err)
		}
	}
}

// funcName returns the symbol of a function value's code.
func funcName(f any) string {
	return runtime.FuncForPC(reflect.ValueOf(f).Pointer()).Name()
}

// TestTierTableNotScalar: every vector kernel of every usable SIMD tier is that tier's own
// assembly (its symbol ends in the tier's suffix), and every hot entry of the built table is a
// different function from the scalar one. The Exp kernels (expShift, swiGLU) are AVX2 code
// shared by every tier, by design: they are gather-bound, and one body has one proof
// (TestTierExpLong). The rows kernels are closures of one body whatever the tier, so
// pointers cannot tell them apart: TestTierKernelsCount proves they run through the assembly.
func TestTierTableNotScalar(t *testing.T) {
	suffix := map[string]string{"avx2": "AVX2", "avx512": "AVX512", "avx512vnni": "AVX512"}
	scalar := Scalar()
	tiers := usableSIMD()
	if runtime.GOARCH == "amd64" && cpuid.CPU.Supports(cpuid.AVX2, cpuid.F16C) && len(tiers) == 0 {
		t.Fatal("no SIMD tier usable on an AVX2 CPU")
	}
	for _, st := range tiers {
		a := st.asm
		kernels := map[string]any{"attendV": a.attendV, "expShift": a.expShift, "swiGLU": a.swiGLU, "f32": a.f32, "f16": a.f16, "bf16": a.bf16, "q8_0": a.q8_0, "sum": a.sum, "q4K": a.q4K,
			"f32x2": a.f32x2, "f16x2": a.f16x2, "bf16x2": a.bf16x2, "q8_0x2": a.q8_0x2, "q6KPair": a.q6KPair, "q6KTile4": a.q6KTile4,
			"q4K4": a.q4K4, "f32x4": a.f32x4, "f16x4": a.f16x4, "bf16x4": a.bf16x4, "q8_0x4": a.q8_0x4}
		if st.name != "avx2" { // four rows and panels: AVX-512 only
			for name, f := range map[string]any{"f32r4": a.f32r4, "f16r4": a.f16r4, "bf16r4": a.bf16r4, "q8_0r4": a.q8_0r4, "q6KQuad": a.q6KQuad,
				"panelF32": a.panelF32, "panelF16": a.panelF16, "panelBF16": a.panelBF16, "panelQ8_0": a.panelQ8_0,
				"q6KTile8": a.q6KTile8, "panelPack": a.panelPack, "q4Kr4": a.q4Kr4} {
				kernels[name] = f
			}
			if a.panel == nil {
				t.Errorf("%s: no panel tiles", st.name)
			} else {
				for i, tile := range a.panel {
					kernels[fmt.Sprintf("panelTile%d", i+1)] = tile
				}
			}
		}
		for entry, f := range kernels {
			if reflect.ValueOf(f).IsNil() {
				t.Errorf("%s: kernel %s is nil", st.name, entry)
				continue
			}
			name := funcName(f)
			want := suffix[st.name]
			if entry == "expShift" || entry == "swiGLU" {
				want = "AVX2"
			}
			if (entry == "q4K" || entry == "q4K4" || entry == "q4Kr4" || strings.HasPrefix(entry, "q6K")) && st.name == "avx512vnni" {
				want = "AVX512VNNI"
			}
			if !strings.HasSuffix(name, want) {
				t.Errorf("%s: kernel %s is %s, not the tier's own (%s)", st.name, entry, name, want)
			}
		}
		tier := st.tier()
		entries := []struct {
			name      string
			got, want any
		}{
			{"DotF32", tier.dotF32, scalar.dotF32},
			{"RMSNorm", tier.rmsNorm, scalar.rmsNorm},
			{"Softmax", tier.softmax, scalar.softmax},
			{"Attend", tier.attend, scalar.attend},
			{"SwiGLU", tier.swiGLU, scalar.swiGLU},
		}
		for _, e := range entries {
			if reflect.ValueOf(e.got).Pointer() == reflect.ValueOf(e.want).Pointer() {
				t.Errorf("%s: %s is the scalar %s", st.name, e.name, funcName(e.want))
			}
		}
		t.Logf("%s: %d vector kernels are the tier's own, %d table entries differ from scalar", st.name, len(kernels), len(entries))
	}
}

// countPanelTiles wraps every panel tile of a (where it has them) so that n counts their calls.
func countPanelTiles(a *asmKernels, n *atomic.Int64) {
	if a.panel == nil {
		return
	}
	counted := *a.panel
	a.panel = new(panelTiles)
	for i, tile := range counted {
		a.panel[i] = func(panel, xil, ph []float32) {
			n.Add(1)
			tile(panel, xil, ph)
		}
	}
}

// perUnit returns wrap of the F32, F16, BF16 and Q8_0 kernels given, each with its type's
// block: bytes and elements.
func perUnit[K any](wrap func(k K, unitBytes, unitElems int) K, f32, f16, bf16, q8_0 K) (K, K, K, K) {
	return wrap(f32, 64, 16), wrap(f16, 32, 16), wrap(bf16, 32, 16), wrap(q8_0, q8_0Bytes, q8_0Elems)
}

// countingKernels wraps every vector kernel of a so that n counts the products (or added
// values) the assembly computed.
func countingKernels(a asmKernels, n *atomic.Int64) asmKernels {
	lanes := func(k func([16]float32, []byte, []float32) [16]float32, unitBytes, unitElems int) func([16]float32, []byte, []float32) [16]float32 {
		return func(l [16]float32, w []byte, x []float32) [16]float32 {
			n.Add(int64(len(w) / unitBytes * unitElems))
			return k(l, w, x)
		}
	}
	var c asmKernels
	c.f32, c.f16, c.bf16, c.q8_0 = perUnit(lanes, a.f32, a.f16, a.bf16, a.q8_0)
	lanes2 := func(k func([]byte, []byte, []float32) [2][16]float32, unitBytes, unitElems int) func([]byte, []byte, []float32) [2][16]float32 {
		return func(w0, w1 []byte, x []float32) [2][16]float32 {
			n.Add(2 * int64(len(w0)/unitBytes*unitElems))
			return k(w0, w1, x)
		}
	}
	c.f32x2, c.f16x2, c.bf16x2, c.q8_0x2 = perUnit(lanes2, a.f32x2, a.f16x2, a.bf16x2, a.q8_0x2)
	lanes4 := func(k func([]byte, []float32, int) [4][16]float32, unitBytes, unitElems int) func([]byte, []float32, int) [4][16]float32 {
		return func(w []byte, x []float32, stride int) [4][16]float32 {
			n.Add(4 * int64(len(w)/unitBytes*unitElems))
			return k(w, x, stride)
		}
	}
	c.f32x4, c.f16x4, c.bf16x4, c.q8_0x4 = perUnit(lanes4, a.f32x4, a.f16x4, a.bf16x4, a.q8_0x4)
	if a.scores != nil {
		c.scores = func(out, q, keys []float32, stride int, scale float32) {
			n.Add(int64(len(out) * len(q)))
			a.scores(out, q, keys, stride, scale)
		}
	}
	rows4 := func(k func([]byte, []float32) [4][16]float32, unitBytes, unitElems int) func([]byte, []float32) [4][16]float32 {
		if k == nil { // a tier without four-row kernels
			return nil
		}
		return func(w []byte, x []float32) [4][16]float32 {
			n.Add(4 * int64(len(w)/4/unitBytes*unitElems))
			return k(w, x)
		}
	}
	c.f32r4 = rows4(a.f32r4, 64, 16)
	c.f16r4 = rows4(a.f16r4, 32, 16)
	c.bf16r4 = rows4(a.bf16r4, 32, 16)
	c.q8_0r4 = rows4(a.q8_0r4, q8_0Bytes, q8_0Elems)
	if a.panel != nil {
		// A tile multiplies the 16 panel rows by T tokens over the panel's len/16 − 16
		// elements (a vector of padding follows each phase).
		// Only the real rows count: the padding rows of a partial panel are all zero (the
		// test's random rows never are). The writers and the packer compute no product.
		tiles := new(panelTiles)
		for i, tile := range a.panel {
			tiles[i] = func(panel, xil, ph []float32) {
				n.Add(int64(panelRealRows(panel) * (len(panel)/16 - 16) * (i + 1)))
				tile(panel, xil, ph)
			}
		}
		c.panel = tiles
		c.panelF32, c.panelF16, c.panelBF16, c.panelQ8_0 = a.panelF32, a.panelF16, a.panelBF16, a.panelQ8_0
		c.panelPack = a.panelPack
	}
	c.q4K4 = func(w []byte, in [12]*byte, nb int) [4]float32 {
		n.Add(4 * int64(nb*kElems))
		return a.q4K4(w, in, nb)
	}
	if a.q4KPanel4 != nil {
		c.q4KPanelBuild, c.q4KPanels = a.q4KPanelBuild, a.q4KPanels
		c.q4KPanel4 = func(panel []byte, in [12]*byte, nb, rows int) [4][16]float32 {
			n.Add(4 * int64(rows*nb*kElems))
			return a.q4KPanel4(panel, in, nb, rows)
		}
	}
	if a.q4Kr4 != nil {
		c.q4Kr4 = func(w []byte, rb int, digits []int16, sums, scale []float64, dst []float32) {
			n.Add(int64(len(dst) / 4 * 4 * len(scale) * kElems))
			a.q4Kr4(w, rb, digits, sums, scale, dst)
		}
	}
	if a.q4K8 != nil {
		c.q4K8 = func(w []byte, in [24]*byte, nb int, y [8]float64) [8]float64 {
			n.Add(8 * int64(nb*kElems))
			return a.q4K8(w, in, nb, y)
		}
	}
	c.expTab = a.expTab
	c.attendW = a.attendW
	c.attendV = func(out, values, w []float32, stride int) {
		n.Add(int64(len(out) / a.attendW * a.attendW * len(w)))
		a.attendV(out, values, w, stride)
	}
	c.expShift = func(dst, src []float32, shift float32, tab *[80]float64) int {
		k := a.expShift(dst, src, shift, tab)
		n.Add(int64(k))
		return k
	}
	c.swiGLU = func(dst, gate, up []float32, tab *[80]float64) int {
		k := a.swiGLU(dst, gate, up, tab)
		n.Add(int64(k))
		return k
	}
	c.sum = func(l [16]float32, v []float32) [16]float32 {
		n.Add(int64(len(v) &^ 15))
		return a.sum(l, v)
	}
	c.q4K = func(w0, w1 []byte, digits []int16, sums, scale []float64) [2]float32 {
		rows := int64(2)
		if &w0[0] == &w1[0] { // one row, passed twice
			rows = 1
		}
		n.Add(rows * int64(len(scale)*kElems))
		return a.q4K(w0, w1, digits, sums, scale)
	}
	if a.q6KPair != nil {
		c.q6KPair = func(w0, w1 []byte, digits []int16, scale []float64) [2]float32 {
			rows := int64(2)
			if &w0[0] == &w1[0] { // one row, passed twice
				rows = 1
			}
			n.Add(rows * int64(len(scale)*kElems))
			return a.q6KPair(w0, w1, digits, scale)
		}
	}
	if a.q6KQuad != nil {
		c.q6KQuad = func(w []byte, rb int, digits []int16, scale []float64, dst []float32) {
			n.Add(int64(len(dst) / 4 * 4 * len(scale) * kElems))
			a.q6KQuad(w, rb, digits, scale, dst)
		}
	}
	c.q6KMemory = a.q6KMemory
	if a.q6KPanel4 != nil {
		// A panel tile computes all sixteen lanes; only the real rows count. The build sees
		// them (padding lanes repeat the last row's pointer) and records them by panel, as
		// concurrent calls write different panels.
		var mu sync.Mutex
		real := map[*byte]int{}
		c.q6KPanelBuild = func(panel []byte, rows [16]*byte, nb int) {
			k := 1
			for k < 16 && rows[k] != rows[k-1] {
				k++
			}
			mu.Lock()
			real[&panel[0]] = k
			mu.Unlock()
			a.q6KPanelBuild(panel, rows, nb)
		}
		c.q6KPanel4 = func(panel []byte, in [8]*byte, nb int, y []float32) {
			mu.Lock()
			k := real[&panel[0]]
			mu.Unlock()
			n.Add(4 * int64(k*nb*kElems))
			a.q6KPanel4(panel, in, nb, y)
		}
	}
	if a.q6KTile4 != nil {
		c.q6KTile4 = func(w []byte, in [8]*byte, nb int) [4]float32 {
			n.Add(4 * int64(nb*kElems))
			return a.q6KTile4(w, in, nb)
		}
	}
	if a.q6KTile8 != nil {
		c.q6KTile8 = func(w []byte, in [8]*byte, scales []float64, y [8]float64) [8]float64 {
			n.Add(int64(len(scales) * kElems))
			return a.q6KTile8(w, in, scales, y)
		}
	}
	return c
}

// panelRealRows counts the rows of a panel that hold a nonzero weight.
func panelRealRows(panel []float32) int {
	rows := 0
	for r := range 16 {
		for i := r; i < len(panel); i += 16 {
			if panel[i] != 0 {
				rows++
				break
			}
		}
	}
	return rows
}

// TestTierKernelsCount runs a small matrix product of every type, and the vector operations,
// through each SIMD tier with its kernels wrapped in counters: the products the assembly
// computed must equal those the shapes imply (any road around the assembly leaves the count
// short), and every output must equal the scalar tier's.
func TestTierKernelsCount(t *testing.T) {
	const cols = 512
	rng := rand.New(rand.NewPCG(21, 2))
	p := NewPool(2)
	defer p.Close()
	// Two shapes: a decode-sized batch through MatMul (the lanes kernels), and a prompt-sized
	// one through each rows kernel over the whole matrix at once, a row range long enough for
	// the panel tiles where the tier has them (MatMul may cut the rows finer).
	shapes := []struct{ rows, ntok int }{{7, 6}, {2 * panelMinRows, panelMinTokens + 4}}
	x := randFloats(rng, shapes[1].ntok*cols, false, false)
	for _, st := range usableSIMD() {
		var n, tileCalls atomic.Int64
		a := countingKernels(st.asm, &n)
		countPanelTiles(&a, &tileCalls)
		tier := (&simdTier{name: st.name, usable: st.usable, asm: a}).tier()
		for si, shape := range shapes {
			rows, ntok := shape.rows, shape.ntok
			for _, typ := range supportedTypes {
				m := randMatrix(rng, typ, rows, cols)
				var b, bs Batch
				if err := b.Set(x, ntok, cols); err != nil {
					t.Fatal(err)
				}
				if err := bs.Set(x, ntok, cols); err != nil {
					t.Fatal(err)
				}
				got, want := make([]float32, rows*ntok), make([]float32, rows*ntok)
				n.Store(0)
				tileCalls.Store(0)
				if si == 0 {
					if err := tier.MatMul(p, got, m, &b); err != nil {
						t.Fatal(err)
					}
				} else {
					k, err := tier.kernel(typ)
					if err != nil {
						t.Fatal(err)
					}
					if err := b.prepareAll(p); err != nil {
						t.Fatal(err)
					}
					k(got, m, &b, 0, rows)
				}
				if err := Scalar().MatMul(p, want, m, &bs); err != nil {
					t.Fatal(err)
				}
				if n.Load() != int64(rows*cols*ntok) {
					t.Errorf("%s %v: the assembly computed %d products, the shapes imply %d", st.name, typ, n.Load(), rows*cols*ntok)
				}
				panelType := typ != gguf.TypeQ4_K && typ != gguf.TypeQ5_K && typ != gguf.TypeQ6_K
				if si == 1 && a.panel != nil && panelType && tileCalls.Load() == 0 {
					t.Errorf("%s %v: %d rows × %d tokens did not reach the panel tiles", st.name, typ, rows, ntok)
				}
				for i := range got {
					if !sameBits(got[i], want[i]) {
						t.Errorf("%s %v: output %d = %g, scalar %g", st.name, typ, i, got[i], want[i])
						break
					}
				}
			}
		}
		v := x[:cols]
		ops := []struct {
			name string
			run  func()
			want int64
		}{
			{"DotF32", func() { tier.DotF32(v, v) }, cols},
			{"RMSNorm", func() { tier.RMSNorm(make([]float32, cols), v, v, 1e-6) }, cols},
			{"Softmax", func() { tier.Softmax(append([]float32(nil), v...)) }, 2 * cols}, // exp and sum
			{"SwiGLU", func() { tier.SwiGLU(make([]float32, cols), v, x[cols:2*cols]) }, cols},
			{"Attend", func() {
				const npos, dim = 16, 64
				tier.Attend(make([]float32, dim), v[:dim], x, x, npos, dim, 0.125, make([]float32, npos))
			}, 16*64 + 2*16 + 16*64},
		}
		for _, op := range ops {
			n.Store(0)
			op.run()
			if n.Load() != op.want {
				t.Errorf("%s %s: the assembly computed %d terms, want %d", st.name, op.name, n.Load(), op.want)
			}
		}
		t.Logf("%s: 7 types × %d×%d × %d tokens and × %d×%d × %d tokens, and 5 vector ops: every product counted in the assembly", st.name, shapes[0].rows, cols, shapes[0].ntok, shapes[1].rows, cols, shapes[1].ntok)
	}
}
