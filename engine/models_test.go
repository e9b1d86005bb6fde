package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/trochilus-llm/trochilus/gguf"
	"github.com/trochilus-llm/trochilus/internal/modelgen"
	"github.com/trochilus-llm/trochilus/internal/modelgen/modelgentest"
)

// testVocab is the vocabulary of the test models: smaller than OLMoE's 50304 so that the
// output head (the largest matrix of a tiny model) does not dominate the test time; the CLI
// test runs the full-vocabulary tiny model.
const testVocab = 4096

// testModel is one model the oracle and determinism tests run: generated from cfg, or the
// trained model in the weights trained names (modelgentest.TrainedModel), whose shape cfg then
// describes.
type testModel struct {
	name    string
	cfg     modelgen.Config
	trained string
	path    string    // a file made otherwise (libllama's quantizer's, say)
	real    bool      // trained weights (see checkVaried)
	prompts [][]int32 // the prompts to run it on; nil means testPrompts
}

// file returns the model's GGUF, written once per test binary.
func (tm testModel) file(t testing.TB) string {
	if tm.path != "" {
		return tm.path
	}
	if tm.trained != "" {
		return modelgentest.TrainedModel(t, tm.trained)
	}
	return modelgentest.TestModel(t, tm.cfg)
}

// load loads the model with opts.
func (tm testModel) load(t testing.TB, opts Options) *Model {
	t.Helper()
	m, err := Load(context.Background(), tm.file(t), opts)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}

// testPrompts returns the prompts the model is run on.
func (tm testModel) testPrompts() [][]int32 {
	if tm.prompts != nil {
		return tm.prompts
	}
	return testPrompts(tm.cfg.Vocab)
}

// trainedModel is tools/train's model (testdata/trained) in Q8_0: real routing, peaked logits,
// text that copies from its context, on its own prompts.
func trainedModel() testModel {
	tm := testModel{name: "trained-q8_0", trained: "q8_0", real: true,
		cfg: modelgen.Config{Layers: 4, Hidden: 256, Heads: 4, KVHeads: 4, Experts: 16, ExpertsUsed: 4,
			ExpertFFN: 256, Vocab: 50304, Context: 1024, RopeTheta: 10000, RMSEps: 1e-5,
			Weights: modelgen.Uniform(gguf.TypeQ8_0)}}
	tm.prompts = readTrainedPrompts("prompts.json")
	return tm
}

// trainedQwen3Model is tools/train's Qwen3-MoE model (testdata/trained) in Q8_0: per-head q/k
// norms, grouped-query attention and renormalised routing with trained weights, Qwen3's
// vocabulary, on its own prompts (tools/train/README.md, "The Qwen3-MoE model").
func trainedQwen3Model() testModel {
	tm := testModel{name: "trained-qwen3-q8_0", trained: "qwen3-q8_0", real: true,
		cfg: modelgen.Config{Arch: "qwen3moe", Layers: 4, Hidden: 256, Heads: 4, KVHeads: 2, HeadDimension: 64,
			Experts: 16, ExpertsUsed: 4, ExpertFFN: 256, Vocab: 151936, Context: 1024, RopeTheta: 1e6,
			RMSEps: 1e-6, NormTopKProb: true, Weights: modelgen.Uniform(gguf.TypeQ8_0)}}
	tm.prompts = readTrainedPrompts("qwen3-tiny-prompts.json")
	return tm
}

// readTrainedPrompts returns the token ids of the prompts in testdata/trained/name but the
// benchmarks' long one.
func readTrainedPrompts(name string) [][]int32 {
	b, err := os.ReadFile(filepath.Join("..", "testdata", "trained", name))
	if err != nil {
		panic(err) // committed with the model: its absence is a broken checkout
	}
	var ps []struct {
		Name string
		IDs  []int32
	}
	if err := json.Unmarshal(b, &ps); err != nil {
		panic(fmt.Sprintf("testdata/trained/%s: %v", name, err))
	}
	var ids [][]int32
	for _, p := range ps {
		if p.Name != "chat-rewrite-file" { // hundreds of rows: the benchmarks' prompt
			ids = append(ids, p.IDs)
		}
	}
	return ids
}

// testModels returns every tiny model: each weight type, the Q4_K_M mix, and a variant with the
// options OLMoE-1B-7B leaves off (renormalised top-k, clip_qkv, RoPE theta 500000, 6 query
// heads sharing 2 key/value heads, 3 of 8 experts).
func testModels() []testModel {
	var ms []testModel
	for _, typ := range []gguf.Type{gguf.TypeF32, gguf.TypeF16, gguf.TypeBF16, gguf.TypeQ8_0, gguf.TypeQ4_0,
		gguf.TypeQ4_K, gguf.TypeQ5_K, gguf.TypeQ6_K, gguf.TypeQ2_K, gguf.TypeQ3_K} {
		w := modelgen.Uniform(typ)
		ms = append(ms, testModel{name: w.Name, cfg: tinyConfig(w)})
	}
	ms = append(ms, testModel{name: "q4_k_m", cfg: tinyConfig(modelgen.Q4KM())})
	v := tinyConfig(modelgen.Uniform(gguf.TypeQ8_0))
	v.Hidden, v.Heads, v.KVHeads, v.ExpertsUsed = 96, 6, 2, 3
	v.NormTopKProb, v.ClipQKV, v.RopeTheta = true, 1.5, 500000
	v.Seed = 7
	ms = append(ms, testModel{name: "variant-q8_0", cfg: v})
	// Qwen3-MoE: per-head q/k norms, grouped-query attention, head width apart from hidden/heads.
	for _, w := range []modelgen.Weights{modelgen.Uniform(gguf.TypeQ8_0), modelgen.Q4KM()} {
		c := modelgen.TinyQwen3(w)
		c.Vocab, c.Context = testVocab, 512
		ms = append(ms, testModel{name: "qwen3-" + w.Name, cfg: c})
	}
	return append(ms, trainedModel(), trainedQwen3Model())
}

func tinyConfig(w modelgen.Weights) modelgen.Config {
	c := modelgen.Tiny(w)
	c.Vocab = testVocab
	c.Context = 512
	return c
}

// loadTest writes (once per test binary) and loads cfg's model.
func loadTest(t testing.TB, cfg modelgen.Config, opts Options) *Model {
	t.Helper()
	path := modelgentest.TestModel(t, cfg)
	m, err := Load(context.Background(), path, opts)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}

// testPrompts returns the prompts the tests evaluate: three of different lengths (one longer
// than the smaller pass sizes), drawn from a fixed seed.
func testPrompts(vocab int) [][]int32 {
	r := rand.New(rand.NewPCG(11, 12))
	var ps [][]int32
	for _, n := range []int{6, 17, 40} {
		p := make([]int32, n)
		for i := range p {
			p[i] = int32(r.IntN(vocab))
		}
		ps = append(ps, p)
	}
	return ps
}
