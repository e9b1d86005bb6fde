package oracle_test

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	parser "github.com/gpustack/gguf-parser-go"

	"github.com/trochilus-llm/trochilus/gguf"
	"github.com/trochilus-llm/trochilus/gguf/quant"
)

// readerInfo is what `gguf_reader.py info` prints.
type readerInfo struct {
	Version    int   `json:"version"`
	Alignment  int   `json:"alignment"`
	DataOffset int64 `json:"data_offset"`
	Metadata   map[string]struct {
		Type  string          `json:"type"`
		Value json.RawMessage `json:"value"`
	} `json:"metadata"`
	Tensors []struct {
		Name   string   `json:"name"`
		Type   string   `json:"type"`
		Dims   []uint64 `json:"dims"`
		Offset int64    `json:"offset"`
		NBytes int64    `json:"nbytes"`
	} `json:"tensors"`
}

// writeTinyModel writes a tiny OLMoE GGUF with tiny_olmoe.py and returns its path.
func writeTinyModel(t *testing.T, py, dir, name string, args ...string) string {
	t.Helper()
	p := filepath.Join(dir, name+".gguf")
	runPython(t, py, append([]string{script(t, "tiny_olmoe.py"), p}, args...)...)
	return p
}

func readerInfoOf(t *testing.T, py, path string) readerInfo {
	t.Helper()
	out := runPython(t, py, script(t, "gguf_reader.py"), "info", path)
	var info readerInfo
	if err := json.Unmarshal(out, &info); err != nil {
		t.Fatalf("gguf_reader info: %v", err)
	}
	return info
}

// TestReaderMatchesGGUFParser reads one tiny model (every supported tensor type, alignment
// 64) with gguf_reader.py and with gguf-parser-go: header, metadata types and values, tensor
// names, types, dims and absolute offsets must agree, and every tensor gguf_reader dequantizes
// must equal package quant's decoding of the bytes gguf-parser-go locates, bit for bit.
func TestReaderMatchesGGUFParser(t *testing.T) {
	py := python(t, false)
	dir := t.TempDir()
	path := writeTinyModel(t, py, dir, "mixed", "--hidden", "256", "--ff", "256", "--vocab", "64",
		"--experts", "3", "--layers", "2", "--alignment", "64",
		"--types", "embd=Q4_K,output=Q6_K,attn=Q8_0,exps=Q2_K,down=Q3_K,router=BF16,norm=F16")
	// Q5_K and Q4_0 too: a second file, attention in Q5_K, experts in Q4_0.
	path2 := writeTinyModel(t, py, dir, "mixed2", "--hidden", "256", "--ff", "256", "--vocab", "64",
		"--experts", "2", "--used", "1", "--layers", "1", "--types", "attn=Q5_K,exps=Q4_0,down=Q4_0")
	for _, p := range []string{path, path2} {
		compareWithParser(t, py, p)
	}
}

