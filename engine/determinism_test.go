package engine

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/trochilus-llm/trochilus/kernels"
)

// matrixPrompt is the prompt of the determinism matrix: long enough that passes of 7 and 64
// tokens cut it in several places.
func matrixPrompt(vocab int) []int32 {
	return randomTokens(rand.New(rand.NewPCG(21, 22)), 80, vocab)
}

// randomTokens returns n tokens of a vocabulary of vocab drawn from r.
func randomTokens(r *rand.Rand, n, vocab int) []int32 {
	p := make([]int32, n)
	for i := range p {
		p[i] = int32(r.IntN(vocab))
	}
	return p
}

// logitsRun is one way of evaluating a prompt: the logits of every position, row after row.
type logitsRun struct {
	name string
	run  func(t testing.TB, m *Model, prompt []int32) []float32
}

// wholePrompt evaluates the prompt in one EvalAll with the given pass size.
func wholePrompt(pass int) func(testing.TB, *Model, []int32) []float32 {
	return func(t testing.TB, m *Model, prompt []int32) []float32 {
		s := newTestSession(t, m, pass)
		out := make([]float32, len(prompt)*m.cfg.Vocab)
		if err := s.EvalAll(context.Background(), prompt, out); err != nil {
			t.Fatal(err)
		}
		return out
	}
}

// splitPrompt evaluates the prompt in calls cut at the given points, the last row of each call
// from Eval and the others from EvalAll, so both entry points are in play.
func splitPrompt(cuts []int) func(testing.TB, *Model, []int32) []float32 {
	return func(t testing.TB, m *Model, prompt []int32) []float32 {
		s := newTestSession(t, m, 0)
		v := m.cfg.Vocab
		out := make([]float32, len(prompt)*v)
		from := 0
		for i, to := range append(slices.Clone(cuts), len(prompt)) {
			if to <= from {
				continue
			}
			if i%2 == 0 {
				if err := s.EvalAll(context.Background(), prompt[from:to], out[from*v:to*v]); err != nil {
					t.Fatal(err)
				}
			} else {
				for j := from; j < to; j++ {
					logits, err := s.Eval(context.Background(), prompt[j:j+1])
					if err != nil {
						t.Fatal(err)
					}
					copy(out[j*v:], logits)
				}
			}
			from = to
		}
		return out
	}
}

// afterRewind evaluates another sequence first, rewinds into it and then evaluates the prompt
// (all of it, or from a shared prefix), so stale cache entries past the rewind point sit there.
func afterRewind(t testing.TB, m *Model, prompt []int32) []float32 {
	s := newTestSession(t, m, 0)
	v := m.cfg.Vocab
	out := make([]float32, len(prompt)*v)
	// A full evaluation, then a rewind to the middle and a different continuation.
	if err := s.EvalAll(context.Background(), prompt, out); err != nil {
		t.Fatal(err)
	}
	mid := len(prompt) / 2
	if err := s.Rewind(mid); err != nil {
		t.Fatal(err)
	}
	other := slices.Clone(prompt[mid:])
	slices.Reverse(other)
	if _, err := s.Eval(context.Background(), other); err != nil {
		t.Fatal(err)
	}
	// Back to a third of the way and re-evaluate the prompt's own tokens from there.
	third := len(prompt) / 3
	if err := s.Rewind(third); err != nil {
		t.Fatal(err)
	}
	if s.Logits() != nil {
		t.Fatal("Logits after Rewind is not nil")
	}
	if err := s.EvalAll(context.Background(), prompt[third:], out[third*v:]); err != nil {
		t.Fatal(err)
	}
	// And a rewind to the start evaluates it whole once more; the rows must match too.
	if err := s.Rewind(0); err != nil {
		t.Fatal(err)
	}
	again := make([]float32, len(prompt)*v)
	if err := s.EvalAll(context.Background(), prompt, again); err != nil {
		t.Fatal(err)
	}
	if i := firstDifference(out, again); i >= 0 {
		t.Fatalf("after Rewind(0): logit %d differs: %v then %v", i, out[i], again[i])
	}
	return out
}

