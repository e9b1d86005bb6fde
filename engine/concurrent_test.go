package engine

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"

	"github.com/trochilus-llm/trochilus/gguf"
	"github.com/trochilus-llm/trochilus/internal/modelgen"
	"github.com/trochilus-llm/trochilus/internal/modelgen/modelgentest"
)

// concurrentRun is one session's work in TestConcurrentSessions: a prompt evaluated in passes
// of pass tokens (1: token by token, a decode's shape), twice, with a rewind between.
type concurrentRun struct {
	prompt []int32
	pass   int
}

// run evaluates r on a new session of m and returns the logits of every position of both
// rounds; the session is closed when it is done, while other sessions may still run.
func (r concurrentRun) run(m *Model) ([]float32, error) {
	s, err := m.NewSession(SessionOptions{PassSize: r.pass})
	if err != nil {
		return nil, err
	}
	defer s.Close()
	v := m.cfg.Vocab
	out := make([]float32, 2*len(r.prompt)*v)
	for round := range 2 {
		if err := s.Rewind(0); err != nil {
			return nil, err
		}
		if err := s.EvalAll(context.Background(), r.prompt, out[round*len(r.prompt)*v:(round+1)*len(r.prompt)*v]); err != nil {
			return nil, fmt.Errorf("round %d: %w", round, err)
		}
	}
	return out, nil
}

// TestConcurrentSessions checks the promise of Session: four sessions of one Model, each on
// its own goroutine, evaluating different prompts in different pass sizes at the same time,
// get bit for bit the logits each gets alone, with the experts in memory and streamed
// through the fewest slots (where the sessions' calls must wait for each other's slots).
// Run it with -race: it is also the test that sessions share nothing unguarded. It does not
// depend on how the goroutines interleave; the start barrier only makes overlap likely.
func TestConcurrentSessions(t *testing.T) {
	// Q4_K_M has parts of different sizes in different layers; Qwen3-MoE another shape.
	for _, tm := range testModels() {
		if tm.name != "q4_k_m" && tm.name != "qwen3-q4_k_m" {
			continue
		}
		name, cfg := tm.name, tm.cfg
		rng := rand.New(rand.NewPCG(41, 42))
		var runs []concurrentRun
		for i, pass := range []int{512, 1, 7, 3} {
			p := make([]int32, []int{80, 23, 41, 30}[i])
			for j := range p {
				p[j] = int32(rng.IntN(cfg.Vocab))
			}
			runs = append(runs, concurrentRun{p, pass})
		}
		for _, mode := range []struct {
			name string
			opts Options
		}{
			{"resident", Options{Threads: 2}},
			{"streamed at the fewest slots", Options{Threads: 2, ExpertBudget: ExpertBudgetMin}},
		} {
			t.Run(name+"/"+mode.name, func(t *testing.T) {
				m := loadTest(t, cfg, mode.opts)
				alone := make([][]float32, len(runs))
				for i, r := range runs {
					var err error
					if alone[i], err = r.run(m); err != nil {
						t.Fatalf("session %d alone: %v", i, err)
					}
				}
				before := m.ExpertStats()
				got := make([][]float32, len(runs))
				errs := make([]error, len(runs))
				start := make(chan struct{})
				var wg sync.WaitGroup
				for i, r := range runs {
					wg.Go(func() {
						<-start
						got[i], errs[i] = r.run(m)
					})
				}
				close(start)
				wg.Wait()
				for i := range runs {
					if errs[i] != nil {
						t.Fatalf("session %d: %v", i, errs[i])
					}
					if j := firstDifference(alone[i], got[i]); j >= 0 {
						v := cfg.Vocab
						t.Errorf("session %d (pass %d): row %d logit %d is %v, alone %v", i, runs[i].pass, j/v, j%v, got[i][j], alone[i][j])
					}
				}
				if mode.opts.ExpertBudget != 0 {
					st := m.ExpertStats()
					if st.Calls == before.Calls || st.Misses == before.Misses {
						t.Fatalf("the store was not exercised: %+v", st)
					}
					t.Logf("%s; concurrent: %d calls, %d misses, %d waits", m.Experts(), st.Calls-before.Calls, st.Misses-before.Misses, st.Waits-before.Waits)
				}
			})
		}
	}
}

