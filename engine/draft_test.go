package engine

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/trochilus-llm/trochilus/gguf"
	"github.com/trochilus-llm/trochilus/internal/modelgen"
)

// generated is what a generation left: its tokens, the session's position after it, and the
// logits of the next pass (the last token evaluated), which show the KV cache holds what it
// would without drafts.
type generated struct {
	tokens []int32
	pos    int
	next   []float32
	g      Generation
}

func generateWith(t *testing.T, m *Model, pass int, prompt []int32, opts GenerateOptions) generated {
	t.Helper()
	s := newTestSession(t, m, pass)
	g, err := s.Generate(context.Background(), prompt, opts)
	if err != nil {
		t.Fatal(err)
	}
	out := generated{tokens: g.Tokens, pos: s.Pos(), g: g}
	next, err := s.Eval(context.Background(), g.Tokens[len(g.Tokens)-1:])
	if err != nil {
		t.Fatal(err)
	}
	out.next = slices.Clone(next)
	return out
}

// TestDraftsChangeNothing generates with drafts of several lengths and pass sizes, greedy and
// seeded, and compares each with one-token generation: the same tokens, the session at the
// same position holding the same cache (the next pass's logits identical bit for bit), also
// when a stop token or the token limit falls inside a draft. The prompt repeats itself, so
// that drafts are found and some accepted (the test fails if none ever is).
func TestDraftsChangeNothing(t *testing.T) {
	models := []modelgen.Config{tinyConfig(modelgen.Uniform(gguf.TypeQ8_0)), tinyConfig(modelgen.Q4KM())}
	q := modelgen.TinyQwen3(modelgen.Uniform(gguf.TypeQ8_0))
	q.Vocab, q.Context = testVocab, 512
	models = append(models, q)
	base := matrixPrompt(testVocab)[:16]
	prompt := slices.Concat(base, base[:10], base, base[:5])
	accepted, drafted := 0, 0
	for _, cfg := range models {
		m := loadTest(t, cfg, Options{Threads: 2})
		for _, sp := range []*Sampling{nil, {Temperature: 0.8, TopK: 40, TopP: 0.95, Seed: 7}, {Temperature: 1.5, Seed: 1}} {
			plain := GenerateOptions{MaxTokens: 48, Sampling: sp}
			want := generateWith(t, m, 0, prompt, plain)
			// A stop token the answer meets, so that stopping can fall inside a draft.
			stop := want.tokens[len(want.tokens)/2]
			wantStop := generateWith(t, m, 0, prompt, GenerateOptions{MaxTokens: 48, Sampling: sp, Stop: []int32{stop}})
			for _, draft := range []int{1, 3, 8, 64} {
				for _, pass := range []int{0, 5} {
					opts := plain
					opts.Draft = draft
					got := generateWith(t, m, pass, prompt, opts)
					if !slices.Equal(got.tokens, want.tokens) || got.pos != want.pos || firstDifference(got.next, want.next) >= 0 {
						t.Fatalf("%s %+v draft %d pass %d: tokens %v at %d, want %v at %d (next logits differ at %d)",
							cfg.Name, sp, draft, pass, got.tokens, got.pos, want.tokens, want.pos, firstDifference(got.next, want.next))
					}
					accepted += got.g.Accepted
					drafted += got.g.Drafted
					opts.Stop = []int32{stop}
					if got := generateWith(t, m, pass, prompt, opts); !slices.Equal(got.tokens, wantStop.tokens) ||
						got.pos != wantStop.pos || firstDifference(got.next, wantStop.next) >= 0 {
						t.Fatalf("%s %+v draft %d pass %d with stop %d: %v at %d, want %v at %d",
							cfg.Name, sp, draft, pass, stop, got.tokens, got.pos, wantStop.tokens, wantStop.pos)
					}
				}
			}
		}
	}
	if accepted == 0 {
		t.Fatalf("no draft token was ever accepted (%d drafted): the test proves nothing", drafted)
	}
	t.Logf("%d of %d drafted tokens accepted", accepted, drafted)
}

