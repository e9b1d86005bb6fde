package gguf

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/trochilus-llm/trochilus/gguf/internal/ggufbytes"
)

func TestRoundTrip(t *testing.T) {
	kvs, ts := everyKind(t)
	f, data := writeAndRead(t, kvs, ts)
	if f.Version != 3 || f.Alignment != 32 || f.Size() != int64(len(data)) {
		t.Errorf("version %d, alignment %d, size %d", f.Version, f.Alignment, f.Size())
	}
	checkFile(t, f, kvs, ts)
	// The data section is laid out tightly: each tensor at the next aligned offset, and the
	// file ends at the aligned end of the last one (as gguf-py and ggml write it).
	next := f.DataOffset
	for _, ti := range f.Tensors {
		if ti.Offset != alignUp(next, 32) {
			t.Errorf("tensor %q at %d, want %d", ti.Name, ti.Offset, alignUp(next, 32))
		}
		next = ti.Offset + ti.Size
	}
	if int64(len(data)) != alignUp(next, 32) {
		t.Errorf("file is %d bytes, want %d", len(data), alignUp(next, 32))
	}
	t.Logf("%d keys, %d tensors, %d bytes, data at %d", len(f.KVs), len(f.Tensors), len(data), f.DataOffset)
}

// TestVersion2 reads a file built by hand, field by field, as GGUF v2, and checks the Writer
// produces the same bytes (it writes v3, whose little-endian layout is v2's).
func TestVersion2(t *testing.T) {
	tensor := bytesOf(7, 34*2)
	hand := func(version uint32) []byte {
		b := ggufbytes.Header(version, 1, 5)
		b.Key("general.architecture", ggufbytes.String).Str("olmoe")
		b.Key("olmoe.block_count", ggufbytes.Uint32).U32(16)
		b.Key("olmoe.rope.freq_base", ggufbytes.Float32).F32(10000)
		b.Key("tokenizer.ggml.merges", ggufbytes.Array).ArrayHead(ggufbytes.String, 2).Str("Ġ t").Str("h e")
		b.Key("nested", ggufbytes.Array).ArrayHead(ggufbytes.Array, 2).
			ArrayHead(ggufbytes.Int16, 1).U16(0xfffe).
			ArrayHead(ggufbytes.Uint64, 0)
		b.Tensor("blk.0.ffn_gate_inp.weight", []uint64{64, 1}, uint32(TypeQ8_0), 0)
		b.Pad(32).Raw(tensor...).Pad(32)
		return b.Bytes()
	}
	v2 := hand(2)
	f, err := Read(bytes.NewReader(v2), int64(len(v2)))
	if err != nil {
		t.Fatal(err)
	}
	if f.Version != 2 {
		t.Errorf("version %d", f.Version)
	}
	kvs := []KV{
		{"general.architecture", String("olmoe")},
		{"olmoe.block_count", Uint32(16)},
		{"olmoe.rope.freq_base", Float32(10000)},
		{"tokenizer.ggml.merges", Strings([]string{"Ġ t", "h e"})},
		{"nested", mustArray(t, ValueArray, mustArray(t, ValueInt16, Int16(-2)), mustArray(t, ValueUint64))},
	}
	ts := []testTensor{{"blk.0.ffn_gate_inp.weight", TypeQ8_0, []uint64{64, 1}, tensor}}
	checkFile(t, f, kvs, ts)
	if got := writeFile(t, kvs, ts); !bytes.Equal(got, hand(3)) {
		t.Errorf("Writer output (%d bytes) differs from the hand-built v3 file (%d bytes)", len(got), len(hand(3)))
	}
}

