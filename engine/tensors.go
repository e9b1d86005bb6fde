package engine

import (
	"encoding/binary"
	"fmt"
	"slices"

	"github.com/trochilus-llm/trochilus/gguf"
	"github.com/trochilus-llm/trochilus/gguf/quant"
	"github.com/trochilus-llm/trochilus/kernels"
)

// tensorSet hands out a file's tensors as slices of its mapping, each checked for presence,
// type and shape.
type tensorSet struct {
	f    *gguf.File
	data []byte
}

// multipliable reports whether the engine can multiply a matrix of type t: the kernels'
// types, and those package quant decodes (multiplied through dequantized rows, see
// multiplier).
func multipliable(t gguf.Type) bool { return kernels.Supported(t) || quant.Supported(t) }

// lookup returns tensor name's info and bytes after checking its ggml dims.
func (ts *tensorSet) lookup(name string, dims ...int) (*gguf.TensorInfo, []byte, error) {
	t, ok := ts.f.Tensor(name)
	if !ok {
		return nil, nil, fmt.Errorf("tensor %q is missing", name)
	}
	want := make([]uint64, len(dims))
	for i, d := range dims {
		want[i] = uint64(d)
	}
	if !slices.Equal(t.Dims, want) {
		return nil, nil, fmt.Errorf("tensor %q has dims %v, want %v", name, t.Dims, want)
	}
	size, err := t.Type.RowBytes(int64(dims[0]))
	if err != nil {
		return nil, nil, fmt.Errorf("tensor %q (%v): %w", name, t.Type, err)
	}
	for _, d := range dims[1:] {
		size *= int64(d)
	}
	if size != t.Size || t.Offset < 0 || t.Size > int64(len(ts.data))-t.Offset {
		return nil, nil, fmt.Errorf("tensor %q: %d bytes at offset %d do not fit the %d-byte file as %v %v",
			name, t.Size, t.Offset, len(ts.data), t.Type, t.Dims)
	}
	return t, ts.data[t.Offset : t.Offset+t.Size : t.Offset+t.Size], nil
}

// matrix returns the 2-D tensor name of rows × cols elements (ggml dims [cols, rows]), which
// the engine must be able to multiply.
func (ts *tensorSet) matrix(name string, rows, cols int) (kernels.Matrix, error) {
	t, b, err := ts.lookup(name, cols, rows)
	if err != nil {
		return kernels.Matrix{}, err
	}
	if !multipliable(t.Type) {
		return kernels.Matrix{}, fmt.Errorf("tensor %q has type %v, which the engine cannot multiply", name, t.Type)
	}
	return kernels.Matrix{Type: t.Type, Rows: rows, Cols: cols, Data: b}, nil
}

// experts returns the stacked 3-D tensor name (ggml dims [cols, rows, n]) as n matrices of
// rows × cols, each one expert's contiguous byte range.
func (ts *tensorSet) experts(name string, n, rows, cols int) ([]kernels.Matrix, error) {
	t, b, err := ts.lookup(name, cols, rows, n)
	if err != nil {
		return nil, err
	}
	if !multipliable(t.Type) {
		return nil, fmt.Errorf("tensor %q has type %v, which the engine cannot multiply", name, t.Type)
	}
	per := len(b) / n
	out := make([]kernels.Matrix, n)
	for e := range out {
		out[e] = kernels.Matrix{Type: t.Type, Rows: rows, Cols: cols, Data: b[e*per : (e+1)*per : (e+1)*per]}
	}
	return out, nil
}

// vector returns the 1-D tensor name of n elements as float32 (norm weights; small, so they are
// decoded onto the heap).
func (ts *tensorSet) vector(name string, n int) ([]float32, error) {
	t, b, err := ts.lookup(name, n)
	if err != nil {
		return nil, err
	}
	if !quant.Supported(t.Type) {
		return nil, fmt.Errorf("tensor %q has type %v, which the engine cannot decode", name, t.Type)
	}
	v := make([]float32, n)
	if err := quant.Dequantize(t.Type, b, v); err != nil {
		return nil, fmt.Errorf("tensor %q: %w", name, err)
	}
	return v, nil
}

// narrowBF16 returns m stored as BF16 when m is F32 and every value has zero low 16 bits: the
// BF16 dot widens each value back to the same float32, so the products keep their bits while
// reading half the bytes. Otherwise it returns m unchanged.
func narrowBF16(m kernels.Matrix) kernels.Matrix {
	if m.Type != gguf.TypeF32 {
		return m
	}
	n := len(m.Data) / 4
	for i := range n {
		if binary.LittleEndian.Uint32(m.Data[4*i:])&0xffff != 0 {
			return m
		}
	}
	b := make([]byte, 2*n)
	for i := range n {
		binary.LittleEndian.PutUint16(b[2*i:], uint16(binary.LittleEndian.Uint32(m.Data[4*i:])>>16))
	}
	return kernels.Matrix{Type: gguf.TypeBF16, Rows: m.Rows, Cols: m.Cols, Data: b}
}
