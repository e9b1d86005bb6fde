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

	// OnLogits, when set, is called with each chosen token and the logits it was chosen from
	// (valid only during the call), before OnToken: what log probabilities are computed from.
	OnLogits func(tok int32, logits []float32) error

	// Sampling, when set, draws each token at random (see Sampling); nil chooses greedily.
	Sampling *Sampling

	// Drawn, with Sampling, is how many draws Sampling's stream made before this generation:
	// the tokens of an answer it goes on with (one draw a token), so that each token is drawn
	// as the uninterrupted answer would have drawn it. 0: the stream's start.
	Drawn int

	// Draft, when above 0, drafts up to that many tokens at a time from the context (see
	// drafter) and verifies them in one pass: speculative decoding that cannot change a token,
	// greedy or sampled, since every verified row is the one a one-token pass would give and
	// each token is chosen from its row exactly as without drafts. 0: one token a pass.
	Draft int

	// Before is what the session holds before prompt (a kept prefix): drafts are looked up
	// in it too.
	Before []int32

	// draftByLengthOnly leaves the measured pass costs out of the draft lengths (tests that
	// count accepted tokens must not depend on timing).
	draftByLengthOnly bool

	// Constraint, when set, limits the tokens that may be chosen (structured output, say):
	// see Constraint.
	Constraint Constraint

	// Batch, when set, evaluates each chosen token through it, in passes shared with other
	// generations' tokens (several conversations served at once); the tokens are the same.
	Batch *Batcher
}

// A Constraint limits the tokens Generate may choose, for an answer that must follow a
// grammar. Before each choice, Mask sets the logits of the tokens that cannot come next to
// −Inf; the choice, greedy or drawn, is then made among the rest exactly as without a
// constraint, and Accept is told the token chosen. A constraint that depends only on the
// tokens it accepted keeps the answer a function of the prompt and the options: the same on
// every machine. An error from either ends the generation with it.
type Constraint interface {
	Mask(logits []float32) error
	Accept(tok int32) error
}

// Generation is what Generate produced and how long it took.
type Generation struct {
	Tokens  []int32 // the new tokens, a stop token included
	Stopped bool    // the last token is one of the stop tokens

	PromptTokens int           // tokens of the prompt evaluated
	PromptTime   time.Duration // evaluating the prompt and choosing the first token
	DecodeTokens int           // tokens chosen after the first
	DecodeTime   time.Duration // the passes after the prompt and the choices
	Passes       int           // forward passes after the prompt (DecodeTokens without drafts)
	Drafted      int           // draft tokens verified
	Accepted     int           // of those, tokens the model chose as drafted
	// HeadChoices counts the greedy choices the head's bound searched for (pure greedy: no
	// sampling, OnLogits, constraint or batcher; see Model.SetHeadBound; not those it skipped
	// while backing off), and HeadRows the output rows they computed exactly, of
	// HeadChoices·Vocab.
	HeadChoices, HeadRows int
}

// PromptRate returns the prompt tokens evaluated per second.
func (g *Generation) PromptRate() float64 { return rate(g.PromptTokens, g.PromptTime) }

// DecodeRate returns the tokens chosen per second after the first.
func (g *Generation) DecodeRate() float64 { return rate(g.DecodeTokens, g.DecodeTime) }

func rate(n int, d time.Duration) float64 {
	if n == 0 || d <= 0 {
		return 0
	}
	return float64(n) / d.Seconds()
}

