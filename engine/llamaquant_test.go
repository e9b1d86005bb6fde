package engine

import (
	"context"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/trochilus-llm/trochilus/gguf"
	"github.com/trochilus-llm/trochilus/gguf/quant"
	"github.com/trochilus-llm/trochilus/internal/modelgen"
	"github.com/trochilus-llm/trochilus/internal/modelgen/modelgentest"
	"github.com/trochilus-llm/trochilus/internal/oracle"
	"github.com/trochilus-llm/trochilus/kernels"
)

// llamaFtypes are the file types TestOracleLlamaQuantized has llama.cpp's own quantizer make.
// The IQ mixes are left out: without an importance matrix llama_model_quantize refuses every mix
// that puts a tensor in IQ1_S, IQ1_M, IQ2_XXS, IQ2_XS, IQ2_S or IQ3_XXS (IQ1_S/M, IQ2_XXS/XS/S/M,
// IQ3_XXS/XS: tensor_requires_imatrix in llama-quant.cpp), and the rest (IQ3_S/M, IQ4_NL/XS) the
// engine cannot multiply nor olmoe_ref.py dequantize yet (issue 16 item 1).
var llamaFtypes = []oracle.LlamaFtype{
	oracle.LlamaFtypeQ2_K, oracle.LlamaFtypeQ3_K_M, oracle.LlamaFtypeQ4_K_S, oracle.LlamaFtypeQ4_K_M,
	oracle.LlamaFtypeQ5_K_M, oracle.LlamaFtypeQ6_K, oracle.LlamaFtypeQ8_0,
}

// llamaDefaultType is llama_ftype_get_default_type (llama-quant.cpp) for llamaFtypes: the type
// of every quantized tensor in our generator's uniform layout of the same mix.
var llamaDefaultType = map[oracle.LlamaFtype]gguf.Type{
	oracle.LlamaFtypeQ2_K: gguf.TypeQ2_K, oracle.LlamaFtypeQ3_K_M: gguf.TypeQ3_K,
	oracle.LlamaFtypeQ4_K_S: gguf.TypeQ4_K, oracle.LlamaFtypeQ4_K_M: gguf.TypeQ4_K,
	oracle.LlamaFtypeQ5_K_M: gguf.TypeQ5_K, oracle.LlamaFtypeQ6_K: gguf.TypeQ6_K,
	oracle.LlamaFtypeQ8_0: gguf.TypeQ8_0,
}

// llamaSource is an F16 model for llama.cpp to quantize: written by our generator, as
// convert_hf_to_gguf.py --outtype f16 writes one (norms and the router in F32).
type llamaSource struct {
	name    string
	file    func(t testing.TB) string
	vocab   int
	prompts [][]int32
}

// llamaSources returns the F16 models the quantizer is given: the trained tiny OLMoE (its
// weights in F16, its shape read from the committed file) and a tiny random Qwen3-MoE at the
// widths K-quants need.
func llamaSources(t testing.TB) []llamaSource {
	tm := trainedModel()
	tc := fileConfig(t, tm.file(t))
	q := modelgen.TinyQwen3(modelgen.Q4KM()) // the K-quant widths: 256, heads of 64
	q.Weights = modelgen.Uniform(gguf.TypeF16)
	q.Vocab, q.Context = testVocab, 512
	q.Name = "Qwen3-MoE tiny random f16"
	return []llamaSource{
		{name: "trained", vocab: tc.Vocab, prompts: tm.prompts,
			file: func(t testing.TB) string {
				src := modelgentest.TrainedModel(t, "q4_k_m")
				return modelgentest.File(t, "trained-f16.gguf", func(path string) error { return writeTrainedF16(path, src) })
			}},
		{name: "qwen3", vocab: q.Vocab, prompts: testPrompts(q.Vocab),
			file: func(t testing.TB) string { return modelgentest.TestModel(t, q) }},
	}
}

