package gguf

import (
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/bits"
	"os"
	"slices"
)

// Open opens and parses the GGUF file at path. Only the header is read; tensor bytes are read
// later, on demand, with ReadTensor. Close the File when done.
func Open(path string) (*File, error) {
	fd, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("gguf: %w", err)
	}
	st, err := fd.Stat()
	if err != nil {
		fd.Close()
		return nil, fmt.Errorf("gguf: %w", err)
	}
	f, err := Read(fd, st.Size())
	if err != nil {
		fd.Close()
		if fe, ok := errors.AsType[*FormatError](err); ok {
			named := *fe
			named.Path = path
			return nil, &named
		}
		return nil, fmt.Errorf("gguf: %s: %w", path, err)
	}
	f.closer = fd
	return f, nil
}

// Read parses the header of the GGUF file r, which holds size bytes. Every count, length,
// dimension and offset is checked against size before anything is allocated for it. The File
// keeps r for ReadTensor; Close does not close r.
//
// A malformed file gives a *FormatError naming the fault and its byte offset.
func Read(r io.ReaderAt, size int64) (*File, error) {
	if size < 0 {
		return nil, fmt.Errorf("gguf: negative file size %d", size)
	}
	p := parser{h: newHeaderReader(r, size), kind: "header"}
	f, err := p.file()
	if err != nil {
		return nil, err
	}
	f.r, f.size = r, size
	return f, nil
}

// parser reads a header field by field. It names the part being read, for errors, by kind,
// index and (once read) name, formatted only when an error needs it.
type parser struct {
	h      *headerReader
	kind   string // "header", "key" or "tensor"
	index  int
	name   string
	named  bool
	nested int // elements of arrays of arrays read so far
}

// at sets the part being read: the index-th key or tensor, its name not yet read.
func (p *parser) at(kind string, index int) {
	p.kind, p.index, p.name, p.named = kind, index, "", false
}

// setName records the name of the key or tensor being read.
func (p *parser) setName(name string) { p.name, p.named = name, true }

func (p *parser) where() string {
	switch {
	case p.kind == "header":
		return p.kind
	case p.named:
		return fmt.Sprintf("%s %d (%q)", p.kind, p.index, p.name)
	}
	return fmt.Sprintf("%s %d", p.kind, p.index)
}

// failAt returns a FormatError for the field at offset off.
func (p *parser) failAt(off int64, format string, args ...any) error {
	return &FormatError{Where: p.where(), Offset: off, Reason: fmt.Sprintf(format, args...)}
}

// short turns a read error for a field of n bytes, named what, into the error to return.
func (p *parser) short(err error, what string, n int64) error {
	if err == errShort {
		return p.failAt(p.h.pos, "%s needs %d bytes, only %d left before end of file", what, n, p.h.left())
	}
	return fmt.Errorf("gguf: %s: %s: %w", p.where(), what, err)
}

func (p *parser) u32(what string) (uint32, error) {
	b, err := p.h.next(4)
	if err != nil {
		return 0, p.short(err, what, 4)
	}
	return binary.LittleEndian.Uint32(b), nil
}

func (p *parser) u64(what string) (uint64, error) {
	b, err := p.h.next(8)
	if err != nil {
		return 0, p.short(err, what, 8)
	}
	return binary.LittleEndian.Uint64(b), nil
}

// count reads a count of items, each at least minBytes long, and checks it against limit and
// against what is left of the file.
func (p *parser) count(what string, limit, minBytes int64) (int, error) {
	at := p.h.pos
	n, err := p.u64(what)
	if err != nil {
		return 0, err
	}
	if n > uint64(limit) {
		return 0, p.failAt(at, "%s %d too large (at most %d)", what, n, limit)
	}
	if need := int64(n) * minBytes; need > p.h.left() {
		return 0, p.failAt(at, "%s %d needs at least %d bytes, only %d left before end of file", what, n, need, p.h.left())
	}
	return int(n), nil
}

