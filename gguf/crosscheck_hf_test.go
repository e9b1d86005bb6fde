package gguf

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/trochilus-llm/trochilus/internal/oracle"
)

// hfDump prints, for each file named on the command line, one JSON line with what
// @huggingface/gguf reads: keys in order with type, element type and value (64-bit integers and
// non-finite floats as strings, which JSON cannot hold), and tensors.
const hfDump = `
const { gguf } = require("@huggingface/gguf");
const enc = (v) => typeof v === "bigint" ? v.toString()
  : typeof v === "number" && !Number.isFinite(v) ? String(v)
  : Array.isArray(v) ? v.map(enc) : v;
(async () => {
  for (const path of process.argv.slice(1)) {
    const { typedMetadata, tensorInfos, tensorDataOffset } = await gguf(path, { allowLocalFile: true, typedMetadata: true });
    const kvs = Object.entries(typedMetadata)
      .filter(([k]) => !["version", "tensor_count", "kv_count"].includes(k))
      .map(([k, t]) => [k, t.type, t.subType ?? -1, enc(t.value)]);
    const tensors = tensorInfos.map((t) => ({ name: t.name, shape: t.shape.map(String), dtype: t.dtype, offset: String(t.offset) }));
    console.log(JSON.stringify({ kvs, tensors, data: String(tensorDataOffset) }));
  }
})().catch((e) => { console.error(e); process.exit(1); });
`

type hfFile struct {
	KVs     [][4]json.RawMessage `json:"kvs"`
	Tensors []struct {
		Name   string   `json:"name"`
		Shape  []string `json:"shape"`
		Dtype  uint32   `json:"dtype"`
		Offset string   `json:"offset"`
	} `json:"tensors"`
	Data string `json:"data"`
}

// TestCrossCheckHuggingFaceGGUF compares this reader with @huggingface/gguf (a JavaScript
// reader) on the same files as the gguf-parser-go check. It compares strings exactly, which
// gguf-parser-go cannot (it trims white space).
func TestCrossCheckHuggingFaceGGUF(t *testing.T) {
	node := oracle.Node(t)
	oracle.NPM(t, "@huggingface/gguf")
	vocab := oracle.VocabFiles(t)
	dir := t.TempDir()
	kvs, ts := everyKind(t)
	// @huggingface/gguf keeps metadata in a JavaScript object, which puts integer-like keys
	// first; no key in these files is one, so file order survives.
	written := []string{filepath.Join(dir, "written.gguf"), filepath.Join(dir, "written-align64.gguf")}
	if err := os.WriteFile(written[0], writeFile(t, kvs, ts), 0o644); err != nil {
		t.Fatal(err)
	}
	k64 := append(slices.Clone(kvs), KV{"general.alignment", Uint32(64)})
	if err := os.WriteFile(written[1], writeFile(t, k64, ts), 0o644); err != nil {
		t.Fatal(err)
	}
	paths := append(slices.Clone(vocab), written...)

	cmd := exec.Command(node, append([]string{"-e", hfDump}, paths...)...)
	cmd.Env = append(os.Environ(), "NODE_PATH="+oracle.NodeModules(t))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node: %v\n%s", err, stderr.Bytes())
	}
	dec := json.NewDecoder(bytes.NewReader(out))
	dec.UseNumber()
	var nKeys, nElems, nTensors, nStrings int
	for _, path := range paths {
		var hf hfFile
		if err := dec.Decode(&hf); err != nil {
			t.Fatalf("%s: decoding node's output: %v", path, err)
		}
		f, err := Open(path)
		if err != nil {
			t.Fatal(err)
		}
		name := filepath.Base(path)
		if len(hf.KVs) != len(f.KVs) {
			t.Errorf("%s: %d keys, @huggingface/gguf %d", name, len(f.KVs), len(hf.KVs))
			f.Close()
			continue
		}
		for i, kv := range f.KVs {
			var key string
			var typ, sub int
			json.Unmarshal(hf.KVs[i][0], &key)
			json.Unmarshal(hf.KVs[i][1], &typ)
			json.Unmarshal(hf.KVs[i][2], &sub)
			if key != kv.Key || typ != int(kv.Value.Type()) || kv.Value.Type() == ValueArray && sub != int(kv.Value.ArrayType()) {
				t.Errorf("%s: key %d %q %v/%v, @huggingface/gguf %q %d/%d", name, i, kv.Key, kv.Value.Type(), kv.Value.ArrayType(), key, typ, sub)
				continue
			}
			var theirs any
			d := json.NewDecoder(bytes.NewReader(hf.KVs[i][3]))
			d.UseNumber()
			if err := d.Decode(&theirs); err != nil {
				t.Fatal(err)
			}
			if diff := sameAsJS(kv.Value, theirs, &nElems, &nStrings); diff != "" {
				t.Errorf("%s: key %q: %s", name, kv.Key, diff)
			}
			nKeys++
		}
		if hf.Data != strconv.FormatInt(f.DataOffset, 10) || len(hf.Tensors) != len(f.Tensors) {
			t.Errorf("%s: %d tensors, data at %d; @huggingface/gguf %d, %s", name, len(f.Tensors), f.DataOffset, len(hf.Tensors), hf.Data)
			f.Close()
			continue
		}
		for i, ti := range f.Tensors {
			h := hf.Tensors[i]
			dims := make([]string, len(ti.Dims))
			for j, d := range ti.Dims {
				dims[j] = strconv.FormatUint(d, 10)
			}
			if h.Name != ti.Name || h.Dtype != uint32(ti.Type) || !slices.Equal(h.Shape, dims) || h.Offset != strconv.FormatInt(ti.Offset-f.DataOffset, 10) {
				t.Errorf("%s: tensor %d %q %v %v at +%d, @huggingface/gguf %+v", name, i, ti.Name, ti.Type, ti.Dims, ti.Offset-f.DataOffset, h)
			}
			nTensors++
		}
		f.Close()
	}
	t.Logf("@huggingface/gguf agrees on %d files: %d keys, %d array elements, %d tensors; %d strings compared exactly (but for a leading U+FEFF, which JavaScript drops)",
		len(paths), nKeys, nElems, nTensors, nStrings)
}

