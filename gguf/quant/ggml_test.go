package quant

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/trochilus-llm/trochilus/gguf"
	"github.com/trochilus-llm/trochilus/gguf/internal/geniq"
	"github.com/trochilus-llm/trochilus/internal/oracle"
)

// ggml is the real ggml library (libggml-base.so), loaded by loadGGML for the platform.
type ggml struct {
	typeCount    int
	typeInfo     func(id uint32) (name string, blck, size int64, quantized bool)
	hasToFloat   func(t gguf.Type) bool
	toFloat      func(t gguf.Type, src []byte, dst []float32)
	fromFloatRef func(t gguf.Type, src []float32, dst []byte)
	f16ToF32     func(src []uint16, dst []float32)
	bf16ToF32    func(src []uint16, dst []float32)
	f32ToF16     func(src []float32, dst []uint16)
	f32ToBF16    func(src []float32, dst []uint16)
}

// TestTypeTableMatchesGGML compares gguf/types.go's block sizes with ggml's type traits for
// every id the library knows.
func TestTypeTableMatchesGGML(t *testing.T) {
	g := loadGGML(t)
	var checked int
	var onlyGGML []string
	for id := 0; id < g.typeCount; id++ {
		name, blck, size, _ := g.typeInfo(uint32(id))
		typ := gguf.Type(id)
		if blck == 0 || size == 0 { // an id ggml has removed
			if typ.Known() {
				t.Errorf("id %d: types.go has %v, ggml has removed it (%q)", id, typ, name)
			}
			continue
		}
		if !typ.Known() {
			onlyGGML = append(onlyGGML, fmt.Sprintf("%d %s (%d elems, %d bytes)", id, name, blck, size))
			continue
		}
		checked++
		if !strings.EqualFold(name, typ.String()) || int64(typ.BlockElems()) != blck || int64(typ.BlockBytes()) != size {
			t.Errorf("id %d: types.go says %v %d elems %d bytes; ggml says %s %d elems %d bytes",
				id, typ, typ.BlockElems(), typ.BlockBytes(), name, blck, size)
		}
	}
	for id := g.typeCount; id < 64; id++ {
		if gguf.Type(id).Known() {
			t.Errorf("id %d: types.go has %v, past ggml's %d types", id, gguf.Type(id), g.typeCount)
		}
	}
	t.Logf("%d ids checked against ggml (names, block elements, block bytes); ggml types absent from types.go: %v",
		checked, onlyGGML)
}

// compareBits counts the elements whose bits differ and describes the first few.
func compareBits(got, want []float32, where func(i int) string) (mismatches int, first []string) {
	for i := range got {
		if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
			mismatches++
			if len(first) < 5 {
				first = append(first, fmt.Sprintf("%s: got %#08x (%g), ggml %#08x (%g)", where(i),
					math.Float32bits(got[i]), got[i], math.Float32bits(want[i]), want[i]))
			}
		}
	}
	return mismatches, first
}

// checkDequantizeAgainstGGML decodes nRandom random blocks and all structured blocks of each
// block type with Dequantize and with ggml's to_float, and requires identical bits.
func checkDequantizeAgainstGGML(t *testing.T, g *ggml, nRandom int) {
	const chunk = 4096 // blocks per call, to bound memory
	for _, l := range blockLayouts() {
		typ, bb, be := l.typ, l.typ.BlockBytes(), l.typ.BlockElems()
		r := rand.NewChaCha8([32]byte{byte(typ), 1})
		structured := structuredBlocks(l, r)
		nStruct := len(structured) / bb
		got := make([]float32, chunk*be)
		want := make([]float32, chunk*be)
		src := make([]byte, chunk*bb)
		var blocks, nans, mismatches int
		for done := 0; done < nRandom+nStruct; {
			n := min(chunk, nRandom+nStruct-done)
			if done < nStruct { // the structured blocks come first
				n = min(n, nStruct-done)
				copy(src, structured[done*bb:(done+n)*bb])
			} else {
				_, _ = r.Read(src[:n*bb])
			}
			s, gt, wt := src[:n*bb], got[:n*be], want[:n*be]
			if err := Dequantize(typ, s, gt); err != nil {
				t.Fatalf("%v: %v", typ, err)
			}
			g.toFloat(typ, s, wt)
			base := done
			m, first := compareBits(gt, wt, func(i int) string {
				blk := s[i/be*bb : (i/be+1)*bb]
				return fmt.Sprintf("%v block %d element %d (block % x)", typ, base+i/be, i%be, blk)
			})
			if mismatches == 0 {
				for _, msg := range first {
					t.Error(msg)
				}
			}
			mismatches += m
			for _, v := range wt {
				if v != v {
					nans++
				}
			}
			blocks += n
			done += n
		}
		t.Logf("%-7v %7d blocks (%d random, %d structured), %9d elements (%d NaN), %d mismatches",
			typ, blocks, nRandom, nStruct, blocks*be, nans, mismatches)
		if mismatches != 0 {
			t.Errorf("%v: %d elements differ from ggml", typ, mismatches)
		}
	}
}

