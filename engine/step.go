package engine

import (
	"context"
	"fmt"
)

// Step evaluates one token for each of several sessions of the model in shared forward
// passes: tokens[i] at sessions[i]'s next position. Each weight row is read once for all of
// them (an expert once for all the tokens routed to it), which is what serving several
// conversations at once needs from memory bandwidth; each session's attention reads only its
// own KV cache, and every step of a pass is computed per token by batch-invariant kernels, so
// each session gets the logits it would get evaluating its token alone, bit for bit. The
// sessions must be distinct and open, and none may be in use elsewhere during the call. On an
// error the sessions of the pass that failed are left as they were (those of earlier passes,
// when there are more sessions than a pass holds, are advanced).
//
// The logits of a pass are written to a buffer of the leading session's first (n·Vocab floats,
// kept for its next step); a Batcher keeps one for all its steps instead, which the memory plan
// counts (PlanRequest.Sessions).
func (m *Model) Step(ctx context.Context, sessions []*Session, tokens []int32) error {
	return m.step(ctx, sessions, tokens, nil)
}

// step is Step with the pass's logits in *buf when buf is not nil.
func (m *Model) step(ctx context.Context, sessions []*Session, tokens []int32, buf *[]float32) error {
	if len(sessions) != len(tokens) || len(sessions) == 0 {
		return fmt.Errorf("engine: step of %d sessions with %d tokens", len(sessions), len(tokens))
	}
	// The session with the longest context leads: its runner's tables and buffers cover
	// every position of the others.
	lead := sessions[0]
	for i, s := range sessions {
		if s.m != m {
			return fmt.Errorf("engine: step: session %d is of another model", i)
		}
		if err := s.check(tokens[i : i+1]); err != nil {
			return fmt.Errorf("engine: step: session %d: %w", i, err)
		}
		for _, o := range sessions[:i] {
			if o == s {
				return fmt.Errorf("engine: step: session %d is listed twice", i)
			}
		}
		if s.ctxLen > lead.ctxLen || s.ctxLen == lead.ctxLen && s.pass > lead.pass {
			lead = s
		}
	}
	// A step overwrites the lead runner's buffers, which logits the head's bound left out are
	// computed from (Session.Logits): those are gone for every session stepped.
	for _, s := range sessions {
		s.headPending = false
	}
	vocab := m.cfg.Vocab
	for len(sessions) > 0 {
		n := min(len(sessions), lead.pass)
		if buf == nil {
			buf = &lead.stepLogits
		}
		if cap(*buf) < n*vocab {
			*buf = make([]float32, n*vocab)
		}
		rows, pos := lead.stepRows[:0], lead.stepPos[:0]
		for _, s := range sessions[:n] {
			rows, pos = append(rows, s.r), append(pos, s.pos)
		}
		lead.stepRows, lead.stepPos = rows, pos
		logits := (*buf)[:n*vocab]
		if err := lead.r.stepRows(ctx, tokens[:n], rows, pos, logits); err != nil {
			return fmt.Errorf("engine: step of %d sessions: %w", n, err)
		}
		for i, s := range sessions[:n] {
			copy(s.logits, logits[i*vocab:(i+1)*vocab])
			s.hasLogits = true
			s.pos++
		}
		sessions, tokens = sessions[n:], tokens[n:]
	}
	return nil
}
