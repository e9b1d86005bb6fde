package engine

import (
	"context"
	"sync"
	"sync/atomic"

	"github.com/trochilus-llm/trochilus/kernels"
)

// The output head's argmax by a bound (kernels.HeadSearch). A greedy choice needs only the
// index of the largest logit, so when Generate chooses greedily and nothing else wants the
// logits (no sampling, OnLogits, constraint, drafts or batcher), the last pass computes exactly
// only the head rows whose bound can reach the best value found, with the kernels MatMul uses,
// and takes the same token, bit for bit, as kernels.Argmax over every logit. The session's
// logits are then computed only if Logits asks for them.

// headState is a model's side of the bound: the per-row tables, built from output.weight the
// first time a greedy choice asks for them (one pass over the head), the switch and the counts.
// The tables take 4·(32+2) bytes a row (6.8 MB for OLMoE's 50,304 rows, 20.7 MB for Qwen3's
// 151,936), which the memory plan does not count.
type headState struct {
	off   atomic.Bool // the bound is not used: SetHeadBound(false), or a head too narrow to gain
	once  sync.Once
	bound *kernels.HeadBound // nil: no bound (a type without one, or scales too large)

	choices, exact atomic.Int64
}

// SetHeadBound turns the head's argmax by a bound on or off. Off, every greedy choice computes
// every logit; the tokens are the same either way. It may be called while sessions run: a pass
// already begun finishes as it started. A model loads with it on when its hidden width is at
// least minBoundHidden.
func (m *Model) SetHeadBound(on bool) {
	if w, ok := m.net.(*moe); ok {
		w.head.off.Store(!on)
	}
}

// minBoundHidden is the narrowest hidden state whose head the bound is on for by default. The
// bound's pass costs about 34 scalar operations a row (a partial dot over 32 dimensions and a
// norm), the full head hidden/32 SIMD multiply-adds a row: at hidden 256 (the trained tiny
// model) the bound made greedy decode 5× slower although it computed 0.9% of the rows, at
// 2048 (OLMoE, Qwen3-30B-A3B) it pays (docs/MEASUREMENTS.md, session 9).
const minBoundHidden = 1024

// HeadBoundStats returns how many greedy choices went through the head's bound since the load
// and how many head rows they computed exactly, of choices·Vocab (a choice that found the bound
// no help computed them all).
func (m *Model) HeadBoundStats() (choices, exact int64) {
	if w, ok := m.net.(*moe); ok {
		return w.head.choices.Load(), w.head.exact.Load()
	}
	return 0, 0
}

// table returns the head's bound, built on first use over p on the heavy dimensions of x (the
// input of the first greedy choice: a trained model's are the same from token to token); nil
// when there is none.
func (h *headState) table(p *kernels.Pool, out *kernels.Matrix, x []float32) *kernels.HeadBound {
	h.once.Do(func() {
		if kernels.HeadBoundSupported(out.Type) {
			if hb, err := kernels.NewHeadBound(p, out, x); err == nil {
				h.bound = hb
			}
		}
	})
	return h.bound
}

// runnerHead is a runner's side: whether the pass in flight chooses greedily, its search
// (made on first use, the scratch sized for the head) and what the last pass chose.
type runnerHead struct {
	want     bool
	search   *kernels.HeadSearch
	choice   kernels.HeadChoice
	searched bool // the last choice went through the bound's search (not skipped, a table there)

	// Where the bound cannot prune (flat logits, a random model) its pass is a cost with no
	// gain: after misses searches in a row that ended computing the whole head, the next
	// 2^misses−1 choices (at most 255) skip the search. Only the speed depends on it.
	misses, skip int
}

// skipping reports whether this choice skips the search, counting it.
func (h *runnerHead) skipping() bool {
	if h.skip == 0 {
		return false
	}
	h.skip--
	return true
}

// result records how a search ended: full, it computed the whole head.
func (h *runnerHead) result(full bool) {
	if !full {
		h.misses = 0
		return
	}
	h.misses = min(h.misses+1, 8)
	h.skip = 1<<h.misses - 1
}

