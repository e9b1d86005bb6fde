package engine

import (
	"context"
	"crypto/sha256"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/trochilus-llm/trochilus/gguf"
	"github.com/trochilus-llm/trochilus/gguf/quant"
	"github.com/trochilus-llm/trochilus/internal/modelgen"
	"github.com/trochilus-llm/trochilus/internal/modelgen/modelgentest"
	"github.com/trochilus-llm/trochilus/internal/oracle"
	"github.com/trochilus-llm/trochilus/kernels"
)

// llamaFtypes are the file types TestOracleLlamaQuantized has llama.cpp's own quantizer make:
// every one the pinned llama.h defines and llama_model_quantize writes (all of internal/oracle's
// table but F16, the sources' own type; NVFP4 it refuses to write), in the enum's order.
var llamaFtypes = []oracle.LlamaFtype{
	oracle.LlamaFtypeQ4_0, oracle.LlamaFtypeQ4_1, oracle.LlamaFtypeQ8_0, oracle.LlamaFtypeQ5_0,
	oracle.LlamaFtypeQ5_1, oracle.LlamaFtypeQ2_K, oracle.LlamaFtypeQ3_K_S, oracle.LlamaFtypeQ3_K_M,
	oracle.LlamaFtypeQ3_K_L, oracle.LlamaFtypeQ4_K_S, oracle.LlamaFtypeQ4_K_M, oracle.LlamaFtypeQ5_K_S,
	oracle.LlamaFtypeQ5_K_M, oracle.LlamaFtypeQ6_K, oracle.LlamaFtypeIQ2_XXS, oracle.LlamaFtypeIQ2_XS,
	oracle.LlamaFtypeQ2_K_S, oracle.LlamaFtypeIQ3_XS, oracle.LlamaFtypeIQ3_XXS, oracle.LlamaFtypeIQ1_S,
	oracle.LlamaFtypeIQ4_NL, oracle.LlamaFtypeIQ3_S, oracle.LlamaFtypeIQ3_M, oracle.LlamaFtypeIQ2_S,
	oracle.LlamaFtypeIQ2_M, oracle.LlamaFtypeIQ4_XS, oracle.LlamaFtypeIQ1_M, oracle.LlamaFtypeBF16,
	oracle.LlamaFtypeTQ1_0, oracle.LlamaFtypeTQ2_0, oracle.LlamaFtypeMXFP4_MOE, oracle.LlamaFtypeQ1_0,
	oracle.LlamaFtypeQ2_0,
}

// llamaTrainedFtypes are the file types made of the trained model as well: every one is made of
// the tiny Qwen3-MoE (llamaFtypes), whose files are small and fast, but the trained OLMoE's
// 50304-row head and real routing make each of its files cost 5 to 20 s of the gate (the IQ
// types' quantizer and their dequantize-then-dot products the most), so it gets a family each:
// the K-quant mixes it had, Q8_0, the legacy Q4_0, IQ4_XS, IQ3_M, IQ2_M and IQ1_M (the two
// with an importance matrix), MXFP4_MOE and the ternary TQ1_0.
var llamaTrainedFtypes = []oracle.LlamaFtype{
	oracle.LlamaFtypeQ4_0, oracle.LlamaFtypeQ8_0, oracle.LlamaFtypeQ2_K, oracle.LlamaFtypeQ3_K_M,
	oracle.LlamaFtypeQ4_K_S, oracle.LlamaFtypeQ4_K_M, oracle.LlamaFtypeQ5_K_M, oracle.LlamaFtypeQ6_K,
	oracle.LlamaFtypeIQ3_M, oracle.LlamaFtypeIQ2_M, oracle.LlamaFtypeIQ4_XS, oracle.LlamaFtypeIQ1_M,
	oracle.LlamaFtypeTQ1_0, oracle.LlamaFtypeMXFP4_MOE,
}

