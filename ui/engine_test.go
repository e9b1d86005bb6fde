package ui

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/trochilus-llm/trochilus/engine"
	"github.com/trochilus-llm/trochilus/engine/assistant"
	"github.com/trochilus-llm/trochilus/gguf"
	"github.com/trochilus-llm/trochilus/internal/modelgen"
	"github.com/trochilus-llm/trochilus/internal/modelgen/modelgentest"
	"github.com/trochilus-llm/trochilus/internal/modelgen/modelgentest/enginetest"
	"github.com/trochilus-llm/trochilus/tokenizer/chat"
)

// chatContext is the session length the engine tests use: room for a few turns, and a small
// KV cache.
const chatContext = 320

// freshAnswer computes, without the adapter, what a new session answers to turns: the template
// rendered, the whole prompt evaluated, greedy tokens up to maxTokens or the end-of-sequence.
func freshAnswer(t *testing.T, path string, turns []chat.Message, maxTokens int) string {
	t.Helper()
	prompt := enginetest.Tokenizer(t, path).Encode(enginetest.ChatPrompt(t, path, turns), true)
	return enginetest.Greedy(t, path, engine.Options{}, chatContext, prompt, maxTokens)
}

// replyAsFresh has cm answer turns in at most maxTokens tokens and checks that the answer is
// the one a fresh session gives; what names the moment in a failure.
func replyAsFresh(t *testing.T, cm ChatModel, path string, turns []chat.Message, maxTokens int, what string) assistant.Reply {
	t.Helper()
	r, err := cm.Reply(context.Background(), turns, assistant.Options{MaxTokens: maxTokens})
	if err != nil {
		t.Fatal(err)
	}
	if want := freshAnswer(t, path, turns, maxTokens); r.Text != want {
		t.Fatalf("%s: %q, fresh %q", what, r.Text, want)
	}
	return r
}

func TestEngineChatThroughTheWindow(t *testing.T) {
	path := modelgentest.TinyQ8(t)
	u, dirs := newTestUI(t, &EngineBackend{Context: chatContext}, Options{MaxAnswer: 12})
	if err := dirs.AddOpened(path); err != nil {
		t.Fatal(err)
	}
	u.measure()
	u.Wait()
	if u.machine == nil || u.machine.Profile.RAMTotal == 0 {
		t.Fatalf("machine not measured: %v", u.machineErr)
	}
	pickAndLoad(t, u, path)
	if u.loaded.Context() != chatContext {
		t.Fatalf("context %d", u.loaded.Context())
	}

	say(t, u, "Hello! Who are you?")
	msgs := u.chat.conv.Messages
	if len(msgs) != 2 || msgs[1].Tokens == 0 {
		t.Fatalf("conversation %+v (status %q)", msgs, u.chat.status.String())
	}
	want := freshAnswer(t, path, u.chat.conv.Turns()[:1], 12)
	if msgs[1].Content != want {
		t.Fatalf("answer %q, a fresh session gives %q", msgs[1].Content, want)
	}
	if shown := shownTexts(u); shown[1] != want {
		t.Fatalf("view shows %q", shown[1])
	}
	first := u.chat.status.String()

	// The second turn keeps the KV cache of the first and answers as a fresh session would.
	say(t, u, "Tell me more.")
	msgs = u.chat.conv.Messages
	want = freshAnswer(t, path, u.chat.conv.Turns()[:3], 12)
	if len(msgs) != 4 || msgs[3].Content != want {
		t.Fatalf("second answer %q, a fresh session gives %q", msgs[3].Content, want)
	}
	if strings.Contains(u.chat.status.String(), "(0 reused)") {
		t.Fatalf("second turn reused nothing: %s", u.chat.status.String())
	}

	// Regenerate in Exact mode samples a new version (a greedy one would be the same), and
	// keeps the first.
	exact := msgs[3].Content
	u.chat.regenerate()
	u.Wait()
	m := u.chat.conv.Messages[3]
	if vs := m.AllVersions(); len(vs) != 2 || vs[0].Content != exact || vs[0].Seed != nil || vs[1].Seed == nil || m.Shown != 1 {
		t.Fatalf("after Regenerate: %+v", m)
	}
	// A new chat asking the same answers the same, to the byte: decoding is greedy and exact.
	u.chat.newChat()
	say(t, u, "Hello! Who are you?")
	if got := u.chat.conv.Messages[1].Content; got != msgs[1].Content {
		t.Fatalf("asked again %q, first time %q", got, msgs[1].Content)
	}
	t.Logf("turn 1: %s", first)
	t.Logf("turn 2: %s", u.chat.status.String())
	t.Logf("answers: %q / %q", msgs[1].Content, msgs[3].Content)
}

func TestEngineReplyStopEditAndContext(t *testing.T) {
	path := modelgentest.TinyQ8(t)
	be := &EngineBackend{Context: chatContext}
	cm, err := be.Load(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	defer cm.Close()
	turns := []chat.Message{{Role: "user", Content: "Count to ten, please."}}

	// Stop after three pieces of text: the reply keeps them and the session stays usable.
	ctx, cancel := context.WithCancel(context.Background())
	var pieces []string
	r, err := cm.Reply(ctx, turns, assistant.Options{MaxTokens: 40, OnText: func(s string) {
		pieces = append(pieces, s)
		if len(pieces) == 3 {
			cancel()
		}
	}})
	if !errors.Is(err, context.Canceled) || r.Ended || r.Text != strings.Join(pieces, "") || r.Text == "" {
		t.Fatalf("stopped reply %+v, %v (pieces %q)", r, err, pieces)
	}
	turns = append(turns, chat.Message{Role: "assistant", Content: r.Text}, chat.Message{Role: "user", Content: "Go on."})
	r2 := replyAsFresh(t, cm, path, turns, 10, "after a stop")
	if r2.Reused == 0 || r2.Reused >= r2.Prompt {
		t.Fatalf("reused %d of %d", r2.Reused, r2.Prompt)
	}

	// Editing the last user message keeps only the prefix before it.
	turns[2].Content = "Stop counting."
	r3 := replyAsFresh(t, cm, path, turns, 10, "after an edit")
	if r3.Reused >= r2.Reused+r2.Tokens {
		t.Fatalf("edit reused %d tokens", r3.Reused)
	}
	t.Logf("prompt %d reused %d; after edit prompt %d reused %d", r2.Prompt, r2.Reused, r3.Prompt, r3.Reused)

	// A conversation longer than the context is refused with a clear error.
	long := []chat.Message{{Role: "user", Content: strings.Repeat("word ", chatContext)}}
	if _, err := cm.Reply(context.Background(), long, assistant.Options{MaxTokens: 10}); !errors.Is(err, engine.ErrContextFull) {
		t.Fatalf("too long: %v, want ErrContextFull", err)
	}
}

func TestEngineBackendRefusesNonModels(t *testing.T) {
	be := &EngineBackend{}
	if _, err := be.Load(context.Background(), t.TempDir()+"/missing.gguf"); err == nil {
		t.Fatal("loaded a missing file")
	}
	// A model without a tokenizer cannot chat.
	path := modelgentest.TestModel(t, modelgen.Tiny(modelgen.Uniform(gguf.TypeQ8_0)))
	if _, err := be.Load(context.Background(), path); err == nil {
		t.Fatal("loaded a model without a tokenizer for chat")
	} else {
		t.Logf("no tokenizer: %v", err)
	}
}
