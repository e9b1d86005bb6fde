package kernels

import "github.com/trochilus-llm/trochilus/gguf"

// The row dot products: the contract dot of one weight row, stored as the file stores it,
// against a float32 input x holding one float per element of the row. Each is defined as
// DotF32 of the dequantized row with x; they decode the row 256 elements at a time so the 16
// lanes run on without a break (every block size divides 256 and 256 is a multiple of 16).
//
// Preconditions: len(row) is a whole number of blocks and len(x) is at least the number of
// elements they hold (Matrix.Validate checks both for a whole matrix).

// DotRowF32 is the dot of a row of little-endian float32 values with x.
func DotRowF32(row []byte, x []float32) float32 {
	var l Lanes
	var w [kElems]float32
	n := len(row) / 4
	for k := 0; k < n; k += kElems {
		m := min(kElems, n-k)
		gguf.DequantizeF32(row[4*k:], w[:m])
		l.AddProducts(w[:m], x[k:])
	}
	return l.Sum()
}

// DotRowF16 is the dot of a row of IEEE half values with x.
func DotRowF16(row []byte, x []float32) float32 {
	var l Lanes
	var w [kElems]float32
	n := len(row) / 2
	for k := 0; k < n; k += kElems {
		m := min(kElems, n-k)
		gguf.DequantizeF16(row[2*k:], w[:m])
		l.AddProducts(w[:m], x[k:])
	}
	return l.Sum()
}

// DotRowBF16 is the dot of a row of bfloat16 values with x. Its result equals DotRowF32 of the
// widened values: a float32 row whose low halves are all zero can be stored as BF16 at load and
// give the same bits from half the bytes.
func DotRowBF16(row []byte, x []float32) float32 {
	var l Lanes
	var w [kElems]float32
	n := len(row) / 2
	for k := 0; k < n; k += kElems {
		m := min(kElems, n-k)
		gguf.DequantizeBF16(row[2*k:], w[:m])
		l.AddProducts(w[:m], x[k:])
	}
	return l.Sum()
}

// DotRowQ8_0 is the dot of a row of Q8_0 blocks with x; the weights are d·q.
func DotRowQ8_0(row []byte, x []float32) float32 {
	var l Lanes
	var w [q8_0Elems]float32
	for b, k := 0, 0; b+q8_0Bytes <= len(row); b, k = b+q8_0Bytes, k+q8_0Elems {
		gguf.DequantizeQ8_0((*[q8_0Bytes]byte)(row[b:]), &w)
		l.AddProducts(w[:], x[k:])
	}
	return l.Sum()
}

// DotRowQ5K is the dot of a row of Q5_K blocks with x; the weights are (d·sc)·q − dmin·m.
func DotRowQ5K(row []byte, x []float32) float32 {
	var l Lanes
	var w [kElems]float32
	for b, k := 0, 0; b+q5KBytes <= len(row); b, k = b+q5KBytes, k+kElems {
		gguf.DequantizeQ5_K((*[q5KBytes]byte)(row[b:]), &w)
		l.AddProducts(w[:], x[k:])
	}
	return l.Sum()
}
