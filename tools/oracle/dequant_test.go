package oracle_test

import (
	"encoding/binary"
	"encoding/json"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strings"
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

// writeRandomBlocks writes, for the ten types the Python dequantizer first supported, random raw data:
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

// checkAgainstGo runs gguf_reader.py's dequant on every case and compares its floats with
// package quant's, bit for bit (NaN payloads included).
func checkAgainstGo(t *testing.T, py string, cases []blockCase) {
	t.Helper()
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
		t.Logf("%-7v %8d elements compared, %d differ (%d NaN)", c.typ, c.elems, bad, nans)
	}
}

// TestDequantizeMatchesGo checks gguf_reader.py's numpy dequantizers against package quant,
// bit for bit (NaN payloads included), on random blocks of every type that needs no table out
// of libggml, and on the structured blocks of the newer ones.
func TestDequantizeMatchesGo(t *testing.T) {
	py := python(t, false)
	dir := t.TempDir()
	cases := writeRandomBlocks(t, dir)
	more, _ := writeLayoutBlocks(t, dir, layoutsWith(false), 4096)
	checkAgainstGo(t, py, append(cases, more...))
}

// TestDequantizeTableTypesMatchGo is TestDequantizeMatchesGo for the types whose tables
// gguf_reader reads out of libggml-base.so (the IQ grids, IQ4_NL's levels): it needs the library.
func TestDequantizeTableTypesMatchGo(t *testing.T) {
	lib := libggmlBase(t)
	py := python(t, false)
	t.Setenv("TROCHILUS_LIBGGML_BASE", lib)
	cases, _ := writeLayoutBlocks(t, t.TempDir(), layoutsWith(true), 4096)
	checkAgainstGo(t, py, cases)
}

// TestDequantizeWithoutLibggml checks that gguf_reader.py dequantizes the types that need no
// table without libggml-base.so, and that a type that needs one stops with a one-line error
// naming the library it looked for.
func TestDequantizeWithoutLibggml(t *testing.T) {
	py := python(t, false)
	dir := t.TempDir()
	missing := filepath.Join(dir, "nowhere", "libggml-base.so")
	t.Setenv("TROCHILUS_LIBGGML_BASE", missing)
	cases, _ := writeLayoutBlocks(t, dir, []blockLayout{layoutOf(gguf.TypeQ4_1), layoutOf(gguf.TypeMXFP4)}, 64)
	checkAgainstGo(t, py, cases)
	iq, _ := writeLayoutBlocks(t, dir, []blockLayout{layoutOf(gguf.TypeIQ1_M)}, 1)
	_, stderr, err := tryPython(t, py, script(t, "gguf_reader.py"), "dequant", "IQ1_M", iq[0].path, iq[0].path+".f32")
	msg := strings.TrimSpace(string(stderr))
	if err == nil || strings.Count(msg, "\n") != 0 || !strings.HasPrefix(msg, "gguf_reader: ") || !strings.Contains(msg, missing) {
		t.Fatalf("IQ1_M without libggml: err %v, stderr %q; want exit status 1 and one line naming %s", err, msg, missing)
	}
	t.Logf("IQ1_M without libggml: %s", msg)
}

// libggmlBase returns the pinned npm package's libggml-base.so, or skips/fails (internal/oracle).
func libggmlBase(t *testing.T) string {
	t.Helper()
	if runtime.GOOS != "linux" || runtime.GOARCH != "amd64" {
		t.Skipf("the npm package ships libggml-base.so for linux/amd64 only (this is %s/%s)", runtime.GOOS, runtime.GOARCH)
	}
	lib := filepath.Join(oracle.NPM(t, "@node-llama-cpp/linux-x64"), "bins", "linux-x64", "libggml-base.so")
	if _, err := os.Stat(lib); err != nil {
		oracle.Missing(t, lib)
	}
	return lib
}

// ggmlBlocks is how many random blocks of each newer type TestDequantizeMatchesGGML compares
// (half entirely random, half with finite f16 scales), beside the structured ones.
const ggmlBlocks = 100000

