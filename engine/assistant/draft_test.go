package assistant

import (
	"context"
	"testing"

	"github.com/trochilus-llm/trochilus/engine"
	"github.com/trochilus-llm/trochilus/internal/modelgen/modelgentest"
	"github.com/trochilus-llm/trochilus/tokenizer/chat"
)

// TestDraftedRepliesAsFresh holds a conversation with drafts on, greedy and sampled, in which
// the user quotes the model's answers back (so that drafts come from the kept prefix, which
// the engine does not see again): every answer is the one without drafts.
func TestDraftedRepliesAsFresh(t *testing.T) {
	path := modelgentest.TinyQ8(t)
	drafted, plain := open(t, path), open(t, path)
	for _, sp := range []*engine.Sampling{nil, {Temperature: 0.7, TopK: 30, Seed: 11}} {
		turns := []chat.Message{{Role: "user", Content: "Say something."}}
		for turn := range 3 {
			opts := Options{MaxTokens: 24, Sampling: sp}
			want, err := plain.Reply(context.Background(), turns, opts)
			if err != nil {
				t.Fatal(err)
			}
			opts.Draft = 6
			got, err := drafted.Reply(context.Background(), turns, opts)
			if err != nil {
				t.Fatal(err)
			}
			if got.Text != want.Text || got.Tokens != want.Tokens || got.Used != want.Used || got.Reused != want.Reused {
				t.Fatalf("%+v turn %d: %q (%d tokens, %d used), without drafts %q (%d, %d)", sp, turn,
					got.Text, got.Tokens, got.Used, want.Text, want.Tokens, want.Used)
			}
			turns = append(turns, chat.Message{Role: "assistant", Content: got.Text},
				chat.Message{Role: "user", Content: "You said: " + got.Text + " Say it again."})
		}
	}
}
