// Package geniq derives the lattice grids of ggml's IQ weight types (IQ2_XXS, IQ2_XS, IQ2_S,
// IQ3_XXS, IQ3_S, IQ1_S, IQ1_M) and the IQ1 types' delta from libggml itself, and writes them as
// the Go source of gguf/iq_tables.go.
//
// The grids have no closed form (they are lattice points chosen when the formats were
// designed), so they are read out of libggml's to_float: each is decoded from crafted blocks
// whose scale makes the sub-block factor exactly 1 and whose codes select entry after entry, so
// that the floats written are the grid's bytes. Extract also checks libggml's sign patterns
// against their definition (seven sign bits and an eighth that makes the count of minus signs
// even), which gguf computes instead of tabulating.
//
// Command geniq/cmd runs Extract on the pinned libggml and writes the file (go generate in
// gguf); gguf/quant's TestIQTablesMatchGGML runs it at test time and requires the committed
// file to be what Source writes, so a wrong or stale table fails the gate.
package geniq

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"go/ast"
	"go/format"
	"go/parser"
	"go/token"
	"math"
	"math/bits"
	"strconv"
)

// Tables are the IQ types' constants, as the decoders use them: entry i of a grid packs its
// elements' values into bytes, element j in byte j (bits 8j to 8j+7).
type Tables struct {
	IQ2XXS [256]uint64  // IQ2_XXS's magnitudes
	IQ2XS  [512]uint64  // IQ2_XS's magnitudes
	IQ2S   [1024]uint64 // IQ2_S's magnitudes
	IQ3XXS [256]uint32  // IQ3_XXS's magnitudes
	IQ3S   [512]uint32  // IQ3_S's magnitudes
	IQ1S   [2048]uint64 // IQ1_S's and IQ1_M's values, int8s of −1, 0 or 1
	// The offsets IQ1_S and IQ1_M add to every grid value, with the sign each sub-block picks.
	IQ1SDelta, IQ1MDelta float32
}

// Type is a ggml type geniq decodes: ggml's id, name and block sizes. geniq does not import
// gguf, whose decoders need the file it writes, so that a broken table can be regenerated.
type Type struct {
	ID           uint32
	Name         string
	Elems, Bytes int
}

func (t Type) String() string { return t.Name }

// The IQ types, as ggml.h numbers them and ggml-common.h sizes them.
var (
	IQ2_XXS = Type{16, "IQ2_XXS", 256, 66}
	IQ2_XS  = Type{17, "IQ2_XS", 256, 74}
	IQ3_XXS = Type{18, "IQ3_XXS", 256, 98}
	IQ1_S   = Type{19, "IQ1_S", 256, 50}
	IQ3_S   = Type{21, "IQ3_S", 256, 110}
	IQ2_S   = Type{22, "IQ2_S", 256, 82}
	IQ1_M   = Type{29, "IQ1_M", 256, 56}
)

// Types are the types Extract decodes.
var Types = []Type{IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS, IQ3_S, IQ1_S, IQ1_M}

// ToFloat decodes the blocks of type t in src into dst (len(dst) elements), as libggml's
// to_float does.
type ToFloat func(t Type, src []byte, dst []float32)

// LibggmlPackage names the npm package whose libggml-base.so the tables are taken from.
const LibggmlPackage = "@node-llama-cpp/linux-x64@3.22.1"

// signs returns sign pattern s7 of the IQ2 and IQ3 types: its seven bits, and an eighth that
// makes the number of set bits even (ggml's ksigns_iq2xs).
func signs(s7 uint8) uint8 { return s7 | uint8(bits.OnesCount8(s7)&1)<<7 }

// decoder runs one type's blocks through to_float.
type decoder struct {
	toFloat ToFloat
	err     error
}

func (d *decoder) decode(t Type, blocks []byte) []float32 {
	out := make([]float32, len(blocks)/t.Bytes*t.Elems)
	d.toFloat(t, blocks, out)
	return out
}