// fileConfig reads a model file's shape.
func fileConfig(t testing.TB, path string) Config {
	t.Helper()
	f, err := gguf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	c, err := ReadConfig(f)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return c
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

// llamaQuantized returns src's model quantized by llama.cpp to ftype, made once per test binary.
func llamaQuantized(t testing.TB, q *oracle.LlamaQuantizer, src llamaSource, ftype oracle.LlamaFtype) string {
	t.Helper()
	in := src.file(t)
	return modelgentest.File(t, fmt.Sprintf("llama-%s-%s.gguf", src.name, ftype), func(out string) error {
		_, err := q.Quantize(in, out, ftype)
		return err
	})
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
// npm prebuilt, as llama-quantize runs it, without an importance matrix) make each K-quant mix
// and Q8_0 of two F16 models, the trained tiny OLMoE and a tiny Qwen3-MoE, so that the engine
// meets the layouts llama.cpp decides (its per-tensor rules, its tensor order) rather than our
// generator's. Each file must pass the oracle as the generated ones do (identical greedy tokens
// for 32 tokens, logits within oracleTol of olmoe_ref.py's) and give the same bits on 1, 2 and
// 3 threads, on every kernel tier and in passes of 7 (quantDeterminism).
func TestOracleLlamaQuantized(t *testing.T) {
	q := oracle.Llama(t)
	py := oracle.Python(t, "torch", "numpy")
	script := filepath.Join(oracle.Root(t), "tools", "oracle", "olmoe_ref.py")
	start := time.Now()

	var models []testModel
	var srcs []llamaSource
	for _, src := range llamaSources(t) {
		for _, ft := range llamaFtypes {
			path := llamaQuantized(t, q, src, ft)
			f, err := gguf.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			lines, differ := typeLayout(f, llamaDefaultType[ft])
			var order []string
			for _, ti := range f.Tensors[:min(5, len(f.Tensors))] {
				order = append(order, ti.Name)
			}
			got, err := f.Uint32("general.file_type")
			f.Close()
			if err != nil || got != uint32(ft) {
				t.Errorf("%s %v: general.file_type %d (%v), want %d", src.name, ft, got, err, ft)
			}
			t.Logf("%s %v: %d quantized tensors not %v, as llama.cpp chose (in its order: %s, ...):\n\t%s",
				src.name, ft, differ, llamaDefaultType[ft], strings.Join(order, ", "), strings.Join(lines, "\n\t"))
			models = append(models, testModel{name: src.name + "-" + strings.ToLower(ft.String()), real: src.name == "trained",
				path: path, cfg: modelgen.Config{Vocab: src.vocab}, prompts: src.prompts})
			srcs = append(srcs, src)
		}
	}
	quantized := time.Since(start)

	cases, err := runReference(t, py, script, models)
	if err != nil {
		t.Fatalf("reference: %v", err)
	}
	byModel := map[string][]*refCase{}
	for i := range cases {
		byModel[cases[i].model.name] = append(byModel[cases[i].model.name], &cases[i])
	}
	// The tolerance must tell the mixes apart: were two ftypes' references within 2·oracleTol
	// of each other, one run of the engine could pass against both, so a file quantized wrongly
	// (or read as another mix) could pass.
	apart := map[string]float64{}
	for i := 1; i < len(models); i++ {
		if srcs[i].name != srcs[i-1].name {
			continue
		}
		ca, cb := byModel[models[i-1].name], byModel[models[i].name]
		if len(ca) == 0 || len(cb) == 0 {
			t.Fatalf("the reference gave no cases for %s or %s", models[i-1].name, models[i].name)
		}
		a, b := ca[0].logits, cb[0].logits
		var d float64
		for j := range a {
			d = max(d, math.Abs(float64(a[j])-float64(b[j])))
		}
		if old, ok := apart[srcs[i].name]; !ok || d < old {
			apart[srcs[i].name] = d
		}
		if d <= 2*oracleTol {
			t.Errorf("%s and %s: the references' logits differ by at most %.3g: the oracle cannot tell the mixes apart",
				models[i-1].name, models[i].name, d)
		}
	}

	var summary []string
	for _, m := range models {
		t.Run(m.name, func(t *testing.T) {
			tokens, maxDiff := checkReference(t, m.name, byModel[m.name])
			bad := quantDeterminism(t, m)
			for _, b := range bad {
				t.Error(b)
			}
			same := "the same bits on every thread count, tier and pass size tried"
			if len(bad) > 0 {
				same = fmt.Sprintf("%d runs differ", len(bad))
			}
			summary = append(summary, fmt.Sprintf("%-16s %3d greedy tokens identical, max |logit diff| %.3g, %s",
				m.name, tokens, maxDiff, same))
		})
	}
	t.Logf("%d files: quantized in %v, all checked in %v; mixes of one model differ from each other by at least %.3g (trained), %.3g (qwen3) in the reference's logits of their first prompt\n\t%s",
		len(models), quantized.Round(time.Millisecond), time.Since(start).Round(time.Millisecond),
		apart["trained"], apart["qwen3"], strings.Join(summary, "\n\t"))
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
