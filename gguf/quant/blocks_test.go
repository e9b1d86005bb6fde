package quant

import (
	"math/rand/v2"

	"github.com/trochilus-llm/trochilus/gguf"
)

// blockLayout says where a block type keeps its f16 fields and its packed sub-block scales, so
// tests can build blocks with chosen scales.
type blockLayout struct {
	typ    gguf.Type
	halves []int // byte offsets of the f16 fields
	scales [2]int
}

// blockLayouts lists the block types Dequantize supports.
func blockLayouts() []blockLayout {
	return []blockLayout{
		{gguf.TypeQ8_0, []int{0}, [2]int{}},
		{gguf.TypeQ4_0, []int{0}, [2]int{}},
		{gguf.TypeQ2_K, []int{80, 82}, [2]int{0, 16}},
		{gguf.TypeQ3_K, []int{108}, [2]int{96, 108}},
		{gguf.TypeQ4_K, []int{0, 2}, [2]int{4, 16}},
		{gguf.TypeQ5_K, []int{0, 2}, [2]int{4, 16}},
		{gguf.TypeQ6_K, []int{208}, [2]int{192, 208}},
		{gguf.TypeQ4_1, []int{0, 2}, [2]int{}},
		{gguf.TypeQ5_0, []int{0}, [2]int{}},
		{gguf.TypeQ5_1, []int{0, 2}, [2]int{}},
		{gguf.TypeIQ4_NL, []int{0}, [2]int{}},
		{gguf.TypeIQ4_XS, []int{0}, [2]int{2, 8}},
		{gguf.TypeMXFP4, nil, [2]int{0, 1}},
		{gguf.TypeTQ1_0, []int{52}, [2]int{}},
		{gguf.TypeTQ2_0, []int{64}, [2]int{}},
	}
}

// specialHalves are the f16 scale values a decoder must get right beyond ordinary numbers.
func specialHalves() []uint16 {
	return []uint16{
		0x0000, 0x8000, // ±0
		0x0001, 0x8001, 0x03ff, 0x0400, // subnormal and smallest normal
		0x3c00, 0xbc00, 0x7bff, 0xfbff, // ±1, ±65504
		0x7c00, 0xfc00, // ±inf
		0x7e00, 0xfe00, 0x7c01, 0x7dff, 0xfc01, // quiet and signaling NaNs with payloads
	}
}

// structuredBlocks returns every combination of special f16 fields, quant bytes in a few fixed
// patterns (all zero, all ones, alternating, or random) and sub-block scale bytes (zero, all
// ones, 0x3f, or random), for layout l.
func structuredBlocks(l blockLayout, r *rand.ChaCha8) []byte {
	bb := l.typ.BlockBytes()
	sp := specialHalves()
	quantFill := []int{-1, 0x00, 0xff, 0x55, 0xaa, 0x0f, 0xf0}
	scaleFill := []int{-1, 0x00, 0xff, 0x3f}
	if l.scales[1] == 0 {
		scaleFill = []int{-1}
	}
	halfCombos := len(sp)
	if len(l.halves) == 2 {
		halfCombos *= len(sp)
	}
	var out []byte
	block := make([]byte, bb)
	fill := func(b []byte, v int) {
		if v < 0 {
			_, _ = r.Read(b)
			return
		}
		for i := range b {
			b[i] = byte(v)
		}
	}
	for hc := 0; hc < halfCombos; hc++ {
		for _, qf := range quantFill {
			for _, sf := range scaleFill {
				fill(block, qf)
				fill(block[l.scales[0]:l.scales[1]], sf)
				for k, off := range l.halves {
					h := sp[hc%len(sp)]
					if k == 1 {
						h = sp[hc/len(sp)]
					}
					block[off], block[off+1] = byte(h), byte(h>>8)
				}
				out = append(out, block...)
			}
		}
	}
	return out
}
