package ui

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"

	"github.com/trochilus-llm/trochilus/engine"
	"github.com/trochilus-llm/trochilus/engine/assistant"
	"github.com/trochilus-llm/trochilus/engine/machine"
	"github.com/trochilus-llm/trochilus/kernels"
	"github.com/trochilus-llm/trochilus/tokenizer/chat"
)

// EngineBackend runs models with package engine. The zero value measures no disk; set
// ModelsDir to have the models folder's read speed measured.
type EngineBackend struct {
	ModelsDir string // the folder whose disk Machine measures
	Threads   int    // worker threads per model; 0: the engine's default (one per physical core)
	// Context is the positions a chat session holds; 0: the engine's default
	// (engine.DefaultContext, or the model's context when shorter; less when that does not
	// fit the memory, which the load's plan says).
	Context int
}

// Architectures returns the architectures the engine runs.
func (b *EngineBackend) Architectures() []string { return engine.Architectures() }

// Machine probes the processor and memory and measures the models folder's disk.
func (b *EngineBackend) Machine(ctx context.Context) (MachineReport, error) {
	p, err := machine.Probe(ctx)
	if err != nil {
		return MachineReport{}, err
	}
	tier, err := kernels.Best()
	if err != nil {
		return MachineReport{}, err
	}
	r := MachineReport{Profile: p, Threads: b.Threads, Kernels: tier.Name, GPU: gpuLine(p)}
	if r.Threads == 0 {
		r.Threads = kernels.DefaultThreads()
	}
	if b.ModelsDir == "" {
		r.DiskErr = errors.New("no models folder to measure")
	} else {
		r.Disk, r.DiskErr = machine.MeasureReadSpeed(ctx, b.ModelsDir)
	}
	return r, nil
}

// gpuLine says what GPU the machine has and that the engine does not use it yet: its kernels
// are verified on a GPU but no model pass runs there, so saying more would be a guess.
func gpuLine(p machine.Profile) string {
	if len(p.GPUs) == 0 {
		return "none found (" + p.GPUStatus + "); the engine computes on the CPU"
	}
	return fmt.Sprintf("%v, CUDA %s: found, not used yet (the engine computes on the CPU)", p.GPUs[0], p.CUDA)
}

// Load loads the model, its tokenizer and its chat template, and opens a session. The engine's
// loader plans the memory first, for the session opened here, against the RAM the machine has
// now (the reserve rule: the plan the Models screen shows), and refuses with the numbers a
// model that does not fit.
func (b *EngineBackend) Load(ctx context.Context, path string) (ChatModel, error) {
	name := filepath.Base(path)
	// Every tier computes the same bits; the fastest this CPU runs is taken, as capped by
	// TROCHILUS_CPU_MAX.
	tier, err := kernels.Best()
	if err != nil {
		return nil, err
	}
	m, err := engine.Load(ctx, path, engine.Options{Threads: b.Threads, Tier: tier, Context: b.Context})
	if err != nil {
		return nil, fmt.Errorf("%s is not loaded: %w", name, err)
	}
	c, err := newEngineChat(m, m.Plan().Context)
	if err != nil {
		m.Close()
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return c, nil
}

// engineChat is a model with one session, answering through package assistant.
type engineChat struct {
	c *assistant.Chat
	s *engine.Session // c's, closed with it
}

func newEngineChat(m *engine.Model, ctxLen int) (_ *engineChat, err error) {
	ec := &engineChat{}
	if ec.s, err = m.NewSession(engine.SessionOptions{Context: ctxLen}); err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			ec.s.Close()
		}
	}()
	if ec.c, err = assistant.New(m, ec.s); err != nil {
		return nil, err
	}
	if !ec.c.CanChat() {
		return nil, assistant.ErrNoTemplate
	}
	return ec, nil
}

func (c *engineChat) Path() string { return c.c.Model().Path() }

func (c *engineChat) Context() int { return c.c.Context() }

func (c *engineChat) Close() error { return errors.Join(c.s.Close(), c.c.Model().Close()) }

// Continue goes on with the answer that ends turns through assistant.Chat.Continue: from the
// answer's own tokens (and a sampled answer's next draw) when the chat made it, so that the
// continuation is the one an uninterrupted answer would have had; from its text, marked
// Inexact, when it did not (a chat reopened from disk, a model loaded anew).
func (c *engineChat) Continue(ctx context.Context, turns []chat.Message, opts assistant.Options) (Reply, error) {
	return c.c.Continue(ctx, turns, opts)
}

// Count returns the length of the prompt Reply (or, with cont, Continue) would evaluate,
// rendering and tokenizing only.
func (c *engineChat) Count(turns []chat.Message, cont bool) (int, error) {
	if cont {
		return c.c.CountContinue(turns, assistant.Options{})
	}
	return c.c.Count(turns, assistant.Options{})
}

func (c *engineChat) Reply(ctx context.Context, turns []chat.Message, opts assistant.Options) (Reply, error) {
	r, err := c.c.Reply(ctx, turns, opts)
	if errors.Is(err, engine.ErrContextFull) && r.Tokens == 0 {
		err = fmt.Errorf("%w: start a new chat", err)
	}
	return r, err
}