func (d *decoder) fail(format string, args ...any) {
	if d.err == nil {
		d.err = fmt.Errorf("geniq: "+format, args...)
	}
}

// magnitude returns v as a byte, failing when v is not an integer from 0 to 255.
func (d *decoder) magnitude(t Type, entry int, v float32) uint64 {
	if v < 0 || v > 255 || v != float32(math.Trunc(float64(v))) {
		d.fail("%v grid entry %d: decoded %v, not a byte", t, entry, v)
		return 0
	}
	return uint64(v)
}

// pack packs n byte-valued elements into one word, element j in byte j.
func (d *decoder) pack(t Type, entry int, y []float32) uint64 {
	var w uint64
	for j, v := range y {
		w |= d.magnitude(t, entry, v) << (8 * j)
	}
	return w
}

const (
	half1 = 0x3c00 // 1.0
	half4 = 0x4400 // 4.0
	half8 = 0x4800 // 8.0
)

// Extract reads every table out of libggml's to_float, and checks the sign patterns.
func Extract(toFloat ToFloat) (*Tables, error) {
	d := &decoder{toFloat: toFloat}
	tb := &Tables{}
	d.iq2xxs(tb)
	d.iq2xs(tb)
	d.iq2s(tb)
	d.iq3xxs(tb)
	d.iq3s(tb)
	tb.IQ1SDelta = d.iq1(IQ1_S, tb)
	tb.IQ1MDelta = d.iq1(IQ1_M, tb)
	d.checkSigns()
	if d.err != nil {
		return nil, d.err
	}
	return tb, nil
}

// iq2xxs: block = f16 d, then per 32 elements a word of four grid indices and a word of four
// 7-bit sign patterns under a 4-bit scale s, the factor d·(0.5+s)·0.25: d = 8, s = 0 gives 1.
func (d *decoder) iq2xxs(tb *Tables) {
	t, n := IQ2_XXS, len(tb.IQ2XXS)
	blocks := make([]byte, n/32*t.Bytes)
	for e := 0; e < n; e++ {
		b := blocks[e/32*t.Bytes:]
		binary.LittleEndian.PutUint16(b, half8)
		b[2+8*(e%32/4)+e%4] = byte(e)
	}
	y := d.decode(t, blocks)
	for e := range n {
		tb.IQ2XXS[e] = d.pack(t, e, y[8*e:8*e+8])
	}
}

// iq2xs: block = f16 d, 32 words of a 9-bit grid index under a 7-bit sign pattern, 8 bytes of
// two 4-bit scales (factor d·(0.5+s)·0.25).
func (d *decoder) iq2xs(tb *Tables) {
	t, n := IQ2_XS, len(tb.IQ2XS)
	blocks := make([]byte, n/32*t.Bytes)
	for e := 0; e < n; e++ {
		b := blocks[e/32*t.Bytes:]
		binary.LittleEndian.PutUint16(b, half8)
		binary.LittleEndian.PutUint16(b[2+2*(e%32):], uint16(e))
	}
	y := d.decode(t, blocks)
	for e := range n {
		tb.IQ2XS[e] = d.pack(t, e, y[8*e:8*e+8])
	}
}

// iq2s: block = f16 d, 32 bytes of the grid indices' low 8 bits, 32 sign bytes, 8 bytes of their
// high 2 bits (four pairs each), 8 scale bytes as IQ2_XS's.
func (d *decoder) iq2s(tb *Tables) {
	t, n := IQ2_S, len(tb.IQ2S)
	blocks := make([]byte, n/32*t.Bytes)
	for e := 0; e < n; e++ {
		b, g := blocks[e/32*t.Bytes:], e%32
		binary.LittleEndian.PutUint16(b, half8)
		b[2+g] = byte(e)
		b[66+g/4] |= byte(e>>8) << (2 * (g % 4))
	}
	y := d.decode(t, blocks)
	for e := range n {
		tb.IQ2S[e] = d.pack(t, e, y[8*e:8*e+8])
	}
}