// str reads a length-prefixed string of at most limit bytes.
func (p *parser) str(what string, limit int64) (string, error) {
	at := p.h.pos
	lb, err := p.h.next(8)
	if err != nil {
		return "", p.short(err, what+" length", 8)
	}
	n := binary.LittleEndian.Uint64(lb)
	if n > uint64(limit) {
		return "", p.failAt(at, "%s length %d too large (at most %d)", what, n, limit)
	}
	if int64(n) > p.h.left() {
		return "", p.failAt(at, "%s of %d bytes runs past end of file (%d bytes left)", what, n, p.h.left())
	}
	if n <= headerBufSize {
		b, err := p.h.next(int(n))
		if err != nil {
			return "", p.short(err, what, int64(n))
		}
		return string(b), nil
	}
	b, err := p.h.copyOut(int64(n))
	if err != nil {
		return "", p.short(err, what, int64(n))
	}
	return string(b), nil
}

func (p *parser) file() (*File, error) {
	b, err := p.h.next(4)
	if err != nil {
		return nil, p.short(err, "magic", 4)
	}
	if string(b) != magic {
		return nil, p.failAt(0, "magic %q is not %q: not a GGUF file", b, magic)
	}
	version, err := p.u32("version")
	if err != nil {
		return nil, err
	}
	if version < oldestVersion || version > newestVersion {
		return nil, p.failAt(4, "version %d unsupported (want %d or %d)", version, oldestVersion, newestVersion)
	}
	nTensors, err := p.count("tensor count", maxTensors, minTensorBytes)
	if err != nil {
		return nil, err
	}
	nKVs, err := p.count("key-value count", maxKVs, minKVBytes)
	if err != nil {
		return nil, err
	}
	if int64(nTensors)*minTensorBytes+int64(nKVs)*minKVBytes > p.h.left() {
		return nil, p.failAt(8, "%d tensors and %d keys need more bytes than the %d left before end of file", nTensors, nKVs, p.h.left())
	}
	// The counts fit the file, but a file of zeros would fit many: reserve room for a modest
	// number and let what is actually parsed grow the rest.
	hintKVs, hintTensors := min(nKVs, preallocCap), min(nTensors, preallocCap)
	f := &File{
		Version:   version,
		Alignment: defaultAlign,
		KVs:       make([]KV, 0, hintKVs),
		Tensors:   make([]TensorInfo, 0, hintTensors),
		kvIndex:   make(map[string]int, hintKVs),
		tensorIdx: make(map[string]int, hintTensors),
	}
	for i := range nKVs {
		if err := p.kv(f, i); err != nil {
			return nil, err
		}
	}
	infoAt := make([]int64, 0, hintTensors) // where each tensor's offset field lies, for errors
	dims := make([]uint64, 0, 3*hintTensors)
	for i := range nTensors {
		if err := p.tensorInfo(f, i, &dims, &infoAt); err != nil {
			return nil, err
		}
	}
	f.DataOffset = alignUp(p.h.pos, f.Alignment)
	if err := p.placeTensors(f, infoAt); err != nil {
		return nil, err
	}
	return f, nil
}

// newName reads a string of at most limit bytes, which becomes the name in p's errors, and fails
// where index holds it already, dup saying (with the index) which item had it first.
func (p *parser) newName(what string, limit int64, index map[string]int, dup string) (string, error) {
	at := p.h.pos
	name, err := p.str(what, limit)
	if err != nil {
		return "", err
	}
	p.setName(name)
	if j, seen := index[name]; seen {
		return "", p.failAt(at, dup, j)
	}
	return name, nil
}

func (p *parser) kv(f *File, i int) error {
	p.at("key", i)
	key, err := p.newName("key", maxKeyLen, f.kvIndex, "duplicate key (also key %d)")
	if err != nil {
		return err
	}
	typeAt := p.h.pos
	t, err := p.u32("value type")
	if err != nil {
		return err
	}
	if !ValueType(t).valid() {
		return p.failAt(typeAt, "value type %d unknown", t)
	}
	v, err := p.value(ValueType(t), 0)
	if err != nil {
		return err
	}
	if key == alignmentKey {
		// ggml reads the alignment as a uint32 and refuses any other type; so do we.
		if v.typ != ValueUint32 {
			return p.failAt(typeAt, "alignment must be a uint32, not %s", v.typ)
		}
		if err := checkAlignment(int64(v.bits)); err != nil {
			return p.failAt(typeAt+4, "%v", err)
		}
		f.Alignment = int64(v.bits)
	}
	f.kvIndex[key] = len(f.KVs)
	f.KVs = append(f.KVs, KV{Key: key, Value: v})
	return nil
}

