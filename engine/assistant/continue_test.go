package assistant

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/trochilus-llm/trochilus/engine"
	"github.com/trochilus-llm/trochilus/engine/structured"
	"github.com/trochilus-llm/trochilus/internal/modelgen/modelgentest"
	"github.com/trochilus-llm/trochilus/tokenizer/chat"
)

// continueModes are the ways an answer is chosen that a continuation must go on with: greedy,
// and sampled with a seed (the stream must go on from the draw it stopped at).
var continueModes = []struct {
	name     string
	sampling *engine.Sampling
}{
	{"greedy", nil},
	{"sampled", &engine.Sampling{Temperature: 0.8, TopP: 0.9, Seed: 7}},
}

// continuePrompts are questions to the tiny model; roundTripless searches them for one whose
// answer the tokenizer does not read back as the tokens the model chose.
var continuePrompts = []string{
	"Hello! Who are you?",
	"Count to ten, please.",
	"What is the capital of France?",
	"Write a haiku about the sea.",
	"Explain MoE routing in one sentence.",
	"¿Dónde está la biblioteca?",
	"日本の首都はどこですか？",
	"List three prime numbers.",
	"Tell me a joke about cats.",
	"Translate 'good morning' into German.",
}

// ask is one question as the turns of a chat.
func ask(q string) []chat.Message { return []chat.Message{{Role: "user", Content: q}} }

// answered is turns followed by the answer text, the turns Continue goes on with.
func answered(turns []chat.Message, text string) []chat.Message {
	return append(slices.Clone(turns), chat.Message{Role: "assistant", Content: text})
}

// roundTripless returns the first of continuePrompts whose answer of n tokens (chosen with
// sampling) the tokenizer, given the answer's text, reads as other tokens than the model
// chose: the answer that a continuation from the text would not go on with exactly.
func roundTripless(t *testing.T, c *Chat, sampling *engine.Sampling, n int) string {
	t.Helper()
	for _, q := range continuePrompts {
		r, err := c.Reply(context.Background(), ask(q), Options{MaxTokens: n, Sampling: sampling})
		if err != nil {
			t.Fatal(err)
		}
		if r.Finished() {
			continue
		}
		if reread := c.tok.Encode(r.Text, true); !slices.Equal(reread, c.last.tokens) {
			t.Logf("%q: the answer %q is %d tokens, read back %d", q, r.Text, len(c.last.tokens), len(reread))
			return q
		}
	}
	t.Fatal("no prompt's answer reads back as other tokens: the test would not tell an exact continuation from a re-read")
	return ""
}

