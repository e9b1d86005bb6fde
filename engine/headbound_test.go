package engine

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/trochilus-llm/trochilus/gguf"
	"github.com/trochilus-llm/trochilus/internal/modelgen"
)

// headBoundModels are the models TestHeadBoundSameTokens runs: the head types the bound
// supports (Q8_0; Q6_K in the Q4_K_M mix; Q4_K) on OLMoE and Qwen3 shapes, and the trained
// model (peaked logits) when its file is there.
func headBoundModels() []testModel {
	var ms []testModel
	for _, w := range []modelgen.Weights{modelgen.Uniform(gguf.TypeQ8_0), modelgen.Q4KM(), modelgen.Uniform(gguf.TypeQ4_K)} {
		ms = append(ms, testModel{name: w.Name, cfg: tinyConfig(w)})
	}
	for _, w := range []modelgen.Weights{modelgen.Uniform(gguf.TypeQ8_0), modelgen.Q4KM()} {
		c := modelgen.TinyQwen3(w)
		c.Vocab, c.Context = testVocab, 512
		ms = append(ms, testModel{name: "qwen3-" + w.Name, cfg: c})
	}
	// The trained model is committed: on it the search prunes (peaked logits), where the
	// random models mostly back off.
	return append(ms, trainedModel())
}

// TestHeadBoundSameTokens: greedy generation with the head's bound on and off gives the same
// token at every position, on every model, prompt and thread count; with it on every choice
// goes through the bound, and the logits Logits computes afterwards are the bits of the run
// without it.
func TestHeadBoundSameTokens(t *testing.T) {
	for _, tm := range headBoundModels() {
		exact, total := 0, 0
		for _, threads := range []int{1, 2, 3} {
			m := tm.load(t, Options{Threads: threads})
			for i, prompt := range tm.testPrompts() {
				var runs [2]generated
				for j, on := range []bool{true, false} {
					m.SetHeadBound(on)
					s := newTestSession(t, m, 0)
					g, err := s.Generate(context.Background(), prompt, GenerateOptions{MaxTokens: 24})
					if err != nil {
						t.Fatal(err)
					}
					runs[j] = generated{tokens: g.Tokens, pos: s.Pos(), next: slices.Clone(s.Logits()), g: g}
					// Greedy drafts choose between verify passes by the bound too.
					d := newTestSession(t, m, 0)
					dg, err := d.Generate(context.Background(), prompt, GenerateOptions{MaxTokens: 24, Draft: 8})
					if err != nil {
						t.Fatal(err)
					}
					if !slices.Equal(dg.Tokens, g.Tokens) || d.Pos() != s.Pos() {
						t.Fatalf("%s, %d threads, prompt %d, bound %v: drafts give %v at %d, want %v at %d",
							tm.name, threads, i, on, dg.Tokens, d.Pos(), g.Tokens, s.Pos())
					}
					// The same cache: the last token's pass gives the same logits.
					last := g.Tokens[len(g.Tokens)-1:]
					a, err := s.Eval(context.Background(), last)
					if err != nil {
						t.Fatal(err)
					}
					a = slices.Clone(a)
					b, err := d.Eval(context.Background(), last)
					if err != nil {
						t.Fatal(err)
					}
					if k := firstDifference(a, b); k >= 0 {
						t.Errorf("%s, %d threads, prompt %d, bound %v: after drafts the next logits differ at %d", tm.name, threads, i, on, k)
					}
				}
				on, off := runs[0], runs[1]
				where := fmt.Sprintf("%s, %d threads, prompt %d", tm.name, threads, i)
				if !slices.Equal(on.tokens, off.tokens) {
					t.Errorf("%s: tokens differ with the bound:\n on  %v\n off %v", where, on.tokens, off.tokens)
				}
				if d := firstDifference(on.next, off.next); d >= 0 || len(on.next) != len(off.next) {
					t.Errorf("%s: the logits after the generation differ at %d", where, d)
				}
				if on.g.HeadChoices == 0 || on.g.HeadChoices > len(on.tokens) || off.g.HeadChoices != 0 {
					t.Errorf("%s: %d of %d choices by the bound with it on, %d with it off", where, on.g.HeadChoices, len(on.tokens), off.g.HeadChoices)
				}
				// On the trained model the searches prune some rows (the check above makes sure
				// some ran): a bound that never pruned fails here.
				if tm.trained != "" && on.g.HeadRows >= on.g.HeadChoices*tm.cfg.Vocab {
					t.Errorf("%s: %d choices searched of %d, %d rows computed exactly of %d", where,
						on.g.HeadChoices, len(on.tokens), on.g.HeadRows, on.g.HeadChoices*tm.cfg.Vocab)
				}
				exact, total = exact+on.g.HeadRows, total+on.g.HeadChoices*tm.cfg.Vocab
			}
		}
		t.Logf("%s: %d of %d head rows computed exactly (%.1f%%)", tm.name, exact, total, 100*float64(exact)/float64(total))
	}
}

