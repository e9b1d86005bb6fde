package engine

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/trochilus-llm/trochilus/gguf"
	"github.com/trochilus-llm/trochilus/internal/modelgen"
	"github.com/trochilus-llm/trochilus/kernels"
)

// TestStepMatchesAlone evaluates several sessions' next tokens in shared passes (Model.Step)
// and each session alone, token by token: the logits are the same bits, for sessions at
// different positions, with different contexts and pass sizes (so that another session leads
// the step), more sessions than a pass holds, OLMoE and Qwen3 models, 1 and 3 threads, and
// experts streamed through the fewest slots.
func TestStepMatchesAlone(t *testing.T) {
	q := modelgen.TinyQwen3(modelgen.Q4KM())
	q.Vocab, q.Context = testVocab, 512
	models := []struct {
		name string
		cfg  modelgen.Config
		opts Options
	}{
		{"q8_0", tinyConfig(modelgen.Uniform(gguf.TypeQ8_0)), Options{Threads: 1}},
		{"q4_k_m", tinyConfig(modelgen.Q4KM()), Options{Threads: 3}},
		{"qwen3-q4_k_m", q, Options{Threads: 3}},
		{"q8_0-streamed", tinyConfig(modelgen.Uniform(gguf.TypeQ8_0)), Options{Threads: 3, ExpertBudget: ExpertBudgetMin}},
	}
	prompts := testPrompts(testVocab)
	ctx := context.Background()
	for _, mc := range models {
		m := loadTest(t, mc.cfg, mc.opts)
		// Five sessions: prompts of 6, 17 and 40 tokens, one empty-handed at position 1, one
		// with a pass of 2 (so a step of five needs three passes when it leads) and a shorter
		// context.
		opts := []SessionOptions{{}, {Context: 256}, {PassSize: 2}, {Context: 128, PassSize: 3}, {}}
		starts := [][]int32{prompts[0], prompts[1], prompts[2], prompts[0][:1], prompts[1][:5]}
		var batch, alone []*Session
		for i, o := range opts {
			for _, list := range []*[]*Session{&batch, &alone} {
				s, err := m.NewSession(o)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { s.Close() })
				if _, err := s.Eval(ctx, starts[i]); err != nil {
					t.Fatal(err)
				}
				*list = append(*list, s)
			}
		}
		for step := range 6 {
			// Each session's next token: its own greedy choice, so that they diverge.
			tokens := make([]int32, len(batch))
			for i, s := range alone {
				tokens[i] = int32(kernels.Argmax(s.Logits()))
			}
			// Every other step, a subset in another order: the lead and the rows change.
			sel := []int{0, 1, 2, 3, 4}
			if step%2 == 1 {
				sel = []int{3, 0, 4}
			}
			var ss []*Session
			var ts []int32
			for _, i := range sel {
				ss, ts = append(ss, batch[i]), append(ts, tokens[i])
				if _, err := alone[i].Eval(ctx, tokens[i:i+1]); err != nil {
					t.Fatal(err)
				}
			}
			if err := m.Step(ctx, ss, ts); err != nil {
				t.Fatalf("%s step %d: %v", mc.name, step, err)
			}
			for _, i := range sel {
				if batch[i].Pos() != alone[i].Pos() {
					t.Fatalf("%s step %d session %d: position %d, alone %d", mc.name, step, i, batch[i].Pos(), alone[i].Pos())
				}
				if d := firstDifference(batch[i].Logits(), alone[i].Logits()); d >= 0 {
					t.Fatalf("%s step %d session %d: logit %d is %v in the step, %v alone", mc.name, step, i, d, batch[i].Logits()[d], alone[i].Logits()[d])
				}
			}
		}
	}
}