// TestContinueIsUninterrupted: an answer cut at k tokens and continued with m more is, token
// for token and byte for byte, the answer of k+m tokens, greedy and sampled with a seed, for
// several questions (one whose answer the tokenizer does not read back as the model's tokens)
// and several k; the continuation evaluates only the one token Generate left unevaluated and
// says it is exact. Continued twice, it is still the answer of the three lengths together.
func TestContinueIsUninterrupted(t *testing.T) {
	path := modelgentest.TinyQ8(t)
	c, ref := open(t, path), open(t, path)
	const m = 6
	for _, mode := range continueModes {
		prompts := []string{continuePrompts[1], continuePrompts[2]}
		if q := roundTripless(t, c, mode.sampling, 12); !slices.Contains(prompts, q) {
			prompts = append(prompts, q)
		}
		for _, q := range prompts {
			for _, k := range []int{1, 5, 12} {
				what := fmt.Sprintf("%s %q cut at %d", mode.name, q, k)
				opts := Options{Sampling: mode.sampling}
				full := replyN(t, ref, ask(q), opts, k+m+m)
				fullTokens := slices.Clone(ref.last.tokens)
				if full.Tokens <= k {
					t.Logf("%s: the answer ends within %d tokens", what, k)
					continue
				}
				r1 := replyN(t, c, ask(q), opts, k)
				text, tokens := r1.Text, r1.Tokens
				// Continue twice: m tokens, then m more.
				for step := 1; step <= 2 && tokens < full.Tokens; step++ {
					held := c.last.tokens
					opts.MaxTokens = m
					r2, err := c.Continue(context.Background(), answered(ask(q), text), opts)
					if err != nil {
						t.Fatalf("%s, continued: %v", what, err)
					}
					if r2.Inexact || r2.Prompt != r1.Prompt+tokens || r2.Reused != r2.Prompt-1 {
						t.Fatalf("%s, continued: inexact %v (%s), read %d tokens (%d reused), want %d with all but one reused",
							what, r2.Inexact, r2.InexactReason, r2.Prompt, r2.Reused, r1.Prompt+tokens)
					}
					if !slices.Equal(c.last.tokens[:len(held)], held) {
						t.Fatalf("%s: the continuation changed the answer's tokens", what)
					}
					text, tokens = text[:len(text)-r2.Replaced]+r2.Text, tokens+r2.Tokens
					n := min(tokens, full.Tokens)
					if !slices.Equal(c.last.tokens, fullTokens[:n]) {
						t.Fatalf("%s, continued %d times: tokens\n%v\nuninterrupted\n%v", what, step, c.last.tokens, fullTokens[:n])
					}
					want := replyN(t, ref, ask(q), Options{Sampling: mode.sampling}, k+step*m)
					if text != want.Text || r2.Ended != want.Ended {
						t.Fatalf("%s, continued %d times: %q (ended %v), uninterrupted %q (ended %v)", what, step, text, r2.Ended, want.Text, want.Ended)
					}
					if r2.Finished() {
						break
					}
				}
			}
		}
	}
}

