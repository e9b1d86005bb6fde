package engine

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/trochilus-llm/trochilus/gguf"
	"github.com/trochilus-llm/trochilus/internal/modelgen"
)

// TestThreadTunerChoice drives the tuner with made-up pass times: it must try the counts from
// the most down, stop going down at one slower than tuneGiveUp times the best, time each
// survivor tuneSamples times and keep the fastest — for each kind of pass on its own.
func TestThreadTunerChoice(t *testing.T) {
	ms := func(f float64) time.Duration { return time.Duration(f * float64(time.Millisecond)) }
	cases := []struct {
		name    string
		threads int
		cands   []int
		secs    map[int]float64 // a pass's milliseconds by thread count
		tried   []int           // the counts timed, in order
		chosen  int
	}{
		{"compute-bound, two cores", 2, []int{2, 1}, map[int]float64{2: 10, 1: 19},
			[]int{2, 1, 2, 2}, 2},
		{"memory-bound, sixteen cores", 16, []int{16, 12, 8, 4, 1}, map[int]float64{16: 10, 12: 9, 8: 8, 4: 12, 1: 40},
			[]int{16, 12, 8, 4, 1, 16, 12, 8, 4, 16, 12, 8, 4}, 8},
		{"fewest is fastest", 3, []int{3, 2, 1}, map[int]float64{3: 9, 2: 8, 1: 7},
			[]int{3, 2, 1, 3, 2, 1, 3, 2, 1}, 1},
	}
	for _, c := range cases {
		tu := newThreadTuner(c.threads)
		if !slices.Equal(tu.cands, c.cands) {
			t.Fatalf("%s: candidates %v, want %v", c.name, tu.cands, c.cands)
		}
		var tried []int
		for range 100 {
			n := tu.pick(1)
			if tu.chosen()[0] != 0 {
				break
			}
			tried = append(tried, n)
			tu.observe(1, n, ms(c.secs[n]))
		}
		if !slices.Equal(tried, c.tried) {
			t.Errorf("%s: timed %v, want %v", c.name, tried, c.tried)
		}
		if got := tu.chosen(); got[0] != c.chosen || got[1] != 0 {
			t.Errorf("%s: chose %v, want %d for one-row passes and the others still open", c.name, got, c.chosen)
		}
		// Kept for the model's life, whatever is timed after.
		tu.observe(1, c.chosen, ms(1000))
		if n := tu.pick(1); n != c.chosen {
			t.Errorf("%s: picked %d after the choice, want %d", c.name, n, c.chosen)
		}
	}
	tu := newThreadTuner(2)
	tu.observe(3, 7, ms(1)) // a count that is no candidate: ignored
	tu.observe(3, 2, 0)     // no time: ignored
	if k := tu.kinds[tuneKindOf(3)]; k.timed[0] != 0 || k.timed[1] != 0 || k.down != 0 {
		t.Errorf("ignored observations changed the trial: %+v", k)
	}
	for w, want := range map[int]int{0: 0, 1: 0, 2: 1, 4: 1, 5: 2, 8: 2, 9: 3, 17: 3} {
		if got := tuneKindOf(w); got != want {
			t.Errorf("tuneKindOf(%d) = %d, want %d", w, got, want)
		}
	}
}

// TestTunedThreadsSameTokens generates, with drafts and sampling, on a three-thread pool set to
// each count in turn and then with the tuner choosing (whose choices depend on timing, which
// no assertion here does), and compares every token and the last logits with a model on one
// thread and no tuner: the count changes how fast a pass runs, never a bit.
func TestTunedThreadsSameTokens(t *testing.T) {
	cfg := tinyConfig(modelgen.Uniform(gguf.TypeQ8_0))
	prompt := append(testPrompts(testVocab)[1], testPrompts(testVocab)[1]...) // repeats: drafts
	run := func(m *Model, smp *Sampling) ([]int32, []float32) {
		s, err := m.NewSession(SessionOptions{})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		g, err := s.Generate(context.Background(), prompt, GenerateOptions{MaxTokens: 40, Draft: maxDraft, Sampling: smp})
		if err != nil {
			t.Fatal(err)
		}
		return g.Tokens, slices.Clone(s.Logits())
	}
	ref := loadTest(t, cfg, Options{Threads: 1})
	if ref.tuner != nil {
		t.Fatal("a model with a named thread count has a tuner")
	}
	tuned := loadTest(t, cfg, Options{Threads: 3})
	tuned.tuner = newThreadTuner(3)
	for _, smp := range []*Sampling{nil, {Temperature: 0.9, TopP: 0.95, Seed: 5}} {
		wantTok, wantLogits := run(ref, smp)
		for i := range 7 { // counts 1, 2, 3 set by hand, then the tuner's
			tuner := tuned.tuner
			if i < 3 {
				tuned.tuner = nil
				tuned.pool.SetActive(i + 1)
			}
			tok, logits := run(tuned, smp)
			tuned.tuner = tuner
			tuned.pool.SetActive(3)
			if !slices.Equal(tok, wantTok) {
				t.Fatalf("sampling %v: tokens %v, want %v", smp != nil, tok, wantTok)
			}
			if i := firstDifference(logits, wantLogits); i >= 0 {
				t.Fatalf("sampling %v: logit %d differs", smp != nil, i)
			}
		}
	}
	k := tuned.tuner.kinds[0]
	if timed := k.timed[0] + k.timed[1] + k.timed[2]; timed == 0 && k.chosen == 0 {
		t.Error("the tuner timed no one-row pass")
	}
	if tuned.pool.Active() != 3 {
		t.Errorf("after generating, the pool runs %d of its 3 threads, want all (prompts are not tuned)", tuned.pool.Active())
	}
	t.Logf("chosen thread counts by kind of pass: %v (timed %v)", tuned.tuner.chosen(), k.timed)
}

// TestTunerStandsAsideWhenShared: while two generations share the model's pool, no pass is
// tuned (its count would be every pass's, and its time would include the other's), a pass
// begun alone is not counted if another began meanwhile, and the pool keeps all its threads.
func TestTunerStandsAsideWhenShared(t *testing.T) {
	m := loadTest(t, tinyConfig(modelgen.Uniform(gguf.TypeQ8_0)), Options{Threads: 3})
	m.tuner = newThreadTuner(3)
	m.generating.Store(2)
	if n := m.tuneBegin(1); n != 0 || m.pool.Active() != 3 {
		t.Fatalf("shared: tuneBegin gave %d threads, pool at %d; want 0 (untuned) and all 3", n, m.pool.Active())
	}
	m.generating.Store(1)
	n := m.tuneBegin(1)
	if n != 3 || m.pool.Active() != 3 {
		t.Fatalf("alone: tuneBegin gave %d, pool at %d; want the first candidate, 3", n, m.pool.Active())
	}
	m.generating.Store(2) // another generation began during the pass
	m.tuneEnd(1, n, time.Millisecond, true)
	if k := m.tuner.kinds[0]; k.timed[0] != 0 {
		t.Errorf("a pass shared with another generation was counted: %+v", k)
	}
	m.generating.Store(1)
	m.pool.SetActive(1)
	m.tuneRestore()
	if m.pool.Active() != 3 {
		t.Errorf("after tuneRestore the pool runs %d of 3 threads", m.pool.Active())
	}
}