// TestDequantizeMatchesGGML checks the numpy dequantizers against ggml's own dequantize_row_*
// and fp16/bf16 row converters (libggml-base.so from the npm package, called through ctypes)
// bit for bit: the same random blocks of the ten first types as TestDequantizeMatchesGo, plus
// all 65536 half and bfloat16 patterns; and for every newer type 100000 random blocks and the
// structured ones (special f16 scales, every grid index, sign pattern and sub-block scale).
// The tables gguf_reader derives from their definitions are compared with libggml's copies.
func TestDequantizeMatchesGGML(t *testing.T) {
	lib := libggmlBase(t)
	py := python(t, false)
	dir := t.TempDir()
	cases := writeRandomBlocks(t, dir)
	more, structured := writeLayoutBlocks(t, dir, newLayouts, ggmlBlocks)
	cases = append(cases, more...)
	args := []string{script(t, "ggml_check.py"), lib, "--all-halves", "--tables"}
	for _, c := range cases {
		args = append(args, c.typ.String(), c.path)
	}
	out := runPython(t, py, args...)
	var report map[string]struct {
		Blocks        int            `json:"blocks"`
		Elements      int            `json:"elements"`
		Mismatches    int            `json:"mismatches"`
		NaNBitsDiffer int            `json:"nan_bits_differ"`
		NaNs          int            `json:"nans"`
		FirstMismatch map[string]any `json:"first_mismatch"`
	}
	if err := json.Unmarshal(out, &report); err != nil {
		t.Fatalf("ggml_check output %q: %v", out, err)
	}
	names := []string{"all-F16", "all-BF16", "table-ksigns_iq2xs", "table-kvalues_fp4"}
	want := map[string]int{"all-F16": 65536, "all-BF16": 65536, "table-ksigns_iq2xs": 128, "table-kvalues_fp4": 16}
	for _, c := range cases {
		names = append(names, c.typ.String())
		want[c.typ.String()] = c.elems
	}
	hasNaN := map[string]bool{}
	for _, l := range newLayouts {
		hasNaN[l.typ.String()] = len(l.halves) > 0 || l.setD != nil
	}
	if len(report) != len(names) {
		t.Errorf("the report has %d entries, want %d", len(report), len(names))
	}
	for _, name := range names {
		n := want[name]
		r, ok := report[name]
		switch {
		case !ok:
			t.Errorf("%s: not in the report", name)
		case r.Elements != n:
			t.Errorf("%s: ggml compared %d elements, want %d", name, r.Elements, n)
		case r.Mismatches != 0 || r.NaNBitsDiffer != 0:
			t.Errorf("%s: %d of %d elements differ from ggml (and %d NaNs differ in sign or payload); first %v",
				name, r.Mismatches, r.Elements, r.NaNBitsDiffer, r.FirstMismatch)
		case hasNaN[name] && r.NaNs == 0:
			t.Errorf("%s: no NaN among ggml's %d elements: the NaN scales were not exercised", name, r.Elements)
		default:
			typ, _ := gguf.TypeByName(name)
			if ns, ok := structured[typ]; ok {
				t.Logf("%-18s %7d blocks (%d random, %d structured) %9d elements (%d NaN) bit-identical to ggml",
					name, r.Blocks, r.Blocks-ns, ns, r.Elements, r.NaNs)
			} else {
				t.Logf("%-18s %9d elements bit-identical to ggml", name, r.Elements)
			}
		}
	}
}

// The types beyond the ten above: their block layouts, as the structured blocks need them.
type blockLayout struct {
	typ    gguf.Type
	halves []int                    // byte offsets of the f16 fields
	scales [2]int                   // the sub-block scale bytes (E8M0/UE4M3 scales for MXFP4/NVFP4)
	setD   func(b []byte, h uint16) // IQ1_M: its f16 d is the top nibbles of its scale words
	sweep  func(k int, b []byte)    // sweep block k (every code, index, sign and scale), d unset
	nSweep int
	tables bool // gguf_reader reads a table of this type out of libggml (ggml_tables.py)
}

