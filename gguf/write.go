package gguf

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
)

// Writer builds a GGUF v3 file: metadata and tensors are written in the order they were added,
// tensor data aligned to general.alignment (32 unless set), with zero padding.
type Writer struct {
	alignment int64
	kvs       []KV
	keys      map[string]bool
	tensors   []pendingTensor
	names     map[string]bool
}

// pendingTensor is a tensor to write: its bytes, or a function that writes them.
type pendingTensor struct {
	info  TensorInfo // Offset relative to the data section
	data  []byte
	write func(io.Writer) error
}

// NewWriter returns an empty Writer.
func NewWriter() *Writer {
	return &Writer{alignment: defaultAlign, keys: map[string]bool{}, names: map[string]bool{}}
}

// Set adds a metadata entry. A key may be set once. Setting general.alignment (a uint32, a power
// of two up to 65536) changes the alignment the data is written with.
func (w *Writer) Set(key string, v Value) error {
	if len(key) > maxKeyLen {
		return fmt.Errorf("gguf: key of %d bytes too long (at most %d)", len(key), maxKeyLen)
	}
	if w.keys[key] {
		return fmt.Errorf("gguf: key %q set twice", key)
	}
	if err := checkValue(v); err != nil {
		return fmt.Errorf("gguf: key %q: %w", key, err)
	}
	if key == alignmentKey {
		if v.typ != ValueUint32 {
			return fmt.Errorf("gguf: key %q: alignment must be a uint32, not %s", key, v.typ)
		}
		if err := checkAlignment(int64(v.bits)); err != nil {
			return fmt.Errorf("gguf: key %q: %w", key, err)
		}
		w.alignment = int64(v.bits)
	}
	w.keys[key] = true
	w.kvs = append(w.kvs, KV{Key: key, Value: v})
	return nil
}

// checkValue checks v is within what Read accepts (constructors cannot see every limit).
func checkValue(v Value) error {
	switch {
	case v.typ == ValueString && len(v.str) > maxStringLen:
		return fmt.Errorf("string of %d bytes too long (at most %d)", len(v.str), maxStringLen)
	case v.typ != ValueArray:
		return nil
	case v.Len() > maxArrayLen:
		return fmt.Errorf("array of %d elements too long (at most %d)", v.Len(), maxArrayLen)
	}
	for i, s := range v.strings() {
		if len(s) > maxStringLen {
			return fmt.Errorf("array element %d: string of %d bytes too long (at most %d)", i, len(s), maxStringLen)
		}
	}
	for i, e := range v.arrays() {
		if err := checkValue(e); err != nil {
			return fmt.Errorf("array element %d: %w", i, err)
		}
	}
	return nil
}

// AddTensor adds a tensor whose bytes are data; len(data) must be the size typ and dims give.
// data is written as it is when WriteTo runs, so it must not change before then.
func (w *Writer) AddTensor(name string, typ Type, dims []uint64, data []byte) error {
	t, err := w.addInfo(name, typ, dims)
	if err != nil {
		return err
	}
	if int64(len(data)) != t.info.Size {
		return fmt.Errorf("gguf: tensor %q: %d bytes of data, want %d for %s %v", name, len(data), t.info.Size, typ, dims)
	}
	t.data = data
	w.names[name] = true
	w.tensors = append(w.tensors, t)
	return nil
}

// AddTensorFunc adds a tensor whose bytes write streams when WriteTo runs (for tensors too large
// to hold in memory). write must write exactly the size typ and dims give.
func (w *Writer) AddTensorFunc(name string, typ Type, dims []uint64, write func(io.Writer) error) error {
	if write == nil {
		return fmt.Errorf("gguf: tensor %q: nil write function", name)
	}
	t, err := w.addInfo(name, typ, dims)
	if err != nil {
		return err
	}
	t.write = write
	w.names[name] = true
	w.tensors = append(w.tensors, t)
	return nil
}

// addInfo checks a tensor's name, type and dimensions and returns it, sized; the caller
// records the name once the tensor is accepted.
func (w *Writer) addInfo(name string, typ Type, dims []uint64) (pendingTensor, error) {
	switch {
	case len(name) > maxNameLen:
		return pendingTensor{}, fmt.Errorf("gguf: tensor name of %d bytes too long (at most %d)", len(name), maxNameLen)
	case w.names[name]:
		return pendingTensor{}, fmt.Errorf("gguf: tensor %q added twice", name)
	case !typ.Known():
		return pendingTensor{}, fmt.Errorf("gguf: tensor %q: type %d unknown", name, uint32(typ))
	case len(dims) < 1 || len(dims) > maxDims:
		return pendingTensor{}, fmt.Errorf("gguf: tensor %q: %d dimensions (want 1 to %d)", name, len(dims), maxDims)
	}
	rows := int64(1)
	for i, d := range dims {
		if d < 1 || d > maxDim {
			return pendingTensor{}, fmt.Errorf("gguf: tensor %q: dimension %d is %d (want 1 to 2^40)", name, i, d)
		}
		if i > 0 {
			if rows > maxTensorBytes/int64(d) {
				return pendingTensor{}, fmt.Errorf("gguf: tensor %q: dimensions %v overflow", name, dims)
			}
			rows *= int64(d)
		}
	}
	rowBytes, err := typ.RowBytes(int64(dims[0]))
	if err != nil {
		return pendingTensor{}, fmt.Errorf("gguf: tensor %q: %w", name, err)
	}
	if rowBytes > maxTensorBytes/rows {
		return pendingTensor{}, fmt.Errorf("gguf: tensor %q: dimensions %v overflow a size", name, dims)
	}
	return pendingTensor{info: TensorInfo{
		Name: name, Type: typ, Dims: append([]uint64(nil), dims...), Size: rowBytes * rows,
	}}, nil
}