// Generate evaluates prompt and then chooses tokens greedily (the largest logit, the lowest id
// among equals), or draws them as opts.Sampling says, until a stop token or MaxTokens. Each
// chosen token but the last is evaluated, so the session ends holding the prompt and every new
// token except the last, whose logits are never needed here: a caller continuing the sequence
// evaluates it next. The tokens made before an error (a cancelled ctx included) are returned
// with it, and the session then holds as much as it would without drafts.
//
// With opts.Draft, a chosen token is evaluated together with the tokens that followed the
// latest earlier occurrence of its context (a draft); the rows of that pass are the logits a
// one-token pass would give at each position, so the next token is chosen from its row as
// always, and while it is the one drafted the next row is valid too. The first token that
// differs ends the draft: the positions past it are rewound, and it is evaluated next.
func (s *Session) Generate(ctx context.Context, prompt []int32, opts GenerateOptions) (g Generation, err error) {
	if opts.MaxTokens < 1 {
		return g, fmt.Errorf("engine: generate %d tokens", opts.MaxTokens)
	}
	// Counted from the prompt on, so that another generation's tuned passes stop being tuned
	// while this one shares the pool (threads.go).
	s.m.generating.Add(1)
	defer func() {
		s.m.generating.Add(-1)
		s.m.tuneRestore()
	}()
	var smp *sampler
	if opts.Sampling != nil {
		if err := opts.Sampling.Check(); err != nil {
			return g, err
		}
		smp = resumeSampler(*opts.Sampling, opts.Drawn)
		smp.tier = s.m.tier
	}
	var dr *drafter
	var rows []float32 // a verify pass's logits, a row of Vocab floats per token
	if opts.Draft > 0 {
		dr = newDrafter(opts.Before, prompt, min(opts.Draft, s.pass-1, maxDraft))
		dr.untimed = opts.draftByLengthOnly
		// Kept by the session: drafts are on by default, and a verify pass's rows are
		// (most+1)·Vocab floats, 10 MB for Qwen3's vocabulary, on every request.
		if n := (dr.most + 1) * s.m.cfg.Vocab; len(s.draftRows) < n {
			s.draftRows = make([]float32, n)
		}
		rows = s.draftRows
	}
	// bounded: every choice is greedy and nothing else reads the logits, so the head's bound
	// may choose each token of a one-token pass (next, with chosen set) without them. A draft's
	// verify pass computes its rows whole: the tokens chosen from them are Argmax's.
	bounded := smp == nil && opts.OnLogits == nil && opts.Constraint == nil && opts.Batch == nil && s.headBound()
	var logits []float32
	var next int32
	chosen := false
	start := time.Now()
	if bounded {
		next, err = s.evalGreedy(ctx, prompt, &g)
		chosen = true
	} else {
		logits, err = s.Eval(ctx, prompt)
	}
	if err != nil {
		return g, err
	}
	g.PromptTokens = len(prompt)
	vocab := s.m.cfg.Vocab
	// draft are the tokens of the last verify pass after its first, evaluated at positions
	// base+1 on; confirmed of them match the tokens chosen since.
	var draft []int32
	base, confirmed := 0, 0
	defer func() {
		// However it ends (a stop, the limit, an error, a cancel), the time after the first
		// token is the decode time: a stopped answer's speed is as true as a finished one's.
		if len(g.Tokens) > 0 {
			g.DecodeTime = time.Since(start)
		}
		// On leaving inside a verified draft, its positions from the last token chosen on are
		// not the sequence's: the session holds the tokens chosen but the last, as without
		// drafts.
		if draft != nil {
			if rerr := s.Rewind(base + 1 + confirmed); err == nil {
				err = rerr
			}
		}
	}()
	var one [1]int32
	for {
		if opts.Constraint != nil {
			if err := opts.Constraint.Mask(logits); err != nil {
				return g, err
			}
		}
		tok := next
		switch {
		case smp != nil:
			if tok, err = smp.next(logits); err != nil {
				return g, err
			}
		case !chosen:
			tok = int32(kernels.Argmax(logits))
		}
		chosen = false
		if opts.Constraint != nil {
			if err := opts.Constraint.Accept(tok); err != nil {
				return g, err
			}
		}
		g.Tokens = append(g.Tokens, tok)
		if len(g.Tokens) == 1 {
			g.PromptTime = time.Since(start)
			start = time.Now()
		} else {
			g.DecodeTokens++
		}
		if opts.OnLogits != nil {
			if err := opts.OnLogits(tok, logits); err != nil {
				return g, err
			}
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
		if draft != nil {
			// A draft's tokens come without a pass in between, so the context is asked here:
			// a cancel ends the answer at this token, the session holding what it would
			// between one-token passes (the rewind on leaving drops this token's position).
			if err := ctx.Err(); err != nil {
				return g, fmt.Errorf("engine: generating after %d tokens: %w", len(g.Tokens), err)
			}
			if confirmed < len(draft) && tok == draft[confirmed] {
				// Evaluated already, at base+1+confirmed: the next row is its logits.
				confirmed++
				g.Accepted++
				dr.accepted(tok)
				logits = rows[confirmed*vocab : (confirmed+1)*vocab]
				continue
			}
			// Not as drafted (or past the draft): the positions from here on go.
			if err := s.Rewind(base + 1 + confirmed); err != nil {
				return g, err
			}
			dr.ended(confirmed, len(draft))
			draft = nil
		}
		if dr != nil {
			dr.add(tok)
			room := min(opts.MaxTokens-len(g.Tokens), s.ctxLen-s.pos-1)
			if d := dr.propose(room); len(d) > 0 {
				batch := append(append(dr.batch[:0], tok), d...)
				threads, t0 := s.m.tuneBegin(len(batch)), time.Now()
				err := s.EvalAll(ctx, batch, rows[:len(batch)*vocab])
				s.m.tuneEnd(len(batch), threads, time.Since(t0), err == nil)
				if err != nil {
					return g, err
				}
				dr.observe(len(batch), time.Since(t0))
				g.Passes++
				g.Drafted += len(d)
				draft, base, confirmed = d, s.pos-len(batch), 0
				logits = rows[:vocab]
				continue
			}
		}
		one[0] = tok
		threads := 0
		if opts.Batch == nil { // a shared pass's width is the batch's: not tuned here
			threads = s.m.tuneBegin(1)
		}
		t0 := time.Now()
		switch {
		case bounded:
			next, err = s.evalGreedy(ctx, one[:], &g)
			chosen = true
		case opts.Batch != nil:
			logits, err = opts.Batch.Eval(ctx, s, tok)
		default:
			logits, err = s.Eval(ctx, one[:])
		}
		s.m.tuneEnd(1, threads, time.Since(t0), err == nil)
		if err != nil {
			return g, err
		}
		if dr != nil && opts.Batch == nil {
			// A shared pass's time is the batch's, not this sequence's one-token pass: with a
			// batcher the drafts stay on the length rule alone.
			dr.observe(1, time.Since(t0))
		}
		g.Passes++
	}
	return g, nil
}
