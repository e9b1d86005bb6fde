package kernels

import "github.com/trochilus-llm/trochilus/gguf"

// The row dot products: the contract dot of one weight row, stored as the file stores it,
// against a float32 input x holding one float per element of the row. Each is defined as
// DotF32 of the dequantized row with x; they decode the row 256 elements at a time so the 16
// lanes run on without a break (every block size divides 256 and 256 is a multiple of 16).
//
// Preconditions: len(row) is a whole number of blocks and len(x) is at least the number of
// elements they hold (Matrix.Validate checks both for a whole matrix).

// dotRowF32 is the dot of a row of little-endian float32 values with x.
func dotRowF32(row []byte, x []float32) float32 { return dotRowFloats(gguf.TypeF32, row, x) }

// dotRowF16 is the dot of a row of IEEE half values with x.
func dotRowF16(row []byte, x []float32) float32 { return dotRowFloats(gguf.TypeF16, row, x) }

// dotRowBF16 is the dot of a row of bfloat16 values with x. Its result equals dotRowF32 of the
// widened values: a float32 row whose low halves are all zero can be stored as BF16 at load and
// give the same bits from half the bytes.
func dotRowBF16(row []byte, x []float32) float32 { return dotRowFloats(gguf.TypeBF16, row, x) }

// dotRowQ8_0 is the dot of a row of Q8_0 blocks with x; the weights are d·q.
func dotRowQ8_0(row []byte, x []float32) float32 { return dotRowBlocks(gguf.TypeQ8_0, row, x) }

// dotRowQ5K is the dot of a row of Q5_K blocks with x; the weights are (d·sc)·q − dmin·m.
func dotRowQ5K(row []byte, x []float32) float32 { return dotRowBlocks(gguf.TypeQ5_K, row, x) }

// dotRowFloats is the row dot of the float types (F32, F16 or BF16, by typ), the row decoded
// kElems values at a time (the last run may be shorter). The decoder is chosen by the type, not
// passed as a func value, so that w stays on the stack.
func dotRowFloats(typ gguf.Type, row []byte, x []float32) float32 {
	size := 2
	if typ == gguf.TypeF32 {
		size = 4
	}
	var l lanes
	var w [kElems]float32
	n := len(row) / size
	for k := 0; k < n; k += kElems {
		m := min(kElems, n-k)
		switch typ {
		case gguf.TypeF32:
			gguf.DequantizeF32(row[4*k:], w[:m])
		case gguf.TypeF16:
			gguf.DequantizeF16(row[2*k:], w[:m])
		default:
			gguf.DequantizeBF16(row[2*k:], w[:m])
		}
		l.AddProducts(w[:m], x[k:])
	}
	return l.Sum()
}

// dotRowBlocks is the row dot of the block types (Q8_0 or Q5_K, by typ), the row decoded a whole
// block at a time (as dotRowFloats, the decoder is chosen by the type).
func dotRowBlocks(typ gguf.Type, row []byte, x []float32) float32 {
	size, elems := q8_0Bytes, q8_0Elems
	if typ == gguf.TypeQ5_K {
		size, elems = q5KBytes, kElems
	}
	var l lanes
	var w [kElems]float32
	for b, k := 0, 0; b+size <= len(row); b, k = b+size, k+elems {
		if typ == gguf.TypeQ5_K {
			gguf.DequantizeQ5_K((*[q5KBytes]byte)(row[b:]), &w)
		} else {
			gguf.DequantizeQ8_0((*[q8_0Bytes]byte)(row[b:]), (*[q8_0Elems]float32)(w[:]))
		}
		l.AddProducts(w[:elems], x[k:])
	}
	return l.Sum()
}
