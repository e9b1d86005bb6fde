package engine

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/trochilus-llm/trochilus/gguf"
	"github.com/trochilus-llm/trochilus/internal/modelgen"
	"github.com/trochilus-llm/trochilus/kernels"
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
					opts.Draft, opts.draftByLengthOnly = draft, true
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
					Stop: stop, Draft: 6, Before: before, draftByLengthOnly: true})
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

// TestDraftsStopLikeOneTokenPasses ends generations at every token, inside right drafts (as
// TestDraftsAcceptedChangeNothing makes them), from OnToken's error and by cancelling the
// context in OnToken, and checks that the answer ends at that token and the session holds what
// it would without drafts: the prompt and every token but the last.
func TestDraftsStopLikeOneTokenPasses(t *testing.T) {
	m := loadTest(t, tinyConfig(modelgen.Uniform(gguf.TypeQ8_0)), Options{Threads: 2})
	prompt := matrixPrompt(testVocab)[:12]
	before := slices.Concat(prompt, generateWith(t, m, 0, prompt, GenerateOptions{MaxTokens: 30}).tokens)
	halt := errors.New("enough")
	for _, cancel := range []bool{false, true} {
		for at := 1; at <= 20; at++ {
			var pos [2]int
			var toks [2][]int32
			for i, draft := range []int{0, 6} {
				s := newTestSession(t, m, 0)
				ctx, stop := context.WithCancel(context.Background())
				n := 0
				g, err := s.Generate(ctx, prompt, GenerateOptions{MaxTokens: 30, Draft: draft, Before: before,
					OnToken: func(int32) error {
						if n++; n == at {
							if cancel {
								stop() // the client left: the next token must not come
								return nil
							}
							return halt
						}
						return nil
					}})
				stop()
				if want := ifElse(cancel, 0, 1); (want == 1 && !errors.Is(err, halt)) || (want == 0 && !errors.Is(err, context.Canceled)) {
					t.Fatalf("draft %d, cancel %v at %d: %v", draft, cancel, at, err)
				}
				pos[i], toks[i] = s.Pos(), g.Tokens
			}
			if pos[0] != pos[1] || !slices.Equal(toks[0], toks[1]) || len(toks[0]) != at || pos[0] != len(prompt)+at-1 {
				t.Fatalf("cancel %v at token %d: without drafts %v at %d, with %v at %d", cancel, at, toks[0], pos[0], toks[1], pos[1])
			}
		}
	}
}

// TestDrafterProposes checks the lookup: the latest earlier occurrence of the longest of the
// last 4, 3, 2 tokens, what followed it (up to the length asked, continued periodically when
// it reaches the end), and none when nothing repeats.
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
	// A loop: the latest "5 6 7" is one period back, and what follows it runs into the end;
	// the draft goes on with the period (5 6 7 8 | 5 6 7 → 8 5 6 7 8 5).
	d = newDrafter(nil, []int32{1, 5, 6, 7, 8, 5, 6, 7}, 6)
	d.length = 6
	if got := d.propose(6); !slices.Equal(got, []int32{8, 5, 6, 7, 8, 5}) {
		t.Fatalf("a loop: proposed %v", got)
	}
	if got := d.propose(2); !slices.Equal(got, []int32{8, 5}) {
		t.Fatalf("a loop, room 2: proposed %v", got)
	}
}

