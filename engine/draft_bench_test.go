package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// BenchmarkDraft times greedy generation with drafts from the context against without, in
// turns (off, on, off again as the A/A control) so that a shared machine's load falls on all
// alike, on two of the trained model's prompts: a request to rewrite a file that is in the
// prompt (the text drafts are for) and a line of prose (which does not repeat its context). The
// model is TROCHILUS_BENCH_MODEL when set (the full-size shape, say), else the trained tiny
// model; TROCHILUS_BENCH_THREADS sets the threads (default 2). Each variant's tokens must be
// the same. It reports each variant's median decode tokens a second, the ratios of the medians,
// and the share of drafted tokens accepted.
func BenchmarkDraft(b *testing.B) {
	m := loadTrainedBench(b)
	prompts := trainedPrompts(b)
	const newTokens = 160
	for _, name := range []string{"chat-rewrite-file", "prose"} {
		prompt := prompts[name]
		b.Run(name, func(b *testing.B) {
			variants := []struct {
				name  string
				draft int
			}{{"off", 0}, {"on", maxDraft}, {"off-again", 0}}
			rates := make([][]float64, len(variants))
			var want []int32
			drafted, accepted := 0, 0
			for range b.N {
				for i, v := range variants {
					s, err := m.NewSession(SessionOptions{})
					if err != nil {
						b.Fatal(err)
					}
					g, err := s.Generate(context.Background(), prompt, GenerateOptions{MaxTokens: newTokens, Draft: v.draft})
					s.Close()
					if err != nil {
						b.Fatal(err)
					}
					if want == nil {
						want = g.Tokens
					} else if !slices.Equal(g.Tokens, want) {
						b.Fatalf("%s: the tokens differ from the first run's", v.name)
					}
					rates[i] = append(rates[i], g.DecodeRate())
					drafted += g.Drafted
					accepted += g.Accepted
				}
			}
			med := make([]float64, len(variants))
			for i, v := range variants {
				med[i] = median(rates[i])
				b.ReportMetric(med[i], v.name+"-tok/s")
			}
			b.ReportMetric(med[1]/med[0], "on/off")
			b.ReportMetric(med[2]/med[0], "off-again/off")
			if drafted > 0 {
				b.ReportMetric(float64(accepted)/float64(drafted), "accepted/drafted")
			}
		})
	}
}

// trainedPrompts reads the trained model's prompts by name (testdata/trained/prompts.json).
func trainedPrompts(tb testing.TB) map[string][]int32 {
	out := map[string][]int32{}
	for _, p := range readPromptFile(tb, "prompts.json") {
		out[p.Name] = p.IDs
	}
	return out
}

// namedPrompt is one prompt of a trained model's prompt file.
type namedPrompt struct {
	Name string
	IDs  []int32
}

// readPromptFile reads the prompts of testdata/trained/name, in the file's order.
func readPromptFile(tb testing.TB, name string) []namedPrompt {
	tb.Helper()
	b, err := os.ReadFile(filepath.Join("..", "testdata", "trained", name))
	if err != nil {
		tb.Fatal(err)
	}
	var ps []namedPrompt
	if err := json.Unmarshal(b, &ps); err != nil {
		tb.Fatal(err)
	}
	return ps
}

// median returns the middle of xs (the mean of the two middle values for an even count).
func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	if n == 0 {
		return 0
	}
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// loadTrainedBench loads the model a benchmark of realistic text runs: TROCHILUS_BENCH_MODEL
// when set (the full-size shapes), else the trained tiny model, on TROCHILUS_BENCH_THREADS
// threads (default 2).
func loadTrainedBench(b *testing.B) *Model {
	path := os.Getenv("TROCHILUS_BENCH_MODEL")
	if path == "" {
		path = trainedModel().file(b)
	}
	threads := 2
	if v := os.Getenv("TROCHILUS_BENCH_THREADS"); v != "" {
		if _, err := fmt.Sscan(v, &threads); err != nil {
			b.Fatalf("TROCHILUS_BENCH_THREADS=%q: %v", v, err)
		}
	}
	return loadBench(b, path, Options{Threads: threads})
}
