package engine

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/trochilus-llm/trochilus/gguf"
	"github.com/trochilus-llm/trochilus/internal/modelgen"
	"github.com/trochilus-llm/trochilus/kernels"
)

func TestSessionErrors(t *testing.T) {
	m := loadTest(t, tinyConfig(modelgen.Uniform(gguf.TypeQ8_0)), Options{Threads: 2})
	if _, err := m.NewSession(SessionOptions{Context: m.cfg.Context + 1}); err == nil {
		t.Error("a context above the model's was accepted")
	}
	if _, err := m.NewSession(SessionOptions{PassSize: -1}); err == nil {
		t.Error("a negative pass size was accepted")
	}
	s, err := m.NewSession(SessionOptions{Context: 8, PassSize: 3})
	if err != nil {
		t.Fatal(err)
	}
	if s.Context() != 8 || s.PassSize() != 3 || s.Logits() != nil {
		t.Fatalf("new session: context %d, pass %d, logits %v", s.Context(), s.PassSize(), s.Logits() != nil)
	}
	ctx := context.Background()
	if _, err := s.Eval(ctx, nil); err == nil {
		t.Error("Eval of no tokens succeeded")
	}
	if _, err := s.Eval(ctx, []int32{1, int32(m.cfg.Vocab)}); err == nil || !strings.Contains(err.Error(), "vocabulary") {
		t.Errorf("token outside the vocabulary: %v", err)
	}
	if _, err := s.Eval(ctx, []int32{1, 2, 3, 4, 5}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Eval(ctx, []int32{1, 2, 3, 4}); !errors.Is(err, ErrContextFull) || s.Pos() != 5 {
		t.Errorf("overflowing the context: %v at position %d", err, s.Pos())
	}
	if err := s.EvalAll(ctx, []int32{1}, make([]float32, 10)); err == nil {
		t.Error("EvalAll into a short buffer succeeded")
	}
	if err := s.Rewind(6); err == nil {
		t.Error("rewind past the position succeeded")
	}
	if err := s.Rewind(-1); err == nil {
		t.Error("rewind to -1 succeeded")
	}
	// A cancelled context stops the evaluation before its first pass is committed.
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := s.Eval(cctx, []int32{7}); !errors.Is(err, context.Canceled) || s.Pos() != 5 {
		t.Errorf("cancelled Eval: %v at position %d", err, s.Pos())
	}
}

func TestGenerate(t *testing.T) {
	m := loadTest(t, tinyConfig(modelgen.Uniform(gguf.TypeQ4_K)), Options{Threads: 2})
	prompt := testPrompts(m.cfg.Vocab)[1]
	ctx := context.Background()

	// The greedy tokens by hand: Eval, argmax, Eval the token.
	s := newTestSession(t, m, 0)
	var want []int32
	logits, err := s.Eval(ctx, prompt)
	for i := 0; i < 12 && err == nil; i++ {
		tok := int32(kernels.Argmax(logits))
		want = append(want, tok)
		logits, err = s.Eval(ctx, []int32{tok})
	}
	if err != nil {
		t.Fatal(err)
	}

	s = newTestSession(t, m, 0)
	var seen []int32
	g, err := s.Generate(ctx, prompt, GenerateOptions{MaxTokens: 12, OnToken: func(tok int32) error {
		seen = append(seen, tok)
		return nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(g.Tokens, want) || !slices.Equal(seen, want) || g.Stopped {
		t.Fatalf("Generate gave %v (OnToken saw %v, stopped %v), want %v", g.Tokens, seen, g.Stopped, want)
	}
	if s.Pos() != len(prompt)+11 || g.PromptTokens != len(prompt) || g.DecodeTokens != 11 {
		t.Fatalf("after Generate: position %d, %d prompt tokens, %d decode passes; want %d, %d, 11",
			s.Pos(), g.PromptTokens, g.DecodeTokens, len(prompt)+11, len(prompt))
	}

	// A stop token ends the generation and is returned.
	s = newTestSession(t, m, 0)
	g, err = s.Generate(ctx, prompt, GenerateOptions{MaxTokens: 12, Stop: []int32{want[3]}})
	if err != nil {
		t.Fatal(err)
	}
	if !g.Stopped || !slices.Equal(g.Tokens, want[:slices.Index(want, want[3])+1]) {
		t.Fatalf("with stop token %d: %v (stopped %v)", want[3], g.Tokens, g.Stopped)
	}

	// An error from OnToken ends it with that error.
	boom := errors.New("boom")
	s = newTestSession(t, m, 0)
	g, err = s.Generate(ctx, prompt, GenerateOptions{MaxTokens: 12, OnToken: func(int32) error { return boom }})
	if !errors.Is(err, boom) || len(g.Tokens) != 1 {
		t.Fatalf("OnToken error: %v after %d tokens", err, len(g.Tokens))
	}
	if _, err := s.Generate(ctx, prompt, GenerateOptions{}); err == nil {
		t.Error("Generate of 0 tokens succeeded")
	}

	// A cancel during decoding (the next pass refused) keeps the tokens made and their decode
	// time, so that a stopped answer's speed is not reported as zero. The second token waits
	// longer than a tick of Windows' monotonic clock (up to 15.6 ms), which the three decode
	// passes of this model take less than: there their time alone could read as zero.
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	s = newTestSession(t, m, 0)
	made := 0
	g, err = s.Generate(cctx, prompt, GenerateOptions{MaxTokens: 12, OnToken: func(int32) error {
		switch made++; made {
		case 2:
			time.Sleep(20 * time.Millisecond)
		case 4:
			cancel()
		}
		return nil
	}})
	if !errors.Is(err, context.Canceled) || !slices.Equal(g.Tokens, want[:4]) || g.DecodeTokens != 3 || g.DecodeTime <= 0 {
		t.Fatalf("cancelled after 4 tokens: %v, tokens %v, %d decode tokens in %v", err, g.Tokens, g.DecodeTokens, g.DecodeTime)
	}
}

// TestDecodeAllocatesNothing checks that evaluating a token (and a pass of several) allocates
// nothing once the session exists, for a float, a Q4_K and a dequantized-row (Q3_K) model, on
// every kernel tier this CPU has.
func TestDecodeAllocatesNothing(t *testing.T) {
	for _, tier := range kernels.Tiers() {
		t.Run(tier.Name, func(t *testing.T) {
			for _, typ := range []gguf.Type{gguf.TypeF16, gguf.TypeQ4_K, gguf.TypeQ3_K} {
				m := loadTest(t, tinyConfig(modelgen.Uniform(typ)), Options{Threads: 2, Tier: tier})
				checkDecodeAllocatesNothing(t, m, newTestSession(t, m, 8), typ.String())
			}
		})
	}
}

// checkDecodeAllocatesNothing evaluates a pass of 20 tokens on s to warm it up (the Q4_K inputs
// are sized on first use), then checks that evaluating one token and that pass again allocate
// nothing; what names the model in a failure.
func checkDecodeAllocatesNothing(t *testing.T, m *Model, s *Session, what string) {
	t.Helper()
	pass := testPrompts(m.cfg.Vocab)[2][:20]
	if _, err := s.Eval(context.Background(), pass); err != nil {
		t.Fatal(err)
	}
	for _, in := range [][]int32{{3}, pass} {
		if allocs := evalAllocs(t, s, in); allocs != 0 {
			t.Errorf("%s: Eval of %d tokens allocates %.0f times", what, len(in), allocs)
		}
	}
}

// evalAllocs returns the allocations of evaluating in (rewinding when the session is full).
func evalAllocs(t *testing.T, s *Session, in []int32) float64 {
	t.Helper()
	return testing.AllocsPerRun(5, func() {
		if s.Pos()+len(in) > s.Context() {
			s.Rewind(0)
		}
		if _, err := s.Eval(context.Background(), in); err != nil {
			t.Fatal(err)
		}
	})
}

// TestStreamedDecodeAllocatesNothing checks the same with the experts streamed through the
// fewest slots (every call misses and reads) and for a sampled token's draw.
func TestStreamedDecodeAllocatesNothing(t *testing.T) {
	m := loadTest(t, tinyConfig(modelgen.Q4KM()), Options{Threads: 2, ExpertBudget: ExpertBudgetMin})
	s := newTestSession(t, m, 8)
	ctx := context.Background()
	checkDecodeAllocatesNothing(t, m, s, "streamed experts")
	if st := m.ExpertStats(); st.Misses == 0 {
		t.Fatalf("the store never missed: %+v", st)
	}
	logits, err := s.Eval(ctx, []int32{5})
	if err != nil {
		t.Fatal(err)
	}
	smp := newSampler(Sampling{Temperature: 0.8, TopK: 40, TopP: 0.9, Seed: 1})
	smp.next(logits) // sizes the scratch
	for _, sp := range []Sampling{{Temperature: 0.8, TopK: 40, TopP: 0.9, Seed: 1}, {Temperature: 1, Seed: 2}} {
		smp.sp = sp
		if allocs := testing.AllocsPerRun(20, func() { smp.next(logits) }); allocs != 0 {
			t.Errorf("a draw with %+v allocates %.0f times", sp, allocs)
		}
	}
}

// TestEvalAfterClose checks that a session of a closed model refuses to run instead of
// touching the unmapped file.
func TestEvalAfterClose(t *testing.T) {
	m, err := Load(context.Background(), tinyQ8(t), Options{Threads: 2})
	if err != nil {
		t.Fatal(err)
	}
	s := newTestSession(t, m, 0)
	if _, err := s.Eval(context.Background(), []int32{1, 2}); err != nil {
		t.Fatal(err)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	if err := m.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if _, err := s.Eval(context.Background(), []int32{3}); err == nil || !strings.Contains(err.Error(), "closed") {
		t.Fatalf("Eval after Close: %v", err)
	}
}

// TestDecodeDispatches counts the pool's wake-ups and joins in a decode pass (one token) of the
// Q4_K_M tiny model on 2 threads: the products of a layer run as q, k and v together, o, the
// router, every chosen expert's gate and up together, and every expert's down together, so a
// layer costs at most 8 dispatches whatever the number of experts used, where one per matrix
// cost 8 + 3·experts used (32 for OLMoE).
func TestDecodeDispatches(t *testing.T) {
	m := loadTest(t, tinyConfig(modelgen.Q4KM()), Options{Threads: 2})
	s := newTestSession(t, m, 8)
	ctx := context.Background()
	if _, err := s.Eval(ctx, testPrompts(m.cfg.Vocab)[0]); err != nil {
		t.Fatal(err)
	}
	before := m.pool.Dispatches()
	if _, err := s.Eval(ctx, []int32{3}); err != nil {
		t.Fatal(err)
	}
	got := m.pool.Dispatches() - before
	layers := uint64(m.cfg.Layers)
	t.Logf("decode pass: %d dispatches over %d layers (%.1f a layer), %d experts used of %d", got, layers, float64(got)/float64(layers), m.cfg.ExpertsUsed, m.cfg.Experts)
	// Per layer: q·k·v, attention, o, router, gate·up, SwiGLU, the down inputs' Q4_K
	// preparation, down; then the head.
	if limit := 8*layers + 1; got > limit || got < 5*layers {
		t.Errorf("decode pass: %d dispatches, want %d to %d", got, 5*layers, limit)
	}
}
