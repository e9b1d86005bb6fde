package assistant

import (
	"context"
	"strings"
	"testing"

	"github.com/trochilus-llm/trochilus/internal/modelgen/modelgentest"
	"github.com/trochilus-llm/trochilus/tokenizer/chat"
)

// TestReplyLogprobs checks the log probabilities of a greedy answer: one a token of the answer,
// each the largest at its position (the first of the alternatives, which are in order), their
// bytes spelling the answer; with a stop text, none past it.
func TestReplyLogprobs(t *testing.T) {
	c := open(t, modelgentest.TinyQ8(t))
	turns := []chat.Message{{Role: "user", Content: "Count to ten."}}
	r, err := c.Reply(context.Background(), turns, Options{MaxTokens: 20, Logprobs: true, TopLogprobs: 3})
	if err != nil {
		t.Fatal(err)
	}
	n := r.Tokens
	if r.Ended {
		n-- // the end-of-sequence token has none
	}
	if len(r.Logprobs) != n || n == 0 {
		t.Fatalf("%d logprobs for %d tokens (ended %v)", len(r.Logprobs), r.Tokens, r.Ended)
	}
	var text strings.Builder
	for i, lp := range r.Logprobs {
		if len(lp.Top) != 3 || lp.Top[0].ID != lp.ID || lp.Top[0].Logprob != lp.Logprob || !(lp.Logprob <= 0) ||
			lp.Top[1].Logprob > lp.Top[0].Logprob || lp.Top[2].Logprob > lp.Top[1].Logprob {
			t.Fatalf("token %d: %+v", i, lp)
		}
		text.Write(lp.Bytes)
	}
	if text.String() != r.Text {
		t.Fatalf("the tokens spell %q, the answer is %q", text.String(), r.Text)
	}
	// A stop text in the middle: the logprobs end with the token that reaches into it.
	cut := r.Text[len(r.Text)/2:]
	cut = cut[:min(3, len(cut))]
	s, err := c.Reply(context.Background(), turns, Options{MaxTokens: 20, Logprobs: true, Stop: []string{cut}})
	if err != nil {
		t.Fatal(err)
	}
	at := 0
	for _, lp := range s.Logprobs {
		at += len(lp.Bytes)
	}
	if !s.Stopped || at < len(s.Text) || at-len(s.Logprobs[len(s.Logprobs)-1].Bytes) >= len(s.Text) && len(s.Text) > 0 {
		t.Fatalf("stopped at %q: %d logprobs spelling %d bytes for a text of %d", cut, len(s.Logprobs), at, len(s.Text))
	}
}
