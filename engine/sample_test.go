package engine

import (
	"context"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/trochilus-llm/trochilus/gguf"
	"github.com/trochilus-llm/trochilus/internal/modelgen"
	"github.com/trochilus-llm/trochilus/kernels"
)

// TestSamplerDistribution draws many tokens from fixed logits and compares the frequencies
// with the softmax, and checks what TopK, TopP and the special values leave drawable.
func TestSamplerDistribution(t *testing.T) {
	nan, inf := float32(math.NaN()), float32(math.Inf(1))
	logits := []float32{2, 1, 0, -1, nan, -inf, 0.5}
	freq := func(sp Sampling, draws int) []float64 {
		s := newSampler(sp)
		f := make([]float64, len(logits))
		for range draws {
			id, err := s.next(logits)
			if err != nil {
				t.Fatal(err)
			}
			f[id]++
		}
		for i := range f {
			f[i] /= float64(draws)
		}
		return f
	}
	softmax := func(idx []int, temp float64) []float64 {
		p := make([]float64, len(logits))
		var sum float64
		for _, i := range idx {
			p[i] = math.Exp(float64(logits[i]) / temp)
			sum += p[i]
		}
		for i := range p {
			p[i] /= sum
		}
		return p
	}
	for _, c := range []struct {
		sp   Sampling
		want []float64
	}{
		{Sampling{Temperature: 1, Seed: 1}, softmax([]int{0, 1, 2, 3, 6}, 1)},
		{Sampling{Temperature: 0.5, Seed: 2}, softmax([]int{0, 1, 2, 3, 6}, 0.5)},
		{Sampling{Temperature: 1, TopK: 2, Seed: 3}, softmax([]int{0, 1}, 1)},
		// p = 0.563, 0.207, 0.126, 0.076, 0.028 (ids 0, 1, 6, 2, 3), running sums 0.563,
		// 0.770, 0.896: 0.75 keeps two, 0.8 three.
		{Sampling{Temperature: 1, TopP: 0.75, Seed: 4}, softmax([]int{0, 1}, 1)},
		{Sampling{Temperature: 1, TopP: 0.8, Seed: 8}, softmax([]int{0, 1, 6}, 1)},
		{Sampling{Temperature: 1, TopP: 0.3, Seed: 5}, softmax([]int{0}, 1)},
	} {
		got := freq(c.sp, 200000)
		for i := range got {
			if math.Abs(got[i]-c.want[i]) > 0.006 {
				t.Errorf("%+v: token %d drawn %.4f of the time, softmax %.4f", c.sp, i, got[i], c.want[i])
			}
		}
	}
	// +Inf logits share everything; every NaN or every −Inf is an error.
	if f := freq(Sampling{Temperature: 1, Seed: 6}, 1000); f[0] == 0 {
		t.Fatal("the largest logit never drawn")
	}
	withInf := slices.Clone(logits)
	withInf[2], withInf[3] = inf, inf
	s := newSampler(Sampling{Temperature: 1, Seed: 7})
	for range 100 {
		if id, err := s.next(withInf); err != nil || id != 2 && id != 3 {
			t.Fatalf("with +Inf logits drew %d (%v)", id, err)
		}
	}
	for _, bad := range [][]float32{{nan, nan}, {-inf, nan, -inf}} {
		if _, err := newSampler(Sampling{Temperature: 1}).next(bad); err == nil {
			t.Errorf("drew from %v", bad)
		}
	}
	for _, sp := range []Sampling{{}, {Temperature: -1}, {Temperature: float32(math.Inf(1))}, {Temperature: 1, TopK: -1}, {Temperature: 1, TopP: 1.5}, {Temperature: 1, TopP: nan}} {
		if err := sp.Check(); err == nil {
			t.Errorf("%+v accepted", sp)
		}
	}
}

// TestSamplingSameEverywhere checks that a seed names the same tokens whatever the thread
// count and tier, and that other seeds draw other tokens.
func TestSamplingSameEverywhere(t *testing.T) {
	cfg := tinyConfig(modelgen.Uniform(gguf.TypeQ4_K))
	prompt := matrixPrompt(cfg.Vocab)[:12]
	gen := func(opts Options, seed uint64) []int32 {
		m := loadTest(t, cfg, opts)
		s := newTestSession(t, m, 0)
		g, err := s.Generate(context.Background(), prompt, GenerateOptions{MaxTokens: 24,
			Sampling: &Sampling{Temperature: 0.9, TopK: 50, TopP: 0.95, Seed: seed}})
		if err != nil {
			t.Fatal(err)
		}
		return g.Tokens
	}
	want := gen(Options{Threads: 1, Tier: kernels.Scalar()}, 42)
	for _, opts := range []Options{{Threads: 3}, {Threads: 2, ExpertBudget: ExpertBudgetMin}} {
		if got := gen(opts, 42); !slices.Equal(got, want) {
			t.Fatalf("%+v: %v, scalar on one thread %v", opts, got, want)
		}
	}
	differ := 0
	for seed := range uint64(5) {
		if !slices.Equal(gen(Options{Threads: 2}, seed), want) {
			differ++
		}
	}
	if differ < 4 {
		t.Fatalf("only %d of 5 other seeds drew other tokens", differ)
	}
	m := loadTest(t, cfg, Options{})
	_, err := newTestSession(t, m, 0).Generate(context.Background(), prompt, GenerateOptions{MaxTokens: 2, Sampling: &Sampling{}})
	if err == nil || !strings.Contains(err.Error(), "temperature") {
		t.Fatalf("temperature 0: %v", err)
	}
}

// Drawn seeds fit a JSON number exactly (JavaScript clients can send them back) and differ.
func TestNewSeed(t *testing.T) {
	seen := map[uint64]bool{}
	for range 1000 {
		s := NewSeed()
		if s > MaxSeed || float64(s) != float64(int64(s)) || uint64(float64(s)) != s {
			t.Fatalf("seed %d does not survive a float64", s)
		}
		seen[s] = true
	}
	if len(seen) < 999 {
		t.Fatalf("%d distinct seeds of 1000", len(seen))
	}
}
