package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/trochilus-llm/trochilus/engine/library"
)

// A model given by name is found in the models folder: exactly, without ".gguf", or by a unique
// prefix; a path is taken as it is; anything else is an error naming the candidates.
func TestResolveModel(t *testing.T) {
	home := t.TempDir()
	t.Setenv(library.HomeEnv, home)
	models := library.DirsAt(home).Models
	if err := os.MkdirAll(models, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"OLMoE-Q4_K_M.gguf", "OLMoE-Q8_0.gguf", "Qwen3-Q4_K_M.gguf", "notes.txt"} {
		if err := os.WriteFile(filepath.Join(models, n), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	local := filepath.Join(t.TempDir(), "here.gguf")
	if err := os.WriteFile(local, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for give, want := range map[string]string{
		local:             local,
		"OLMoE-Q8_0.gguf": filepath.Join(models, "OLMoE-Q8_0.gguf"),
		"OLMoE-Q4_K_M":    filepath.Join(models, "OLMoE-Q4_K_M.gguf"),
		"qwen3":           filepath.Join(models, "Qwen3-Q4_K_M.gguf"),
		"olmoe-q8":        filepath.Join(models, "OLMoE-Q8_0.gguf"),
	} {
		if got, err := resolveModel(give); err != nil || got != want {
			t.Errorf("resolveModel(%q) = %q, %v; want %q", give, got, err, want)
		}
	}
	for give, wantErr := range map[string]string{
		"OLMoE":          "names 2 models",
		"notes":          "no such file, nor a model",
		"missing/x.gguf": "no such file",
		"../OLMoE-Q8_0":  "no such file",
	} {
		if got, err := resolveModel(give); err == nil || !strings.Contains(err.Error(), wantErr) {
			t.Errorf("resolveModel(%q) = %q, %v; want an error with %q", give, got, err, wantErr)
		}
	}
}