// setIQ1MD writes h as IQ1_M's d: the top nibble of scale word k holds h's bits 4k to 4k+3.
func setIQ1MD(b []byte, h uint16) {
	for k := 0; k < 4; k++ {
		b[49+2*k] = b[49+2*k]&0x0f | byte(h>>(4*k))<<4
	}
}

// or32/or16 OR v into the little-endian word at b.
func or32(b []byte, v uint32) { binary.LittleEndian.PutUint32(b, binary.LittleEndian.Uint32(b)|v) }
func or16(b []byte, v uint16) { binary.LittleEndian.PutUint16(b, binary.LittleEndian.Uint16(b)|v) }

// nib4 is the 4-bit scale sweep block k gives sub-block u: every value over 16 blocks.
func nib4(k, u int) byte { return byte((k + u) % 16) }

// allCodes fills b with bytes whose low and high nibbles each take every value 0-15 (in
// every 16 bytes), in differing pairs.
func allCodes(b []byte) {
	for j := range b {
		b[j] = byte(j%16) | byte((7*j+j/16)%16)<<4
	}
}

var newLayouts = []blockLayout{
	{typ: gguf.TypeQ4_1, halves: []int{0, 2}},
	{typ: gguf.TypeQ5_0, halves: []int{0}},
	{typ: gguf.TypeQ5_1, halves: []int{0, 2}},
	{typ: gguf.TypeMXFP4, scales: [2]int{0, 1}, nSweep: 256, sweep: func(k int, b []byte) {
		b[0] = byte(k) // every E8M0 scale with every code
		allCodes(b[1:17])
	}},
	{typ: gguf.TypeNVFP4, scales: [2]int{0, 4}, nSweep: 64, sweep: func(k int, b []byte) {
		for s := 0; s < 4; s++ { // every UE4M3 scale byte with every code
			b[s] = byte(4*k + s)
		}
		allCodes(b[4:36])
	}},
	{typ: gguf.TypeTQ1_0, halves: []int{52}, nSweep: 256, sweep: func(k int, b []byte) {
		for j := 0; j < 52; j++ { // every byte value at every position
			b[j] = byte(k + j)
		}
	}},
	{typ: gguf.TypeTQ2_0, halves: []int{64}},
	{typ: gguf.TypeQ1_0, halves: []int{0}},
	{typ: gguf.TypeQ2_0, halves: []int{0}},
	{typ: gguf.TypeIQ4_NL, halves: []int{0}, tables: true, nSweep: 1, sweep: func(k int, b []byte) { allCodes(b[2:18]) }},
	{typ: gguf.TypeIQ4_XS, halves: []int{0}, scales: [2]int{2, 8}, tables: true, nSweep: 8, sweep: func(k int, b []byte) {
		for i := 0; i < 8; i++ { // every 6-bit scale ls over the 8 blocks
			ls := 8*k + i
			b[4+i/2] |= byte(ls&15) << (4 * (i % 2))
			or16(b[2:], uint16(ls>>4)<<(2*i))
		}
		allCodes(b[8:136])
	}},
	{typ: gguf.TypeIQ2_XXS, halves: []int{0}, tables: true, nSweep: 16, sweep: func(k int, b []byte) {
		for g := 0; g < 32; g++ { // 256 indices twice, 128 sign patterns four times, every scale
			e := 32*k + g
			b[2+8*(g/4)+g%4] = byte(e)
			or32(b[6+8*(g/4):], uint32(e*5%128)<<(7*(g%4))|uint32(nib4(k, g/4))<<28)
		}
	}},
	{typ: gguf.TypeIQ2_XS, halves: []int{0}, scales: [2]int{66, 74}, tables: true, nSweep: 16, sweep: func(k int, b []byte) {
		for g := 0; g < 32; g++ { // 512 indices, every sign pattern
			e := 32*k + g
			binary.LittleEndian.PutUint16(b[2+2*g:], uint16(e%512|(e*3%128)<<9))
		}
		for u := 0; u < 8; u++ {
			b[66+u] = nib4(k, 2*u) | nib4(k, 2*u+1)<<4
		}
	}},
	{typ: gguf.TypeIQ2_S, halves: []int{0}, scales: [2]int{74, 82}, tables: true, nSweep: 32, sweep: func(k int, b []byte) {
		for g := 0; g < 32; g++ { // 1024 indices, every sign byte
			e := 32*k + g
			b[2+g], b[34+g] = byte(e), byte(e*7)
			b[66+g/4] |= byte(e>>8&3) << (2 * (g % 4))
		}
		for u := 0; u < 8; u++ {
			b[74+u] = nib4(k, 2*u) | nib4(k, 2*u+1)<<4
		}
	}},
	{typ: gguf.TypeIQ3_XXS, halves: []int{0}, tables: true, nSweep: 16, sweep: func(k int, b []byte) {
		for s := 0; s < 64; s++ { // 256 indices four times
			b[2+s] = byte(64*k + s)
		}
		for g := 0; g < 32; g++ { // every sign pattern, every scale
			or32(b[66+4*(g/4):], uint32((32*k+g)%128)<<(7*(g%4))|uint32(nib4(k, g/4))<<28)
		}
	}},
	{typ: gguf.TypeIQ3_S, halves: []int{0}, scales: [2]int{106, 110}, tables: true, nSweep: 16, sweep: func(k int, b []byte) {
		for s := 0; s < 64; s++ { // 512 indices twice
			e := (64*k + s) % 512
			b[2+s] = byte(e)
			b[66+s/8] |= byte(e>>8) << (s % 8)
		}
		for g := 0; g < 32; g++ { // every sign byte
			b[74+g] = byte(32*k + g)
		}
		for u := 0; u < 4; u++ {
			b[106+u] = nib4(k, 2*u) | nib4(k, 2*u+1)<<4
		}
	}},
	{typ: gguf.TypeIQ1_S, halves: []int{0}, scales: [2]int{34, 50}, tables: true, nSweep: 128, sweep: func(k int, b []byte) {
		for g := 0; g < 32; g++ { // 2048 indices, each with both delta signs, every scale
			e := 32*k + g
			b[2+g] = byte(e)
			or16(b[34+2*(g/4):], uint16(e%2048>>8)<<(3*(g%4))|uint16(e/2048)<<15|uint16((k+g/4)%8)<<12)
		}
	}},
	{typ: gguf.TypeIQ1_M, scales: [2]int{48, 56}, setD: setIQ1MD, tables: true, nSweep: 128, sweep: func(k int, b []byte) {
		for g := 0; g < 32; g++ { // 2048 indices, each with both delta signs
			e := 32*k + g
			b[g] = byte(e)
			b[32+g/2] |= (byte(e%2048>>8) | byte(e/2048)<<3) << (4 * (g % 2))
		}
		for u := 0; u < 16; u++ { // every 3-bit scale
			or16(b[48+2*(u/4):], uint16((k+u)%8)<<(3*(u%4)))
		}
	}},
}