// TestPassCostsEstimate checks the cost of a pass by width: nothing before a one-token pass is
// measured, a measured width as measured (a weighted mean), a straight line between measured
// widths, past the widest the line from one token through it, and the hopeful guess when only
// one token is measured.
func TestPassCostsEstimate(t *testing.T) {
	var c passCosts
	if _, ok := c.estimate(3); ok {
		t.Fatal("an estimate before any one-token pass")
	}
	c.observe(1, 10*time.Millisecond)
	if got, _ := c.estimate(5); math.Abs(got-0.014) > 1e-12 {
		t.Errorf("width 5 from width 1 alone: %v s, want 0.014 (a tenth more a row)", got)
	}
	c.observe(3, 20*time.Millisecond)
	c.observe(3, 30*time.Millisecond) // the mean moves by costWeight
	if got, want := c.secs[3], 0.020+costWeight*0.010; math.Abs(got-want) > 1e-12 {
		t.Errorf("width 3's mean %v, want %v", got, want)
	}
	c.observe(7, 50*time.Millisecond)
	t3 := c.secs[3]
	for _, tc := range []struct {
		w    int
		want float64
	}{
		{1, 0.010}, {3, t3}, {5, t3 + 0.5*(0.050-t3)}, {7, 0.050}, {9, 0.050 + 2*(0.050-0.010)/6},
	} {
		if got, ok := c.estimate(tc.w); !ok || math.Abs(got-tc.want) > 1e-12 {
			t.Errorf("width %d: %v s, want %v", tc.w, got, tc.want)
		}
	}
}

// TestDraftWorth checks when the measured costs advise a draft: never when every row costs a
// whole pass (compute-bound: k+1 rows give at most k+1 tokens), a long one when rows are cheap
// and drafts are accepted, a short one when rows are dear and acceptance middling, and the
// drafter then waits probeEvery proposals before it probes with a short draft.
func TestDraftWorth(t *testing.T) {
	d := newDrafter(nil, []int32{1, 2, 3, 1, 2, 3, 1, 2}, 8)
	for w := 1; w <= 9; w++ {
		d.observe(w, time.Duration(w)*time.Millisecond)
	}
	d.p = 0.9
	if k := d.worth(8); k != 0 {
		t.Errorf("rows as dear as passes: worth %d, want 0", k)
	}
	for w := 2; w <= 9; w++ {
		d.costs.secs[w] = 0.001 * (1 + 0.05*float64(w-1))
	}
	if k := d.worth(8); k != 8 {
		t.Errorf("cheap rows, p 0.9: worth %d, want 8", k)
	}
	for w := 2; w <= 9; w++ {
		d.costs.secs[w] = 0.001 * (1 + 0.4*float64(w-1))
	}
	d.p = 0.6
	if k := d.worth(8); k < 1 || k > 3 {
		t.Errorf("dear rows, p 0.6: worth %d, want 1 to 3", k)
	}

	d.p = 0.05
	d.length = 4
	for i := 1; i < probeEvery; i++ {
		if got := d.propose(4); got != nil {
			t.Fatalf("proposal %d: %v although no draft pays", i, got)
		}
	}
	if got := d.propose(4); len(got) != 2 {
		t.Fatalf("the probe after %d refusals: %v, want 2 tokens", probeEvery, got)
	}
	d.ended(0, 2)
	if d.p >= 0.05 {
		t.Errorf("a rejected probe left the acceptance chance at %v", d.p)
	}
}

// residues is a test constraint whose allowed tokens depend on the text so far: after token
// t, only the ids congruent to t+1 modulo 3 (any id at the start).
type residues struct{ last int32 }

func (c *residues) Mask(logits []float32) error {
	if c.last < 0 {
		return nil
	}
	for id := range logits {
		if int32(id)%3 != (c.last+1)%3 {
			logits[id] = float32(math.Inf(-1))
		}
	}
	return nil
}

func (c *residues) Accept(tok int32) error {
	if c.last >= 0 && tok%3 != (c.last+1)%3 {
		return fmt.Errorf("token %d after %d", tok, c.last)
	}
	c.last = tok
	return nil
}

