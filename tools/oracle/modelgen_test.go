package oracle_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/trochilus-llm/trochilus/gguf"
	"github.com/trochilus-llm/trochilus/internal/modelgen"
	"github.com/trochilus-llm/trochilus/internal/oracle"
)

// TestReferenceModelgenLong runs the reference checks (checkReference) on the project's own
// generated models, the files the engine comparison uses: the tiny Q8_0 and Q4_K_M presets
// (OLMoE's 50304-row vocabulary) and a BF16 variant with grouped-query attention, clip_qkv and
// norm_topk_prob. It is a long check (about 20 s of CPU, mostly the 50304-wide float64
// re-derivation), run once by the gate's check-long step.
func TestReferenceModelgenLong(t *testing.T) {
	oracle.Long(t)
	py := python(t, true)
	dir := t.TempDir()
	variant := modelgen.Tiny(modelgen.Uniform(gguf.TypeBF16))
	variant.KVHeads, variant.NormTopKProb, variant.ClipQKV, variant.Seed = 2, true, 3, 9
	cases := []struct {
		name string
		cfg  modelgen.Config
		want map[string]any
	}{
		{"q8_0", modelgen.Tiny(modelgen.Uniform(gguf.TypeQ8_0)),
			map[string]any{"hidden_size": 64.0, "num_experts": 8.0, "vocab_size": 50304.0, "clip_qkv": nil}},
		{"q4_k_m", modelgen.Tiny(modelgen.Q4KM()),
			map[string]any{"hidden_size": 256.0, "intermediate_size": 256.0, "vocab_size": 50304.0}},
		{"bf16-gqa", variant,
			map[string]any{"num_key_value_heads": 2.0, "norm_topk_prob": true, "clip_qkv": 3.0}},
	}
	var models []refModel
	for _, c := range cases {
		path := filepath.Join(dir, c.name+".gguf")
		if err := modelgen.Write(context.Background(), path, c.cfg); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		models = append(models, refModel{c.name, path, 50280, c.want})
	}
	checkReference(t, py, dir, models)
}