func TestAlignments(t *testing.T) {
	_, ts := everyKind(t)
	for _, a := range []uint32{1, 2, 8, 32, 64, 4096, 65536} {
		t.Run(fmt.Sprint(a), func(t *testing.T) {
			kvs := []KV{{"general.architecture", String("x")}, {"general.alignment", Uint32(a)}}
			f, data := writeAndRead(t, kvs, ts)
			if f.Alignment != int64(a) {
				t.Fatalf("alignment %d", f.Alignment)
			}
			checkFile(t, f, kvs, ts)
			// Every byte outside the header and the tensors is zero padding.
			used := make([]bool, len(data))
			for i := range f.DataOffset {
				used[i] = true
			}
			for _, ti := range f.Tensors {
				for i := ti.Offset; i < ti.Offset+ti.Size; i++ {
					used[i] = true
				}
			}
			for i, u := range used {
				if !u && data[i] != 0 {
					t.Fatalf("padding byte %d is %#x", i, data[i])
				}
			}
			if int64(len(data))%int64(a) != 0 {
				t.Errorf("file of %d bytes does not end aligned", len(data))
			}
		})
	}
}

func TestReadTensorAt(t *testing.T) {
	kvs, ts := everyKind(t)
	f, data := writeAndRead(t, kvs, ts)
	// One expert of a stacked [64, 3, 2] Q8_0 tensor is 3 rows of 68 bytes.
	exps, _ := f.Tensor("blk.0.ffn_down_exps.weight")
	expert := make([]byte, 3*68)
	for e := range 2 {
		if err := f.ReadTensorAt(exps, int64(e*len(expert)), expert); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(expert, ts[3].data[e*len(expert):(e+1)*len(expert)]) {
			t.Errorf("expert %d differs", e)
		}
	}
	if err := f.ReadTensorAt(exps, exps.Size, nil); err != nil {
		t.Errorf("empty read at the end: %v", err)
	}
	for _, tc := range []struct {
		off  int64
		n    int
		want string
	}{
		{-1, 1, "range [-1, 0) outside its 408 bytes"},
		{exps.Size, 1, "range [408, 409) outside its 408 bytes"},
		{400, 9, "range [400, 409) outside its 408 bytes"},
		{math.MaxInt64, 2, "outside its 408 bytes"},
	} {
		err := f.ReadTensorAt(exps, tc.off, make([]byte, tc.n))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ReadTensorAt(%d, %d) = %v, want %q", tc.off, tc.n, err, tc.want)
		}
	}
	if err := f.ReadTensor(exps, make([]byte, 10)); err == nil || !strings.Contains(err.Error(), "buffer of 10 bytes for 408 bytes") {
		t.Errorf("ReadTensor short buffer: %v", err)
	}
	forged := TensorInfo{Name: "forged", Type: TypeF32, Dims: []uint64{8}, Offset: int64(len(data)) - 16, Size: 32}
	if err := f.ReadTensor(&forged, make([]byte, 32)); err == nil || !strings.Contains(err.Error(), "outside the file") {
		t.Errorf("ReadTensor of a tensor past the file: %v", err)
	}
}