// specialHalves are the f16 scales a decoder must get right beyond ordinary numbers: zeros,
// subnormals, the smallest normal, ±1, the largest finite, infinities and NaNs with payloads.
var specialHalves = []uint16{0x0000, 0x8000, 0x0001, 0x8001, 0x03ff, 0x0400, 0x3c00, 0xbc00,
	0x7bff, 0xfbff, 0x7c00, 0xfc00, 0x7e00, 0xfe00, 0x7c01, 0x7dff, 0xfc01}

// setHalves writes h into every f16 field of b (IQ1_M: its d).
func (l blockLayout) setHalves(b []byte, h uint16) {
	if l.setD != nil {
		l.setD(b, h)
	}
	for _, off := range l.halves {
		binary.LittleEndian.PutUint16(b[off:], h)
	}
}

// finiteHalf returns a random finite half (zero and subnormals included), either sign.
func finiteHalf(r *rand.ChaCha8) uint16 {
	var b [2]byte
	_, _ = r.Read(b[:])
	h := binary.LittleEndian.Uint16(b[:]) &^ 0x7C00
	return h | uint16(int(b[1])%31)<<10
}

// layoutBlocks returns the blocks of l's type the oracles are compared on: the structured ones
// (every combination of special f16 fields, quant bytes in fixed patterns or random, and
// sub-block scale bytes zero, all ones or random; then the sweep under each special f16 scale),
// then nRandom random blocks, the first half entirely random bytes (so f16 scales may be NaN,
// infinite or subnormal) and the second with finite random f16 scales. It returns how many are
// structured too.
func layoutBlocks(l blockLayout, nRandom int) (raw []byte, structured int) {
	r := rand.NewChaCha8([32]byte{byte(l.typ), 16})
	bb := l.typ.BlockBytes()
	fill := func(b []byte, v int) {
		if v < 0 {
			_, _ = r.Read(b)
			return
		}
		for i := range b {
			b[i] = byte(v)
		}
	}
	hasD := len(l.halves) > 0 || l.setD != nil
	halfCombos := 1
	if hasD {
		halfCombos = len(specialHalves)
		if len(l.halves) == 2 {
			halfCombos *= len(specialHalves)
		}
	}
	scaleFill := []int{-1}
	if l.scales[1] > 0 {
		scaleFill = []int{-1, 0x00, 0xff, 0x3f, 0x7f}
	}
	block := make([]byte, bb)
	for hc := 0; hc < halfCombos; hc++ {
		for _, qf := range []int{-1, 0x00, 0xff, 0x55, 0xaa, 0x0f, 0xf0} {
			for _, sf := range scaleFill {
				fill(block, qf)
				fill(block[l.scales[0]:l.scales[1]], sf)
				if l.setD != nil {
					l.setD(block, specialHalves[hc])
				}
				for k, off := range l.halves {
					h := specialHalves[hc%len(specialHalves)]
					if k == 1 {
						h = specialHalves[hc/len(specialHalves)]
					}
					binary.LittleEndian.PutUint16(block[off:], h)
				}
				raw = append(raw, block...)
			}
		}
	}
	sweepD := []uint16{0}
	if hasD {
		sweepD = specialHalves
	}
	for _, h := range sweepD {
		for k := 0; k < l.nSweep; k++ {
			clear(block)
			l.sweep(k, block)
			if hasD {
				l.setHalves(block, h)
			}
			raw = append(raw, block...)
		}
	}
	structured = len(raw) / bb
	start := len(raw)
	raw = append(raw, make([]byte, nRandom*bb)...)
	_, _ = r.Read(raw[start:])
	for b := nRandom / 2; b < nRandom && hasD; b++ {
		blk := raw[start+b*bb : start+(b+1)*bb]
		if l.setD != nil {
			l.setD(blk, finiteHalf(r))
		}
		for _, off := range l.halves {
			binary.LittleEndian.PutUint16(blk[off:], finiteHalf(r))
		}
	}
	return raw, structured
}