// WriteTo writes the file to dst and returns the bytes written.
func (w *Writer) WriteTo(dst io.Writer) (int64, error) {
	cw := &countingWriter{w: dst}
	bw := bufio.NewWriterSize(cw, 1<<16)
	e := encoder{w: bw}
	e.bytes([]byte(magic))
	e.u32(writtenVersion)
	e.u64(uint64(len(w.tensors)))
	e.u64(uint64(len(w.kvs)))
	for _, kv := range w.kvs {
		e.str(kv.Key)
		e.u32(uint32(kv.Value.typ))
		e.value(kv.Value)
	}
	off := int64(0) // relative to the data section
	for i := range w.tensors {
		t := &w.tensors[i].info
		off = alignUp(off, w.alignment)
		t.Offset = off
		off += t.Size
		e.str(t.Name)
		e.u32(uint32(len(t.Dims)))
		for _, d := range t.Dims {
			e.u64(d)
		}
		e.u32(uint32(t.Type))
		e.u64(uint64(t.Offset))
	}
	e.pad(w.alignment)
	for i := range w.tensors {
		if e.err != nil {
			break
		}
		e.tensor(&w.tensors[i])
		e.pad(w.alignment)
	}
	if e.err == nil {
		e.err = bw.Flush()
	}
	if e.err != nil {
		return cw.n, fmt.Errorf("gguf: write: %w", e.err)
	}
	return cw.n, nil
}

// WriteFile writes the file to path by way of path+".tmp", renamed only once complete, so a
// failure (a full disk, say) never leaves a partial file under the real name.
func (w *Writer) WriteFile(path string) (err error) {
	tmp := path + ".tmp"
	fd, err := os.Create(tmp)
	if err != nil {
		return fmt.Errorf("gguf: %w", err)
	}
	defer func() {
		if err != nil {
			fd.Close()
			os.Remove(tmp)
		}
	}()
	if _, err := w.WriteTo(fd); err != nil {
		return fmt.Errorf("gguf: %s: %w", tmp, errors.Unwrap(err))
	}
	// Sync before renaming: otherwise a crash could leave the new name on a file whose blocks
	// never reached the disk, and a full disk may only show itself here.
	if err := fd.Sync(); err != nil {
		return fmt.Errorf("gguf: sync %s: %w", tmp, err)
	}
	if err := fd.Close(); err != nil {
		return fmt.Errorf("gguf: close %s: %w", tmp, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("gguf: %w", err)
	}
	return nil
}

// encoder writes little-endian fields, remembering the first error and the offset reached.
type encoder struct {
	w   *bufio.Writer
	n   int64
	err error
	le  [8]byte
}

func (e *encoder) bytes(b []byte) {
	if e.err != nil {
		return
	}
	var n int
	n, e.err = e.w.Write(b)
	e.n += int64(n)
}

func (e *encoder) u32(v uint32) {
	binary.LittleEndian.PutUint32(e.le[:], v)
	e.bytes(e.le[:4])
}

func (e *encoder) u64(v uint64) {
	binary.LittleEndian.PutUint64(e.le[:], v)
	e.bytes(e.le[:8])
}

func (e *encoder) str(s string) {
	e.u64(uint64(len(s)))
	if e.err == nil {
		var n int
		n, e.err = e.w.WriteString(s)
		e.n += int64(n)
	}
}

// value writes v's payload (its type is written by the caller: once for a key, once per array).
func (e *encoder) value(v Value) {
	switch v.typ {
	case ValueString:
		e.str(v.str)
		return
	case ValueArray:
		e.u32(uint32(v.elem))
		e.u64(uint64(v.Len()))
		for _, s := range v.strings() {
			e.str(s)
		}
		for _, a := range v.arrays() {
			e.value(a) // no type: the outer array's element type says it
		}
		if e.err == nil {
			var n int
			n, e.err = e.w.WriteString(v.str) // numbers and bools, already little-endian
			e.n += int64(n)
		}
		return
	}
	binary.LittleEndian.PutUint64(e.le[:], v.bits)
	e.bytes(e.le[:v.typ.size()])
}

func (e *encoder) pad(align int64) {
	var zeros [64]byte
	for k := alignUp(e.n, align) - e.n; k > 0 && e.err == nil; k -= int64(len(zeros)) {
		e.bytes(zeros[:min(k, int64(len(zeros)))])
	}
}

func (e *encoder) tensor(t *pendingTensor) {
	if t.write == nil {
		e.bytes(t.data)
		return
	}
	lw := &limitedWriter{w: e.w, left: t.info.Size}
	if err := t.write(lw); err != nil {
		e.err = fmt.Errorf("tensor %q: %w", t.info.Name, err)
		return
	}
	e.n += t.info.Size - lw.left
	if lw.left != 0 {
		e.err = fmt.Errorf("tensor %q: write function wrote %d bytes, want %d", t.info.Name, t.info.Size-lw.left, t.info.Size)
	}
}

// limitedWriter passes on at most left bytes and refuses a write that would exceed them, so a
// tensor function that writes too much is an error, not a corrupt file.
type limitedWriter struct {
	w    io.Writer
	left int64
}

var errTooMuch = errors.New("write function wrote more bytes than the tensor holds")

func (l *limitedWriter) Write(p []byte) (int, error) {
	if int64(len(p)) > l.left {
		return 0, errTooMuch
	}
	n, err := l.w.Write(p)
	l.left -= int64(n)
	return n, err
}

type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}
