package ui

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"fyne.io/fyne/v2/test"

	"github.com/trochilus-llm/trochilus/engine/assistant"
	"github.com/trochilus-llm/trochilus/internal/modelgen/modelgentest"
	"github.com/trochilus-llm/trochilus/tokenizer/chat"
	"github.com/trochilus-llm/trochilus/ui/conversation"
)

// recordingBackend loads engine models that record what each answer cost.
type recordingBackend struct {
	EngineBackend
	mu      sync.Mutex
	replies []Reply
}

func (b *recordingBackend) Load(ctx context.Context, path string) (ChatModel, error) {
	m, err := b.EngineBackend.Load(ctx, path)
	if err != nil {
		return nil, err
	}
	return &recordingModel{ChatModel: m, be: b}, nil
}

func (b *recordingBackend) last() Reply {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.replies[len(b.replies)-1]
}

type recordingModel struct {
	ChatModel
	be *recordingBackend
}

func (m *recordingModel) record(r Reply, err error) (Reply, error) {
	m.be.mu.Lock()
	m.be.replies = append(m.be.replies, r)
	m.be.mu.Unlock()
	return r, err
}

func (m *recordingModel) Reply(ctx context.Context, turns []chat.Message, opts assistant.Options) (Reply, error) {
	return m.record(m.ChatModel.Reply(ctx, turns, opts))
}

func (m *recordingModel) Continue(ctx context.Context, turns []chat.Message, opts assistant.Options) (Reply, error) {
	return m.record(m.ChatModel.Continue(ctx, turns, opts))
}

// countTo is a question whose answer from the tiny model the tokenizer reads back as the
// tokens the model chose, at every length: a continuation of it keeps every token.
const countTo = "Count to ten, please."