// checkFloatTypesAgainstGGML decodes every F16 and BF16 bit pattern with Dequantize and with
// ggml's to_float; F32 has no to_float in ggml and is checked against its input bits.
func checkFloatTypesAgainstGGML(t *testing.T, g *ggml) {
	src := make([]byte, 1<<17)
	for i := 0; i < 1<<16; i++ {
		src[2*i], src[2*i+1] = byte(i), byte(i>>8)
	}
	for _, typ := range []gguf.Type{gguf.TypeF16, gguf.TypeBF16} {
		got, want := make([]float32, 1<<16), make([]float32, 1<<16)
		if err := Dequantize(typ, src, got); err != nil {
			t.Fatal(err)
		}
		g.toFloat(typ, src, want)
		m, first := compareBits(got, want, func(i int) string { return fmt.Sprintf("%v %#04x", typ, i) })
		for _, msg := range first {
			t.Error(msg)
		}
		t.Logf("%-5v all 65536 bit patterns against ggml to_float, %d mismatches", typ, m)
	}
	if g.hasToFloat(gguf.TypeF32) {
		t.Errorf("ggml now has an F32 to_float; compare it")
	}
	f32 := make([]float32, 1<<15)
	if err := Dequantize(gguf.TypeF32, src, f32); err != nil {
		t.Fatal(err)
	}
	for i, v := range f32 {
		if w := uint32(src[4*i]) | uint32(src[4*i+1])<<8 | uint32(src[4*i+2])<<16 | uint32(src[4*i+3])<<24; math.Float32bits(v) != w {
			t.Fatalf("F32 element %d: got %#08x, want the input bits %#08x", i, math.Float32bits(v), w)
		}
	}
}

// TestIQTablesMatchGGML re-derives the IQ types' grids and deltas from libggml's to_float (package
// geniq decodes crafted blocks that read each entry out) and requires gguf/iq_tables.go to be
// exactly the file geniq writes from them: a wrong, stale or hand-edited entry fails here.
func TestIQTablesMatchGGML(t *testing.T) {
	g := loadGGML(t)
	tb, err := geniq.Extract(func(typ geniq.Type, src []byte, dst []float32) {
		if gt := gguf.Type(typ.ID); gt.BlockBytes() != typ.Bytes || gt.BlockElems() != typ.Elems {
			t.Fatalf("geniq's %v is %d bytes for %d elements, types.go's %v %d for %d",
				typ, typ.Bytes, typ.Elems, gt, gt.BlockBytes(), gt.BlockElems())
		}
		g.toFloat(gguf.Type(typ.ID), src, dst)
	})
	if err != nil {
		t.Fatal(err)
	}
	want, err := geniq.Source(tb)
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join("..", "iq_tables.go"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		gl, wl := strings.Split(string(got), "\n"), strings.Split(string(want), "\n")
		for i := 0; i < max(len(gl), len(wl)); i++ {
			if i >= len(gl) || i >= len(wl) || gl[i] != wl[i] {
				t.Fatalf("gguf/iq_tables.go differs from the tables libggml decodes to, first at line %d (run go generate ./gguf)", i+1)
			}
		}
	}
	parsed, err := geniq.Parse(got)
	if err != nil || *parsed != *tb {
		t.Fatalf("geniq.Parse of gguf/iq_tables.go does not give the tables back (%v)", err)
	}
	t.Logf("%d grid entries of 6 grids and 2 deltas re-derived from libggml: gguf/iq_tables.go matches",
		len(tb.IQ2XXS)+len(tb.IQ2XS)+len(tb.IQ2S)+len(tb.IQ3XXS)+len(tb.IQ3S)+len(tb.IQ1S))
}