// TestConcurrentReads reads random ranges of every tensor from many goroutines through one
// File opened from disk.
func TestConcurrentReads(t *testing.T) {
	kvs, ts := everyKind(t)
	path := filepath.Join(t.TempDir(), "c.gguf")
	if err := os.WriteFile(path, writeFile(t, kvs, ts), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	const workers, reads = 16, 300
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(w), 1))
			for range reads {
				i := r.IntN(len(ts))
				ti := &f.Tensors[i]
				off := r.Int64N(ti.Size)
				n := 1 + r.Int64N(ti.Size-off)
				buf := make([]byte, n)
				if err := f.ReadTensorAt(ti, off, buf); err != nil {
					errs <- err
					return
				}
				if !bytes.Equal(buf, ts[i].data[off:off+n]) {
					errs <- fmt.Errorf("tensor %q [%d, %d): bytes differ", ti.Name, off, off+n)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	t.Logf("%d goroutines x %d ranged reads, all equal", workers, reads)
}

func TestGetters(t *testing.T) {
	kvs, _ := everyKind(t)
	kvs = append(kvs, KV{"small.i64", Int64(5)}, KV{"neg.i8", Int8(-3)}, KV{"f64.exact", Float64(0.5)})
	f, _ := writeAndRead(t, kvs, nil)
	if v, err := f.Uint32("u32"); err != nil || v != math.MaxUint32 {
		t.Errorf("Uint32(u32) = %d, %v", v, err)
	}
	if v, err := f.Uint32("small.i64"); err != nil || v != 5 {
		t.Errorf("Uint32(small.i64) = %d, %v", v, err)
	}
	if v, err := f.Uint64("u64"); err != nil || v != math.MaxUint64 {
		t.Errorf("Uint64 = %d, %v", v, err)
	}
	if v, err := f.Int64("neg.i8"); err != nil || v != -3 {
		t.Errorf("Int64(neg.i8) = %d, %v", v, err)
	}
	if v, err := f.Float32("f32"); err != nil || v != 1e-5 {
		t.Errorf("Float32 = %v, %v", v, err)
	}
	if v, err := f.Float32("f64.exact"); err != nil || v != 0.5 {
		t.Errorf("Float32(f64.exact) = %v, %v", v, err)
	}
	if v, err := f.Bool("bool.true"); err != nil || !v {
		t.Errorf("Bool = %v, %v", v, err)
	}
	if v, err := f.Str("string.unicode"); err != nil || !strings.Contains(v, "日本語") {
		t.Errorf("Str = %q, %v", v, err)
	}
	if v, err := f.Strings("strings"); err != nil || len(v) != 4 || v[2] != "Ġthe" {
		t.Errorf("Strings = %q, %v", v, err)
	}
	if v, err := f.Int32s("int32s"); err != nil || len(v) != 4 || v[3] != math.MinInt32 {
		t.Errorf("Int32s = %v, %v", v, err)
	}
	if v, err := f.Uint32s("uint32s"); err != nil || len(v) != 3 || v[2] != math.MaxUint32 {
		t.Errorf("Uint32s = %v, %v", v, err)
	}
	if v, err := f.Float32s("float32s"); err != nil || len(v) != 3 || v[0] != 0.5 {
		t.Errorf("Float32s = %v, %v", v, err)
	}
	for _, tc := range []struct {
		get  func() error
		want string
	}{
		{func() error { _, err := f.Uint32("missing.key"); return err }, `key "missing.key" not found`},
		{func() error { _, err := f.Uint32("u64"); return err }, `key "u64" holds uint64 18446744073709551615, want an integer that fits a uint32`},
		{func() error { _, err := f.Uint32("neg.i8"); return err }, `key "neg.i8" holds int8 -3, want an integer that fits a uint32`},
		{func() error { _, err := f.Uint64("i64"); return err }, `key "i64" holds int64 -9223372036854775808, want a non-negative integer`},
		{func() error { _, err := f.Int64("u64"); return err }, `key "u64" holds uint64 18446744073709551615, want an integer that fits an int64`},
		{func() error { _, err := f.Float32("f64"); return err }, `key "f64" holds float64 -5e-324, want a float32`},
		{func() error { _, err := f.Float32("u8"); return err }, `key "u8" holds uint8 255, want a float32`},
		{func() error { _, err := f.Bool("u8"); return err }, `key "u8" holds uint8 255, want a bool`},
		{func() error { _, err := f.Str("strings"); return err }, `key "strings" holds array of string ["<|endoftext|>" "" "Ġthe" "日本"], want a string`},
		{func() error { _, err := f.Strings("general.architecture"); return err }, `key "general.architecture" holds string "olmoe", want an array of strings`},
		{func() error { _, err := f.Int32s("uint32s"); return err }, `key "uint32s" holds array of uint32 [0 7 4294967295], want an array of integers that fit an int32`},
		{func() error { _, err := f.Uint32s("int32s"); return err }, `want an array of integers that fit a uint32`},
		{func() error { _, err := f.Float32s("f64s"); return err }, `key "f64s" holds array of float64 [3.141592653589793 -Inf], want an array of float32`},
		{func() error { _, err := f.Int64("missing"); return err }, `key "missing" not found`},
	} {
		if err := tc.get(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("got %v, want %q", err, tc.want)
		}
	}
	if _, ok := f.Tensor("missing"); ok {
		t.Error("Tensor found a missing name")
	}
	if _, ok := f.Get("missing"); ok {
		t.Error("Get found a missing key")
	}
}

func TestWriterErrors(t *testing.T) {
	w := NewWriter()
	if err := w.Set("a", Uint8(1)); err != nil {
		t.Fatal(err)
	}
	if err := w.AddTensor("t", TypeF32, []uint64{2}, make([]byte, 8)); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		err  error
		want string
	}{
		{w.Set("a", Uint8(2)), `key "a" set twice`},
		{w.Set(strings.Repeat("k", 1<<16), Uint8(2)), "key of 65536 bytes too long"},
		{w.Set("general.alignment", Int32(64)), "alignment must be a uint32, not int32"},
		{w.Set("general.alignment", Uint32(48)), "alignment 48 is not a power of two"},
		{w.Set("general.alignment", Uint32(1<<17)), "alignment 131072 too large"},
		{w.Set("big", String(strings.Repeat("x", maxStringLen+1))), "string of 67108865 bytes too long"},
		{w.AddTensor("t", TypeF32, []uint64{2}, make([]byte, 8)), `tensor "t" added twice`},
		{w.AddTensor("u", TypeF32, []uint64{2}, make([]byte, 7)), `tensor "u": 7 bytes of data, want 8 for F32 [2]`},
		{w.AddTensor("u", Type(4), []uint64{32}, nil), `tensor "u": type 4 unknown`},
		{w.AddTensor("u", TypeQ8_0, []uint64{33}, nil), "Q8_0: 33 elements is not a whole number of 32-element blocks"},
		{w.AddTensor("u", TypeF32, nil, nil), `tensor "u": 0 dimensions (want 1 to 4)`},
		{w.AddTensor("u", TypeF32, []uint64{1, 1, 1, 1, 1}, nil), "5 dimensions"},
		{w.AddTensor("u", TypeF32, []uint64{4, 0}, nil), "dimension 1 is 0"},
		{w.AddTensor("u", TypeF32, []uint64{1 << 40, 1 << 40, 1 << 30}, nil), "overflow"},
		{w.AddTensorFunc("u", TypeF32, []uint64{4}, nil), "nil write function"},
	} {
		if tc.err == nil || !strings.Contains(tc.err.Error(), tc.want) {
			t.Errorf("got %v, want %q", tc.err, tc.want)
		}
	}
	// A failed call added nothing: the file holds one key and one tensor.
	var buf bytes.Buffer
	if _, err := w.WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	f, err := Read(bytes.NewReader(buf.Bytes()), int64(buf.Len()))
	if err != nil {
		t.Fatal(err)
	}
	if len(f.KVs) != 1 || len(f.Tensors) != 1 || f.Alignment != 32 {
		t.Errorf("%d keys, %d tensors, alignment %d after failed calls", len(f.KVs), len(f.Tensors), f.Alignment)
	}
}

