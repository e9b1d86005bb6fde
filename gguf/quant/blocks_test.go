package quant

import (
	"encoding/binary"
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
		{gguf.TypeIQ2_XXS, []int{0}, [2]int{}},
		{gguf.TypeIQ2_XS, []int{0}, [2]int{66, 74}},
		{gguf.TypeIQ2_S, []int{0}, [2]int{74, 82}},
		{gguf.TypeIQ3_XXS, []int{0}, [2]int{66, 98}},
		{gguf.TypeIQ3_S, []int{0}, [2]int{106, 110}},
		{gguf.TypeIQ1_S, []int{0}, [2]int{34, 50}},
		{gguf.TypeIQ1_M, nil, [2]int{48, 56}}, // its f16 d is the top nibbles of the scale words
		{gguf.TypeNVFP4, nil, [2]int{0, 4}},
		{gguf.TypeQ1_0, []int{0}, [2]int{}},
		{gguf.TypeQ2_0, []int{0}, [2]int{}},
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
// ones, 0x3f, or random), for layout l, then the type's sweepBlocks.
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
	return append(out, sweepBlocks(l.typ)...)
}

// sweepBlocks returns, for the grid types, blocks in which every grid index occurs with every
// sign pattern (every delta sign for the IQ1 types) and every sub-block scale, under each of the
// special f16 scales; for NVFP4, every scale byte with every code. Other types have none.
func sweepBlocks(typ gguf.Type) []byte {
	var n int                      // blocks in one sweep
	var fill func(b []byte, k int) // writes sweep block k but for its f16 d
	setD := func(b []byte, h uint16) { binary.LittleEndian.PutUint16(b, h) }
	scale4 := func(k, u int) byte { return byte((k + u) % 16) }
	switch typ {
	case gguf.TypeIQ2_XXS: // 32 groups a block: 256 indices, 128 sign patterns
		n = 16
		fill = func(b []byte, k int) {
			for g := 0; g < 32; g++ {
				e := 32*k + g
				b[2+8*(g/4)+g%4] = byte(e)
				aux := binary.LittleEndian.Uint32(b[6+8*(g/4):]) | uint32(e%128)<<(7*(g%4)) | uint32(scale4(k, g/4))<<28
				binary.LittleEndian.PutUint32(b[6+8*(g/4):], aux)
			}
		}
	case gguf.TypeIQ2_XS: // 512 indices
		n = 16
		fill = func(b []byte, k int) {
			for g := 0; g < 32; g++ {
				e := 32*k + g
				binary.LittleEndian.PutUint16(b[2+2*g:], uint16(e%512|e%128<<9))
			}
			for u := 0; u < 8; u++ {
				b[66+u] = scale4(k, 2*u) | scale4(k, 2*u+1)<<4
			}
		}
	case gguf.TypeIQ2_S: // 1024 indices, 256 sign bytes
		n = 32
		fill = func(b []byte, k int) {
			for g := 0; g < 32; g++ {
				e := 32*k + g
				b[2+g], b[34+g] = byte(e), byte(e*7)
				b[66+g/4] |= byte(e%1024>>8) << (2 * (g % 4))
			}
			for u := 0; u < 8; u++ {
				b[74+u] = scale4(k, 2*u) | scale4(k, 2*u+1)<<4
			}
		}
	case gguf.TypeIQ3_XXS: // 64 indices a block (4 elements each), 32 sign patterns
		n = 16
		fill = func(b []byte, k int) {
			for s := 0; s < 64; s++ {
				b[2+s] = byte(64*k + s)
			}
			for g := 0; g < 32; g++ {
				at := 66 + 4*(g/4)
				aux := binary.LittleEndian.Uint32(b[at:]) | uint32((32*k+g)%128)<<(7*(g%4)) | uint32(scale4(k, g/4))<<28
				binary.LittleEndian.PutUint32(b[at:], aux)
			}
		}
	case gguf.TypeIQ3_S: // 512 indices, 256 sign bytes
		n = 16
		fill = func(b []byte, k int) {
			for s := 0; s < 64; s++ {
				e := (64*k + s) % 512
				b[2+s] = byte(e)
				b[66+s/8] |= byte(e>>8) << (s % 8)
			}
			for g := 0; g < 32; g++ {
				b[74+g] = byte(32*k + g)
			}
			for u := 0; u < 4; u++ {
				b[106+u] = scale4(k, 2*u) | scale4(k, 2*u+1)<<4
			}
		}
	case gguf.TypeIQ1_S: // 2048 indices, each with both delta signs
		n = 2 * 2048 / 32
		fill = func(b []byte, k int) {
			for g := 0; g < 32; g++ {
				e := 32*k + g
				b[2+g] = byte(e)
				at := 34 + 2*(g/4)
				qh := binary.LittleEndian.Uint16(b[at:]) | uint16(e%2048>>8)<<(3*(g%4))
				qh |= uint16(e/2048)<<15 | uint16((k+g/4)%8)<<12
				binary.LittleEndian.PutUint16(b[at:], qh)
			}
		}
	case gguf.TypeIQ1_M:
		n = 2 * 2048 / 32
		fill = func(b []byte, k int) {
			for g := 0; g < 32; g++ {
				e := 32*k + g
				b[g] = byte(e)
				b[32+g/2] |= (byte(e%2048>>8) | byte(e/2048)<<3) << (4 * (g % 2))
			}
			for u := 0; u < 16; u++ { // 3-bit scales, four to a word
				at := 48 + 2*(u/4)
				w := binary.LittleEndian.Uint16(b[at:]) | uint16((k+u)%8)<<(3*(u%4))
				binary.LittleEndian.PutUint16(b[at:], w)
			}
		}
		setD = func(b []byte, h uint16) { // word k's top nibble is d's bits 4k to 4k+3
			for k := 0; k < 4; k++ {
				b[49+2*k] = b[49+2*k]&0x0f | byte(h>>(4*k))<<4
			}
		}
	case gguf.TypeNVFP4: // every scale byte with every code; no f16
		out := make([]byte, 64*36)
		for k := 0; k < 64; k++ {
			b := out[36*k:]
			for s := 0; s < 4; s++ {
				b[s] = byte(4*k + s)
				for j := 0; j < 8; j++ {
					b[4+8*s+j] = byte(2*j) | byte(2*j+1)<<4
				}
			}
		}
		return out
	default:
		return nil
	}
	bb := typ.BlockBytes()
	var out []byte
	for _, h := range specialHalves() {
		for k := 0; k < n; k++ {
			b := make([]byte, bb)
			fill(b, k)
			setD(b, h)
			out = append(out, b...)
		}
	}
	return out
}