// TestHeadBoundOnlyPureGreedy: sampling, OnLogits and a constraint read the logits, so they
// never go through the bound; nor does a model whose switch is off. Greedy drafts do between
// their verify passes (which compute every row).
func TestHeadBoundOnlyPureGreedy(t *testing.T) {
	m := loadTest(t, tinyConfig(modelgen.Uniform(gguf.TypeQ8_0)), Options{Threads: 2})
	prompt := testPrompts(testVocab)[1]
	// A head this narrow (hidden 64) loads with the bound off: it would cost more than it saves.
	if s := newTestSession(t, m, 0); s.headBound() {
		t.Fatalf("hidden %d: the bound is on by default", m.Config().Hidden)
	}
	m.SetHeadBound(true)
	for _, c := range []struct {
		name string
		opts GenerateOptions
		on   bool
	}{
		{"greedy", GenerateOptions{MaxTokens: 8}, true},
		{"sampled", GenerateOptions{MaxTokens: 8, Sampling: &Sampling{Temperature: 0.8, Seed: 3}}, false},
		{"OnLogits", GenerateOptions{MaxTokens: 8, OnLogits: func(int32, []float32) error { return nil }}, false},
		{"constraint", GenerateOptions{MaxTokens: 8, Constraint: &residues{}}, false},
		{"drafts", GenerateOptions{MaxTokens: 8, Draft: 4}, true}, // one-token passes between drafts
	} {
		s := newTestSession(t, m, 0)
		g, err := s.Generate(context.Background(), prompt, c.opts)
		if err != nil {
			t.Fatal(err)
		}
		if (g.HeadChoices > 0) != c.on {
			t.Errorf("%s: %d choices by the bound", c.name, g.HeadChoices)
		}
	}
	before, _ := m.HeadBoundStats()
	m.SetHeadBound(false)
	s := newTestSession(t, m, 0)
	if _, err := s.Generate(context.Background(), prompt, GenerateOptions{MaxTokens: 8}); err != nil {
		t.Fatal(err)
	}
	if after, _ := m.HeadBoundStats(); after != before {
		t.Errorf("switched off: %d choices by the bound", after-before)
	}
}

// TestHeadSearchBacksOff: after searches in a row that computed the whole head, the next
// 1, 3, 7, … 255 choices skip the search; one that pruned resets it.
func TestHeadSearchBacksOff(t *testing.T) {
	var h runnerHead
	skips := func() int {
		n := 0
		for h.skipping() {
			n++
		}
		return n
	}
	for misses, want := range []int{1, 3, 7, 15, 31, 63, 127, 255, 255} {
		h.result(true)
		if got := skips(); got != want {
			t.Fatalf("after %d misses: %d skipped, want %d", misses+1, got, want)
		}
	}
	h.result(false)
	h.result(true)
	if got := skips(); got != 1 {
		t.Fatalf("after a prune and a miss: %d skipped, want 1", got)
	}
}