// TestStepRefuses checks the sessions a step cannot take.
func TestStepRefuses(t *testing.T) {
	m := loadTest(t, tinyConfig(modelgen.Uniform(gguf.TypeQ8_0)), Options{Threads: 2})
	other := loadTest(t, tinyConfig(modelgen.Q4KM()), Options{Threads: 2})
	a, b := newTestSession(t, m, 0), newTestSession(t, m, 0)
	c := newTestSession(t, other, 0)
	full, err := m.NewSession(SessionOptions{Context: 2})
	if err != nil {
		t.Fatal(err)
	}
	full.Eval(context.Background(), []int32{1, 2})
	closed := newTestSession(t, m, 0)
	closed.Close()
	ctx := context.Background()
	for _, tc := range []struct {
		sessions []*Session
		tokens   []int32
		want     string
	}{
		{nil, nil, "step of 0 sessions"},
		{[]*Session{a, b}, []int32{1}, "2 sessions with 1 tokens"},
		{[]*Session{a, a}, []int32{1, 2}, "session 1 is listed twice"},
		{[]*Session{a, c}, []int32{1, 2}, "session 1 is of another model"},
		{[]*Session{a, full}, []int32{1, 2}, "context full"},
		{[]*Session{closed}, []int32{1}, "session closed"},
		{[]*Session{a}, []int32{testVocab}, "outside the vocabulary"},
	} {
		err := m.Step(ctx, tc.sessions, tc.tokens)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Step(%d sessions, %v): %v, want %q", len(tc.sessions), tc.tokens, err, tc.want)
		}
	}
	if a.Pos() != 0 || b.Pos() != 0 || !slices.Equal(a.Logits(), nil) {
		t.Errorf("refused steps moved the sessions: %d, %d", a.Pos(), b.Pos())
	}
}

// BenchmarkStreams times serving several conversations at once on the model file named by
// TROCHILUS_BENCH_MODEL (it skips without one): each variant decodes one token for each of its
// sessions per round, the variants taking turns round by round (so that a shared machine's
// load falls on all alike): "1", "2" and "4" streams in one Model.Step, "4 apart" the same
// four tokens by four Evals, and "1 again" as an A/A control. It reports each variant's median
// milliseconds a round and the tokens per second that makes for all its streams together.
// TROCHILUS_BENCH_THREADS sets the threads (default 2).
func BenchmarkStreams(b *testing.B) {
	path := benchModel(b)
	threads := 2
	if v := os.Getenv("TROCHILUS_BENCH_THREADS"); v != "" {
		fmt.Sscan(v, &threads)
	}
	m := loadBench(b, path, Options{Threads: threads})
	ctx := context.Background()
	type variant struct {
		name     string
		sessions []*Session
		apart    bool
		times    []time.Duration
	}
	var vs []*variant
	for _, v := range []struct {
		name    string
		streams int
		apart   bool
	}{{"1", 1, false}, {"2", 2, false}, {"4", 4, false}, {"4 apart", 4, true}, {"1 again", 1, false}} {
		vv := &variant{name: v.name, apart: v.apart}
		for i := range v.streams {
			s, err := m.NewSession(SessionOptions{Context: 1024})
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { s.Close() })
			prompt := benchPrompt()
			for j := range prompt {
				prompt[j] += int32(37 * i) // each stream its own conversation
			}
			if _, err := s.Eval(ctx, prompt); err != nil {
				b.Fatal(err)
			}
			vv.sessions = append(vv.sessions, s)
		}
		vs = append(vs, vv)
	}
	rounds := 48
	tokens := make([]int32, 4)
	b.ResetTimer()
	for range b.N {
		for range rounds {
			for _, v := range vs {
				for i, s := range v.sessions {
					tokens[i] = int32(kernels.Argmax(s.Logits()))
				}
				start := time.Now()
				if v.apart {
					for i, s := range v.sessions {
						if _, err := s.Eval(ctx, tokens[i:i+1]); err != nil {
							b.Fatal(err)
						}
					}
				} else if err := m.Step(ctx, v.sessions, tokens[:len(v.sessions)]); err != nil {
					b.Fatal(err)
				}
				v.times = append(v.times, time.Since(start))
			}
		}
		for _, v := range vs {
			for _, s := range v.sessions {
				s.Rewind(len(benchPrompt()))
				if _, err := s.Eval(ctx, benchPrompt()[len(benchPrompt())-1:]); err != nil {
					b.Fatal(err)
				}
				s.Rewind(len(benchPrompt()))
			}
		}
	}
	b.StopTimer()
	for _, v := range vs {
		slices.Sort(v.times)
		med := v.times[len(v.times)/2]
		b.Logf("%-8s %7.2f ms a round, %6.2f tok/s over %d streams", v.name, float64(med)/1e6, float64(len(v.sessions))/med.Seconds(), len(v.sessions))
	}
}

