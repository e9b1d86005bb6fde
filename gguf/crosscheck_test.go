package gguf

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	ggufparser "github.com/gpustack/gguf-parser-go"

	"github.com/trochilus-llm/trochilus/internal/oracle"
)

// crossCount tallies what a cross-check compared.
type crossCount struct {
	files, keys, elems, tensors int
	trimmed                     int // strings gguf-parser-go trimmed of surrounding white space
}

// TestCrossCheckGGUFParser compares this reader with gguf-parser-go (an independent Go reader)
// on llama.cpp's vocabulary files and on files this package's Writer makes: the same keys in the
// same order, the same values element by element, the same tensors, types, dims and absolute
// offsets.
func TestCrossCheckGGUFParser(t *testing.T) {
	vocab := oracle.VocabFiles(t)
	dir := t.TempDir()
	kvs, ts := everyKind(t)
	var written []string
	for _, a := range []uint32{0, 1, 64, 4096} {
		k := kvs
		if a != 0 {
			k = append(slices.Clone(kvs), KV{"general.alignment", Uint32(a)})
		}
		p := filepath.Join(dir, fmt.Sprintf("written-align%d.gguf", a))
		if err := os.WriteFile(p, writeFile(t, k, ts), 0o644); err != nil {
			t.Fatal(err)
		}
		written = append(written, p)
	}
	p := filepath.Join(dir, "olmoe")
	if err := os.Mkdir(p, 0o755); err != nil {
		t.Fatal(err)
	}
	olmoe, _, _ := olmoeShaped(t, p)
	written = append(written, olmoe)

	var c crossCount
	for _, p := range append(vocab, written...) {
		crossCheck(t, p, &c)
	}
	t.Logf("gguf-parser-go agrees on %d files (%d vocab, %d written): %d keys, %d array elements, %d tensors; %d strings compared after its white-space trim",
		c.files, len(vocab), len(written), c.keys, c.elems, c.tensors, c.trimmed)
	if c.files != len(vocab)+len(written) || c.tensors < 195 || c.keys < 100 {
		t.Errorf("compared too little: %+v", c)
	}
}

func crossCheck(t *testing.T, path string, c *crossCount) {
	name := filepath.Base(path)
	theirs, err := ggufparser.ParseGGUFFile(path, ggufparser.UseMMap())
	if err != nil {
		t.Errorf("%s: gguf-parser-go: %v", name, err)
		return
	}
	mine, err := Open(path)
	if err != nil {
		t.Errorf("%s: %v", name, err)
		return
	}
	defer mine.Close()
	c.files++
	if uint32(theirs.Header.Version) != mine.Version {
		t.Errorf("%s: version %d, gguf-parser-go %d", name, mine.Version, theirs.Header.Version)
	}
	tk := theirs.Header.MetadataKV
	if len(tk) != len(mine.KVs) {
		t.Errorf("%s: %d keys, gguf-parser-go %d", name, len(mine.KVs), len(tk))
		return
	}
	for i, kv := range mine.KVs {
		if strings.TrimSpace(kv.Key) != tk[i].Key {
			t.Errorf("%s: key %d %q, gguf-parser-go %q", name, i, kv.Key, tk[i].Key)
			continue
		}
		if d := sameAsParser(kv.Value, uint32(tk[i].ValueType), tk[i].Value, c); d != "" {
			t.Errorf("%s: key %q: %s", name, kv.Key, d)
		}
		c.keys++
	}
	if len(theirs.TensorInfos) != len(mine.Tensors) {
		t.Errorf("%s: %d tensors, gguf-parser-go %d", name, len(mine.Tensors), len(theirs.TensorInfos))
		return
	}
	if theirs.TensorDataStartOffset != mine.DataOffset {
		t.Errorf("%s: data at %d, gguf-parser-go %d", name, mine.DataOffset, theirs.TensorDataStartOffset)
	}
	for i, ti := range mine.Tensors {
		o := theirs.TensorInfos[i]
		abs := theirs.TensorDataStartOffset + int64(o.Offset)
		if ti.Name != o.Name || uint32(ti.Type) != uint32(o.Type) || !slices.Equal(ti.Dims, o.Dimensions) || ti.Offset != abs {
			t.Errorf("%s: tensor %d %q %v %v at %d, gguf-parser-go %q %v %v at %d",
				name, i, ti.Name, ti.Type, ti.Dims, ti.Offset, o.Name, o.Type, o.Dimensions, abs)
		}
		c.tensors++
	}
}

// sameAsParser compares one of our values with gguf-parser-go's (type number, Go value) and
// says how they differ, or "".
func sameAsParser(v Value, typ uint32, theirs any, c *crossCount) string {
	if uint32(v.Type()) != typ {
		return fmt.Sprintf("type %v, gguf-parser-go %d", v.Type(), typ)
	}
	if v.Type() == ValueArray {
		arr, ok := theirs.(ggufparser.GGUFMetadataKVArrayValue)
		if !ok {
			return fmt.Sprintf("gguf-parser-go gave %T for an array", theirs)
		}
		if uint32(arr.Type) != uint32(v.ArrayType()) || arr.Len != uint64(v.Len()) || len(arr.Array) != v.Len() {
			return fmt.Sprintf("array of %d %v, gguf-parser-go %d (%d) of %v", v.Len(), v.ArrayType(), arr.Len, len(arr.Array), arr.Type)
		}
		elems, _ := v.Elems()
		for i, e := range elems {
			if d := sameAsParser(e, uint32(arr.Type), arr.Array[i], c); d != "" {
				return fmt.Sprintf("element %d: %s", i, d)
			}
			c.elems++
		}
		return ""
	}
	var same bool
	switch x := theirs.(type) {
	case uint8, uint16, uint32, uint64:
		u, ok := v.Uint64()
		same = ok && fmt.Sprint(x) == fmt.Sprint(u)
	case int8, int16, int32, int64:
		n, ok := v.Int64()
		same = ok && fmt.Sprint(x) == fmt.Sprint(n)
	case float32:
		f, ok := v.Float64()
		same = ok && math.Float32bits(float32(f)) == math.Float32bits(x)
	case float64:
		f, ok := v.Float64()
		same = ok && math.Float64bits(f) == math.Float64bits(x)
	case bool:
		b, ok := v.Bool()
		same = ok && b == x
	case string:
		// gguf-parser-go trims white space from every string it reads.
		s, ok := v.Str()
		same = ok && strings.TrimSpace(s) == x
		if same && s != x {
			c.trimmed++
		}
	default:
		return fmt.Sprintf("gguf-parser-go gave %T", theirs)
	}
	if !same {
		return fmt.Sprintf("%v, gguf-parser-go %v", v, theirs)
	}
	return ""
}