// llamaDefaultType is llama_ftype_get_default_type (llama-quant.cpp) for llamaFtypes: the type
// of every quantized tensor in our generator's uniform layout of the same mix. The test checks
// it against the library's own answer (oracle.LlamaFtype.DefaultType, itself checked against
// the loaded libllama).
var llamaDefaultType = map[oracle.LlamaFtype]gguf.Type{
	oracle.LlamaFtypeQ4_0: gguf.TypeQ4_0, oracle.LlamaFtypeQ4_1: gguf.TypeQ4_1, oracle.LlamaFtypeQ8_0: gguf.TypeQ8_0,
	oracle.LlamaFtypeQ5_0: gguf.TypeQ5_0, oracle.LlamaFtypeQ5_1: gguf.TypeQ5_1, oracle.LlamaFtypeQ2_K: gguf.TypeQ2_K,
	oracle.LlamaFtypeQ3_K_S: gguf.TypeQ3_K, oracle.LlamaFtypeQ3_K_M: gguf.TypeQ3_K, oracle.LlamaFtypeQ3_K_L: gguf.TypeQ3_K,
	oracle.LlamaFtypeQ4_K_S: gguf.TypeQ4_K, oracle.LlamaFtypeQ4_K_M: gguf.TypeQ4_K,
	oracle.LlamaFtypeQ5_K_S: gguf.TypeQ5_K, oracle.LlamaFtypeQ5_K_M: gguf.TypeQ5_K, oracle.LlamaFtypeQ6_K: gguf.TypeQ6_K,
	oracle.LlamaFtypeIQ2_XXS: gguf.TypeIQ2_XXS, oracle.LlamaFtypeIQ2_XS: gguf.TypeIQ2_XS, oracle.LlamaFtypeQ2_K_S: gguf.TypeQ2_K,
	oracle.LlamaFtypeIQ3_XS: gguf.TypeIQ3_S, oracle.LlamaFtypeIQ3_XXS: gguf.TypeIQ3_XXS, oracle.LlamaFtypeIQ1_S: gguf.TypeIQ1_S,
	oracle.LlamaFtypeIQ4_NL: gguf.TypeIQ4_NL, oracle.LlamaFtypeIQ3_S: gguf.TypeIQ3_S, oracle.LlamaFtypeIQ3_M: gguf.TypeIQ3_S,
	oracle.LlamaFtypeIQ2_S: gguf.TypeIQ2_XS, oracle.LlamaFtypeIQ2_M: gguf.TypeIQ2_S, oracle.LlamaFtypeIQ4_XS: gguf.TypeIQ4_XS,
	oracle.LlamaFtypeIQ1_M: gguf.TypeIQ1_M, oracle.LlamaFtypeBF16: gguf.TypeBF16,
	oracle.LlamaFtypeTQ1_0: gguf.TypeTQ1_0, oracle.LlamaFtypeTQ2_0: gguf.TypeTQ2_0,
	oracle.LlamaFtypeMXFP4_MOE: gguf.TypeMXFP4, oracle.LlamaFtypeQ1_0: gguf.TypeQ1_0, oracle.LlamaFtypeQ2_0: gguf.TypeQ2_0,
}

// llamaNeedsImatrix are the mixes llama_model_quantize refuses without an importance matrix
// (tensor_requires_imatrix in llama-quant.cpp: a tensor other than the embedding and the head
// in IQ1_S, IQ1_M, IQ2_XXS, IQ2_XS, IQ2_S or IQ3_XXS, or Q2_K in a Q2_K_S file). They get
// engineImatrix's (imatrix_test.go); the others are made as before, without one, as
// llama-quantize makes them unless asked. The test checks the set against each file's layout.
var llamaNeedsImatrix = map[oracle.LlamaFtype]bool{
	oracle.LlamaFtypeIQ2_XXS: true, oracle.LlamaFtypeIQ2_XS: true, oracle.LlamaFtypeQ2_K_S: true,
	oracle.LlamaFtypeIQ3_XS: true, oracle.LlamaFtypeIQ3_XXS: true, oracle.LlamaFtypeIQ1_S: true,
	oracle.LlamaFtypeIQ2_S: true, oracle.LlamaFtypeIQ2_M: true, oracle.LlamaFtypeIQ1_M: true,
}

