package main

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/trochilus-llm/trochilus/gguf"
	"github.com/trochilus-llm/trochilus/gguf/quant"
	"github.com/trochilus-llm/trochilus/internal/modelgen"
)

const trained = "../../testdata/trained"

// committedSums reads testdata/trained/SHA256SUMS: file name to digest.
func committedSums(t *testing.T) map[string]string {
	t.Helper()
	f, err := os.Open(filepath.Join(trained, "SHA256SUMS"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sums := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		sum, name, ok := strings.Cut(sc.Text(), "  ")
		if !ok {
			t.Fatalf("SHA256SUMS: line %q", sc.Text())
		}
		sums[name] = sum
	}
	return sums
}

func fileSum(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// committedModel is one trained model of testdata/trained: the data step's architecture, the
// names of its files there and in SHA256SUMS.
type committedModel struct {
	arch     string
	compact  string // below the module root
	full, q8 string // the expanded model and the Q8_0 made from it, as SHA256SUMS names them
	text     string // SHA256SUMS's names of the data step's text.bin and chat.bin
	chat     string
	prompts  string // the committed copy of the data step's prompts.json
}

var committedModels = []committedModel{
	{arch: "olmoe", compact: modelgen.TrainedCompactPath, full: "olmoe-tiny-q4_k_m.gguf", q8: "olmoe-tiny-q8_0.gguf",
		text: "text.bin", chat: "chat.bin", prompts: "prompts.json"},
	{arch: "qwen3moe", compact: modelgen.TrainedQwen3CompactPath, full: "qwen3-tiny-q4_k_m.gguf", q8: "qwen3-tiny-q8_0.gguf",
		text: "qwen3-text.bin", chat: "qwen3-chat.bin", prompts: "qwen3-tiny-prompts.json"},
}

// TestDataReproducible runs the recipe's first step and compares its tokens with the ones the
// committed models were trained on, and its prompts with the committed prompts.
func TestDataReproducible(t *testing.T) {
	for _, m := range committedModels {
		t.Run(m.arch, func(t *testing.T) {
			dir := t.TempDir()
			if err := runData([]string{"-arch", m.arch, "-o", dir, "-corpus", "../../testdata/corpus"}); err != nil {
				t.Fatal(err)
			}
			sums := committedSums(t)
			for name, sum := range map[string]string{"text.bin": m.text, "chat.bin": m.chat} {
				if got := fileSum(t, filepath.Join(dir, name)); got != sums[sum] {
					t.Errorf("%s: sha256 %s, the committed model was trained on %s (%s)", name, got, sums[sum], sum)
				}
			}
			got, err := os.ReadFile(filepath.Join(dir, "prompts.json"))
			if err != nil {
				t.Fatal(err)
			}
			want, err := os.ReadFile(filepath.Join(trained, m.prompts))
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("prompts.json differs from testdata/trained/%s:\n%s", m.prompts, got)
			}
		})
	}
}

// TestCommittedModel expands each committed compact model and checks it against its recorded
// digest, the Q8_0 made from it too, and that compacting the expansion and expanding again
// gives the same bytes (the compact form loses nothing).
func TestCommittedModel(t *testing.T) {
	for _, m := range committedModels {
		t.Run(m.arch, func(t *testing.T) { checkCommitted(t, m) })
	}
}

func checkCommitted(t *testing.T, m committedModel) {
	dir := t.TempDir()
	full, q8 := filepath.Join(dir, m.full), filepath.Join(dir, m.q8)
	if err := modelgen.ExpandTrainedFrom(t.Context(), full, m.compact); err != nil {
		t.Fatal(err)
	}
	if err := modelgen.RequantizeTrainedFile(q8, full, "q8_0"); err != nil {
		t.Fatal(err)
	}
	sums := committedSums(t)
	for _, p := range []string{full, q8} {
		name := filepath.Base(p)
		if got := fileSum(t, p); got != sums[name] {
			t.Errorf("%s: sha256 %s, SHA256SUMS says %s", name, got, sums[name])
		}
	}
	f, err := gguf.Open(full)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var c bytes.Buffer
	if err := modelgen.CompactTrained(&c, f); err != nil {
		t.Fatal(err)
	}
	again := filepath.Join(dir, "again.gguf")
	if err := modelgen.ExpandTrained(t.Context(), again, &c); err != nil {
		t.Fatal(err)
	}
	if fileSum(t, again) != fileSum(t, full) {
		t.Error("compacting the expanded model and expanding it again changed its bytes")
	}
}

// writeSafetensors writes float32 tensors (torch shapes) and metadata as train.py does.
func writeSafetensors(t *testing.T, path string, tensors map[string][]float32, shapes map[string][]int, meta map[string]string) {
	t.Helper()
	names := make([]string, 0, len(tensors))
	for n := range tensors {
		names = append(names, n)
	}
	sort.Strings(names)
	head := map[string]any{"__metadata__": meta}
	var data []byte
	for _, n := range names {
		off := len(data)
		for _, v := range tensors[n] {
			data = binary.LittleEndian.AppendUint32(data, math.Float32bits(v))
		}
		head[n] = map[string]any{"dtype": "F32", "shape": shapes[n], "data_offsets": []int{off, len(data)}}
	}
	h, err := json.Marshal(head)
	if err != nil {
		t.Fatal(err)
	}
	b := binary.LittleEndian.AppendUint64(nil, uint64(len(h)))
	if err := os.WriteFile(path, append(append(b, h...), data...), 0o644); err != nil {
		t.Fatal(err)
	}
}

// tinyWeights makes a one-layer model's tensors with values that differ per tensor and element.
func tinyWeights(sh shape) (map[string][]float32, map[string][]int) {
	h, f, e, v := sh.Hidden, sh.ExpertFFN, sh.Experts, sh.Vocab
	q, kv := sh.Heads*sh.HeadDim, sh.KVHeads*sh.HeadDim
	qn, kn := q, kv
	if sh.Arch == "qwen3moe" { // normed per head
		qn, kn = sh.HeadDim, sh.HeadDim
	}
	shapes := map[string][]int{"token_embd.weight": {v, h}, "output_norm.weight": {h}, "output.weight": {v, h}}
	for l := range sh.Layers {
		p := "blk." + string(rune('0'+l)) + "."
		for n, s := range map[string][]int{
			"attn_norm.weight": {h}, "attn_q.weight": {q, h}, "attn_k.weight": {kv, h}, "attn_v.weight": {kv, h},
			"attn_output.weight": {h, q}, "attn_q_norm.weight": {qn}, "attn_k_norm.weight": {kn},
			"ffn_norm.weight": {h}, "ffn_gate_inp.weight": {e, h}, "ffn_gate_exps.weight": {e, f, h},
			"ffn_up_exps.weight": {e, f, h}, "ffn_down_exps.weight": {e, h, f},
		} {
			shapes[p+n] = s
		}
	}
	tensors := map[string][]float32{}
	k := 0
	for n, s := range shapes {
		elems := 1
		for _, d := range s {
			elems *= d
		}
		x := make([]float32, elems)
		for i := range x {
			x[i] = float32(math.Sin(float64(k*7919+i))) * 0.1
		}
		tensors[n] = x
		k++
	}
	return tensors, shapes
}

// TestExport writes a small model's weights as train.py would and checks the GGUF export:
// float32 kept bit for bit, Q8_0 within half a quantization step, the torch shapes read as
// ggml's reversed dims, and a missing or extra tensor refused; for Qwen3-MoE, its
// architecture's metadata too.
func TestExport(t *testing.T) {
	t.Run("olmoe", func(t *testing.T) {
		checkExport(t, shape{Arch: "olmoe", Layers: 1, Hidden: 32, Heads: 2, KVHeads: 2, HeadDim: 16, Experts: 2,
			ExpertsUsed: 1, ExpertFFN: 32, Vocab: olmoeVocab, Context: 64, RopeTheta: 10000, RMSEps: 1e-5})
	})
	t.Run("qwen3moe", func(t *testing.T) {
		checkExport(t, shape{Arch: "qwen3moe", Layers: 1, Hidden: 32, Heads: 2, KVHeads: 1, HeadDim: 16, Experts: 2,
			ExpertsUsed: 1, ExpertFFN: 32, Vocab: qwen3Vocab, Context: 64, RopeTheta: 1e6, RMSEps: 1e-6, NormTopK: true})
	})
}

func checkExport(t *testing.T, sh shape) {
	js, err := json.Marshal(sh)
	if err != nil {
		t.Fatal(err)
	}
	meta := map[string]string{"shape": string(js), "recipe": "test"}
	tensors, shapes := tinyWeights(sh)
	dir := t.TempDir()
	w := filepath.Join(dir, "w.safetensors")
	writeSafetensors(t, w, tensors, shapes, meta)

	for _, typ := range []string{"f32", "q8_0"} {
		out := filepath.Join(dir, typ+".gguf")
		if err := runExport(t.Context(), []string{"-w", w, "-type", typ, "-o", out}); err != nil {
			t.Fatalf("export %s: %v", typ, err)
		}
		f, err := gguf.Open(out)
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range []string{"token_embd.weight", "blk.0.ffn_down_exps.weight", "blk.0.attn_q.weight", "blk.0.attn_k.weight",
			"blk.0.attn_k_norm.weight", "blk.0.ffn_norm.weight"} {
			ti, ok := f.Tensor(name)
			if !ok {
				t.Fatalf("%s: no tensor %s", typ, name)
			}
			s := shapes[name]
			for i, d := range ti.Dims {
				if int(d) != s[len(s)-1-i] {
					t.Errorf("%s %s: dims %v, torch shape %v", typ, name, ti.Dims, s)
				}
			}
			raw := make([]byte, ti.Size)
			if err := f.ReadTensor(ti, raw); err != nil {
				t.Fatal(err)
			}
			want := tensors[name]
			got := make([]float32, len(want))
			if err := quant.Dequantize(ti.Type, raw, got); err != nil {
				t.Fatal(err)
			}
			for i := range want {
				d := math.Abs(float64(got[i] - want[i]))
				// Half a step of the largest block scale (0.1/127, rounded up to a half).
				if (ti.Type == gguf.TypeF32 && d != 0) || d > 0.1/254*(1+1.0/1024) {
					t.Fatalf("%s %s[%d] = %g, trained %g", typ, name, i, got[i], want[i])
				}
			}
		}
		if v, _ := f.Str("general.description"); !strings.Contains(v, "trained") {
			t.Errorf("%s: description %q", typ, v)
		}
		if v, _ := f.Str("general.architecture"); v != sh.Arch {
			t.Errorf("%s: architecture %q, trained %q", typ, v, sh.Arch)
		}
		if sh.Arch == "qwen3moe" {
			if v, err := f.Uint32("qwen3moe.attention.key_length"); err != nil || int(v) != sh.HeadDim {
				t.Errorf("%s: qwen3moe.attention.key_length %d (%v), head dim %d", typ, v, err, sh.HeadDim)
			}
			if v, err := f.Uint32("qwen3moe.attention.head_count_kv"); err != nil || int(v) != sh.KVHeads {
				t.Errorf("%s: qwen3moe.attention.head_count_kv %d (%v), trained %d", typ, v, err, sh.KVHeads)
			}
			if v, _ := f.Str("tokenizer.ggml.pre"); v != "qwen2" {
				t.Errorf("%s: tokenizer.ggml.pre %q, Qwen3's is qwen2", typ, v)
			}
		}
		f.Close()
	}

	delete(tensors, "blk.0.attn_k.weight")
	writeSafetensors(t, w, tensors, shapes, meta)
	if err := runExport(t.Context(), []string{"-w", w, "-o", filepath.Join(dir, "missing.gguf")}); err == nil ||
		!strings.Contains(err.Error(), "blk.0.attn_k.weight") {
		t.Errorf("a missing tensor: %v", err)
	}
	tensors, shapes = tinyWeights(sh)
	tensors["blk.1.attn_k.weight"], shapes["blk.1.attn_k.weight"] = []float32{1}, []int{1}
	writeSafetensors(t, w, tensors, shapes, meta)
	out := filepath.Join(dir, "extra.gguf")
	if err := runExport(t.Context(), []string{"-w", w, "-o", out}); err == nil || !strings.Contains(err.Error(), "blk.1.attn_k.weight") {
		t.Errorf("an extra tensor: %v", err)
	}
	if _, err := os.Stat(out); err == nil {
		t.Errorf("an extra tensor left %s behind", out)
	}
}