// Continue goes on with exactly the tokens an uninterrupted greedy answer has: a cut answer
// continued equals a fresh session's answer of the two lengths together, and the continuation
// evaluates one token (the last one chosen, never evaluated), the rest of the KV cache kept.
func TestEngineContinueIsUninterrupted(t *testing.T) {
	path := modelgentest.TinyQ8(t)
	cm, err := (&EngineBackend{Context: chatContext}).Load(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	defer cm.Close()
	turns := []chat.Message{{Role: "user", Content: countTo}}
	r1, err := cm.Reply(context.Background(), turns, assistant.Options{MaxTokens: 8})
	if err != nil || r1.Finished() || r1.Tokens != 8 {
		t.Fatalf("cut answer %+v, %v", r1, err)
	}
	turns = append(turns, chat.Message{Role: "assistant", Content: r1.Text})
	if n, err := cm.Count(turns, true); err != nil || n != r1.Used+1 {
		t.Fatalf("Count of the continuation %d, %v; the session holds %d", n, err, r1.Used)
	}
	var streamed strings.Builder
	r2, err := cm.Continue(context.Background(), turns, assistant.Options{MaxTokens: 8, OnText: func(s string) { streamed.WriteString(s) }})
	if err != nil {
		t.Fatal(err)
	}
	want := freshAnswer(t, path, turns[:1], 16)
	if r1.Text+r2.Text != want || streamed.String() != r2.Text {
		t.Fatalf("cut %q + continued %q (streamed %q), uninterrupted %q", r1.Text, r2.Text, streamed.String(), want)
	}
	if r2.Reused != r1.Used || r2.Prompt != r1.Used+1 || r2.Tokens != 8 {
		t.Fatalf("the continuation read %d tokens, %d reused (the session held %d), and made %d", r2.Prompt, r2.Reused, r1.Used, r2.Tokens)
	}
	t.Logf("cut %q, continued %q", r1.Text, r2.Text)

	// An answer the tokenizer reads back in other tokens than the model chose (the tiny
	// model's word salad often is: a real model's text rarely) is continued from its text,
	// re-read from where the tokens differ: the question's prompt is still kept.
	other := []chat.Message{{Role: "user", Content: "Hello! Who are you?"}}
	r3, err := cm.Reply(context.Background(), other, assistant.Options{MaxTokens: 8})
	if err != nil {
		t.Fatal(err)
	}
	q, err := cm.Count(other, false)
	if err != nil {
		t.Fatal(err)
	}
	r4, err := cm.Continue(context.Background(), append(other, chat.Message{Role: "assistant", Content: r3.Text}), assistant.Options{MaxTokens: 8})
	if err != nil || r4.Tokens != 8 || r4.Reused < q-1 {
		t.Fatalf("re-read continuation %+v, %v (the question's prompt %d)", r4, err, q)
	}
	t.Logf("re-read: kept %d of %d tokens (the session held %d); same as uninterrupted: %v",
		r4.Reused, r4.Prompt, r3.Used, r3.Text+r4.Text == freshAnswer(t, path, other, 16))

	// Nothing to continue is refused, not sent.
	if _, err := cm.Continue(context.Background(), turns[:1], assistant.Options{}); err == nil {
		t.Fatal("continued a question")
	}
}

// Through the window: an answer at the length limit, continued, is the uninterrupted answer,
// its tokens counted together.
func TestEngineContinueThroughTheWindow(t *testing.T) {
	be := &recordingBackend{EngineBackend: EngineBackend{Context: chatContext}}
	u, path := newTinyEngineUI(t, be, Options{MaxAnswer: 6})
	say(t, u, countTo)
	if a := u.chat.conv.Messages[1]; !a.Length || a.Tokens != 6 || u.chat.views[1].contBtn == nil {
		t.Fatalf("answer %+v", a)
	}
	for range 2 {
		test.Tap(u.chat.views[1].contBtn)
		u.Wait()
	}
	a := u.chat.conv.Messages[1]
	if want := freshAnswer(t, path, u.chat.conv.Turns()[:1], 18); a.Content != want || a.Tokens != 18 || !a.Length {
		t.Fatalf("continued twice %q (%d tokens), uninterrupted %q", a.Content, a.Tokens, want)
	}
	if r := be.last(); r.Prompt-r.Reused != 1 {
		t.Fatalf("the last Continue evaluated %d of %d tokens", r.Prompt-r.Reused, r.Prompt)
	}
}

// A long chat with the real engine: once it outgrows the context, the oldest turns roll out;
// the answer is the one a fresh session gives the turns the model reads, the KV cache of their
// common beginning is kept (the system prompt's), the next turn reuses the whole prompt before
// it, and a message too long for any roll is refused with the numbers.
func TestEngineContextRoll(t *testing.T) {
	be := &recordingBackend{EngineBackend: EngineBackend{Context: chatContext}}
	u, path := newTinyEngineUI(t, be, Options{MaxAnswer: 12})
	s := u.chat
	s.system.SetText("You are a helpful assistant who answers in one short line.")
	// The first question is long, the later ones shorter: rolling it out leaves room for a
	// turn after the roll that needs no other.
	question := "Tell me something about birds and their songs. "
	say(t, u, strings.Repeat(question, 12))
	var before Reply
	for i := 0; s.conv.Rolled == 0; i++ {
		if i == 8 {
			t.Fatalf("no roll after %d turns (last %+v)", i, be.last())
		}
		before = be.last()
		say(t, u, strings.Repeat(question, 4))
	}
	roll := be.last()
	c := s.conv
	if c.Messages[c.Rolled].Role != conversation.User || roll.Prompt+answerRoom(12, chatContext) > chatContext {
		t.Fatalf("rolled to %d (%s); prompt %d", c.Rolled, c.Messages[c.Rolled].Role, roll.Prompt)
	}
	if want := freshAnswer(t, path, c.TurnsFrom(c.Rolled)[:len(c.TurnsFrom(c.Rolled))-1], 12); c.Messages[len(c.Messages)-1].Content != want {
		t.Fatalf("after the roll: %q, a fresh session %q", c.Messages[len(c.Messages)-1].Content, want)
	}
	// The roll keeps the system prompt's KV cache; the full prompt would have been all new.
	if roll.Reused == 0 || roll.Reused >= before.Prompt {
		t.Fatalf("the roll reused %d tokens of %d (the turn before read %d)", roll.Reused, roll.Prompt, before.Prompt)
	}
	if d := dividers(u); len(d) != 1 || d[0] != c.Rolled {
		t.Fatalf("dividers above %v, rolled %d", d, c.Rolled)
	}

	// A short question fits after the roll: the model reads from the same place, and the
	// prompt of the turn before is all kept.
	rolled := c.Rolled
	say(t, u, "Why?")
	next := be.last()
	if s.conv.Rolled != rolled || next.Reused < roll.Prompt-1 {
		t.Fatalf("next turn: rolled %d (was %d), reused %d of %d (the roll's prompt %d)", s.conv.Rolled, rolled, next.Reused, next.Prompt, roll.Prompt)
	}
	if want := freshAnswer(t, path, s.conv.TurnsFrom(rolled)[:len(s.conv.TurnsFrom(rolled))-1], 12); s.conv.Messages[len(s.conv.Messages)-1].Content != want {
		t.Fatalf("next turn: %q, a fresh session %q", s.conv.Messages[len(s.conv.Messages)-1].Content, want)
	}
	t.Logf("roll to message %d: prompt %d, %d reused (the turn before read %d); next turn prompt %d, %d reused",
		rolled, roll.Prompt, roll.Reused, before.Prompt, next.Prompt, next.Reused)

	// A message no roll can make room for is refused, with the tokenizer's numbers.
	n := len(be.replies)
	say(t, u, strings.Repeat("word ", chatContext))
	var ce *contextError
	cm := u.loaded
	turns := []chat.Message{{Role: "system", Content: s.system.Text}, {Role: "user", Content: strings.TrimSpace(strings.Repeat("word ", chatContext))}}
	want, err := cm.Count(turns, false)
	if err != nil {
		t.Fatal(err)
	}
	_, _, ferr := fitContext(cm, s.conv, false, 12)
	if !errors.As(ferr, &ce) || ce.prompt != want || ce.context != chatContext || len(be.replies) != n {
		t.Fatalf("too long: %v (counted %d); %d replies, %d before", ferr, want, len(be.replies), n)
	}
	if !strings.Contains(s.status.note.Text, ce.Error()) {
		t.Fatalf("status %q", s.status.note.Text)
	}
	t.Logf("too long: %s", ce)
}