func compareWithParser(t *testing.T, py, path string) {
	info := readerInfoOf(t, py, path)
	pf, err := parser.ParseGGUFFile(path)
	if err != nil {
		t.Fatalf("gguf-parser-go: %v", err)
	}
	if info.Version != int(pf.Header.Version) || info.DataOffset != pf.TensorDataStartOffset {
		t.Errorf("%s: version %d data at %d; gguf-parser-go: version %d data at %d", filepath.Base(path),
			info.Version, info.DataOffset, pf.Header.Version, pf.TensorDataStartOffset)
	}
	if len(info.Metadata) != len(pf.Header.MetadataKV) || len(info.Tensors) != len(pf.TensorInfos) {
		t.Fatalf("%s: %d keys, %d tensors; gguf-parser-go: %d keys, %d tensors", filepath.Base(path),
			len(info.Metadata), len(info.Tensors), len(pf.Header.MetadataKV), len(pf.TensorInfos))
	}
	for _, kv := range pf.Header.MetadataKV {
		m, ok := info.Metadata[kv.Key]
		if !ok {
			t.Errorf("key %s: gguf_reader does not have it", kv.Key)
			continue
		}
		if !strings.EqualFold(m.Type, kv.ValueType.String()) && !(m.Type == "FLOAT32" && kv.ValueType == parser.GGUFMetadataValueTypeFloat32) {
			t.Errorf("key %s: gguf_reader type %s, gguf-parser-go %v", kv.Key, m.Type, kv.ValueType)
		}
		checkMetadataValue(t, kv, m.Value)
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	dump := filepath.Join(t.TempDir(), "dump.f32")
	runPython(t, py, script(t, "gguf_reader.py"), "dump", path, dump)
	values := readFloats[float32](t, dump)
	at, compared := 0, 0
	for i, ti := range pf.TensorInfos {
		mine := info.Tensors[i]
		abs := pf.TensorDataStartOffset + int64(ti.Offset)
		typ := gguf.Type(ti.Type)
		if mine.Name != ti.Name || mine.Type != typ.String() || fmt.Sprint(mine.Dims) != fmt.Sprint(ti.Dimensions) || mine.Offset != abs {
			t.Errorf("tensor %d: gguf_reader %s %s %v @%d; gguf-parser-go %s %v %v @%d",
				i, mine.Name, mine.Type, mine.Dims, mine.Offset, ti.Name, typ, ti.Dimensions, abs)
			continue
		}
		n := 1
		for _, d := range ti.Dimensions {
			n *= int(d)
		}
		nbytes, err := typ.RowBytes(int64(n))
		if err != nil || nbytes != mine.NBytes {
			t.Fatalf("tensor %s: %d bytes (%v); gguf_reader says %d", ti.Name, nbytes, err, mine.NBytes)
		}
		want := make([]float32, n)
		if err := quant.Dequantize(typ, raw[abs:abs+nbytes], want); err != nil {
			t.Fatalf("tensor %s: %v", ti.Name, err)
		}
		if at+n > len(values) {
			t.Fatalf("dump has %d values, tensor %s needs [%d, %d)", len(values), ti.Name, at, at+n)
		}
		for j := range want {
			if math.Float32bits(values[at+j]) != math.Float32bits(want[j]) {
				t.Errorf("tensor %s (%v) element %d: gguf_reader %g, Go %g", ti.Name, typ, j, values[at+j], want[j])
				break
			}
		}
		at += n
		compared += n
	}
	if at != len(values) {
		t.Errorf("dump has %d values, tensors hold %d", len(values), at)
	}
	t.Logf("%s: %d keys, %d tensors, %d values identical to gguf-parser-go + quant.Dequantize",
		filepath.Base(path), len(info.Metadata), len(info.Tensors), compared)
}

// checkMetadataValue compares a scalar or array summary from gguf_reader with gguf-parser-go's.
func checkMetadataValue(t *testing.T, kv parser.GGUFMetadataKV, mine json.RawMessage) {
	t.Helper()
	switch v := kv.Value.(type) {
	case parser.GGUFMetadataKVArrayValue:
		var arr struct {
			ArrayOf string `json:"array_of"`
			Len     uint64 `json:"len"`
		}
		if err := json.Unmarshal(mine, &arr); err != nil || arr.Len != v.Len || !strings.EqualFold(arr.ArrayOf, v.Type.String()) {
			t.Errorf("key %s: gguf_reader %s; gguf-parser-go array of %d %v", kv.Key, mine, v.Len, v.Type)
		}
	case string:
		var s string
		if err := json.Unmarshal(mine, &s); err != nil || s != v {
			t.Errorf("key %s: gguf_reader %s; gguf-parser-go %q", kv.Key, mine, v)
		}
	case bool:
		var b bool
		if err := json.Unmarshal(mine, &b); err != nil || b != v {
			t.Errorf("key %s: gguf_reader %s; gguf-parser-go %v", kv.Key, mine, v)
		}
	default:
		var f float64
		if err := json.Unmarshal(mine, &f); err != nil || fmt.Sprint(f) != fmt.Sprint(toFloat64(v)) {
			t.Errorf("key %s: gguf_reader %s; gguf-parser-go %v", kv.Key, mine, v)
		}
	}
}

func toFloat64(v any) float64 {
	switch x := v.(type) {
	case uint8:
		return float64(x)
	case int8:
		return float64(x)
	case uint16:
		return float64(x)
	case int16:
		return float64(x)
	case uint32:
		return float64(x)
	case int32:
		return float64(x)
	case uint64:
		return float64(x)
	case int64:
		return float64(x)
	case float32:
		return float64(x)
	case float64:
		return x
	}
	return math.NaN()
}

// TestReaderRejectsDamagedFiles feeds gguf_reader.py truncated and corrupted copies of a tiny
// model: each must end with exit status 1 and a one-line "gguf_reader: ..." error naming the
// problem, never a Python traceback.
func TestReaderRejectsDamagedFiles(t *testing.T) {
	py := python(t, false)
	dir := t.TempDir()
	path := writeTinyModel(t, py, dir, "tiny", "--types", "exps=Q8_0")
	good, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	info := readerInfoOf(t, py, path)
	last := info.Tensors[len(info.Tensors)-1]
	firstKeyLen := 24 // magic 4, version 4, two counts 8+8: the first key's length follows
	patched := func(at int, b []byte) []byte {
		c := bytes.Clone(good)
		copy(c[at:], b)
		return c
	}
	u32 := func(v uint32) []byte { return binary.LittleEndian.AppendUint32(nil, v) }
	u64 := func(v uint64) []byte { return binary.LittleEndian.AppendUint64(nil, v) }
	cases := []struct {
		name string
		data []byte
		want string
	}{
		{"empty", nil, "empty file"},
		{"cut in magic", good[:3], "past end of file"},
		{"cut in counts", good[:20], "past end of file"},
		{"cut in metadata", good[:info.DataOffset/3], "past end of file"},
		{"cut before data", good[:info.DataOffset-1], "past end of file"},
		{"cut in last tensor", good[:last.Offset+last.NBytes-1], "run past end of file"},
		{"bad magic", patched(0, []byte("GGUX")), "is not GGUF"},
		{"version 1", patched(4, u32(1)), "version 1 not supported"},
		{"big-endian version", patched(4, u32(3<<24)), "not supported"},
		{"huge tensor count", patched(8, u64(1<<60)), "cannot fit"},
		{"huge key length", patched(firstKeyLen, u64(1<<62)), "past end of file"},
	}
	for _, c := range cases {
		p := filepath.Join(dir, strings.ReplaceAll(c.name, " ", "_")+".gguf")
		if err := os.WriteFile(p, c.data, 0o644); err != nil {
			t.Fatal(err)
		}
		_, stderr, err := tryPython(t, py, script(t, "gguf_reader.py"), "info", p)
		msg := strings.TrimSpace(string(stderr))
		if err == nil {
			t.Errorf("%s: accepted", c.name)
			continue
		}
		if !strings.HasPrefix(msg, "gguf_reader: ") || strings.Contains(msg, "Traceback") || !strings.Contains(msg, c.want) {
			t.Errorf("%s: stderr %q, want a gguf_reader error containing %q", c.name, msg, c.want)
			continue
		}
		t.Logf("%-20s -> %s", c.name, msg)
	}
}