// sameAsJS compares one of our values with its JSON form from the node script.
func sameAsJS(v Value, theirs any, nElems, nStrings *int) string {
	switch v.Type() {
	case ValueArray:
		arr, ok := theirs.([]any)
		if !ok || len(arr) != v.Len() {
			return fmt.Sprintf("array of %d, @huggingface/gguf %T of %d", v.Len(), theirs, len(arr))
		}
		elems, _ := v.Elems()
		for i, e := range elems {
			if d := sameAsJS(e, arr[i], nElems, nStrings); d != "" {
				return fmt.Sprintf("element %d: %s", i, d)
			}
			*nElems++
		}
		return ""
	case ValueString:
		s, _ := v.Str()
		*nStrings++
		// JavaScript's TextDecoder drops a leading byte-order mark (llama-spm's token 30143 is
		// one), so the JS side cannot see it.
		if theirs != s && theirs != strings.TrimPrefix(s, "\ufeff") {
			return fmt.Sprintf("%q, @huggingface/gguf %q", s, theirs)
		}
		return ""
	case ValueBool:
		b, _ := v.Bool()
		if theirs != b {
			return fmt.Sprintf("%v, @huggingface/gguf %v", b, theirs)
		}
		return ""
	case ValueFloat32, ValueFloat64:
		x, _ := v.Float64()
		var y float64
		switch t := theirs.(type) {
		case json.Number:
			y, _ = strconv.ParseFloat(string(t), 64)
		case string: // NaN, Infinity, -Infinity
			y, _ = strconv.ParseFloat(map[string]string{"Infinity": "+Inf", "-Infinity": "-Inf", "NaN": "NaN"}[t], 64)
		}
		if x != y && !(math.IsNaN(x) && math.IsNaN(y)) {
			return fmt.Sprintf("%v, @huggingface/gguf %v", x, theirs)
		}
		return ""
	}
	// Integers: small ones as JSON numbers, 64-bit ones as decimal strings.
	var text string
	if n, ok := v.Int64(); ok {
		text = strconv.FormatInt(n, 10)
	} else {
		u, _ := v.Uint64()
		text = strconv.FormatUint(u, 10)
	}
	if fmt.Sprint(theirs) != text {
		return fmt.Sprintf("%s, @huggingface/gguf %v", text, theirs)
	}
	return ""
}