// replyN has c answer turns with opts in at most n tokens.
func replyN(t *testing.T, c *Chat, turns []chat.Message, opts Options, n int) Reply {
	t.Helper()
	opts.MaxTokens = n
	r, err := c.Reply(context.Background(), turns, opts)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestContinueReopenedFallsBack: a chat that did not make the answer (reopened, the answer
// edited, another answer made since) continues from the answer's text read back and says so;
// it reads what CountContinue counts, which is not the exact continuation's tokens for an
// answer that does not read back as itself. Asked with another seed, the chat that made the
// answer still reads its tokens, but says the continuation is not the uninterrupted one.
func TestContinueReopenedFallsBack(t *testing.T) {
	path := modelgentest.TinyQ8(t)
	c := open(t, path)
	q := roundTripless(t, c, nil, 12)
	r1 := replyN(t, c, ask(q), Options{}, 12)
	exact := len(c.last.prompt) + len(c.last.tokens)
	turns := answered(ask(q), r1.Text)
	if n, err := c.CountContinue(turns, Options{}); err != nil || n != exact {
		t.Fatalf("CountContinue %d, %v; the answer's prompt and tokens are %d", n, err, exact)
	}

	reopened := open(t, path)
	n, err := reopened.CountContinue(turns, Options{})
	if err != nil || n == exact {
		t.Fatalf("a reopened chat counts %d, %v; the exact continuation reads %d (the answer does not read back as itself)", n, err, exact)
	}
	r, err := reopened.Continue(context.Background(), turns, Options{MaxTokens: 6})
	if err != nil || !r.Inexact || r.InexactReason == "" || r.Prompt != n || r.Tokens == 0 || r.Replaced != 0 {
		t.Fatalf("reopened, continued: %+v, %v (counted %d)", r, err, n)
	}
	t.Logf("reopened: %s", r.InexactReason)

	// The answer edited, or another made since: the same.
	if r, err := c.Continue(context.Background(), answered(ask(q), r1.Text+" edited"), Options{MaxTokens: 2}); err != nil || !r.Inexact {
		t.Fatalf("an edited answer continued: %+v, %v", r, err)
	}
	r1 = replyN(t, c, ask(q), Options{}, 12)
	replyN(t, c, ask(continuePrompts[0]), Options{}, 4)
	if r, err := c.Continue(context.Background(), answered(ask(q), r1.Text), Options{MaxTokens: 2}); err != nil || !r.Inexact {
		t.Fatalf("an answer continued after another: %+v, %v", r, err)
	}

	// Another seed: the answer's tokens, marked inexact; the same seed again: exact.
	sp := engine.Sampling{Temperature: 0.8, TopP: 0.9, Seed: 7}
	r1 = replyN(t, c, ask(q), Options{Sampling: &sp}, 12)
	exact = len(c.last.prompt) + len(c.last.tokens)
	other := sp
	other.Seed++
	r, err = c.Continue(context.Background(), answered(ask(q), r1.Text), Options{MaxTokens: 2, Sampling: &other})
	if err != nil || !r.Inexact || r.Prompt != exact {
		t.Fatalf("continued with another seed: %+v, %v (the answer's tokens are %d)", r, err, exact)
	}
	r1 = replyN(t, c, ask(q), Options{Sampling: &sp}, 12)
	if r, err := c.Continue(context.Background(), answered(ask(q), r1.Text), Options{MaxTokens: 2, Sampling: &sp}); err != nil || r.Inexact {
		t.Fatalf("continued with the answer's seed: %+v, %v", r, err)
	}

	// A continuation cancelled before its first token leaves the answer to go on with.
	r1 = replyN(t, c, ask(q), Options{Sampling: &sp}, 12)
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := c.Continue(cancelled, answered(ask(q), r1.Text), Options{MaxTokens: 2, Sampling: &sp}); !errors.Is(err, context.Canceled) {
		t.Fatalf("a cancelled continuation: %v", err)
	}
	if r, err := c.Continue(context.Background(), answered(ask(q), r1.Text), Options{MaxTokens: 2, Sampling: &sp}); err != nil || r.Inexact {
		t.Fatalf("continued after a cancelled continuation: %+v, %v", r, err)
	}

	// Nothing to continue, and a structured continuation, are refused.
	if _, err := c.Continue(context.Background(), ask(q), Options{}); err == nil {
		t.Fatal("continued a question")
	}
	if _, err := c.Continue(context.Background(), answered(ask(q), r1.Text), Options{Format: structured.JSONObject()}); err == nil {
		t.Fatal("continued a structured answer")
	}
}

// TestCountIsReplysPrompt: Count is the prompt Reply evaluates, and it evaluates nothing (the
// session's positions and the reuse of the next answer are as they were); CountContinue is the
// prompt Continue reads.
func TestCountIsReplysPrompt(t *testing.T) {
	path := modelgentest.TinyQ8(t)
	c := open(t, path)
	turns := ask(continuePrompts[2])
	for i, q := range continuePrompts[:4] {
		if i > 0 {
			turns = append(turns, chat.Message{Role: "assistant", Content: "Yes."}, chat.Message{Role: "user", Content: q})
		}
		pos := c.s.Pos()
		n, err := c.Count(turns, Options{})
		if err != nil || c.s.Pos() != pos {
			t.Fatalf("Count: %v; the session went from %d positions to %d", err, pos, c.s.Pos())
		}
		r := replyN(t, c, turns, Options{}, 3)
		if n != r.Prompt {
			t.Fatalf("%d turns: Count %d, Reply's prompt %d", len(turns), n, r.Prompt)
		}
		if r.Finished() {
			continue
		}
		cont := answered(turns, r.Text)
		n, err = c.CountContinue(cont, Options{})
		if err != nil {
			t.Fatal(err)
		}
		rc, err := c.Continue(context.Background(), cont, Options{MaxTokens: 2})
		if err != nil || rc.Prompt != n || rc.Inexact {
			t.Fatalf("CountContinue %d; Continue %+v, %v", n, rc, err)
		}
	}
}

// TestContinueStopTextAcrossTheCut: a stop text that begins in the answer so far and ends in
// the continuation stops it where it stops the uninterrupted answer: the continuation takes
// the stop text's beginning back (Replaced) and ends on the same token.
func TestContinueStopTextAcrossTheCut(t *testing.T) {
	path := modelgentest.TinyQ8(t)
	c, ref := open(t, path), open(t, path)
	q := continuePrompts[1]
	full := replyN(t, ref, ask(q), Options{}, 24).Text
	for k := 2; k < 20; k++ {
		cut := replyN(t, ref, ask(q), Options{}, k).Text
		if len(cut) < 3 || len(full) < len(cut)+2 {
			continue
		}
		stop := full[len(cut)-2 : len(cut)+2]
		if strings.Index(full, stop) != len(cut)-2 {
			continue // it appears earlier: the cut answer would have stopped
		}
		want := replyN(t, ref, ask(q), Options{Stop: []string{stop}}, 24)
		r1 := replyN(t, c, ask(q), Options{Stop: []string{stop}}, k)
		var streamed strings.Builder
		r2, err := c.Continue(context.Background(), answered(ask(q), r1.Text),
			Options{MaxTokens: 24 - k, Stop: []string{stop}, OnText: func(s string) { streamed.WriteString(s) }})
		if err != nil {
			t.Fatal(err)
		}
		if !r2.Stopped || r2.Replaced != 2 || r1.Text[:len(r1.Text)-r2.Replaced]+r2.Text != want.Text ||
			r1.Tokens+r2.Tokens != want.Tokens || streamed.String() != "" {
			t.Fatalf("stop %q across the cut at %d: %q + %+v (streamed %q), uninterrupted %+v", stop, k, r1.Text, r2, streamed.String(), want)
		}
		return
	}
	t.Fatalf("no cut of %q has a stop text across it", full)
}

// TestContinueUnfinishedCharacter: an answer cut between the bytes of one character shows it
// as U+FFFD; the continuation replaces that with the character, as the uninterrupted answer
// reads. The tiny model is pushed towards the bytes of 中 (E4 B8 AD) by a logit bias, and
// sampled, so that some cut falls inside one.
func TestContinueUnfinishedCharacter(t *testing.T) {
	path := modelgentest.TinyQ8(t)
	c, ref := open(t, path), open(t, path)
	bias := map[int32]float32{}
	for id := range c.m.Config().Vocab {
		if b := c.tok.AppendDecode(nil, []int32{int32(id)}); len(b) == 1 && (b[0] == 0xe4 || b[0] == 0xb8 || b[0] == 0xad) {
			bias[int32(id)] = 12
		}
	}
	if len(bias) != 3 {
		t.Fatalf("the tokenizer has %d of the three byte tokens", len(bias))
	}
	sp := &engine.Sampling{Temperature: 0.8, TopP: 0.9, Seed: 7}
	q := continuePrompts[0]
	for k := 1; k < 30; k++ {
		r1 := replyN(t, c, ask(q), Options{Sampling: sp, LogitBias: bias}, k)
		if r1.Finished() {
			break
		}
		if r, _ := utf8.DecodeLastRuneInString(r1.Text); r != utf8.RuneError {
			continue
		}
		r2, err := c.Continue(context.Background(), answered(ask(q), r1.Text), Options{MaxTokens: 4, Sampling: sp, LogitBias: bias})
		if err != nil {
			t.Fatal(err)
		}
		want := replyN(t, ref, ask(q), Options{Sampling: sp, LogitBias: bias}, k+4)
		got := r1.Text[:len(r1.Text)-r2.Replaced] + r2.Text
		if r2.Inexact || got != want.Text || !slices.Equal(c.last.tokens, ref.last.tokens) {
			t.Fatalf("cut at %d: %q + %q (replacing %d bytes), uninterrupted %q", k, r1.Text, r2.Text, r2.Replaced, want.Text)
		}
		if r2.Replaced > 0 {
			t.Logf("cut at %d inside a character: %q, continued %q", k, r1.Text, r2.Text)
			return
		}
	}
	t.Fatal("no cut fell inside a character")
}