// requiresImatrix reports whether a file's layout has a tensor llama_model_quantize would not
// have written without an importance matrix (see llamaNeedsImatrix).
func requiresImatrix(f *gguf.File, ft oracle.LlamaFtype) bool {
	for _, ti := range f.Tensors {
		if ti.Name == "token_embd.weight" || ti.Name == "output.weight" {
			continue
		}
		switch ti.Type {
		case gguf.TypeIQ1_S, gguf.TypeIQ1_M, gguf.TypeIQ2_XXS, gguf.TypeIQ2_XS, gguf.TypeIQ2_S, gguf.TypeIQ3_XXS:
			return true
		case gguf.TypeQ2_K:
			if ft == oracle.LlamaFtypeQ2_K_S {
				return true
			}
		}
	}
	return false
}

// llamaSource is an F16 model for llama.cpp to quantize: written by our generator, as
// convert_hf_to_gguf.py --outtype f16 writes one (norms and the router in F32).
type llamaSource struct {
	name    string
	file    func(t testing.TB) string
	vocab   int
	prompts [][]int32
	ftypes  []oracle.LlamaFtype // the file types made of it
}

// llamaSources returns the F16 models the quantizer is given: the trained tiny OLMoE (its
// weights in F16, its shape read from the committed file) and a tiny random Qwen3-MoE at the
// widths K-quants need; the first makes llamaTrainedFtypes, the second every file type.
func llamaSources(t testing.TB) []llamaSource {
	tm := trainedModel()
	tc := fileConfig(t, tm.file(t))
	q := modelgen.TinyQwen3(modelgen.Q4KM()) // the K-quant widths: 256, heads of 64
	q.Weights = modelgen.Uniform(gguf.TypeF16)
	q.Vocab, q.Context = testVocab, 512
	q.Name = "Qwen3-MoE tiny random f16"
	return []llamaSource{
		{name: "trained", vocab: tc.Vocab, prompts: tm.prompts, ftypes: llamaTrainedFtypes,
			file: func(t testing.TB) string {
				src := modelgentest.TrainedModel(t, "q4_k_m")
				return modelgentest.File(t, "trained-f16.gguf", func(path string) error { return writeTrainedF16(path, src) })
			}},
		{name: "qwen3", vocab: q.Vocab, prompts: testPrompts(q.Vocab), ftypes: llamaFtypes,
			file: func(t testing.TB) string { return modelgentest.TestModel(t, q) }},
	}
}

// fileConfig reads a model file's shape.
func fileConfig(t testing.TB, path string) Config {
	t.Helper()
	f := openGGUF(t, path)
	defer f.Close()
	c, err := ReadConfig(f)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return c
}

