package gguf

import (
	"fmt"
	"io"
	"math"
)

// KV is one metadata entry.
type KV struct {
	Key   string
	Value Value
}

// TensorInfo describes one tensor of a file.
type TensorInfo struct {
	Name   string
	Type   Type
	Dims   []uint64 // ggml order: ne0 (the contiguous row) first
	Offset int64    // absolute byte offset of the tensor's data in the file
	Size   int64    // bytes of data
}

// Elems returns the number of elements (the product of the dimensions).
func (t TensorInfo) Elems() uint64 {
	n := uint64(1)
	for _, d := range t.Dims {
		n *= d
	}
	return n
}

// File is a parsed GGUF file: its metadata and tensor table, and the means to read tensor bytes.
// Its fields are read-only once Open or Read returns them. The read methods may be called from
// many goroutines at once.
type File struct {
	Version    uint32
	Alignment  int64 // general.alignment, or 32 when absent
	DataOffset int64 // start of the data section: the aligned end of the header
	KVs        []KV  // in file order
	Tensors    []TensorInfo

	r         io.ReaderAt
	size      int64
	closer    io.Closer
	kvIndex   map[string]int
	tensorIdx map[string]int
}

// Close releases the file opened by Open; for a File from Read it does nothing.
func (f *File) Close() error {
	if f.closer == nil {
		return nil
	}
	err := f.closer.Close()
	f.closer = nil
	return err
}

// Size returns the size of the file in bytes.
func (f *File) Size() int64 { return f.size }

// Get returns the value of key.
func (f *File) Get(key string) (Value, bool) {
	i, ok := f.kvIndex[key]
	if !ok {
		return Value{}, false
	}
	return f.KVs[i].Value, true
}

// Tensor returns the tensor named name.
func (f *File) Tensor(name string) (*TensorInfo, bool) {
	i, ok := f.tensorIdx[name]
	if !ok {
		return nil, false
	}
	return &f.Tensors[i], true
}

// lookup returns the value of key, or an error saying it is missing.
func (f *File) lookup(key string) (Value, error) {
	v, ok := f.Get(key)
	if !ok {
		return Value{}, fmt.Errorf("gguf: key %q not found", key)
	}
	return v, nil
}

// mistyped returns the error for a key whose value is not what the getter wants.
func mistyped(key string, v Value, want string) error {
	what := v.typ.String()
	if v.typ == ValueArray {
		what = "array of " + v.elem.String()
	}
	return fmt.Errorf("gguf: key %q holds %s %v, want %s", key, what, v, want)
}

// typed returns key's value as get reads it, or an error saying that the value is not what
// want describes.
func typed[T any](f *File, key string, get func(Value) (T, bool), want string) (T, error) {
	var zero T
	v, err := f.lookup(key)
	if err != nil {
		return zero, err
	}
	x, ok := get(v)
	if !ok {
		return zero, mistyped(key, v, want)
	}
	return x, nil
}

// Uint64 returns key's value, which may be an integer of any kind that is not negative.
func (f *File) Uint64(key string) (uint64, error) {
	return typed(f, key, Value.Uint64, "a non-negative integer")
}

// Uint32 returns key's value, which may be an integer of any kind that fits a uint32.
func (f *File) Uint32(key string) (uint32, error) {
	return typed(f, key, func(v Value) (uint32, bool) {
		u, ok := v.Uint64()
		return uint32(u), ok && u <= math.MaxUint32
	}, "an integer that fits a uint32")
}

// Int64 returns key's value, which may be an integer of any kind that fits an int64.
func (f *File) Int64(key string) (int64, error) {
	return typed(f, key, Value.Int64, "an integer that fits an int64")
}

// Float32 returns key's value, a float32 (or a float64 that a float32 holds exactly).
func (f *File) Float32(key string) (float32, error) {
	return typed(f, key, func(v Value) (float32, bool) {
		x, ok := v.Float64()
		return float32(x), ok && (float64(float32(x)) == x || math.IsNaN(x))
	}, "a float32")
}

// Bool returns key's value, a bool.
func (f *File) Bool(key string) (bool, error) {
	return typed(f, key, Value.Bool, "a bool")
}

// Str returns key's value, a string.
func (f *File) Str(key string) (string, error) {
	return typed(f, key, Value.Str, "a string")
}

// Strings returns key's value, an array of strings.
func (f *File) Strings(key string) ([]string, error) {
	return typed(f, key, Value.Strings, "an array of strings")
}

// Int32s returns key's value, an array of integers of any kind that all fit an int32.
func (f *File) Int32s(key string) ([]int32, error) {
	return typed(f, key, Value.Int32s, "an array of integers that fit an int32")
}

// Uint32s returns key's value, an array of integers of any kind that all fit a uint32.
func (f *File) Uint32s(key string) ([]uint32, error) {
	return typed(f, key, Value.Uint32s, "an array of integers that fit a uint32")
}

// Float32s returns key's value, an array of float32.
func (f *File) Float32s(key string) ([]float32, error) {
	return typed(f, key, Value.Float32s, "an array of float32")
}

// ReadTensor reads all of t's bytes into dst, whose length must be t.Size.
func (f *File) ReadTensor(t *TensorInfo, dst []byte) error {
	if int64(len(dst)) != t.Size {
		return fmt.Errorf("gguf: tensor %q: buffer of %d bytes for %d bytes of data", t.Name, len(dst), t.Size)
	}
	return f.ReadTensorAt(t, 0, dst)
}

// ReadTensorAt reads len(dst) bytes of t's data starting off bytes into it (say, one expert of
// a stacked expert tensor). The range must lie inside the tensor.
func (f *File) ReadTensorAt(t *TensorInfo, off int64, dst []byte) error {
	n := int64(len(dst))
	if off < 0 || off > t.Size || n > t.Size-off {
		return fmt.Errorf("gguf: tensor %q: range [%d, %d) outside its %d bytes", t.Name, off, off+n, t.Size)
	}
	// t may not come from this File: check it against the file too.
	if t.Offset < 0 || t.Offset > f.size || t.Size > f.size-t.Offset {
		return fmt.Errorf("gguf: tensor %q: data [%d, %d) outside the file's %d bytes", t.Name, t.Offset, t.Offset+t.Size, f.size)
	}
	if f.r == nil {
		return fmt.Errorf("gguf: tensor %q: file is closed", t.Name)
	}
	if err := readFull(f.r, dst, t.Offset+off); err != nil {
		return fmt.Errorf("gguf: tensor %q: %w", t.Name, err)
	}
	return nil
}
