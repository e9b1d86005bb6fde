package oracle_test

import (
	"encoding/binary"
	"encoding/json"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/trochilus-llm/trochilus/gguf"
	"github.com/trochilus-llm/trochilus/gguf/quant"
	"github.com/trochilus-llm/trochilus/internal/oracle"
)

// blockCase is one file of raw blocks of a type, as the dequantizer tests share them.
type blockCase struct {
	typ   gguf.Type
	path  string
	raw   []byte
	elems int
}

// scaleFields are the byte offsets of each block's f16 scale fields (d, dmin).
var scaleFields = map[gguf.Type][]int{
	gguf.TypeQ8_0: {0}, gguf.TypeQ4_0: {0}, gguf.TypeQ2_K: {80, 82}, gguf.TypeQ3_K: {108},
	gguf.TypeQ4_K: {0, 2}, gguf.TypeQ5_K: {0, 2}, gguf.TypeQ6_K: {208},
}

// writeRandomBlocks writes, for every type the Python dequantizer supports, random raw data:
// for the float types every 16-bit pattern (F16, BF16) or random bit patterns (F32, NaNs
// included); for block types, half the blocks entirely random bytes (so scales may be NaN,
// infinite or subnormal) and half with finite random f16 scales, which is what real files hold.
func writeRandomBlocks(t *testing.T, dir string) []blockCase {
	t.Helper()
	rng := rand.New(rand.NewPCG(7, 2026))
	var cases []blockCase
	add := func(typ gguf.Type, raw []byte) {
		elems := len(raw) / typ.BlockBytes() * typ.BlockElems()
		p := filepath.Join(dir, typ.String()+".raw")
		if err := os.WriteFile(p, raw, 0o644); err != nil {
			t.Fatal(err)
		}
		cases = append(cases, blockCase{typ, p, raw, elems})
	}
	f32 := make([]byte, 4*65536)
	for i := 0; i < len(f32); i += 4 {
		binary.LittleEndian.PutUint32(f32[i:], rng.Uint32())
	}
	add(gguf.TypeF32, f32)
	for _, typ := range []gguf.Type{gguf.TypeF16, gguf.TypeBF16} {
		raw := make([]byte, 2*(65536+4096))
		for i := 0; i < 65536; i++ {
			binary.LittleEndian.PutUint16(raw[2*i:], uint16(i))
		}
		for i := 65536; i < 65536+4096; i++ {
			binary.LittleEndian.PutUint16(raw[2*i:], uint16(rng.Uint32()))
		}
		add(typ, raw)
	}
	for _, typ := range []gguf.Type{gguf.TypeQ8_0, gguf.TypeQ4_0, gguf.TypeQ2_K, gguf.TypeQ3_K,
		gguf.TypeQ4_K, gguf.TypeQ5_K, gguf.TypeQ6_K} {
		nb := 1 << 18 / typ.BlockElems() // 262144 elements per type
		bs := typ.BlockBytes()
		raw := make([]byte, nb*bs)
		for i := range raw {
			raw[i] = byte(rng.Uint32())
		}
		for b := nb / 2; b < nb; b++ {
			for _, off := range scaleFields[typ] {
				// A finite half: exponent field 0..30 (subnormals and zero included), any sign.
				h := uint16(rng.Uint32()) &^ 0x7C00
				h |= uint16(rng.IntN(31)) << 10
				binary.LittleEndian.PutUint16(raw[b*bs+off:], h)
			}
		}
		add(typ, raw)
	}
	return cases
}

// TestDequantizeMatchesGo checks gguf_reader.py's numpy dequantizers against package quant,
// bit for bit (NaN payloads included), on random blocks of every supported type.
func TestDequantizeMatchesGo(t *testing.T) {
	py := python(t, false)
	dir := t.TempDir()
	cases := writeRandomBlocks(t, dir)
	args := []string{script(t, "gguf_reader.py"), "dequant"}
	for _, c := range cases {
		args = append(args, c.typ.String(), c.path, c.path+".f32")
	}
	runPython(t, py, args...)
	for _, c := range cases {
		got := readFloats[float32](t, c.path+".f32")
		if len(got) != c.elems {
			t.Errorf("%v: numpy wrote %d values, want %d", c.typ, len(got), c.elems)
			continue
		}
		want := make([]float32, c.elems)
		if err := quant.Dequantize(c.typ, c.raw, want); err != nil {
			t.Errorf("%v: Go dequantize: %v", c.typ, err)
			continue
		}
		bad, nans := 0, 0
		for i := range want {
			if want[i] != want[i] {
				nans++
			}
			if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
				if bad == 0 {
					t.Errorf("%v: element %d: numpy %08x, Go %08x", c.typ, i, math.Float32bits(got[i]), math.Float32bits(want[i]))
				}
				bad++
			}
		}
		if bad > 0 {
			t.Errorf("%v: %d of %d elements differ", c.typ, bad, c.elems)
		}
		t.Logf("%-4v %7d elements compared, %d differ (%d NaN)", c.typ, c.elems, bad, nans)
	}
}

// TestDequantizeMatchesGGML checks the numpy dequantizers against ggml's own dequantize_row_*
// and fp16/bf16 row converters (libggml-base.so from the npm package, called through ctypes)
// on the same random blocks, bit for bit, plus all 65536 half and bfloat16 patterns.
func TestDequantizeMatchesGGML(t *testing.T) {
	if runtime.GOOS != "linux" || runtime.GOARCH != "amd64" {
		t.Skipf("the npm package ships libggml-base.so for linux/amd64 only (this is %s/%s)", runtime.GOOS, runtime.GOARCH)
	}
	lib := filepath.Join(oracle.NPM(t, "@node-llama-cpp/linux-x64"), "bins", "linux-x64", "libggml-base.so")
	if _, err := os.Stat(lib); err != nil {
		oracle.Missing(t, lib)
	}
	py := python(t, false)
	dir := t.TempDir()
	cases := writeRandomBlocks(t, dir)
	args := []string{script(t, "ggml_check.py"), lib, "--all-halves"}
	for _, c := range cases {
		args = append(args, c.typ.String(), c.path)
	}
	out := runPython(t, py, args...)
	var report map[string]struct {
		Elements      int            `json:"elements"`
		Mismatches    int            `json:"mismatches"`
		FirstMismatch map[string]any `json:"first_mismatch"`
	}
	if err := json.Unmarshal(out, &report); err != nil {
		t.Fatalf("ggml_check output %q: %v", out, err)
	}
	names, want := []string{"all-F16", "all-BF16"}, map[string]int{"all-F16": 65536, "all-BF16": 65536}
	for _, c := range cases {
		names = append(names, c.typ.String())
		want[c.typ.String()] = c.elems
	}
	for _, name := range names {
		n := want[name]
		r, ok := report[name]
		switch {
		case !ok:
			t.Errorf("%s: not in the report", name)
		case r.Elements != n:
			t.Errorf("%s: ggml compared %d elements, want %d", name, r.Elements, n)
		case r.Mismatches != 0:
			t.Errorf("%s: %d of %d elements differ from ggml; first %v", name, r.Mismatches, r.Elements, r.FirstMismatch)
		default:
			t.Logf("%-8s %7d elements bit-identical to ggml", name, r.Elements)
		}
	}
}
