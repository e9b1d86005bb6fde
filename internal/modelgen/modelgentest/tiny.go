package modelgentest

import (
	"testing"

	"github.com/trochilus-llm/trochilus/gguf"
	"github.com/trochilus-llm/trochilus/internal/modelgen"
)

// TinyQ8 returns the path of TinyModel with every weight in Q8_0: the model most tests of the
// packages built on the engine (assistant, serve, ui, the CLI) run, named once here rather
// than spelled out in each.
func TinyQ8(t testing.TB) string {
	t.Helper()
	return TinyModel(t, modelgen.Uniform(gguf.TypeQ8_0))
}

// TinyQwen3Model returns the path of modelgen.TinyQwen3(w) with Qwen3's tokenizer and chat
// template (whose tools are written in <tool_call> blocks), written once per test binary (see
// TestModel).
func TinyQwen3Model(t testing.TB, w modelgen.Weights) string {
	t.Helper()
	cfg := modelgen.TinyQwen3(w)
	tok, err := modelgen.FindQwen3Tokenizer("")
	if err != nil {
		t.Fatalf("modelgentest: %v", err)
	}
	cfg.Tokenizer = tok
	return TestModel(t, cfg)
}