// TestSessionClose checks Close: idempotent, every evaluation after it refused with
// ErrSessionClosed, the model and its other sessions unaffected, and closing the model
// and its sessions in either order.
func TestSessionClose(t *testing.T) {
	for _, opts := range []Options{{Threads: 2}, {Threads: 2, ExpertBudget: ExpertBudgetMin}} {
		t.Run(fmt.Sprintf("budget %d", opts.ExpertBudget), func(t *testing.T) {
			ctx := context.Background()
			m, err := Load(ctx, modelgentest.TestModel(t, tinyConfig(modelgen.Uniform(gguf.TypeQ8_0))), opts)
			if err != nil {
				t.Fatal(err)
			}
			prompt := testPrompts(m.cfg.Vocab)[1]
			s, other := newTestSession(t, m, 4), newTestSession(t, m, 4)
			want, err := s.Eval(ctx, prompt)
			if err != nil {
				t.Fatal(err)
			}
			want = slices.Clone(want)
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			if err := s.Close(); err != nil {
				t.Fatalf("a second Close: %v", err)
			}
			if _, err := s.Eval(ctx, prompt); !errors.Is(err, ErrSessionClosed) {
				t.Errorf("Eval after Close: %v", err)
			}
			if err := s.EvalAll(ctx, prompt[:1], make([]float32, m.cfg.Vocab)); !errors.Is(err, ErrSessionClosed) {
				t.Errorf("EvalAll after Close: %v", err)
			}
			if err := s.Rewind(0); !errors.Is(err, ErrSessionClosed) {
				t.Errorf("Rewind after Close: %v", err)
			}
			if s.Logits() != nil || s.Pos() != len(prompt) || s.Context() != m.cfg.Context {
				t.Errorf("after Close: logits %v, position %d, context %d", s.Logits() != nil, s.Pos(), s.Context())
			}
			// Another session of the model still runs, and gets the closed one's logits.
			got, err := other.Eval(ctx, prompt)
			if err != nil {
				t.Fatal(err)
			}
			if i := firstDifference(want, got); i >= 0 {
				t.Fatalf("after another session's Close: logit %d is %v, not %v", i, got[i], want[i])
			}
			// The model closed first, its session after; then the other way round.
			if err := m.Close(); err != nil {
				t.Fatal(err)
			}
			if _, err := other.Eval(ctx, prompt[:1]); err == nil {
				t.Error("Eval after the model's Close succeeded")
			}
			if err := other.Close(); err != nil {
				t.Fatalf("Close after the model's: %v", err)
			}
			if err := s.Close(); err != nil {
				t.Fatalf("a third Close, after the model's: %v", err)
			}
			if _, err := other.Eval(ctx, prompt[:1]); !errors.Is(err, ErrSessionClosed) {
				t.Errorf("Eval of a closed session of a closed model: %v", err)
			}
		})
	}
}

// TestBatcherSharesWaitingTokens: tokens of four sessions waiting at once are evaluated in one
// pass, each with the logits it gets alone. The batcher's gather hook holds the first pass
// until the four wait, so what is asserted is not the goroutines' timing: a batcher that ran
// a pass per token, or lost one, fails here.
func TestBatcherSharesWaitingTokens(t *testing.T) {
	m := loadTest(t, tinyConfig(modelgen.Q4KM()), Options{Threads: 2})
	ctx := context.Background()
	prompts := testPrompts(testVocab)
	prompts = append(prompts, prompts[0][:3])
	want := make([][]float32, len(prompts))
	sessions := make([]*Session, len(prompts))
	for i, p := range prompts {
		alone := newTestSession(t, m, 0)
		logits, err := alone.Eval(ctx, append(slices.Clone(p), int32(i+1)))
		if err != nil {
			t.Fatal(err)
		}
		want[i] = slices.Clone(logits)
		alone.Close()
		sessions[i] = newTestSession(t, m, 0)
		t.Cleanup(func() { sessions[i].Close() })
		if _, err := sessions[i].Eval(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	b := NewBatcher(m)
	b.gather = len(prompts)
	got := make([][]float32, len(prompts))
	errs := make([]error, len(prompts))
	var wg sync.WaitGroup
	for i, s := range sessions {
		wg.Go(func() {
			logits, err := b.Eval(ctx, s, int32(i+1))
			got[i], errs[i] = slices.Clone(logits), err
		})
	}
	wg.Wait()
	for i := range prompts {
		if errs[i] != nil {
			t.Fatalf("session %d: %v", i, errs[i])
		}
		if d := firstDifference(got[i], want[i]); d >= 0 || sessions[i].Pos() != len(prompts[i])+1 {
			t.Errorf("session %d: at %d, logit %d differs from alone", i, sessions[i].Pos(), d)
		}
	}
	if passes, tokens := b.Stats(); passes != 1 || tokens != len(prompts) {
		t.Errorf("%d tokens in %d passes, want %d in 1", tokens, passes, len(prompts))
	}
}
