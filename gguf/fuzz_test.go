package gguf

import (
	"bytes"
	"cmp"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// FuzzRead feeds arbitrary bytes to Read. A malformed file must give a FormatError at an offset
// inside the file, never a panic or a huge allocation; a file Read accepts must keep every
// promise Read makes (tensors aligned, inside the file, apart) and survive a round trip through
// the Writer unchanged.
func FuzzRead(f *testing.F) {
	kvs, ts := everyKind(f)
	f.Add(writeFile(f, kvs, ts))
	f.Add(writeFile(f, kvs[:3], ts[3:5]))
	f.Add(writeFile(f, []KV{{"general.alignment", Uint32(1)}}, ts[6:]))
	f.Add(writeFile(f, nil, nil))
	paths, _ := filepath.Glob(filepath.Join(corpusDir, "*.gguf"))
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		file, err := Read(bytes.NewReader(data), int64(len(data)))
		if err != nil {
			var fe *FormatError
			if !errors.As(err, &fe) {
				t.Fatalf("error is not a FormatError: %v", err)
			}
			if fe.Offset < 0 || fe.Offset > int64(len(data)) || fe.Reason == "" {
				t.Fatalf("error at offset %d of %d bytes: %v", fe.Offset, len(data), err)
			}
			return
		}
		checkPromises(t, file, data)
		roundTrip(t, file)
	})
}

// checkPromises checks what Read promises of a file it accepts.
func checkPromises(t *testing.T, f *File, data []byte) {
	if f.Version < 2 || f.Version > 3 || f.Alignment < 1 || f.Alignment&(f.Alignment-1) != 0 {
		t.Fatalf("version %d, alignment %d", f.Version, f.Alignment)
	}
	if f.DataOffset%f.Alignment != 0 {
		t.Fatalf("data offset %d not aligned to %d", f.DataOffset, f.Alignment)
	}
	byOffset := slices.Clone(f.Tensors)
	slices.SortFunc(byOffset, func(a, b TensorInfo) int { return cmp.Compare(a.Offset, b.Offset) })
	end := f.DataOffset
	for i := range byOffset {
		ti := &byOffset[i]
		if ti.Offset < end || ti.Size <= 0 || ti.Offset+ti.Size > int64(len(data)) || (ti.Offset-f.DataOffset)%f.Alignment != 0 {
			t.Fatalf("tensor %q at [%d, %d) after %d in a %d-byte file", ti.Name, ti.Offset, ti.Offset+ti.Size, end, len(data))
		}
		end = ti.Offset + ti.Size
		buf := make([]byte, ti.Size)
		if err := f.ReadTensor(ti, buf); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(buf, data[ti.Offset:end]) {
			t.Fatalf("tensor %q: ReadTensor differs from the file", ti.Name)
		}
	}
	for _, kv := range f.KVs {
		_ = kv.Value.String() // must not panic
		if kv.Value.Type() == ValueArray {
			if el, ok := kv.Value.Elems(); !ok || len(el) != kv.Value.Len() {
				t.Fatalf("key %q: Elems gave %d of %d", kv.Key, len(el), kv.Value.Len())
			}
		}
	}
}

// roundTrip writes f's metadata and tensors with a Writer and checks Read gives them back.
func roundTrip(t *testing.T, f *File) {
	w := NewWriter()
	for _, kv := range f.KVs {
		if err := w.Set(kv.Key, kv.Value); err != nil {
			t.Fatalf("Writer refused what Read accepted: %v", err)
		}
	}
	want := make([]testTensor, len(f.Tensors))
	for i, ti := range f.Tensors {
		buf := make([]byte, ti.Size)
		if err := f.ReadTensor(&ti, buf); err != nil {
			t.Fatal(err)
		}
		want[i] = testTensor{ti.Name, ti.Type, ti.Dims, buf}
		if err := w.AddTensor(ti.Name, ti.Type, ti.Dims, buf); err != nil {
			t.Fatalf("Writer refused what Read accepted: %v", err)
		}
	}
	var out bytes.Buffer
	if _, err := w.WriteTo(&out); err != nil {
		t.Fatal(err)
	}
	g, err := Read(bytes.NewReader(out.Bytes()), int64(out.Len()))
	if err != nil {
		t.Fatalf("Read refused what the Writer wrote: %v", err)
	}
	checkFile(t, g, f.KVs, want)
}