// openGGUF opens the model file at path; the caller closes it.
func openGGUF(t testing.TB, path string) *gguf.File {
	t.Helper()
	f, err := gguf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// dequantTensor reads ti's bytes from f and dequantizes them (gguf/quant's decoders).
func dequantTensor(t testing.TB, f *gguf.File, ti *gguf.TensorInfo) []float32 {
	t.Helper()
	raw := make([]byte, ti.Size)
	if err := f.ReadTensor(ti, raw); err != nil {
		t.Fatal(err)
	}
	x := make([]float32, ti.Elems())
	if err := quant.Dequantize(ti.Type, raw, x); err != nil {
		t.Fatal(err)
	}
	return x
}

// writeTrainedF16 writes the trained model (testdata/trained, expanded at src) to path with F16
// weights: each tensor dequantized from the committed weights and written through modelgen, with the shape and
// hyperparameters the file's metadata gives and the tokenizer tools/train exports it with.
func writeTrainedF16(path, src string) error {
	f, err := gguf.Open(src)
	if err != nil {
		return err
	}
	defer f.Close()
	c, err := ReadConfig(f)
	if err != nil {
		return fmt.Errorf("%s: %w", src, err)
	}
	if c.Arch != "olmoe" {
		return fmt.Errorf("%s: architecture %q: tools/train exports olmoe only, with OLMoE's tokenizer", src, c.Arch)
	}
	tok, err := modelgen.FindOLMoETokenizer("")
	if err != nil {
		return err
	}
	name, _ := f.Str("general.name")
	desc, _ := f.Str("general.description")
	used := map[string]bool{}
	cfg := modelgen.Config{
		Name: name + " (f16)", Description: desc, Arch: c.Arch,
		Layers: c.Layers, Hidden: c.Hidden, Heads: c.Heads, KVHeads: c.KVHeads, Experts: c.Experts,
		ExpertsUsed: c.ExpertsUsed, ExpertFFN: c.ExpertFFN, Vocab: c.Vocab, Context: c.Context,
		RopeTheta: c.RopeTheta, RMSEps: c.RMSEps, NormTopKProb: c.NormTopKProb, ClipQKV: c.ClipQKV,
		Weights: modelgen.Uniform(gguf.TypeF16), Tokenizer: tok,
		Values: func(name string, elems int) ([]float32, error) {
			ti, ok := f.Tensor(name)
			if !ok {
				return nil, fmt.Errorf("not in %s", src)
			}
			if ti.Elems() != uint64(elems) {
				return nil, fmt.Errorf("%s has %d elements (%v), the model needs %d", src, ti.Elems(), ti.Dims, elems)
			}
			used[name] = true
			raw := make([]byte, ti.Size)
			if err := f.ReadTensor(ti, raw); err != nil {
				return nil, err
			}
			x := make([]float32, elems)
			if err := quant.Dequantize(ti.Type, raw, x); err != nil {
				return nil, fmt.Errorf("%s: %w", src, err)
			}
			return x, nil
		},
	}
	if c.HeadDim != c.Hidden/c.Heads {
		cfg.HeadDimension = c.HeadDim
	}
	if err := modelgen.Write(context.Background(), path, cfg); err != nil {
		return err
	}
	if len(used) != len(f.Tensors) {
		return fmt.Errorf("%s has %d tensors, the model written from it %d", src, len(f.Tensors), len(used))
	}
	return nil
}

// llamaQuantized returns src's model quantized by llama.cpp to ftype, made once per test binary:
// with src's importance matrix for the mixes that need one (llamaNeedsImatrix).
func llamaQuantized(t testing.TB, q *oracle.LlamaQuantizer, src llamaSource, ftype oracle.LlamaFtype) string {
	t.Helper()
	in := src.file(t)
	var im oracle.Imatrix
	if llamaNeedsImatrix[ftype] {
		im = sourceImatrix(t, src)
	}
	return modelgentest.File(t, fmt.Sprintf("llama-%s-%s.gguf", src.name, ftype), func(out string) error {
		_, err := q.Quantize(in, out, ftype, im)
		return err
	})
}

// sourceImatrix returns src's importance matrix (engineImatrix over imatrixText), computed once
// per test binary.
func sourceImatrix(t testing.TB, src llamaSource) oracle.Imatrix {
	t.Helper()
	imatrixMu.Lock()
	defer imatrixMu.Unlock()
	if im, ok := imatrixCache[src.name]; ok {
		return im
	}
	im := engineImatrix(t, src.file(t), imatrixText(t, src.name == "trained", src.vocab))
	imatrixCache[src.name] = im
	return im
}

var (
	imatrixMu    sync.Mutex
	imatrixCache = map[string]oracle.Imatrix{}
)

// tensorDigest hashes a file's tensors (names, types, shapes and bytes, in the file's order):
// two mixes whose rules chose the same type for every tensor of a tiny model make the same
// file but for general.file_type, and are then one case, not two.
func tensorDigest(t testing.TB, f *gguf.File) [32]byte {
	h := sha256.New()
	for i := range f.Tensors {
		ti := &f.Tensors[i]
		raw := make([]byte, ti.Size)
		if err := f.ReadTensor(ti, raw); err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(h, "%s %v %v %d\n", ti.Name, ti.Type, ti.Dims, len(raw))
		h.Write(raw)
	}
	return [32]byte(h.Sum(nil))
}

// typeLayout describes a file's tensor types by role, a type per layer where they differ
// ("ffn_down_exps Q6_K Q4_K Q4_K Q6_K"), and counts the quantized tensors whose type is not
// def, the one our generator's uniform layout gives every matrix.
func typeLayout(f *gguf.File, def gguf.Type) (lines []string, differ int) {
	var roles []string
	types := map[string][]string{}
	for _, ti := range f.Tensors {
		role := ti.Name
		if rest, ok := strings.CutPrefix(ti.Name, "blk."); ok {
			if _, r, ok := strings.Cut(rest, "."); ok {
				role = r
			}
		}
		role = strings.TrimSuffix(role, ".weight")
		if types[role] == nil {
			roles = append(roles, role)
		}
		types[role] = append(types[role], ti.Type.String())
		if ti.Type != gguf.TypeF32 && ti.Type != def {
			differ++
		}
	}
	for _, r := range roles {
		ts := types[r]
		if len(slices.Compact(slices.Clone(ts))) == 1 {
			ts = ts[:1]
		}
		lines = append(lines, fmt.Sprintf("%-16s %s", r, strings.Join(ts, " ")))
	}
	return lines, differ
}

// TestOracleLlamaQuantized has libllama's own quantizer (llama_model_quantize from the pinned
// npm prebuilt, as llama-quantize runs it) make F16 models into the file types it writes, so
// that the engine meets the layouts llama.cpp decides (its per-tensor rules and fallbacks, its
// tensor order) rather than our generator's: every type (llamaFtypes: the legacy Q4_0 to Q8_0,
// the K-quant mixes, the IQ mixes, the ternary TQ1_0/TQ2_0, MXFP4_MOE, Q1_0, Q2_0 and BF16) of a
// tiny Qwen3-MoE, and one of each family (llamaTrainedFtypes, for the gate's time) of the
// trained tiny OLMoE. The mixes llama.cpp refuses to make without an importance matrix get one
// computed on the engine (engineImatrix). Each file must pass the oracle as the generated ones
// do (identical greedy tokens for 32 tokens, logits within oracleTol of olmoe_ref.py's) and give
// the same bits on 1, 2 and 3 threads, on every kernel tier and in passes of 7
// (quantDeterminism), so every weight type llama.cpp writes meets the determinism matrix in the
// Qwen3 model's files at least. Two mixes whose rules give a tiny model the same tensors are the
// same file but for its header, and are checked once.
func TestOracleLlamaQuantized(t *testing.T) {
	q := oracle.Llama(t)
	py := oracle.Python(t, "torch", "numpy")
	script := filepath.Join(oracle.Root(t), "tools", "oracle", "olmoe_ref.py")
	start := time.Now()

	type llamaFile struct {
		tm    testModel
		src   string
		ftype oracle.LlamaFtype
	}
	var files []llamaFile
	var same []string
	for _, src := range llamaSources(t) {
		seen := map[[32]byte]oracle.LlamaFtype{}
		for _, ft := range src.ftypes {
			if def, ok := ft.DefaultType(); !ok || gguf.Type(def) != llamaDefaultType[ft] {
				t.Errorf("%v: llamaDefaultType says %v, libllama's llama_ftype_get_default_type %v", ft, llamaDefaultType[ft], gguf.Type(def))
			}
			path := llamaQuantized(t, q, src, ft)
			f := openGGUF(t, path)
			lines, differ := typeLayout(f, llamaDefaultType[ft])
			var order []string
			for _, ti := range f.Tensors[:min(5, len(f.Tensors))] {
				order = append(order, ti.Name)
			}
			if needs := requiresImatrix(f, ft); needs != llamaNeedsImatrix[ft] {
				t.Errorf("%s %v: the file has a tensor that needs an importance matrix: %v; llamaNeedsImatrix says %v",
					src.name, ft, needs, llamaNeedsImatrix[ft])
			}
			got, err := f.Uint32("general.file_type")
			digest := tensorDigest(t, f)
			f.Close()
			if err != nil || got != uint32(ft) {
				t.Errorf("%s %v: general.file_type %d (%v), want %d", src.name, ft, got, err, ft)
			}
			with := ""
			if llamaNeedsImatrix[ft] {
				with = ", with the engine's importance matrix"
			}
			t.Logf("%s %v%s: %d quantized tensors not %v, as llama.cpp chose (in its order: %s, ...):\n\t%s",
				src.name, ft, with, differ, llamaDefaultType[ft], strings.Join(order, ", "), strings.Join(lines, "\n\t"))
			if prev, ok := seen[digest]; ok {
				same = append(same, fmt.Sprintf("%s %v = %v", src.name, ft, prev))
				continue
			}
			seen[digest] = ft
			files = append(files, llamaFile{src: src.name, ftype: ft,
				tm: testModel{name: src.name + "-" + strings.ToLower(ft.String()), real: src.name == "trained",
					path: path, cfg: modelgen.Config{Vocab: src.vocab}, prompts: src.prompts}})
		}
	}
	quantized := time.Since(start)
	if len(same) > 0 {
		t.Logf("the same tensors, checked once: %s", strings.Join(same, ", "))
	}

	// The reference runs a group of files at a time (of one source, at most refGroupFloats
	// logits) and each group is checked before the next runs, so that the logits held stay
	// bounded: the trained model's are 35 MB a file, the Qwen3's 2.5 MB.
	const refGroupFloats = 80 << 20
	firstRows := make([][]float32, len(files)) // each file's first prompt rows, for the check below
	var summary []string
	for lo := 0; lo < len(files); {
		hi, floats := lo, 0
		for hi < len(files) && files[hi].src == files[lo].src && (hi == lo || floats < refGroupFloats) {
			for _, p := range files[hi].tm.testPrompts() {
				floats += (len(p) + oracleGenerate - 1) * files[hi].tm.cfg.Vocab
			}
			hi++
		}
		var models []testModel
		for _, lf := range files[lo:hi] {
			models = append(models, lf.tm)
		}
		cases, err := runReference(t, py, script, models)
		if err != nil {
			t.Fatalf("reference: %v", err)
		}
		byModel := map[string][]*refCase{}
		for i := range cases {
			byModel[cases[i].model.name] = append(byModel[cases[i].model.name], &cases[i])
		}
		for i, m := range models {
			cs := byModel[m.name]
			if len(cs) == 0 {
				t.Fatalf("the reference gave no cases for %s", m.name)
			}
			firstRows[lo+i] = slices.Clone(cs[0].logits[:len(cs[0].job.Tokens)*cs[0].res.Vocab])
			t.Run(m.name, func(t *testing.T) {
				tokens, maxDiff := checkReference(t, m.name, cs)
				bad := quantDeterminism(t, m)
				for _, b := range bad {
					t.Error(b)
				}
				same := "the same bits on every thread count, tier and pass size tried"
				if len(bad) > 0 {
					same = fmt.Sprintf("%d runs differ", len(bad))
				}
				summary = append(summary, fmt.Sprintf("%-18s %3d greedy tokens identical, max |logit diff| %.3g, %s",
					m.name, tokens, maxDiff, same))
			})
		}
		lo = hi
	}

	// The tolerance must tell the files apart: were two files' references within 2·oracleTol of
	// each other, one run of the engine could pass against both, so a file quantized wrongly
	// (or read as another mix) could pass.
	apart := map[string]float64{}
	for i := range files {
		for j := range i {
			if files[i].src != files[j].src {
				continue
			}
			a, b := firstRows[i], firstRows[j]
			var d float64
			for k := range a {
				d = max(d, math.Abs(float64(a[k])-float64(b[k])))
			}
			if d <= 2*oracleTol && sameValues(t, files[i].tm.path, files[j].tm.path) {
				// Two encodings of the same numbers (TQ1_0 and TQ2_0 pack the same ternary
				// quantization two ways): no reference can tell them apart, and none needs to,
				// since the engine must decode each file's own bytes to match either.
				t.Logf("%s and %s: different bytes, the same weights once decoded (one quantization packed two ways): each is checked against its own reference, which cannot tell the two apart",
					files[j].tm.name, files[i].tm.name)
				continue
			}
			if old, ok := apart[files[i].src]; !ok || d < old {
				apart[files[i].src] = d
			}
			if d <= 2*oracleTol {
				t.Errorf("%s and %s: the references' logits differ by at most %.3g: the oracle cannot tell them apart",
					files[j].tm.name, files[i].tm.name, d)
			}
		}
	}
	t.Logf("%d files (%d distinct): quantized in %v, all checked in %v; files of one model differ from each other by at least %.3g (trained), %.3g (qwen3) in the reference's logits of their first prompt\n\t%s",
		len(files)+len(same), len(files), quantized.Round(time.Millisecond), time.Since(start).Round(time.Millisecond),
		apart["trained"], apart["qwen3"], strings.Join(summary, "\n\t"))
}

// sameValues reports whether two files hold the same tensors, by name and shape, with the same
// values once dequantized (gguf/quant's decoders, bit for bit libggml's).
func sameValues(t testing.TB, a, b string) bool {
	t.Helper()
	fa := openGGUF(t, a)
	defer fa.Close()
	fb := openGGUF(t, b)
	defer fb.Close()
	if len(fa.Tensors) != len(fb.Tensors) {
		return false
	}
	for i := range fa.Tensors {
		ta := &fa.Tensors[i]
		tb, ok := fb.Tensor(ta.Name)
		if !ok || !slices.Equal(ta.Dims, tb.Dims) || !slices.Equal(dequantTensor(t, fa, ta), dequantTensor(t, fb, tb)) {
			return false
		}
	}
	return true
}

// quantDeterminism is the determinism matrix cut down to what a weight layout can change: the
// logits of a 24-token prompt from the scalar tier on one thread, and the same bits from the
// fastest tier on 2 and 3 threads and in passes of 7, and from every other tier on 2 threads
// (the pass sizes, splits and rewinds of the full matrix exercise the KV cache, which the
// weights' types do not reach).
func quantDeterminism(t testing.TB, tm testModel) []string {
	prompt := matrixPrompt(tm.cfg.Vocab)[:24] // passes of 7 cut it three times
	v := tm.cfg.Vocab
	var bad []string
	want := wholePrompt(512)(t, tm.load(t, Options{Threads: 1, Tier: kernels.Scalar()}), prompt)
	check := func(what string, got []float32) {
		if i := firstDifference(want, got); i >= 0 {
			bad = append(bad, fmt.Sprintf("%s: row %d logit %d is %v, not %v", what, i/v, i%v, got[i], want[i]))
		}
	}
	tiers := kernels.Tiers()
	best := tiers[len(tiers)-1]
	for _, tier := range tiers {
		m := tm.load(t, Options{Threads: 2, Tier: tier})
		check(fmt.Sprintf("%s, 2 threads", tier.Name), wholePrompt(512)(t, m, prompt))
		if tier == best {
			check(fmt.Sprintf("%s, 2 threads, passes of 7", tier.Name), wholePrompt(7)(t, m, prompt))
		}
	}
	m := tm.load(t, Options{Threads: 3, Tier: best})
	check(fmt.Sprintf("%s, 3 threads", best.Name), wholePrompt(512)(t, m, prompt))
	return bad
}