// iq3xxs: block = f16 d, 64 bytes of grid indices (four elements each), then per 32 elements a
// word of four sign patterns under a 4-bit scale, the factor d·(0.5+s)·0.5: d = 4 gives 1.
func (d *decoder) iq3xxs(tb *Tables) {
	t, n := IQ3_XXS, len(tb.IQ3XXS)
	blocks := make([]byte, n/64*t.Bytes)
	for e := 0; e < n; e++ {
		b := blocks[e/64*t.Bytes:]
		binary.LittleEndian.PutUint16(b, half4)
		b[2+e%64] = byte(e)
	}
	y := d.decode(t, blocks)
	for e := range n {
		tb.IQ3XXS[e] = uint32(d.pack(t, e, y[4*e:4*e+4]))
	}
}

// iq3s: block = f16 d, 64 bytes of the grid indices' low 8 bits, 8 bytes of their ninth bits
// (byte s for sub-block s), 32 sign bytes, 4 bytes of two 4-bit scales (factor d·(1+2s)).
func (d *decoder) iq3s(tb *Tables) {
	t, n := IQ3_S, len(tb.IQ3S)
	blocks := make([]byte, n/64*t.Bytes)
	for e := 0; e < n; e++ {
		b, g := blocks[e/64*t.Bytes:], e%64
		binary.LittleEndian.PutUint16(b, half1)
		b[2+g] = byte(e)
		b[66+g/8] |= byte(e>>8) << (g % 8)
	}
	y := d.decode(t, blocks)
	for e := range n {
		tb.IQ3S[e] = uint32(d.pack(t, e, y[4*e:4*e+4]))
	}
}

// iq1 reads IQ1_S's or IQ1_M's grid (both index iq1s_grid) and delta, from two decodings of every
// entry: once with the delta's sign bit clear (y = g + δ) and once set (y = g − δ), at factor 1.
// IQ1_S: f16 d, 32 bytes of the indices' low 8 bits, 8 words of their high 3 bits (four triples
// each), a 3-bit scale (factor d·(2s+1)) and the delta's sign. IQ1_M: 32 index bytes, 16 bytes
// of the high 3 bits and the delta's sign (a nibble per index), 8 bytes of 3-bit scales whose
// four top nibbles are the f16 d.
func (d *decoder) iq1(t Type, tb *Tables) float32 {
	const n = len(tb.IQ1S)
	bb := t.Bytes
	blocks := make([]byte, 2*n/32*bb)
	for k := 0; k < 2*n; k++ {
		e, neg := k%n, k/n
		b, g := blocks[k/32*bb:], e%32
		if t == IQ1_S {
			binary.LittleEndian.PutUint16(b, half1)
			b[2+g] = byte(e)
			qh := binary.LittleEndian.Uint16(b[34+2*(g/4):])
			qh |= uint16(e>>8)<<(3*(g%4)) | uint16(neg)<<15
			binary.LittleEndian.PutUint16(b[34+2*(g/4):], qh)
		} else {
			b[g] = byte(e)
			b[32+g/2] |= (byte(e>>8) | byte(neg)<<3) << (4 * (g % 2))
			b[48+5], b[48+7] = 0xc0, 0x30 // the top nibbles of words 2 and 3: d = 0x3c00
		}
	}
	y := d.decode(t, blocks)
	var delta float32
	for e := 0; e < n; e++ {
		var w uint64
		for j := 0; j < 8; j++ {
			plus, minus := y[8*e+j], y[8*(n+e)+j]
			g, dl := (plus+minus)/2, (plus-minus)/2
			if g != -1 && g != 0 && g != 1 || !(dl > 0) || e+j > 0 && dl != delta {
				d.fail("%v grid entry %d element %d: decoded %v and %v, not an int8 grid value ± one delta", t, e, j, plus, minus)
				return 0
			}
			delta = dl
			w |= uint64(uint8(int8(g))) << (8 * j)
		}
		if t == IQ1_S {
			tb.IQ1S[e] = w
		} else if tb.IQ1S[e] != w {
			d.fail("IQ1_M grid entry %d is %#016x, IQ1_S's %#016x", e, w, tb.IQ1S[e])
		}
	}
	return delta
}

