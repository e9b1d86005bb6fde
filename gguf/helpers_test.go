package gguf

import (
	"bytes"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// sameValue reports how a differs from b, or "" when they are the same value (floats compared
// bit for bit).
func sameValue(a, b Value) string {
	if a.typ != b.typ {
		return fmt.Sprintf("type %v != %v", a.typ, b.typ)
	}
	if a.typ != ValueArray {
		if a.bits != b.bits || a.str != b.str {
			return fmt.Sprintf("%v != %v", a, b)
		}
		return ""
	}
	if a.elem != b.elem || a.Len() != b.Len() {
		return fmt.Sprintf("array of %d %v != array of %d %v", a.Len(), a.elem, b.Len(), b.elem)
	}
	if a.str != b.str || !slices.Equal(a.strings(), b.strings()) {
		return fmt.Sprintf("%v != %v", a, b)
	}
	for i, e := range a.arrays() {
		if d := sameValue(e, b.arrays()[i]); d != "" {
			return fmt.Sprintf("element %d: %s", i, d)
		}
	}
	return ""
}

// bytesOf returns n deterministic pseudo-random bytes.
func bytesOf(seed uint64, n int) []byte {
	r := rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15))
	p := make([]byte, n)
	for i := range p {
		p[i] = byte(r.Uint32())
	}
	return p
}

