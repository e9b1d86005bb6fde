package engine

import (
	"context"
	"errors"
	"fmt"
)

// DefaultPassSize is the most tokens a forward pass evaluates when SessionOptions leaves it 0:
// llama.cpp's micro-batch, large enough that an expert's rows are read once for many tokens.
const DefaultPassSize = 512

// SessionOptions configure NewSession.
type SessionOptions struct {
	// Context is the number of positions the session's KV cache holds; 0 means the context
	// the model's memory plan chose (Model.Plan: the default, or less where memory is short).
	// The model's trained context length is the most allowed.
	Context int

	// PassSize is the most tokens one forward pass evaluates; longer inputs are split. 0 means
	// DefaultPassSize. It changes speed and memory, never a bit of the logits.
	PassSize int
}

// Session is one sequence being evaluated: a KV cache, a position and the logits of the last
// position evaluated. One Session is used by one goroutine at a time (Close included), but
// sessions of one Model may evaluate on different goroutines at once, with experts in memory
// or streamed: each gets the logits it would get alone, bit for bit. Their matrix products
// take turns on the model's pool, and with streamed experts their calls to the expert store
// take turns (see experts.Store), so they share the machine rather than multiply its speed.
// Close a session when done with it: its KV cache is the larger part of its memory.
type Session struct {
	m      *Model
	r      runner // nil once closed
	ctxLen int
	pass   int
	pos    int

	logits    []float32 // of the last evaluated position, when hasLogits
	hasLogits bool
	// headPending: the last pass chose greedily by the head's bound (headbound.go) and left
	// its logits out; Logits computes them when asked.
	headPending bool

	// draftRows holds a verify pass's logits (Generate with drafts): kept so that each
	// generation does not allocate them again.
	draftRows []float32

	// Model.Step's buffers when this session leads a step: kept so that a step allocates
	// nothing once they have grown.
	stepLogits []float32
	stepRows   []runner
	stepPos    []int
}

// ErrSessionClosed is returned by a session's evaluations after its Close.
var ErrSessionClosed = errors.New("session closed")

// NewSession makes a session with an empty KV cache.
func (m *Model) NewSession(opts SessionOptions) (*Session, error) {
	ctxLen := opts.Context
	if ctxLen == 0 {
		ctxLen = m.plan.Context
	}
	if ctxLen < 1 || ctxLen > m.cfg.Context {
		return nil, fmt.Errorf("engine: session context %d outside [1, %d] (the model's context length)", ctxLen, m.cfg.Context)
	}
	pass := opts.PassSize
	if pass == 0 {
		pass = DefaultPassSize
	}
	if pass < 1 {
		return nil, fmt.Errorf("engine: pass size %d is not positive", pass)
	}
	pass = min(pass, ctxLen)
	r, err := m.net.newRunner(m, ctxLen, pass)
	if err != nil {
		return nil, fmt.Errorf("engine: new session: %w", err)
	}
	return &Session{m: m, r: r, ctxLen: ctxLen, pass: pass, logits: make([]float32, m.cfg.Vocab)}, nil
}

// Pos returns the number of positions evaluated (the position the next token will take).
func (s *Session) Pos() int { return s.pos }

// Context returns the number of positions the session can hold.
func (s *Session) Context() int { return s.ctxLen }

// PassSize returns the most tokens one forward pass evaluates.
func (s *Session) PassSize() int { return s.pass }

// Logits returns the logits of the last evaluated position (Vocab floats, valid until the next
// Eval, Rewind or Close), or nil when the last call left none (nothing evaluated yet, a
// rewind, Close).
func (s *Session) Logits() []float32 {
	if !s.hasLogits && s.headPending {
		s.pendingLogits()
	}
	if !s.hasLogits {
		return nil
	}
	return s.logits
}

