package gguf

import "fmt"

// Type is a ggml tensor element type, numbered as ggml numbers them.
type Type uint32

// The ggml types. Sizes for every one are in the table below; the project decodes only some
// (see package quant), but a file holding others can still be read and inspected.
const (
	TypeF32     Type = 0
	TypeF16     Type = 1
	TypeQ4_0    Type = 2
	TypeQ4_1    Type = 3
	TypeQ5_0    Type = 6
	TypeQ5_1    Type = 7
	TypeQ8_0    Type = 8
	TypeQ8_1    Type = 9
	TypeQ2_K    Type = 10
	TypeQ3_K    Type = 11
	TypeQ4_K    Type = 12
	TypeQ5_K    Type = 13
	TypeQ6_K    Type = 14
	TypeQ8_K    Type = 15
	TypeIQ2_XXS Type = 16
	TypeIQ2_XS  Type = 17
	TypeIQ3_XXS Type = 18
	TypeIQ1_S   Type = 19
	TypeIQ4_NL  Type = 20
	TypeIQ3_S   Type = 21
	TypeIQ2_S   Type = 22
	TypeIQ4_XS  Type = 23
	TypeI8      Type = 24
	TypeI16     Type = 25
	TypeI32     Type = 26
	TypeI64     Type = 27
	TypeF64     Type = 28
	TypeIQ1_M   Type = 29
	TypeBF16    Type = 30
	TypeTQ1_0   Type = 34
	TypeTQ2_0   Type = 35
	TypeMXFP4   Type = 39
	TypeNVFP4   Type = 40
	TypeQ1_0    Type = 41
	TypeQ2_0    Type = 42
)

type typeInfo struct {
	name       string
	blockElems int // elements in one block
	blockBytes int // bytes in one block
}

// typeTable follows ggml's type_traits (ggml.c) and gguf-py's GGML_QUANT_SIZES; ids 4, 5 and
// 31-33, 36-38 were removed from ggml and are unknown here. It is an array, not a map, because
// the kernels ask for block sizes on every weight row.
var typeTable = [...]typeInfo{
	TypeF32:     {"F32", 1, 4},
	TypeF16:     {"F16", 1, 2},
	TypeQ4_0:    {"Q4_0", 32, 18},
	TypeQ4_1:    {"Q4_1", 32, 20},
	TypeQ5_0:    {"Q5_0", 32, 22},
	TypeQ5_1:    {"Q5_1", 32, 24},
	TypeQ8_0:    {"Q8_0", 32, 34},
	TypeQ8_1:    {"Q8_1", 32, 36},
	TypeQ2_K:    {"Q2_K", 256, 84},
	TypeQ3_K:    {"Q3_K", 256, 110},
	TypeQ4_K:    {"Q4_K", 256, 144},
	TypeQ5_K:    {"Q5_K", 256, 176},
	TypeQ6_K:    {"Q6_K", 256, 210},
	TypeQ8_K:    {"Q8_K", 256, 292},
	TypeIQ2_XXS: {"IQ2_XXS", 256, 66},
	TypeIQ2_XS:  {"IQ2_XS", 256, 74},
	TypeIQ3_XXS: {"IQ3_XXS", 256, 98},
	TypeIQ1_S:   {"IQ1_S", 256, 50},
	TypeIQ4_NL:  {"IQ4_NL", 32, 18},
	TypeIQ3_S:   {"IQ3_S", 256, 110},
	TypeIQ2_S:   {"IQ2_S", 256, 82},
	TypeIQ4_XS:  {"IQ4_XS", 256, 136},
	TypeI8:      {"I8", 1, 1},
	TypeI16:     {"I16", 1, 2},
	TypeI32:     {"I32", 1, 4},
	TypeI64:     {"I64", 1, 8},
	TypeF64:     {"F64", 1, 8},
	TypeIQ1_M:   {"IQ1_M", 256, 56},
	TypeBF16:    {"BF16", 1, 2},
	TypeTQ1_0:   {"TQ1_0", 256, 54},
	TypeTQ2_0:   {"TQ2_0", 256, 66},
	TypeMXFP4:   {"MXFP4", 32, 17},
	TypeNVFP4:   {"NVFP4", 64, 36},
	TypeQ1_0:    {"Q1_0", 128, 18},
	TypeQ2_0:    {"Q2_0", 64, 18},
}

// info returns t's entry of typeTable and whether t is known.
func (t Type) info() (typeInfo, bool) {
	if uint64(t) >= uint64(len(typeTable)) || typeTable[t].name == "" {
		return typeInfo{}, false
	}
	return typeTable[t], true
}

// Known reports whether t is a ggml type this package has sizes for.
func (t Type) Known() bool { _, ok := t.info(); return ok }

// String returns ggml's name for t, or "type(N)" for an unknown id.
func (t Type) String() string {
	if ti, ok := t.info(); ok {
		return ti.name
	}
	return fmt.Sprintf("type(%d)", uint32(t))
}

// BlockElems returns how many elements one block of t holds (0 for an unknown type).
func (t Type) BlockElems() int { ti, _ := t.info(); return ti.blockElems }

// BlockBytes returns the size of one block of t in bytes (0 for an unknown type).
func (t Type) BlockBytes() int { ti, _ := t.info(); return ti.blockBytes }

// RowBytes returns the bytes taken by n consecutive elements of t. n must be a multiple of the
// block size; an unknown type, a ragged n or an overflow is an error.
func (t Type) RowBytes(n int64) (int64, error) {
	ti, ok := t.info()
	if !ok {
		return 0, fmt.Errorf("unknown ggml type %d", uint32(t))
	}
	if n < 0 || n%int64(ti.blockElems) != 0 {
		return 0, fmt.Errorf("%s: %d elements is not a whole number of %d-element blocks", ti.name, n, ti.blockElems)
	}
	blocks := n / int64(ti.blockElems)
	if blocks > (1<<62)/int64(ti.blockBytes) {
		return 0, fmt.Errorf("%s: %d elements overflow a byte count", ti.name, n)
	}
	return blocks * int64(ti.blockBytes), nil
}

// TypeByName returns the type ggml calls name (case-sensitive, as in String), if there is one.
func TypeByName(name string) (Type, bool) {
	for t, ti := range typeTable {
		if ti.name != "" && ti.name == name {
			return Type(t), true
		}
	}
	return 0, false
}