// TestBatcherMatchesAlone runs four generations at once through one Batcher — greedy, sampled,
// with drafts, with a constraint, on sessions at different positions — several times over (the
// passes they share differ with timing), and compares each with the same generation alone:
// the same tokens, and the same logits after.
func TestBatcherMatchesAlone(t *testing.T) {
	m := loadTest(t, tinyConfig(modelgen.Q4KM()), Options{Threads: 2})
	prompts := testPrompts(testVocab)
	base := matrixPrompt(testVocab)[:16]
	jobs := []struct {
		prompt []int32
		opts   GenerateOptions
	}{
		{prompts[0], GenerateOptions{MaxTokens: 20}},
		{prompts[1], GenerateOptions{MaxTokens: 24, Sampling: &Sampling{Temperature: 0.9, TopK: 30, Seed: 5}}},
		{slices.Concat(base, base[:10], base), GenerateOptions{MaxTokens: 24, Draft: 4}},
		{prompts[2], GenerateOptions{MaxTokens: 16, Sampling: &Sampling{Temperature: 1.2, Seed: 9}}},
	}
	want := make([]generated, len(jobs))
	for i, j := range jobs {
		opts := j.opts
		if i == 3 {
			opts.Constraint = &residues{last: -1}
		}
		want[i] = generateWith(t, m, 0, j.prompt, opts)
	}
	ctx := context.Background()
	for round := range 3 {
		b := NewBatcher(m)
		got := make([]generated, len(jobs))
		errs := make([]error, len(jobs))
		var wg sync.WaitGroup
		for i, j := range jobs {
			s := newTestSession(t, m, 0)
			wg.Add(1)
			go func() {
				defer wg.Done()
				opts := j.opts
				opts.Batch = b
				if i == 3 {
					opts.Constraint = &residues{last: -1}
				}
				g, err := s.Generate(ctx, j.prompt, opts)
				if err != nil {
					errs[i] = err
					return
				}
				pos := s.Pos()
				next, err := s.Eval(ctx, g.Tokens[len(g.Tokens)-1:])
				errs[i] = err
				got[i] = generated{tokens: g.Tokens, pos: pos, next: slices.Clone(next)}
			}()
		}
		wg.Wait()
		passes, tokens := b.Stats()
		t.Logf("round %d: %d tokens in %d passes", round, tokens, passes)
		for i := range jobs {
			if errs[i] != nil {
				t.Fatalf("round %d job %d: %v", round, i, errs[i])
			}
			if !slices.Equal(got[i].tokens, want[i].tokens) || got[i].pos != want[i].pos || firstDifference(got[i].next, want[i].next) >= 0 {
				t.Fatalf("round %d job %d: %v at %d, alone %v at %d", round, i, got[i].tokens, got[i].pos, want[i].tokens, want[i].pos)
			}
		}
	}
	// A cancelled generation ends with its context's error and leaves the others be.
	b := NewBatcher(m)
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	s := newTestSession(t, m, 0)
	if _, err := s.Eval(ctx, prompts[0]); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Eval(cctx, s, 1); !errors.Is(err, context.Canceled) || s.Pos() != len(prompts[0]) {
		t.Fatalf("cancelled: %v at %d", err, s.Pos())
	}
}
