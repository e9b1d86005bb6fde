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
	"github.com/trochilus-llm/trochilus/internal/modelgen/modelgentest/enginetest"
	"github.com/trochilus-llm/trochilus/tokenizer/chat"
)

func TestMain(m *testing.M) { os.Exit(modelgentest.RunTests(m)) }

const testContext = 320

// open loads the tiny model with a chat of testContext positions.
func open(t testing.TB, path string) *Chat {
	t.Helper()
	c, err := New(enginetest.Open(t, path, engine.Options{}, testContext))
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
	tok := enginetest.Tokenizer(t, path)
	var ids []int32
	if bos {
		ids = append(ids, tok.BOS())
	}
	return enginetest.Greedy(t, path, engine.Options{Threads: 1}, testContext, tok.AppendEncode(ids, text, special), maxTokens)
}

// freshReply renders turns with the file's template directly and answers from a new session.
func freshReply(t *testing.T, path string, turns []chat.Message, maxTokens int) string {
	t.Helper()
	return fresh(t, path, enginetest.ChatPrompt(t, path, turns), true, false, maxTokens)
}

// replyAsFresh has c answer turns in at most maxTokens tokens and checks that the answer is the
// one a fresh session gives; what names the answer in a failure.
func replyAsFresh(t *testing.T, c *Chat, path string, turns []chat.Message, maxTokens int, what string) Reply {
	t.Helper()
	r, err := c.Reply(context.Background(), turns, Options{MaxTokens: maxTokens})
	if err != nil {
		t.Fatal(err)
	}
	if want := freshReply(t, path, turns, maxTokens); r.Text != want {
		t.Fatalf("%s %q, a fresh session gives %q", what, r.Text, want)
	}
	return r
}

func TestReplyAsAFreshSession(t *testing.T) {
	path := modelgentest.TinyQ8(t)
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
	r2 := replyAsFresh(t, c, path, turns, 16, "second answer")
	if r2.Reused == 0 || r2.Reused >= r2.Prompt {
		t.Fatalf("second reply reused %d of %d", r2.Reused, r2.Prompt)
	}
}

func TestStopTextEndsTheAnswer(t *testing.T) {
	path := modelgentest.TinyQ8(t)
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
	replyAsFresh(t, c, path, turns, 12, "after a stop text:")
}

func TestCompleteRawText(t *testing.T) {
	path := modelgentest.TinyModel(t, modelgen.Uniform(gguf.TypeQ4_K))
	c := open(t, path)
	tok := enginetest.Tokenizer(t, path)
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
	path := modelgentest.TinyQ8(t)
	c := open(t, path)
	long := []chat.Message{{Role: "user", Content: strings.Repeat("word ", testContext)}}
	if _, err := c.Reply(context.Background(), long, Options{}); !errors.Is(err, engine.ErrContextFull) {
		t.Fatalf("too long: %v, want ErrContextFull", err)
	}
	// An empty text is the BOS alone where the tokenizer adds one, and no prompt otherwise.
	if _, err := c.Complete(context.Background(), "", Options{MaxTokens: 1}); (err == nil) != enginetest.Tokenizer(t, path).AddBOS() {
		t.Fatalf("empty completion: %v (the tokenizer adds a BOS: %v)", err, enginetest.Tokenizer(t, path).AddBOS())
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := c.Reply(ctx, []chat.Message{{Role: "user", Content: "hi"}}, Options{MaxTokens: 4}); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled: %v", err)
	}
	turns := []chat.Message{{Role: "user", Content: "hi"}}
	replyAsFresh(t, c, path, turns, 6, "after errors:")

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
