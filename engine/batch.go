package engine

import (
	"context"
	"fmt"
	"sync"
)

// A Batcher lets generations on several goroutines share forward passes: each evaluates its
// next token through Eval, and the tokens that are waiting when a pass can start are evaluated
// together (Model.Step), each weight row read once for all of them. Which tokens share a pass
// depends on timing; what each gets does not: Step gives every session the logits it would
// get alone, so a generation through a Batcher is the same, token for token, as without one.
// The zero value is not usable; make one with NewBatcher.
type Batcher struct {
	m *Model

	mu      sync.Mutex
	queue   []*stepRequest
	leading bool // some goroutine is running passes for the queue

	// The pass in flight's sessions and tokens, reused.
	sessions []*Session
	tokens   []int32

	passes, evaluated int // passes run and tokens they evaluated, under mu

	// gather, when a test sets it (before the first Eval), holds the first pass until that
	// many tokens wait for it (under mu; 0 once they have): which tokens share a pass is
	// otherwise timing, and a test of sharing must not depend on it. The goroutine whose
	// token makes the count leads.
	gather int

	logits []float32 // the passes' logits, one buffer for every pass (the plan counts it)
}

// Stats returns the passes the batcher has run and the tokens they evaluated: their ratio is
// how many generations shared a pass on average.
func (b *Batcher) Stats() (passes, tokens int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.passes, b.evaluated
}

// stepRequest is one session's token waiting for a pass; done receives its outcome, or nil
// with lead set when its goroutine is to run the next pass for the queue.
type stepRequest struct {
	ctx  context.Context
	s    *Session
	tok  int32
	err  error
	lead bool
	done chan struct{}
}

// NewBatcher returns a batcher for the sessions of m.
func NewBatcher(m *Model) *Batcher { return &Batcher{m: m} }

// Eval evaluates tok at s's next position, as s.Eval would, in a pass it may share with other
// goroutines' tokens, and returns s's logits. s must be a session of the batcher's model used
// by no other goroutine meanwhile. A cancelled ctx ends the wait before the token's pass
// begins; once it has begun, the pass (one token's time) completes.
func (b *Batcher) Eval(ctx context.Context, s *Session, tok int32) ([]float32, error) {
	req := &stepRequest{ctx: ctx, s: s, tok: tok, done: make(chan struct{}, 1)}
	b.mu.Lock()
	b.queue = append(b.queue, req)
	lead := !b.leading && len(b.queue) >= b.gather
	if lead {
		b.leading, b.gather = true, 0
	}
	b.mu.Unlock()
	if lead {
		b.runPass()
	}
	for {
		<-req.done
		b.mu.Lock()
		lead, req.lead = req.lead, false
		b.mu.Unlock()
		if !lead {
			break // the outcome
		}
		b.runPass() // this goroutine's turn to run the queue, its own token among it
	}
	if req.err != nil {
		return nil, req.err
	}
	return s.logits, nil
}

// runPass evaluates every token in the queue in one Step, delivers the outcomes, and hands the
// lead to the first token that arrived meanwhile (or gives it up): no goroutine runs passes for
// others' tokens longer than one pass, and one always does while tokens wait.
func (b *Batcher) runPass() {
	b.mu.Lock()
	batch := b.queue
	b.queue = nil
	b.mu.Unlock()

	// Tokens that cannot be evaluated fail alone, before the pass; the rest share it.
	b.sessions, b.tokens = b.sessions[:0], b.tokens[:0]
	in := 0
	for _, r := range batch {
		if r.err = r.ctx.Err(); r.err == nil {
			r.err = r.s.check([]int32{r.tok})
		}
		if r.err == nil {
			b.sessions, b.tokens = append(b.sessions, r.s), append(b.tokens, r.tok)
			in++
		}
	}
	if in > 0 {
		// No request's cancellation stops the others' pass.
		if err := b.step(); err != nil {
			for _, r := range batch {
				if r.err == nil {
					r.err = err
				}
			}
		}
	}
	for _, r := range batch {
		r.done <- struct{}{}
	}

	b.mu.Lock()
	if in > 0 {
		b.passes++
		b.evaluated += in
	}
	var next *stepRequest
	if len(b.queue) > 0 {
		next = b.queue[0]
		next.lead = true
	} else {
		b.leading = false
	}
	b.mu.Unlock()
	if next != nil {
		next.done <- struct{}{}
	}
}

// step runs the pass, a panic in it turned into an error: the waiting generations must hear of
// it, or every later Eval would wait for a lead that never comes.
func (b *Batcher) step() (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("engine: a shared pass failed: %v", p)
		}
	}()
	return b.m.step(context.Background(), b.sessions, b.tokens, &b.logits)
}
