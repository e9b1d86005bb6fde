package kernels

import (
	"encoding/binary"

	"github.com/trochilus-llm/trochilus/gguf"
)

// The weight formats are decoded by gguf's element decoders (gguf.DequantizeF16,
// gguf.DequantizeQ8_0, gguf.ScaleMinK4, ...), the ones gguf/quant's Dequantize runs, so that
// the scalar definitions here and the dequantized tensors the engine holds agree bit for bit.

// half reads the little-endian f16 at the start of b (a block's d or dmin) as float32.
func half(b []byte) float32 { return gguf.F16ToF32(binary.LittleEndian.Uint16(b)) }

// The sizes of the supported block formats.
const (
	q8_0Elems = 32
	q8_0Bytes = 34
	kElems    = 256 // elements of a K-quant super-block
	q4KBytes  = 144
	q5KBytes  = 176
	q6KBytes  = 210
)