// checkSigns decodes IQ2_XXS blocks whose groups all use one grid entry under each of the 128
// sign patterns, and compares the minus signs with signs' definition, element j by bit j.
func (d *decoder) checkSigns() {
	t := IQ2_XXS
	blocks := make([]byte, 4*t.Bytes)
	for s := 0; s < 128; s++ {
		b, g := blocks[s/32*t.Bytes:], s%32
		binary.LittleEndian.PutUint16(b, half8)
		aux1 := binary.LittleEndian.Uint32(b[6+8*(g/4):]) | uint32(s)<<(7*(g%4))
		binary.LittleEndian.PutUint32(b[6+8*(g/4):], aux1) // grid index 0 everywhere
	}
	y := d.decode(t, blocks)
	for s := 0; s < 128; s++ {
		var got uint8
		for j := 0; j < 8; j++ {
			switch v := y[8*s+j]; {
			case v < 0:
				got |= 1 << j
			case !(v > 0):
				d.fail("IQ2_XXS sign pattern %d element %d: decoded %v", s, j, v)
			}
		}
		if want := signs(uint8(s)); got != want {
			d.fail("IQ2_XXS sign pattern %d: libggml negates %#08b, the definition %#08b", s, got, want)
		}
	}
}

// Source returns gguf/iq_tables.go for tb, gofmt-formatted.
func Source(tb *Tables) ([]byte, error) {
	var b bytes.Buffer
	fmt.Fprintf(&b, "// Code generated by gguf/internal/geniq from libggml (npm %s); DO NOT EDIT.\n", LibggmlPackage)
	fmt.Fprintf(&b, "// Regenerate with go generate ./gguf (tools/deps.sh test installs libggml); gguf/quant's\n")
	fmt.Fprintf(&b, "// TestIQTablesMatchGGML re-derives every entry from libggml and compares.\n\n")
	fmt.Fprintf(&b, "package gguf\n\n")
	fmt.Fprintf(&b, "// The grids of the IQ types, read out of libggml's to_float: entry i packs its elements'\n")
	fmt.Fprintf(&b, "// values, element j in byte j.\n\n")
	grid := func(name, what string, entries []uint64, digits int) {
		fmt.Fprintf(&b, "// %s holds %s.\n", name, what)
		typ := "uint64"
		if digits == 8 {
			typ = "uint32"
		}
		fmt.Fprintf(&b, "var %s = [%d]%s{\n", name, len(entries), typ)
		perLine := 64 / digits
		for i, e := range entries {
			if i%perLine == 0 {
				b.WriteString("\t")
			}
			fmt.Fprintf(&b, "0x%0*x,", digits, e)
			if i%perLine == perLine-1 || i == len(entries)-1 {
				b.WriteString("\n")
			} else {
				b.WriteString(" ")
			}
		}
		b.WriteString("}\n\n")
	}
	widen := func(s []uint32) []uint64 {
		out := make([]uint64, len(s))
		for i, v := range s {
			out[i] = uint64(v)
		}
		return out
	}
	grid("iq2xxsGrid", "IQ2_XXS's magnitudes, 8 elements an entry", tb.IQ2XXS[:], 16)
	grid("iq2xsGrid", "IQ2_XS's magnitudes, 8 elements an entry", tb.IQ2XS[:], 16)
	grid("iq2sGrid", "IQ2_S's magnitudes, 8 elements an entry", tb.IQ2S[:], 16)
	grid("iq3xxsGrid", "IQ3_XXS's magnitudes, 4 elements an entry", widen(tb.IQ3XXS[:]), 8)
	grid("iq3sGrid", "IQ3_S's magnitudes, 4 elements an entry", widen(tb.IQ3S[:]), 8)
	grid("iq1sGrid", "IQ1_S's and IQ1_M's values, 8 int8s of −1, 0 or 1 an entry", tb.IQ1S[:], 16)
	fmt.Fprintf(&b, "// The offsets IQ1_S and IQ1_M add to every grid value, negated where a sub-block's bit says.\n")
	fmt.Fprintf(&b, "const (\n\tiq1sDelta = %v\n\tiq1mDelta = %v\n)\n", fmtFloat(tb.IQ1SDelta), fmtFloat(tb.IQ1MDelta))
	return format.Source(b.Bytes())
}

