// Package enginetest runs generated models in the engine for the tests of the packages built on
// it (engine/assistant, engine/serve, ui): a session on a model file, and what a fresh session
// answers, the reference those packages' answers are held to bit for bit. It is test support
// beside package modelgentest, which cannot import the engine: the engine's own tests import
// modelgentest. No program imports it.
package enginetest

import (
	"context"
	"testing"

	"github.com/trochilus-llm/trochilus/engine"
	"github.com/trochilus-llm/trochilus/gguf"
	"github.com/trochilus-llm/trochilus/tokenizer"
	"github.com/trochilus-llm/trochilus/tokenizer/chat"
)

// Open loads the model at path with opts, closed when the test ends, and opens a session of
// the given number of positions on it.
func Open(t testing.TB, path string, opts engine.Options, positions int) (*engine.Model, *engine.Session) {
	t.Helper()
	m, err := engine.Load(context.Background(), path, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	s, err := m.NewSession(engine.SessionOptions{Context: positions})
	if err != nil {
		t.Fatal(err)
	}
	return m, s
}

// Greedy returns what a new session of the given positions generates greedily from prompt on
// the model at path, loaded with opts (and closed again before Greedy returns): up to maxTokens
// tokens, ending early at the end-of-sequence token, decoded without that token.
func Greedy(t testing.TB, path string, opts engine.Options, positions int, prompt []int32, maxTokens int) string {
	t.Helper()
	m, err := engine.Load(context.Background(), path, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	tok, err := tokenizer.FromGGUF(m.File())
	if err != nil {
		t.Fatal(err)
	}
	s, err := m.NewSession(engine.SessionOptions{Context: positions})
	if err != nil {
		t.Fatal(err)
	}
	g, err := s.Generate(context.Background(), prompt,
		engine.GenerateOptions{MaxTokens: maxTokens, Stop: []int32{tok.EOS()}})
	if err != nil {
		t.Fatal(err)
	}
	ids := g.Tokens
	if g.Stopped {
		ids = ids[:len(ids)-1]
	}
	return tok.Decode(ids)
}

// Tokenizer returns the tokenizer of the model file at path.
func Tokenizer(t testing.TB, path string) *tokenizer.Tokenizer {
	t.Helper()
	f, err := gguf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tok, err := tokenizer.FromGGUF(f)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// ChatPrompt renders turns with the chat template of the model file at path, the generation
// prompt added and the file's BOS and EOS tokens as the template's special tokens: the text a
// chat sends the model, special-token text included.
func ChatPrompt(t testing.TB, path string, turns []chat.Message) string {
	t.Helper()
	f, err := gguf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	src, err := f.Str("tokenizer.chat_template")
	if err != nil {
		t.Fatal(err)
	}
	tok, err := tokenizer.FromGGUF(f)
	if err != nil {
		t.Fatal(err)
	}
	text, err := chat.Render(src, turns, chat.Options{AddGenerationPrompt: true,
		SpecialTokens: chat.SpecialTokens{BOS: tok.Token(tok.BOS()), EOS: tok.Token(tok.EOS())}})
	if err != nil {
		t.Fatal(err)
	}
	return text
}