func TestDequantizeMatchesGGML(t *testing.T) {
	g := loadGGML(t)
	checkFloatTypesAgainstGGML(t, g)
	checkDequantizeAgainstGGML(t, g, 100000)
}

func TestDequantizeMatchesGGMLLong(t *testing.T) {
	oracle.Long(t)
	g := loadGGML(t)
	checkDequantizeAgainstGGML(t, g, 1000000)
}

// TestHalfConversionsMatchGGML compares F16ToF32 on all halves and F32ToF16/F32ToBF16 on a large
// sample with ggml's row converters (GGML_FP16_TO_FP32, GGML_FP32_TO_FP16,
// ggml_compute_fp32_to_bf16).
func TestHalfConversionsMatchGGML(t *testing.T) {
	g := loadGGML(t)
	halves := make([]uint16, 1<<16)
	for i := range halves {
		halves[i] = uint16(i)
	}
	want := make([]float32, 1<<16)
	g.f16ToF32(halves, want)
	for i, h := range halves {
		if got := gguf.F16ToF32(h); math.Float32bits(got) != math.Float32bits(want[i]) {
			t.Fatalf("F16ToF32(%#04x) = %#08x, ggml %#08x", h, math.Float32bits(got), math.Float32bits(want[i]))
		}
	}
	g.bf16ToF32(halves, want)
	for i, h := range halves {
		if got := gguf.BF16ToF32(h); math.Float32bits(got) != math.Float32bits(want[i]) {
			t.Fatalf("BF16ToF32(%#04x) = %#08x, ggml %#08x", h, math.Float32bits(got), math.Float32bits(want[i]))
		}
	}
	samples := f32Samples(4 << 20)
	n16, nb16 := compareNarrowing(g, samples)
	if n16+nb16 != 0 {
		t.Errorf("%d F32ToF16 and %d F32ToBF16 results differ from ggml", n16, nb16)
	}
	t.Logf("all 65536 halves and bfloat16s widened, %d float32s narrowed to each: %d + %d mismatches",
		len(samples), n16, nb16)
}

// compareNarrowing counts the float32s in src whose F32ToF16 and F32ToBF16 differ from ggml's.
func compareNarrowing(g *ggml, src []float32) (f16, bf16 int) {
	out := make([]uint16, len(src))
	g.f32ToF16(src, out)
	for i, f := range src {
		if gguf.F32ToF16(f) != out[i] {
			f16++
		}
	}
	g.f32ToBF16(src, out)
	for i, f := range src {
		if gguf.F32ToBF16(f) != out[i] {
			bf16++
		}
	}
	return f16, bf16
}

// TestHalfConversionsMatchGGMLLong narrows every one of the 2^32 float32 bit patterns.
func TestHalfConversionsMatchGGMLLong(t *testing.T) {
	oracle.Long(t)
	g := loadGGML(t)
	const chunk = 1 << 22
	src := make([]float32, chunk)
	var f16, bf16 int
	for base := uint64(0); base < 1<<32; base += chunk {
		for i := range src {
			src[i] = math.Float32frombits(uint32(base) + uint32(i))
		}
		a, b := compareNarrowing(g, src)
		f16 += a
		bf16 += b
	}
	if f16+bf16 != 0 {
		t.Errorf("%d F32ToF16 and %d F32ToBF16 results differ from ggml", f16, bf16)
	}
	t.Logf("all 2^32 float32 bit patterns: %d F32ToF16 and %d F32ToBF16 mismatches against ggml", f16, bf16)
}
