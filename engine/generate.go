package engine

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/trochilus-llm/trochilus/kernels"
)

// GenerateOptions configure Generate.
type GenerateOptions struct {
	// MaxTokens is the most new tokens to generate (at least 1).
	MaxTokens int

	// Stop lists the tokens that end the generation (the model's EOS, say); the stop token is
	// returned as the last token.
	Stop []int32

	// OnToken, when set, is called with each new token as soon as it is chosen; an error from
	// it ends the generation with that error.
	OnToken func(tok int32) error

	// Sampling, when set, draws each token at random (see Sampling); nil chooses greedily.
	Sampling *Sampling
}

// Generation is what Generate produced and how long it took.
type Generation struct {
	Tokens  []int32 // the new tokens, a stop token included
	Stopped bool    // the last token is one of the stop tokens

	PromptTokens int           // tokens of the prompt evaluated
	PromptTime   time.Duration // evaluating the prompt and choosing the first token
	DecodeTokens int           // one-token passes run after the prompt
	DecodeTime   time.Duration // those passes and their choices
}

// PromptRate returns the prompt tokens evaluated per second.
func (g *Generation) PromptRate() float64 { return rate(g.PromptTokens, g.PromptTime) }

// DecodeRate returns the generated tokens per second of the one-token passes.
func (g *Generation) DecodeRate() float64 { return rate(g.DecodeTokens, g.DecodeTime) }

func rate(n int, d time.Duration) float64 {
	if n == 0 || d <= 0 {
		return 0
	}
	return float64(n) / d.Seconds()
}

// Generate evaluates prompt and then chooses tokens greedily (the largest logit, the lowest id
// among equals), or draws them as opts.Sampling says, until a stop token or MaxTokens. Each
// chosen token but the last is evaluated, so the session ends holding the prompt and every new token except the last, whose logits
// are never needed here: a caller continuing the sequence evaluates it next. The tokens made
// before an error (a cancelled ctx included) are returned with it.
func (s *Session) Generate(ctx context.Context, prompt []int32, opts GenerateOptions) (Generation, error) {
	var g Generation
	if opts.MaxTokens < 1 {
		return g, fmt.Errorf("engine: generate %d tokens", opts.MaxTokens)
	}
	var smp *sampler
	if opts.Sampling != nil {
		if err := opts.Sampling.Check(); err != nil {
			return g, err
		}
		smp = newSampler(*opts.Sampling)
	}
	start := time.Now()
	logits, err := s.Eval(ctx, prompt)
	if err != nil {
		return g, err
	}
	g.PromptTokens = len(prompt)
	var one [1]int32
	for {
		tok := int32(kernels.Argmax(logits))
		if smp != nil {
			if tok, err = smp.next(logits); err != nil {
				return g, err
			}
		}
		g.Tokens = append(g.Tokens, tok)
		if len(g.Tokens) == 1 {
			g.PromptTime = time.Since(start)
			start = time.Now()
		}
		if opts.OnToken != nil {
			if err := opts.OnToken(tok); err != nil {
				return g, err
			}
		}
		if slices.Contains(opts.Stop, tok) {
			g.Stopped = true
			break
		}
		if len(g.Tokens) == opts.MaxTokens {
			break
		}
		one[0] = tok
		if logits, err = s.Eval(ctx, one[:]); err != nil {
			return g, err
		}
		g.DecodeTokens++
	}
	g.DecodeTime = time.Since(start)
	return g, nil
}
