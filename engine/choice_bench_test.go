package engine

import (
	"context"
	"testing"
)

// BenchmarkChoice times how tokens are chosen, in turns so that a shared machine's load falls
// on all alike: greedy with the head's bound (the default), greedy computing every logit,
// seeded sampling (temperature 0.8, top-p 0.9: every logit, the sampler's work on top), and
// the first again as the A/A control. The model is TROCHILUS_BENCH_MODEL when set (the
// full-size shapes), else the trained tiny model; TROCHILUS_BENCH_THREADS sets the threads
// (default 2). It reports each variant's median decode tokens a second, the ratios to greedy
// without the bound, and the share of head rows the bound computed.
func BenchmarkChoice(b *testing.B) {
	m := loadTrainedBench(b)
	prompt := trainedPrompts(b)["prose"]
	const newTokens = 64
	variants := []struct {
		name  string
		bound bool
		smp   *Sampling
	}{
		{"greedy-bound", true, nil},
		{"greedy-full", false, nil},
		{"sampled", false, &Sampling{Temperature: 0.8, TopP: 0.9, Seed: 7}},
		{"greedy-bound-again", true, nil},
	}
	rates := make([][]float64, len(variants))
	rows, choices := 0, 0
	for range b.N {
		for i, v := range variants {
			m.SetHeadBound(v.bound)
			s, err := m.NewSession(SessionOptions{})
			if err != nil {
				b.Fatal(err)
			}
			g, err := s.Generate(context.Background(), prompt, GenerateOptions{MaxTokens: newTokens, Sampling: v.smp})
			s.Close()
			if err != nil {
				b.Fatal(err)
			}
			rates[i] = append(rates[i], g.DecodeRate())
			rows += g.HeadRows
			choices += g.HeadChoices
		}
	}
	m.SetHeadBound(true)
	med := make([]float64, len(variants))
	for i, v := range variants {
		med[i] = median(rates[i])
		b.ReportMetric(med[i], v.name+"-tok/s")
	}
	for i, v := range variants {
		if i != 1 {
			b.ReportMetric(med[i]/med[1], v.name+"/greedy-full")
		}
	}
	if choices > 0 {
		b.ReportMetric(float64(rows)/float64(choices*m.Config().Vocab), "head-rows-exact")
	}
}