func newTestSession(t testing.TB, m *Model, pass int) *Session {
	t.Helper()
	s, err := m.NewSession(SessionOptions{PassSize: pass})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// firstDifference returns the first index where a and b differ in bits, or -1.
func firstDifference(a, b []float32) int {
	if len(a) != len(b) {
		return min(len(a), len(b))
	}
	for i := range a {
		if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
			return i
		}
	}
	return -1
}

// matrixRuns lists the evaluations the determinism matrix compares, beyond thread counts.
func matrixRuns(n int) []logitsRun {
	r := rand.New(rand.NewPCG(31, 32))
	var random []int
	for len(random) < 5 {
		random = append(random, 1+r.IntN(n-1))
	}
	slices.Sort(random)
	every := make([]int, n-1)
	for i := range every {
		every[i] = i + 1
	}
	return []logitsRun{
		{"pass 1", wholePrompt(1)},
		{"pass 7", wholePrompt(7)},
		{"pass 64", wholePrompt(64)},
		{"pass 512", wholePrompt(512)},
		{"token by token", splitPrompt(every)},
		{fmt.Sprintf("split at %v", random), splitPrompt(random)},
		{"after rewinds", afterRewind},
	}
}

// determinismMismatches runs the whole matrix on cfg's model built with opts and returns what
// differed from the reference evaluation (the scalar tier on one thread, the whole prompt in
// one pass of 512).
func determinismMismatches(t testing.TB, tm testModel, opts Options) []string {
	var bad []string
	var want []float32
	prompt := matrixPrompt(tm.cfg.Vocab)
	for _, threads := range []int{1, 2, 3, 8} {
		o := opts
		o.Threads = threads
		// The reference runs the scalar definitions; the rest run the fastest tier, whose
		// equality with every other tier is checked below.
		if threads == 1 {
			o.Tier = kernels.Scalar()
		}
		m := tm.load(t, o)
		got := wholePrompt(512)(t, m, prompt)
		if want == nil {
			want = got
		} else if i := firstDifference(want, got); i >= 0 {
			bad = append(bad, fmt.Sprintf("%d threads: row %d logit %d is %v, not %v", threads, i/m.cfg.Vocab, i%m.cfg.Vocab, got[i], want[i]))
		}
		if threads != 2 {
			continue
		}
		// Every kernel tier this CPU has (bit-identical by the kernels' contract; here checked
		// through the whole model).
		for _, tier := range kernels.Tiers()[1:] {
			o := o
			o.Tier = tier
			got := wholePrompt(512)(t, tm.load(t, o), prompt)
			if i := firstDifference(want, got); i >= 0 {
				bad = append(bad, fmt.Sprintf("tier %s: row %d logit %d is %v, not %v", tier.Name, i/m.cfg.Vocab, i%m.cfg.Vocab, got[i], want[i]))
			}
		}
		for _, run := range matrixRuns(len(prompt)) {
			got := run.run(t, m, prompt)
			if i := firstDifference(want, got); i >= 0 {
				bad = append(bad, fmt.Sprintf("%s: row %d logit %d is %v, not %v", run.name, i/m.cfg.Vocab, i%m.cfg.Vocab, got[i], want[i]))
			}
		}
	}
	return bad
}

// TestDeterminismMatrix checks that every tiny model's logits, at every position of an
// 80-token prompt, are the same bits for 1, 2, 3 and 8 threads; every kernel tier the CPU has;
// passes of 1, 7, 64 and 512 tokens; the prompt whole, token by token and split at random
// points; and after rewinds and re-evaluation over stale cache entries.
func TestDeterminismMatrix(t *testing.T) {
	for _, tm := range testModels() {
		t.Run(tm.name, func(t *testing.T) {
			for _, b := range determinismMismatches(t, tm, Options{}) {
				t.Error(b)
			}
			if !t.Failed() {
				t.Logf("%s: %d logits identical over %d evaluations (4 thread counts, %d SIMD tiers, 7 pass sizes and splits)",
					tm.name, 80*tm.cfg.Vocab, 11+len(kernels.Tiers())-1, len(kernels.Tiers())-1)
			}
		})
	}
}