func checkAlignment(a int64) error {
	if a <= 0 || a&(a-1) != 0 {
		return fmt.Errorf("alignment %d is not a power of two", a)
	}
	if a > maxAlignment {
		return fmt.Errorf("alignment %d too large (at most %d)", a, maxAlignment)
	}
	return nil
}

// value reads a value of type t (already checked to be known); depth counts the arrays it lies in.
func (p *parser) value(t ValueType, depth int) (Value, error) {
	switch t {
	case ValueString:
		s, err := p.str("string", maxStringLen)
		return Value{typ: ValueString, str: s}, err
	case ValueArray:
		return p.array(depth)
	}
	at := p.h.pos
	b, err := p.h.next(t.size())
	if err != nil {
		return Value{}, p.short(err, t.String()+" value", int64(t.size()))
	}
	v := Value{typ: t}
	switch t.size() {
	case 1:
		v.bits = uint64(b[0])
		if t == ValueInt8 {
			v.bits = uint64(int64(int8(b[0])))
		}
		if t == ValueBool && b[0] > 1 {
			return Value{}, p.failAt(at, "bool value %d (want 0 or 1)", b[0])
		}
	case 2:
		v.bits = uint64(binary.LittleEndian.Uint16(b))
		if t == ValueInt16 {
			v.bits = uint64(int64(int16(v.bits)))
		}
	case 4:
		v.bits = uint64(binary.LittleEndian.Uint32(b))
		if t == ValueInt32 {
			v.bits = uint64(int64(int32(v.bits)))
		}
	case 8:
		v.bits = binary.LittleEndian.Uint64(b)
	}
	return v, nil
}

func (p *parser) array(depth int) (Value, error) {
	at := p.h.pos
	if depth >= maxDepth {
		return Value{}, p.failAt(at, "arrays nested deeper than %d", maxDepth)
	}
	et, err := p.u32("array element type")
	if err != nil {
		return Value{}, err
	}
	elem := ValueType(et)
	if !elem.valid() {
		return Value{}, p.failAt(at, "array element type %d unknown", et)
	}
	n, err := p.count("array length", maxArrayLen, elem.minSize())
	if err != nil {
		return Value{}, err
	}
	v := Value{typ: ValueArray, elem: elem}
	switch elem {
	case ValueString:
		// n fits the file, but a run of zeros fits many empty strings: reserve room for a
		// vocabulary's worth (a few MiB at most) and let what is actually read grow the rest.
		s := make([]string, 0, min(n, preallocStrings))
		for range n {
			e, err := p.str("string", maxStringLen)
			if err != nil {
				return Value{}, err
			}
			s = append(s, e)
		}
		v.list = s
	case ValueArray:
		if p.nested += n; p.nested > maxNestedValues {
			return Value{}, p.failAt(at, "more than %d elements in arrays of arrays", maxNestedValues)
		}
		a := make([]Value, 0, min(n, preallocCap))
		for range n {
			e, err := p.array(depth + 1)
			if err != nil {
				return Value{}, err
			}
			a = append(a, e)
		}
		v.list = a
	default:
		dataAt := p.h.pos
		b, err := p.h.copyOut(int64(n) * int64(elem.size()))
		if err != nil {
			return Value{}, p.short(err, "array", int64(n)*int64(elem.size()))
		}
		if elem == ValueBool {
			if i := slices.IndexFunc(b, func(c byte) bool { return c > 1 }); i >= 0 {
				return Value{}, p.failAt(dataAt+int64(i), "array element %d: bool value %d (want 0 or 1)", i, b[i])
			}
		}
		v.str = string(b)
	}
	return v, nil
}