func TestWriterTensorFuncCounts(t *testing.T) {
	for _, tc := range []struct {
		write func(io.Writer) error
		want  string
	}{
		{func(w io.Writer) error { _, err := w.Write(make([]byte, 12)); return err }, `tensor "t": write function wrote 12 bytes, want 16`},
		{func(w io.Writer) error { _, err := w.Write(make([]byte, 20)); return err }, `tensor "t": write function wrote more bytes than the tensor holds`},
		{func(w io.Writer) error { return errors.New("source gone") }, `tensor "t": source gone`},
	} {
		w := NewWriter()
		if err := w.AddTensorFunc("t", TypeF32, []uint64{4}, tc.write); err != nil {
			t.Fatal(err)
		}
		_, err := w.WriteTo(io.Discard)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("got %v, want %q", err, tc.want)
		}
	}
}

// fullDisk accepts limit bytes, then fails as a full disk does.
type fullDisk struct{ limit int }

func (d *fullDisk) Write(p []byte) (int, error) {
	if len(p) > d.limit {
		n := d.limit
		d.limit = 0
		return n, &os.PathError{Op: "write", Path: "model.gguf", Err: syscall.ENOSPC}
	}
	d.limit -= len(p)
	return len(p), nil
}

// everyKindWriter returns a Writer given everyKind's keys and tensors (each through Set and
// AddTensor), and those keys and tensors.
func everyKindWriter(t *testing.T) (*Writer, []KV, []testTensor) {
	t.Helper()
	kvs, ts := everyKind(t)
	w := NewWriter()
	for _, kv := range kvs {
		if err := w.Set(kv.Key, kv.Value); err != nil {
			t.Fatal(err)
		}
	}
	for _, tt := range ts {
		if err := w.AddTensor(tt.name, tt.typ, tt.dims, tt.data); err != nil {
			t.Fatal(err)
		}
	}
	return w, kvs, ts
}