// writeLayoutBlocks writes layoutBlocks(l, nRandom) for each of layouts, as blockCases.
func writeLayoutBlocks(t *testing.T, dir string, layouts []blockLayout, nRandom int) (cases []blockCase, structured map[gguf.Type]int) {
	t.Helper()
	structured = map[gguf.Type]int{}
	for _, l := range layouts {
		raw, ns := layoutBlocks(l, nRandom)
		p := filepath.Join(dir, l.typ.String()+".raw")
		if err := os.WriteFile(p, raw, 0o644); err != nil {
			t.Fatal(err)
		}
		cases = append(cases, blockCase{l.typ, p, raw, len(raw) / l.typ.BlockBytes() * l.typ.BlockElems()})
		structured[l.typ] = ns
	}
	return cases, structured
}

// layoutsWith returns the new layouts whose tables flag is tables.
func layoutsWith(tables bool) []blockLayout {
	var out []blockLayout
	for _, l := range newLayouts {
		if l.tables == tables {
			out = append(out, l)
		}
	}
	return out
}

// layoutOf returns typ's entry of newLayouts.
func layoutOf(typ gguf.Type) blockLayout {
	for _, l := range newLayouts {
		if l.typ == typ {
			return l
		}
	}
	panic("no layout for " + typ.String())
}
