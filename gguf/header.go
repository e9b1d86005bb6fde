package gguf

import (
	"errors"
	"fmt"
	"io"
)

// Limits on what a header may claim. Each is far above any real model (OLMoE's header holds
// 27 keys and 195 tensors; the largest vocabularies hold a few hundred thousand strings) and
// low enough that a header claiming more is refused before anything is allocated for it.
const (
	maxKVs          = 1 << 20
	maxTensors      = 1 << 20
	maxKeyLen       = 1<<16 - 1 // the GGUF specification's limit on keys
	maxNameLen      = 1<<16 - 1
	maxStringLen    = 64 << 20
	maxArrayLen     = 1 << 24
	maxDepth        = 8       // arrays of arrays of ... at most this deep
	maxNestedValues = 1 << 20 // elements of arrays of arrays, over the whole header
	maxDims         = 4
	maxDim          = 1 << 40
	maxTensorBytes  = 1 << 62
	maxAlignment    = 1 << 16
)

// The format's fixed parts.
const (
	magic          = "GGUF"
	oldestVersion  = 2
	newestVersion  = 3
	writtenVersion = 3
	alignmentKey   = "general.alignment"
	defaultAlign   = 32
	minKVBytes     = 8 + 4 + 1         // key length, value type, a one-byte value
	minTensorBytes = 8 + 4 + 8 + 4 + 8 // name length, n_dims, one dimension, type, offset
)

// headerBufSize is the size of the reads the header is parsed through.
const headerBufSize = 1 << 20

// Bounds on the room reserved from a header's counts before the entries are parsed.
const (
	preallocCap     = 1 << 12
	preallocStrings = 1 << 18
)

// A FormatError reports a malformed file: what is wrong and the byte offset where.
type FormatError struct {
	Path   string // the file, when it was opened by name
	Where  string // the part of the file, e.g. `key 12 ("olmoe.block_count")`
	Offset int64  // the byte offset of the faulty field
	Reason string // what is wrong with it
}

func (e *FormatError) Error() string {
	if e.Path != "" {
		return fmt.Sprintf("gguf: %s: %s at offset %d: %s", e.Path, e.Where, e.Offset, e.Reason)
	}
	return fmt.Sprintf("gguf: %s at offset %d: %s", e.Where, e.Offset, e.Reason)
}

// headerReader reads a file's header front to back through a buffer of positional reads, so a
// header of many small fields costs a few large reads and the file's data is never touched.
type headerReader struct {
	r    io.ReaderAt
	size int64
	pos  int64  // offset of the next byte to read
	buf  []byte // file bytes [bufAt, bufAt+len(buf))
	at   int64
	read int64 // bytes fetched from r, for tests that check only the header is read
}

func newHeaderReader(r io.ReaderAt, size int64) *headerReader {
	return &headerReader{r: r, size: size, buf: make([]byte, 0, min(size, headerBufSize))}
}

func (h *headerReader) left() int64 { return h.size - h.pos }

// errShort means a field runs past the end of the file; the parser says which field.
var errShort = errors.New("short")

// next returns the n bytes at the read position (n at most the buffer's capacity) and moves past
// them; the slice is valid until the next call.
func (h *headerReader) next(n int) ([]byte, error) {
	if int64(n) > h.left() {
		return nil, errShort
	}
	if h.pos < h.at || h.pos+int64(n) > h.at+int64(len(h.buf)) {
		if err := h.fill(n); err != nil {
			return nil, err
		}
	}
	i := int(h.pos - h.at)
	h.pos += int64(n)
	return h.buf[i : i+n], nil
}

// fill refills the buffer from the read position with at least n bytes.
func (h *headerReader) fill(n int) error {
	want := int(min(int64(cap(h.buf)), h.left()))
	if want < n {
		return errShort // cannot happen: callers ask for at most the buffer's capacity
	}
	h.buf = h.buf[:want]
	h.at = h.pos
	if err := readFull(h.r, h.buf, h.pos); err != nil {
		h.buf = h.buf[:0]
		return err
	}
	h.read += int64(want)
	return nil
}

// copyOut returns a new slice holding the n bytes at the read position, which the caller has
// checked lie inside the file; long runs bypass the buffer.
func (h *headerReader) copyOut(n int64) ([]byte, error) {
	if n > h.left() {
		return nil, errShort
	}
	out := make([]byte, n)
	if n <= int64(cap(h.buf)) {
		p, err := h.next(int(n))
		if err != nil {
			return nil, err
		}
		copy(out, p)
		return out, nil
	}
	// Use what the buffer still holds, then read the rest directly.
	k := 0
	if h.pos >= h.at && h.pos < h.at+int64(len(h.buf)) {
		k = copy(out, h.buf[h.pos-h.at:])
	}
	if err := readFull(h.r, out[k:], h.pos+int64(k)); err != nil {
		return nil, err
	}
	h.read += n - int64(k)
	h.pos += n
	return out, nil
}

// readFull reads len(p) bytes at off; a file that ends early (shorter than the size it was
// opened with) is an error, not a short read.
func readFull(r io.ReaderAt, p []byte, off int64) error {
	n, err := r.ReadAt(p, off)
	if n == len(p) {
		return nil
	}
	if err == nil || err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	return fmt.Errorf("read %d bytes at offset %d: %w", len(p), off, err)
}