func TestWriteFullDisk(t *testing.T) {
	w, _, _ := everyKindWriter(t)
	n, err := w.WriteTo(&fullDisk{limit: 1000})
	if !errors.Is(err, syscall.ENOSPC) || !strings.Contains(err.Error(), "no space left on device") {
		t.Errorf("WriteTo a full disk: %v", err)
	}
	if n != 1000 {
		t.Errorf("WriteTo reported %d bytes written, want 1000", n)
	}
}

func TestWriteFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "m.gguf")
	w, kvs, ts := everyKindWriter(t)
	if err := w.WriteFile(path); err != nil {
		t.Fatal(err)
	}
	f, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	checkFile(t, f, kvs, ts)
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}

	// A failing write leaves neither the file nor the temporary behind.
	bad := NewWriter()
	bad.AddTensorFunc("t", TypeF32, []uint64{4}, func(io.Writer) error { return errors.New("disk on fire") })
	failed := filepath.Join(dir, "failed.gguf")
	if err := bad.WriteFile(failed); err == nil || !strings.Contains(err.Error(), `tensor "t": disk on fire`) {
		t.Errorf("WriteFile: %v", err)
	}
	for _, p := range []string{failed, failed + ".tmp"} {
		if _, err := os.Stat(p); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s left behind: %v", p, err)
		}
	}
	if err := bad.WriteFile(filepath.Join(dir, "no", "such", "dir.gguf")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("WriteFile into a missing folder: %v", err)
	}
}

func TestOpenErrors(t *testing.T) {
	if _, err := Open(filepath.Join(t.TempDir(), "absent.gguf")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Open of a missing file: %v", err)
	}
	// A reader that fails part-way gives the I/O error, not a format error.
	data := writeFile(t, []KV{{"k", String(strings.Repeat("s", 100))}}, nil)
	_, err := Read(failingReader{data: data, at: 40}, int64(len(data)))
	if err == nil || !strings.Contains(err.Error(), "device unplugged") {
		t.Errorf("Read through a failing reader: %v", err)
	}
	// A file shorter than its stated size is an unexpected EOF.
	_, err = Read(bytes.NewReader(data[:50]), int64(len(data)))
	if !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("Read of a file shorter than its size: %v", err)
	}
	if _, err := Read(bytes.NewReader(nil), -1); err == nil || !strings.Contains(err.Error(), "negative file size -1") {
		t.Errorf("negative size: %v", err)
	}
}

// failingReader serves data up to at, then fails.
type failingReader struct {
	data []byte
	at   int64
}

func (r failingReader) ReadAt(p []byte, off int64) (int, error) {
	if off+int64(len(p)) > r.at {
		return 0, errors.New("device unplugged")
	}
	return copy(p, r.data[off:]), nil
}