// fmtFloat writes f as a Go constant that converts back to f exactly.
func fmtFloat(f float32) string {
	return fmt.Sprintf("%v", float64(f))
}

// Parse reads back the tables of a file Source wrote (tests decode by definition with them).
func Parse(src []byte) (*Tables, error) {
	f, err := parser.ParseFile(token.NewFileSet(), "iq_tables.go", src, 0)
	if err != nil {
		return nil, err
	}
	tb := &Tables{}
	words := map[string][]uint64{}
	floats := map[string]float32{}
	for _, decl := range f.Decls {
		gd, ok := decl.(*ast.GenDecl)
		if !ok {
			continue
		}
		for _, spec := range gd.Specs {
			vs := spec.(*ast.ValueSpec)
			for i, name := range vs.Names {
				switch v := vs.Values[i].(type) {
				case *ast.CompositeLit:
					for _, el := range v.Elts {
						lit, ok := el.(*ast.BasicLit)
						if !ok {
							return nil, fmt.Errorf("geniq: %s: an element is not a literal", name.Name)
						}
						w, err := strconv.ParseUint(lit.Value, 0, 64)
						if err != nil {
							return nil, fmt.Errorf("geniq: %s: %v", name.Name, err)
						}
						words[name.Name] = append(words[name.Name], w)
					}
				case *ast.BasicLit:
					x, err := strconv.ParseFloat(v.Value, 32)
					if err != nil {
						return nil, fmt.Errorf("geniq: %s: %v", name.Name, err)
					}
					floats[name.Name] = float32(x)
				}
			}
		}
	}
	fill := func(name string, n int, set func(i int, w uint64)) {
		if len(words[name]) != n && err == nil {
			err = fmt.Errorf("geniq: %s has %d entries, want %d", name, len(words[name]), n)
		}
		for i, w := range words[name] {
			if i < n {
				set(i, w)
			}
		}
	}
	fill("iq2xxsGrid", len(tb.IQ2XXS), func(i int, w uint64) { tb.IQ2XXS[i] = w })
	fill("iq2xsGrid", len(tb.IQ2XS), func(i int, w uint64) { tb.IQ2XS[i] = w })
	fill("iq2sGrid", len(tb.IQ2S), func(i int, w uint64) { tb.IQ2S[i] = w })
	fill("iq3xxsGrid", len(tb.IQ3XXS), func(i int, w uint64) { tb.IQ3XXS[i] = uint32(w) })
	fill("iq3sGrid", len(tb.IQ3S), func(i int, w uint64) { tb.IQ3S[i] = uint32(w) })
	fill("iq1sGrid", len(tb.IQ1S), func(i int, w uint64) { tb.IQ1S[i] = w })
	tb.IQ1SDelta, tb.IQ1MDelta = floats["iq1sDelta"], floats["iq1mDelta"]
	if err == nil && (tb.IQ1SDelta == 0 || tb.IQ1MDelta == 0) {
		err = fmt.Errorf("geniq: the IQ1 deltas are missing")
	}
	return tb, err
}