// TestConstraintChoosesAmongAllowed: with a constraint, each token is the one chosen from the
// masked logits by hand (greedy), drafts change nothing (greedy and drawn), and every token
// is one the constraint allows.
func TestConstraintChoosesAmongAllowed(t *testing.T) {
	m := loadTest(t, tinyConfig(modelgen.Uniform(gguf.TypeQ8_0)), Options{Threads: 2})
	base := matrixPrompt(testVocab)[:16]
	prompt := slices.Concat(base, base[:10], base)
	ctx := context.Background()

	s := newTestSession(t, m, 0)
	var want []int32
	c := &residues{last: -1}
	logits, err := s.Eval(ctx, prompt)
	for range 24 {
		if err != nil {
			t.Fatal(err)
		}
		c.Mask(logits)
		tok := int32(kernels.Argmax(logits))
		c.Accept(tok)
		want = append(want, tok)
		logits, err = s.Eval(ctx, []int32{tok})
	}
	for _, sp := range []*Sampling{nil, {Temperature: 0.9, TopK: 20, Seed: 3}} {
		var plain []int32
		for _, draft := range []int{0, 4} {
			got := generateWith(t, m, 0, prompt, GenerateOptions{MaxTokens: 24, Sampling: sp, Draft: draft, Constraint: &residues{last: -1}})
			for i := 1; i < len(got.tokens); i++ {
				if got.tokens[i]%3 != (got.tokens[i-1]+1)%3 {
					t.Fatalf("sampling %v, draft %d: token %d after %d", sp, draft, got.tokens[i], got.tokens[i-1])
				}
			}
			if sp == nil && !slices.Equal(got.tokens, want) {
				t.Fatalf("greedy, draft %d: %v, want %v", draft, got.tokens, want)
			}
			if draft == 0 {
				plain = got.tokens
			} else if !slices.Equal(got.tokens, plain) {
				t.Fatalf("sampling %v: with drafts %v, without %v", sp, got.tokens, plain)
			}
		}
	}
	// An error from the constraint ends the generation with it.
	s = newTestSession(t, m, 0)
	boom := errors.New("boom")
	if _, err := s.Generate(ctx, prompt, GenerateOptions{MaxTokens: 4, Constraint: failing{boom}}); !errors.Is(err, boom) {
		t.Fatalf("a failing constraint: %v", err)
	}
}

type failing struct{ err error }

func (f failing) Mask([]float32) error { return f.err }
func (f failing) Accept(int32) error   { return nil }

// TestDraftsSameEverywhere runs every test model (the trained one included) on a prompt that
// repeats itself, greedy (with the head's bound on) and seeded, with drafts by the length rule
// in every tier at 1 and 3 threads, and compares each answer, position and next logits with the
// scalar tier's on one thread without drafts or the bound: drafts, the bound, tiers and
// threads change how fast an answer comes, never a token of it.
func TestDraftsSameEverywhere(t *testing.T) {
	accepted := 0
	for _, tm := range testModels() {
		base := tm.testPrompts()[0]
		prompt := slices.Concat(base, base, base[:len(base)/2])
		ref := tm.load(t, Options{Threads: 1, Tier: kernels.Scalar()})
		ref.SetHeadBound(false)
		for _, sp := range []*Sampling{nil, {Temperature: 0.8, TopP: 0.95, Seed: 11}} {
			plain := GenerateOptions{MaxTokens: 24, Sampling: sp}
			want := generateWith(t, ref, 0, prompt, plain)
			for _, tier := range kernels.Tiers() {
				for _, threads := range []int{1, 3} {
					m := tm.load(t, Options{Threads: threads, Tier: tier})
					m.SetHeadBound(true)
					opts := plain
					opts.Draft, opts.draftByLengthOnly = 8, true
					got := generateWith(t, m, 0, prompt, opts)
					if !slices.Equal(got.tokens, want.tokens) || got.pos != want.pos || firstDifference(got.next, want.next) >= 0 {
						t.Fatalf("%s sampling %v tier %s threads %d: tokens %v at %d, want %v at %d (next logits differ at %d)",
							tm.name, sp != nil, tier.Name, threads, got.tokens, got.pos, want.tokens, want.pos, firstDifference(got.next, want.next))
					}
					accepted += got.g.Accepted
					m.Close()
				}
			}
		}
	}
	if accepted == 0 {
		t.Fatal("no draft token was ever accepted: the test proves nothing about verified drafts")
	}
	t.Logf("%d models × %d tiers × 2 thread counts × greedy and seeded: the same tokens; %d drafted tokens accepted",
		len(testModels()), len(kernels.Tiers()), accepted)
}