// greedyRunner is a runner whose passes can end in the head's argmax by a bound.
type greedyRunner interface {
	// headBound reports whether a greedy pass would use the bound now.
	headBound() bool
	// forwardGreedy is forward for the last token's logits, ending in the choice of the
	// largest instead; when the choice computed the whole head, logits holds it. searched
	// reports whether the bound's search made the choice (not a full head: no table, the
	// switch off, or the search backing off).
	forwardGreedy(ctx context.Context, tokens []int32, pos int, logits []float32) (c kernels.HeadChoice, searched bool, err error)
	// fillHead computes the whole head of the last pass into logits.
	fillHead(logits []float32) error
}

func (r *moeRunner) headBound() bool {
	return !r.w.head.off.Load() && kernels.HeadBoundSupported(r.w.out.Type)
}

func (r *moeRunner) forwardGreedy(ctx context.Context, tokens []int32, pos int, logits []float32) (kernels.HeadChoice, bool, error) {
	r.head.want = true
	defer func() { r.head.want = false }()
	if err := r.forward(ctx, tokens, pos, logits, false); err != nil {
		return kernels.HeadChoice{}, false, err
	}
	return r.head.choice, r.head.searched, nil
}

func (r *moeRunner) fillHead(logits []float32) error { return r.mul.matmul(logits, &r.w.out, &r.in) }

// headArgmax is the end of a greedy pass: the choice from the head's rows of r.in, by the
// bound when there is one and it is on, else from every logit.
func (r *moeRunner) headArgmax(logits []float32) error {
	hb := r.w.head.table(r.pool, &r.w.out, r.in.X)
	r.head.searched = false
	if hb == nil || r.w.head.off.Load() || r.head.skipping() {
		if err := r.fillHead(logits); err != nil {
			return err
		}
		r.head.choice = kernels.HeadChoice{Index: kernels.Argmax(logits), Exact: r.w.out.Rows, Full: true}
		return nil
	}
	if r.head.search == nil {
		r.head.search = kernels.NewHeadSearch(r.tier, r.pool, hb)
	}
	c, err := r.head.search.Argmax(&r.w.out, &r.in, logits)
	if err != nil {
		return err
	}
	r.head.choice, r.head.searched = c, true
	r.head.result(c.Full)
	r.w.head.choices.Add(1)
	r.w.head.exact.Add(int64(c.Exact))
	return nil
}

// headBound reports whether the session's greedy choices go through the head's bound.
func (s *Session) headBound() bool {
	g, ok := s.r.(greedyRunner)
	return ok && g.headBound()
}

// evalGreedy evaluates tokens as Eval does and returns the token a greedy choice takes from
// the last one's logits (kernels.Argmax), choosing it by the head's bound; g counts the rows.
// The logits are left for Logits to compute should anyone ask.
func (s *Session) evalGreedy(ctx context.Context, tokens []int32, g *Generation) (int32, error) {
	gr, ok := s.r.(greedyRunner)
	if !ok {
		logits, err := s.Eval(ctx, tokens)
		if err != nil {
			return 0, err
		}
		return int32(kernels.Argmax(logits)), nil
	}
	if err := s.check(tokens); err != nil {
		return 0, err
	}
	s.hasLogits, s.headPending = false, false
	var c kernels.HeadChoice
	searched := false
	for len(tokens) > 0 {
		n := min(len(tokens), s.pass)
		var err error
		if n == len(tokens) {
			c, searched, err = gr.forwardGreedy(ctx, tokens, s.pos, s.logits)
		} else {
			err = s.r.forward(ctx, tokens[:n], s.pos, s.logits, false)
		}
		if err != nil {
			return 0, s.wrap(err)
		}
		s.pos += n
		tokens = tokens[n:]
	}
	s.hasLogits, s.headPending = c.Full, !c.Full
	if searched {
		g.HeadChoices++
		g.HeadRows += c.Exact
	}
	return int32(c.Index), nil
}

// pendingLogits computes the logits a greedy pass left out, for Logits.
func (s *Session) pendingLogits() {
	s.headPending = false
	if g, ok := s.r.(greedyRunner); ok && g.fillHead(s.logits) == nil {
		s.hasLogits = true
	}
}