// TestDraftsAcceptedChangeNothing makes drafts right: the drafter is given, as what came
// before, the prompt followed by the answer it will get (Before only feeds the lookup), so the
// drafts are the answer and are accepted. Every token limit and a stop token at every place
// then fall inside verified drafts; each generation must equal the one-token one, greedy and
// seeded, in tokens, position and cache.
func TestDraftsAcceptedChangeNothing(t *testing.T) {
	m := loadTest(t, tinyConfig(modelgen.Q4KM()), Options{Threads: 2})
	prompt := matrixPrompt(testVocab)[:20]
	for _, sp := range []*Sampling{nil, {Temperature: 0.9, TopK: 50, Seed: 3}} {
		answer := generateWith(t, m, 0, prompt, GenerateOptions{MaxTokens: 40, Sampling: sp}).tokens
		before := slices.Concat(prompt, answer)
		accepted := 0
		for limit := 1; limit <= 40; limit++ {
			want := generateWith(t, m, 0, prompt, GenerateOptions{MaxTokens: limit, Sampling: sp})
			for _, stop := range [][]int32{nil, {answer[limit-1]}} {
				if stop != nil {
					want = generateWith(t, m, 0, prompt, GenerateOptions{MaxTokens: 40, Sampling: sp, Stop: stop})
				}
				got := generateWith(t, m, 0, prompt, GenerateOptions{MaxTokens: ifElse(stop == nil, limit, 40), Sampling: sp,
					Stop: stop, Draft: 6, Before: before})
				if !slices.Equal(got.tokens, want.tokens) || got.pos != want.pos || firstDifference(got.next, want.next) >= 0 {
					t.Fatalf("%+v limit %d stop %v: %v at %d, want %v at %d", sp, limit, stop, got.tokens, got.pos, want.tokens, want.pos)
				}
				accepted += got.g.Accepted
			}
		}
		if accepted < 40*20 {
			t.Fatalf("%+v: only %d tokens accepted over the limits: the drafts were not the answer", sp, accepted)
		}
	}
}

func ifElse(first bool, a, b int) int {
	if first {
		return a
	}
	return b
}

// TestDraftsStopLikeOneTokenPasses ends generations from OnToken at every token, inside right
// drafts (as TestDraftsAcceptedChangeNothing makes them), and checks the session holds what it
// would without drafts: the prompt and every token but the last.
func TestDraftsStopLikeOneTokenPasses(t *testing.T) {
	m := loadTest(t, tinyConfig(modelgen.Uniform(gguf.TypeQ8_0)), Options{Threads: 2})
	prompt := matrixPrompt(testVocab)[:12]
	before := slices.Concat(prompt, generateWith(t, m, 0, prompt, GenerateOptions{MaxTokens: 30}).tokens)
	halt := errors.New("enough")
	for at := 1; at <= 20; at++ {
		var pos [2]int
		var toks [2][]int32
		for i, draft := range []int{0, 6} {
			s := newTestSession(t, m, 0)
			n := 0
			g, err := s.Generate(context.Background(), prompt, GenerateOptions{MaxTokens: 30, Draft: draft, Before: before,
				OnToken: func(int32) error {
					if n++; n == at {
						return halt
					}
					return nil
				}})
			if !errors.Is(err, halt) {
				t.Fatalf("draft %d, halt at %d: %v", draft, at, err)
			}
			pos[i], toks[i] = s.Pos(), g.Tokens
		}
		if pos[0] != pos[1] || !slices.Equal(toks[0], toks[1]) || pos[0] != len(prompt)+at-1 {
			t.Fatalf("halted at token %d: without drafts %v at %d, with %v at %d", at, toks[0], pos[0], toks[1], pos[1])
		}
	}
}

// TestDrafterProposes checks the lookup: the latest earlier occurrence of the longest of the
// last 4, 3, 2 tokens, what followed it (up to the length asked), and none when nothing repeats.
func TestDrafterProposes(t *testing.T) {
	d := newDrafter([]int32{1, 2, 3, 4, 5, 6}, []int32{9, 2, 3, 4, 7, 8, 2, 3}, 4)
	if got := d.propose(4); !slices.Equal(got, []int32{4, 7, 8, 2}) { // "2 3" last seen at 9 2 3 | 4 7 8 2
		t.Fatalf("proposed %v", got)
	}
	d.add(4) // now "2 3 4": the latest is in the prompt, followed by 7 8 2 3
	if got := d.propose(3); !slices.Equal(got, []int32{7, 8, 2}) {
		t.Fatalf("proposed %v", got)
	}
	if got := d.propose(1); !slices.Equal(got, []int32{7}) {
		t.Fatalf("room 1: proposed %v", got)
	}
	d.add(11)
	if got := d.propose(4); got != nil {
		t.Fatalf("nothing repeats: proposed %v", got)
	}
	d.ended(0, 4) // a miss: a pause of one token, a shorter draft
	d.add(2)
	d.add(3)
	if got := d.propose(4); got != nil {
		t.Fatalf("paused: proposed %v", got)
	}
	if got := d.propose(4); !slices.Equal(got, []int32{4, 11}) || d.length != 2 {
		t.Fatalf("after the pause: proposed %v, length %d", got, d.length)
	}
}