func mustArray(t testing.TB, elem ValueType, elems ...Value) Value {
	t.Helper()
	v, err := Array(elem, elems)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// testTensor is a tensor a test writes and later expects to read back.
type testTensor struct {
	name string
	typ  Type
	dims []uint64
	data []byte
}

// everyKind returns metadata of every value type (extremes, unicode, empty and nested arrays)
// and tensors of several types and awkward sizes.
func everyKind(t testing.TB) ([]KV, []testTensor) {
	kvs := []KV{
		{"general.architecture", String("olmoe")},
		{"u8", Uint8(math.MaxUint8)},
		{"i8", Int8(math.MinInt8)},
		{"u16", Uint16(math.MaxUint16)},
		{"i16", Int16(math.MinInt16)},
		{"u32", Uint32(math.MaxUint32)},
		{"i32", Int32(math.MinInt32)},
		{"f32", Float32(1e-5)},
		{"f32.nan", Float32(math.Float32frombits(0x7fc00123))},
		{"bool.true", Bool(true)},
		{"bool.false", Bool(false)},
		{"u64", Uint64(math.MaxUint64)},
		{"i64", Int64(math.MinInt64)},
		{"f64", Float64(-math.SmallestNonzeroFloat64)},
		{"string.empty", String("")},
		{"string.unicode", String("naïve 日本語 🐦 \x00 nul")},
		{"ключ.名前.🔑", String("unicode key")},
		{"", String("empty key")},
		{"strings", Strings([]string{"<|endoftext|>", "", "Ġthe", "日本"})},
		{"strings.empty", Strings(nil)},
		{"int32s", Int32s([]int32{1, -1, math.MaxInt32, math.MinInt32})},
		{"uint32s", Uint32s([]uint32{0, 7, math.MaxUint32})},
		{"float32s", Float32s([]float32{0.5, -0, float32(math.Inf(1))})},
		{"float32s.empty", Float32s(nil)},
		{"u8s", mustArray(t, ValueUint8, Uint8(0), Uint8(255))},
		{"i8s", mustArray(t, ValueInt8, Int8(-1), Int8(1))},
		{"u16s", mustArray(t, ValueUint16, Uint16(65535))},
		{"i16s", mustArray(t, ValueInt16, Int16(-300), Int16(300), Int16(0))},
		{"bools", mustArray(t, ValueBool, Bool(true), Bool(false), Bool(true))},
		{"u64s", mustArray(t, ValueUint64, Uint64(1<<63), Uint64(0))},
		{"i64s", mustArray(t, ValueInt64, Int64(-1<<63))},
		{"f64s", mustArray(t, ValueFloat64, Float64(math.Pi), Float64(math.Inf(-1)))},
		{"arrays", mustArray(t, ValueArray,
			Strings([]string{"a", "b"}),
			Int32s([]int32{3}),
			mustArray(t, ValueArray, Float32s([]float32{1}), mustArray(t, ValueBool)),
			mustArray(t, ValueUint8),
		)},
		{"arrays.empty", mustArray(t, ValueArray)},
	}
	ts := []testTensor{
		{"token_embd.weight", TypeF32, []uint64{3, 2}, nil},
		{"odd.f16", TypeF16, []uint64{5}, nil},
		{"blk.0.attn_norm.weight", TypeBF16, []uint64{4, 1, 2}, nil},
		{"blk.0.ffn_down_exps.weight", TypeQ8_0, []uint64{64, 3, 2}, nil},
		{"q4k", TypeQ4_K, []uint64{256, 2}, nil},
		{"q6k", TypeQ6_K, []uint64{256, 1, 1, 2}, nil},
		{"i8.seven", TypeI8, []uint64{7}, nil},
		{"張量", TypeQ4_0, []uint64{32, 3}, nil},
	}
	for i := range ts {
		rb, err := ts[i].typ.RowBytes(int64(ts[i].dims[0]))
		if err != nil {
			t.Fatal(err)
		}
		n := rb
		for _, d := range ts[i].dims[1:] {
			n *= int64(d)
		}
		ts[i].data = bytesOf(uint64(i), int(n))
	}
	return kvs, ts
}

// writeFile writes kvs and tensors with a Writer (the first tensor through AddTensorFunc, so
// streaming is covered too) and returns the file's bytes.
func writeFile(t testing.TB, kvs []KV, ts []testTensor) []byte {
	t.Helper()
	w := NewWriter()
	for _, kv := range kvs {
		if err := w.Set(kv.Key, kv.Value); err != nil {
			t.Fatal(err)
		}
	}
	for i, tt := range ts {
		var err error
		if i == 0 {
			data := tt.data
			err = w.AddTensorFunc(tt.name, tt.typ, tt.dims, func(dst io.Writer) error {
				// Two writes, to check the byte count adds up across calls.
				if _, err := dst.Write(data[:1]); err != nil {
					return err
				}
				_, err := dst.Write(data[1:])
				return err
			})
		} else {
			err = w.AddTensor(tt.name, tt.typ, tt.dims, tt.data)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	var buf bytes.Buffer
	n, err := w.WriteTo(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if n != int64(buf.Len()) {
		t.Fatalf("WriteTo reported %d bytes, wrote %d", n, buf.Len())
	}
	return buf.Bytes()
}

// writeAndRead writes kvs and tensors as writeFile does and reads the bytes back: the file as
// Read parses it, and its bytes.
func writeAndRead(t testing.TB, kvs []KV, ts []testTensor) (*File, []byte) {
	t.Helper()
	data := writeFile(t, kvs, ts)
	f, err := Read(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	return f, data
}

// checkFile checks f holds exactly kvs and ts, tensor bytes included.
func checkFile(t testing.TB, f *File, kvs []KV, ts []testTensor) {
	t.Helper()
	if len(f.KVs) != len(kvs) {
		t.Fatalf("%d keys, want %d", len(f.KVs), len(kvs))
	}
	for i, kv := range kvs {
		if f.KVs[i].Key != kv.Key {
			t.Errorf("key %d = %q, want %q", i, f.KVs[i].Key, kv.Key)
		}
		if d := sameValue(f.KVs[i].Value, kv.Value); d != "" {
			t.Errorf("key %q: %s", kv.Key, d)
		}
		if v, ok := f.Get(kv.Key); !ok || sameValue(v, kv.Value) != "" {
			t.Errorf("Get(%q) = %v, %v", kv.Key, v, ok)
		}
	}
	if len(f.Tensors) != len(ts) {
		t.Fatalf("%d tensors, want %d", len(f.Tensors), len(ts))
	}
	if f.DataOffset%f.Alignment != 0 {
		t.Errorf("data offset %d not aligned to %d", f.DataOffset, f.Alignment)
	}
	for i, tt := range ts {
		got := &f.Tensors[i]
		if got.Name != tt.name || got.Type != tt.typ || !slices.Equal(got.Dims, tt.dims) || got.Size != int64(len(tt.data)) {
			t.Errorf("tensor %d = %q %v %v %d bytes, want %q %v %v %d bytes",
				i, got.Name, got.Type, got.Dims, got.Size, tt.name, tt.typ, tt.dims, len(tt.data))
			continue
		}
		elems := uint64(1)
		for _, d := range tt.dims {
			elems *= d
		}
		if got.Elems() != elems {
			t.Errorf("tensor %q: Elems = %d, want %d", tt.name, got.Elems(), elems)
		}
		if (got.Offset-f.DataOffset)%f.Alignment != 0 || got.Offset < f.DataOffset {
			t.Errorf("tensor %q at %d: not aligned to %d after data offset %d", tt.name, got.Offset, f.Alignment, f.DataOffset)
		}
		if p, ok := f.Tensor(tt.name); !ok || p != got {
			t.Errorf("Tensor(%q) = %v, %v", tt.name, p, ok)
		}
		buf := make([]byte, got.Size)
		if err := f.ReadTensor(got, buf); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(buf, tt.data) {
			t.Errorf("tensor %q: bytes differ", tt.name)
		}
	}
}