// tensorInfo reads tensor i's info: name, dimensions, type and offset relative to the data
// section (made absolute later by placeTensors). dims is one shared backing array for every
// tensor's dimensions.
func (p *parser) tensorInfo(f *File, i int, dims *[]uint64, infoAt *[]int64) error {
	p.at("tensor", i)
	name, err := p.newName("name", maxNameLen, f.tensorIdx, "duplicate tensor name (also tensor %d)")
	if err != nil {
		return err
	}
	ndAt := p.h.pos
	nd, err := p.u32("dimension count")
	if err != nil {
		return err
	}
	if nd < 1 || nd > maxDims {
		return p.failAt(ndAt, "%d dimensions (want 1 to %d)", nd, maxDims)
	}
	start := len(*dims)
	rows := uint64(1)
	for d := range nd {
		at := p.h.pos
		n, err := p.u64("dimension")
		if err != nil {
			return err
		}
		if n < 1 || n > maxDim {
			return p.failAt(at, "dimension %d is %d (want 1 to 2^40)", d, n)
		}
		if d > 0 {
			hi, lo := bits.Mul64(rows, n)
			if hi != 0 || lo > maxTensorBytes {
				return p.failAt(at, "dimensions overflow: more than 2^62 rows")
			}
			rows = lo
		}
		*dims = append(*dims, n)
	}
	typeAt := p.h.pos
	t, err := p.u32("type")
	if err != nil {
		return err
	}
	typ := Type(t)
	if !typ.Known() {
		return p.failAt(typeAt, "type %d unknown", t)
	}
	ne0 := (*dims)[start]
	if ne0%uint64(typ.BlockElems()) != 0 {
		return p.failAt(typeAt, "row of %d elements is not a whole number of %d-element %s blocks", ne0, typ.BlockElems(), typ)
	}
	rowBytes, err := typ.RowBytes(int64(ne0))
	if err != nil {
		return p.failAt(typeAt, "%v", err)
	}
	hi, size := bits.Mul64(uint64(rowBytes), rows)
	if hi != 0 || size > maxTensorBytes {
		return p.failAt(typeAt, "%d rows of %d bytes overflow a size", rows, rowBytes)
	}
	offAt := p.h.pos
	off, err := p.u64("offset")
	if err != nil {
		return err
	}
	if off > uint64(p.h.size) {
		return p.failAt(offAt, "offset %d runs past end of file (size %d)", off, p.h.size)
	}
	*infoAt = append(*infoAt, offAt)
	f.tensorIdx[name] = len(f.Tensors)
	end := len(*dims)
	f.Tensors = append(f.Tensors, TensorInfo{
		Name:   name,
		Type:   typ,
		Dims:   (*dims)[start:end:end],
		Offset: int64(off),
		Size:   int64(size),
	})
	return nil
}

// placeTensors makes tensor offsets absolute and checks every tensor is aligned, inside the
// file and clear of every other.
func (p *parser) placeTensors(f *File, infoAt []int64) error {
	for i := range f.Tensors {
		t := &f.Tensors[i]
		p.at("tensor", i)
		p.setName(t.Name)
		if t.Offset%f.Alignment != 0 {
			return p.failAt(infoAt[i], "offset %d is not a multiple of the alignment %d", t.Offset, f.Alignment)
		}
		t.Offset += f.DataOffset
		if t.Offset > p.h.size || t.Size > p.h.size-t.Offset {
			return p.failAt(infoAt[i], "data [%d, %d) runs past end of file (size %d)", t.Offset, t.Offset+t.Size, p.h.size)
		}
	}
	order := make([]int, len(f.Tensors))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int { return cmp.Compare(f.Tensors[a].Offset, f.Tensors[b].Offset) })
	for k := 1; k < len(order); k++ {
		prev, cur := &f.Tensors[order[k-1]], &f.Tensors[order[k]]
		if cur.Offset < prev.Offset+prev.Size {
			i := order[k]
			p.at("tensor", i)
			p.setName(cur.Name)
			return p.failAt(infoAt[i], "data [%d, %d) overlaps tensor %d (%q) at [%d, %d)",
				cur.Offset, cur.Offset+cur.Size, order[k-1], prev.Name, prev.Offset, prev.Offset+prev.Size)
		}
	}
	return nil
}

// alignUp rounds n up to a multiple of a, a power of two.
func alignUp(n, a int64) int64 { return (n + a - 1) &^ (a - 1) }
