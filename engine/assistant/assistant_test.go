package assistant

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/trochilus-llm/trochilus/engine"
	"github.com/trochilus-llm/trochilus/gguf"
	"github.com/trochilus-llm/trochilus/internal/modelgen"
	"github.com/trochilus-llm/trochilus/internal/modelgen/modelgentest"
	"github.com/trochilus-llm/trochilus/tokenizer"
	"github.com/trochilus-llm/trochilus/tokenizer/chat"
)

func TestMain(m *testing.M) { os.Exit(modelgentest.RunTests(m)) }

const testContext = 320

// open loads the tiny model with a chat of testContext positions.
func open(t *testing.T, path string) *Chat {
	t.Helper()
	m, err := engine.Load(context.Background(), path, engine.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	s, err := m.NewSession(engine.SessionOptions{Context: testContext})
	if err != nil {
		t.Fatal(err)
	}
	c, err := New(m, s)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// fresh computes, without package assistant, what a new session generates greedily from text
// (tokenized with special-token text as tokens when special): the decoded answer without the
// end-of-sequence token.
func fresh(t *testing.T, path, text string, special, bos bool, maxTokens int) string {
	t.Helper()
	m, err := engine.Load(context.Background(), path, engine.Options{Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	tok, err := tokenizer.FromGGUF(m.File())
	if err != nil {
		t.Fatal(err)
	}
	s, err := m.NewSession(engine.SessionOptions{Context: testContext})
	if err != nil {
		t.Fatal(err)
	}
	var ids []int32
	if bos {
		ids = append(ids, tok.BOS())
	}
	g, err := s.Generate(context.Background(), tok.AppendEncode(ids, text, special),
		engine.GenerateOptions{MaxTokens: maxTokens, Stop: []int32{tok.EOS()}})
	if err != nil {
		t.Fatal(err)
	}
	out := g.Tokens
	if g.Stopped {
		out = out[:len(out)-1]
	}
	return tok.Decode(out)
}

// freshReply renders turns with the file's template directly and answers from a new session.
func freshReply(t *testing.T, path string, turns []chat.Message, maxTokens int) string {
	t.Helper()
	f, err := gguf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	src, err := f.Str("tokenizer.chat_template")
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	tok := tokenizerOf(t, path)
	text, err := chat.Render(src, turns, chat.Options{AddGenerationPrompt: true,
		SpecialTokens: chat.SpecialTokens{BOS: tok.Token(tok.BOS()), EOS: tok.Token(tok.EOS())}})
	if err != nil {
		t.Fatal(err)
	}
	return fresh(t, path, text, true, false, maxTokens)
}

func tokenizerOf(t *testing.T, path string) *tokenizer.Tokenizer {
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

func TestReplyAsAFreshSession(t *testing.T) {
	path := modelgentest.TinyModel(t, modelgen.Uniform(gguf.TypeQ8_0))
	c := open(t, path)
	if !c.CanChat() {
		t.Fatal("the tiny model has no chat template")
	}
	turns := []chat.Message{{Role: "user", Content: "Hello! Who are you?"}}
	var pieces []string
	r, err := c.Reply(context.Background(), turns, Options{MaxTokens: 16, OnText: func(s string) { pieces = append(pieces, s) }})
	if err != nil {
		t.Fatal(err)
	}
	if want := freshReply(t, path, turns, 16); r.Text != want || r.Text == "" {
		t.Fatalf("answer %q, a fresh session gives %q", r.Text, want)
	}
	if strings.Join(pieces, "") != r.Text {
		t.Fatalf("streamed %q, answer %q", pieces, r.Text)
	}
	if r.Reused != 0 || r.Used != r.Prompt+r.Tokens-1 || r.Context != testContext {
		t.Fatalf("first reply %+v", r)
	}

	// The second turn keeps the first's KV cache and still answers as a fresh session.
	turns = append(turns, chat.Message{Role: "assistant", Content: r.Text}, chat.Message{Role: "user", Content: "Tell me more."})
	r2, err := c.Reply(context.Background(), turns, Options{MaxTokens: 16})
	if err != nil {
		t.Fatal(err)
	}
	if want := freshReply(t, path, turns, 16); r2.Text != want {
		t.Fatalf("second answer %q, a fresh session gives %q", r2.Text, want)
	}
	if r2.Reused == 0 || r2.Reused >= r2.Prompt {
		t.Fatalf("second reply reused %d of %d", r2.Reused, r2.Prompt)
	}
}

func TestStopTextEndsTheAnswer(t *testing.T) {
	path := modelgentest.TinyModel(t, modelgen.Uniform(gguf.TypeQ8_0))
	turns := []chat.Message{{Role: "user", Content: "Count to ten, please."}}
	full := freshReply(t, path, turns, 24)
	if len(full) < 6 {
		t.Fatalf("the fresh answer %q is too short to cut", full)
	}
	// A stop text from the middle of the answer, and one that never appears.
	stop := full[len(full)/2 : len(full)/2+3]
	want := full[:strings.Index(full, stop)]

	c := open(t, path)
	var pieces []string
	r, err := c.Reply(context.Background(), turns, Options{MaxTokens: 24, Stop: []string{"\x00never", stop},
		OnText: func(s string) { pieces = append(pieces, s) }})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("answer %q, stop text %q", full, stop)
	if r.Text != want || !r.Stopped || r.Ended || !r.Finished() {
		t.Fatalf("stopped at %q: %+v, want text %q", stop, r, want)
	}
	if got := strings.Join(pieces, ""); got != want {
		t.Fatalf("streamed %q, want %q (the stop text must not leak)", got, want)
	}
	// The session stays consistent: a new turn answers as a fresh session would.
	turns = append(turns, chat.Message{Role: "assistant", Content: r.Text}, chat.Message{Role: "user", Content: "Go on."})
	r2, err := c.Reply(context.Background(), turns, Options{MaxTokens: 12})
	if err != nil {
		t.Fatal(err)
	}
	if w := freshReply(t, path, turns, 12); r2.Text != w {
		t.Fatalf("after a stop text: %q, fresh %q", r2.Text, w)
	}
}

func TestCompleteRawText(t *testing.T) {
	path := modelgentest.TinyModel(t, modelgen.Uniform(gguf.TypeQ4_K))
	c := open(t, path)
	tok := tokenizerOf(t, path)
	text := "The capital of France is <|endoftext|> not a token here"
	r, err := c.Complete(context.Background(), text, Options{MaxTokens: 10})
	if err != nil {
		t.Fatal(err)
	}
	if want := fresh(t, path, text, false, tok.AddBOS(), 10); r.Text != want {
		t.Fatalf("completion %q, a fresh session gives %q", r.Text, want)
	}
	if r.Tokens < 1 || r.Tokens > 10 || (r.Tokens < 10) != r.Ended {
		t.Fatalf("completion %+v", r)
	}
}

func TestErrors(t *testing.T) {
	path := modelgentest.TinyModel(t, modelgen.Uniform(gguf.TypeQ8_0))
	c := open(t, path)
	long := []chat.Message{{Role: "user", Content: strings.Repeat("word ", testContext)}}
	if _, err := c.Reply(context.Background(), long, Options{}); !errors.Is(err, engine.ErrContextFull) {
		t.Fatalf("too long: %v, want ErrContextFull", err)
	}
	// An empty text is the BOS alone where the tokenizer adds one, and no prompt otherwise.
	if _, err := c.Complete(context.Background(), "", Options{MaxTokens: 1}); (err == nil) != tokenizerOf(t, path).AddBOS() {
		t.Fatalf("empty completion: %v (the tokenizer adds a BOS: %v)", err, tokenizerOf(t, path).AddBOS())
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := c.Reply(ctx, []chat.Message{{Role: "user", Content: "hi"}}, Options{MaxTokens: 4}); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled: %v", err)
	}
	turns := []chat.Message{{Role: "user", Content: "hi"}}
	r, err := c.Reply(context.Background(), turns, Options{MaxTokens: 6})
	if err != nil {
		t.Fatal(err)
	}
	if want := freshReply(t, path, turns, 6); r.Text != want {
		t.Fatalf("after errors: %q, fresh %q", r.Text, want)
	}

	// A file without a chat template completes but cannot chat.
	olmoe, err := modelgen.FindOLMoETokenizer("")
	if err != nil {
		t.Fatal(err)
	}
	cfg := modelgen.Tiny(modelgen.Uniform(gguf.TypeQ8_0))
	var conf map[string]any
	if err := json.Unmarshal(olmoe.Config, &conf); err != nil {
		t.Fatal(err)
	}
	delete(conf, "chat_template")
	noTemplate, err := json.Marshal(conf)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Tokenizer = &modelgen.Tokenizer{JSON: olmoe.JSON, Config: noTemplate, Pre: olmoe.Pre}
	plain := open(t, modelgentest.TestModel(t, cfg))
	if plain.CanChat() {
		t.Fatal("a file without a template can chat")
	}
	if _, err := plain.Reply(context.Background(), turns, Options{MaxTokens: 2}); !errors.Is(err, ErrNoTemplate) {
		t.Fatalf("reply without a template: %v", err)
	}
	if r, err := plain.Complete(context.Background(), "Once upon a time", Options{MaxTokens: 3}); err != nil || r.Tokens == 0 {
		t.Fatalf("completion without a template: %+v, %v", r, err)
	}
}
