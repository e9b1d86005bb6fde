// Package ggufbytes writes GGUF files field by field, checking nothing, so tests can build any
// file, malformed ones included, without going through the gguf package they are testing.
package ggufbytes

import (
	"encoding/binary"
	"math"
)

// GGUF value type numbers, as the file stores them.
const (
	Uint8   = 0
	Int8    = 1
	Uint16  = 2
	Int16   = 3
	Uint32  = 4
	Int32   = 5
	Float32 = 6
	Bool    = 7
	String  = 8
	Array   = 9
	Uint64  = 10
	Int64   = 11
	Float64 = 12
)

// Builder accumulates the bytes of a file. Every method appends and returns the Builder.
type Builder struct {
	b []byte
}

// Header starts a file: magic "GGUF", version, tensor count and key-value count.
func Header(version uint32, tensors, kvs uint64) *Builder {
	b := &Builder{b: []byte("GGUF")}
	return b.U32(version).U64(tensors).U64(kvs)
}

// Bytes returns the bytes so far.
func (b *Builder) Bytes() []byte { return b.b }

// Len returns the number of bytes so far.
func (b *Builder) Len() int { return len(b.b) }

// Raw appends p as it is.
func (b *Builder) Raw(p ...byte) *Builder { b.b = append(b.b, p...); return b }

// U8 appends one byte.
func (b *Builder) U8(v uint8) *Builder { b.b = append(b.b, v); return b }

// U16 appends a little-endian uint16.
func (b *Builder) U16(v uint16) *Builder { b.b = binary.LittleEndian.AppendUint16(b.b, v); return b }

// U32 appends a little-endian uint32.
func (b *Builder) U32(v uint32) *Builder { b.b = binary.LittleEndian.AppendUint32(b.b, v); return b }

// U64 appends a little-endian uint64.
func (b *Builder) U64(v uint64) *Builder { b.b = binary.LittleEndian.AppendUint64(b.b, v); return b }

// F32 appends a float32's bits.
func (b *Builder) F32(v float32) *Builder { return b.U32(math.Float32bits(v)) }

// F64 appends a float64's bits.
func (b *Builder) F64(v float64) *Builder { return b.U64(math.Float64bits(v)) }

// Str appends a string: its length as a uint64, then its bytes.
func (b *Builder) Str(s string) *Builder { b.U64(uint64(len(s))); b.b = append(b.b, s...); return b }

// Key appends a key and a value type; the caller appends the value.
func (b *Builder) Key(key string, valueType uint32) *Builder { return b.Str(key).U32(valueType) }

// ArrayHead appends an array's element type and length; the caller appends the elements.
func (b *Builder) ArrayHead(elemType uint32, n uint64) *Builder { return b.U32(elemType).U64(n) }

// Tensor appends a tensor info: name, dimension count, dimensions, ggml type, relative offset.
func (b *Builder) Tensor(name string, dims []uint64, ggmlType uint32, offset uint64) *Builder {
	b.Str(name).U32(uint32(len(dims)))
	for _, d := range dims {
		b.U64(d)
	}
	return b.U32(ggmlType).U64(offset)
}

// Pad appends zeros up to a multiple of align.
func (b *Builder) Pad(align int) *Builder {
	for len(b.b)%align != 0 {
		b.b = append(b.b, 0)
	}
	return b
}

// Fill appends n copies of c.
func (b *Builder) Fill(n int, c byte) *Builder {
	for range n {
		b.b = append(b.b, c)
	}
	return b
}