// Eval evaluates tokens at the session's next positions, in passes of at most PassSize tokens,
// and returns the logits of the last one (as Logits does). On an error (a cancelled ctx
// included) the passes completed before it stay evaluated: Pos says how far it got.
func (s *Session) Eval(ctx context.Context, tokens []int32) ([]float32, error) {
	if err := s.check(tokens); err != nil {
		return nil, err
	}
	s.hasLogits, s.headPending = false, false
	for len(tokens) > 0 {
		n := min(len(tokens), s.pass)
		if err := s.r.forward(ctx, tokens[:n], s.pos, s.logits, false); err != nil {
			return nil, s.wrap(err)
		}
		s.pos += n
		tokens = tokens[n:]
	}
	s.hasLogits = true
	return s.logits, nil
}

// EvalAll evaluates tokens as Eval does and writes the logits of every one of them into dst,
// which must hold len(tokens)·Vocab floats: row i is the logits after token i.
func (s *Session) EvalAll(ctx context.Context, tokens []int32, dst []float32) error {
	if s.r == nil {
		return errClosed
	}
	vocab := s.m.cfg.Vocab
	if len(dst) != len(tokens)*vocab {
		return fmt.Errorf("engine: logits buffer of %d floats for %d tokens of %d", len(dst), len(tokens), vocab)
	}
	if err := s.check(tokens); err != nil {
		return err
	}
	s.hasLogits, s.headPending = false, false
	for len(tokens) > 0 {
		n := min(len(tokens), s.pass)
		if err := s.r.forward(ctx, tokens[:n], s.pos, dst[:n*vocab], true); err != nil {
			return s.wrap(err)
		}
		s.pos += n
		if n == len(tokens) {
			copy(s.logits, dst[(n-1)*vocab:n*vocab])
		}
		tokens, dst = tokens[n:], dst[n*vocab:]
	}
	s.hasLogits = true
	return nil
}

// Rewind drops every position from n on, so the next token takes position n. Logits are
// cleared: evaluate a token to have them again.
func (s *Session) Rewind(n int) error {
	if s.r == nil {
		return errClosed
	}
	if n < 0 || n > s.pos {
		return fmt.Errorf("engine: rewind to %d outside [0, %d]", n, s.pos)
	}
	s.pos = n
	s.hasLogits, s.headPending = false, false
	return nil
}

// Close gives back the session's memory: its KV cache at once (memory the engine maps, not the
// Go heap's) and its pass buffers and logits to the collector. Evaluations and Rewind fail
// afterwards with ErrSessionClosed; Pos, Context and PassSize still answer. A second Close
// does nothing. The session's Model may be closed before or after it.
func (s *Session) Close() error {
	r := s.r
	if r == nil {
		return nil
	}
	s.r, s.logits, s.hasLogits, s.headPending, s.draftRows = nil, nil, false, false, nil
	// The runner interface (load.go) does not require a close: a runner without one holds
	// only heap memory, which dropping it gives back.
	if c, ok := r.(interface{ close() error }); ok {
		if err := c.close(); err != nil {
			return fmt.Errorf("engine: close session: %w", err)
		}
	}
	return nil
}

// errClosed is what a closed session's calls return.
var errClosed = fmt.Errorf("engine: %w", ErrSessionClosed)

// check refuses a closed session or model, tokens outside the vocabulary and input that
// would overflow the context.
func (s *Session) check(tokens []int32) error {
	if s.r == nil {
		return errClosed
	}
	if s.m.closed.Load() {
		return fmt.Errorf("engine: the model is closed")
	}
	if len(tokens) == 0 {
		return fmt.Errorf("engine: no tokens to evaluate")
	}
	if s.pos+len(tokens) > s.ctxLen {
		return fmt.Errorf("engine: %d tokens at position %d of %d: %w", len(tokens), s.pos, s.ctxLen, ErrContextFull)
	}
	for i, t := range tokens {
		if t < 0 || int(t) >= s.m.cfg.Vocab {
			return fmt.Errorf("engine: token %d (at %d) outside the vocabulary [0, %d)", t, i, s.m.cfg.Vocab)
		}
	}
	return nil
}

// wrap says where an evaluation stopped; a cancelled context stays recognisable to errors.Is.
func (s *Session) wrap(err error) error {
	return fmt.Errorf("engine: evaluating position %d: %w", s.pos, err)
}
