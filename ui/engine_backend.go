package ui

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"

	"github.com/trochilus-llm/trochilus/engine"
	"github.com/trochilus-llm/trochilus/engine/assistant"
	"github.com/trochilus-llm/trochilus/engine/catalog"
	"github.com/trochilus-llm/trochilus/engine/machine"
	"github.com/trochilus-llm/trochilus/kernels"
	"github.com/trochilus-llm/trochilus/tokenizer/chat"
)

// EngineBackend runs models with package engine. The zero value measures no disk; set
// ModelsDir to have the models folder's read speed measured.
type EngineBackend struct {
	ModelsDir string // the folder whose disk Machine measures
	Threads   int    // worker threads per model; 0: the engine's default (one per physical core)
	Context   int    // positions a chat session holds; 0: the model's context length
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
		r.Disk, r.DiskErr = catalog.MeasureReadSpeed(ctx, b.ModelsDir)
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

// Load checks the model against the RAM the machine has now (the reserve rule), then loads it,
// its tokenizer and its chat template, and opens a session.
func (b *EngineBackend) Load(ctx context.Context, path string) (ChatModel, error) {
	name := filepath.Base(path)
	desc, err := catalog.Describe(path)
	if err != nil {
		return nil, err
	}
	prof, err := machine.Probe(ctx)
	if err != nil {
		return nil, err
	}
	if plan := desc.PlanFor(prof, b.Context); plan.Verdict == catalog.WontFit {
		return nil, fmt.Errorf("%s is not loaded: %s", name, plan.Text())
	}
	// Every tier computes the same bits; the fastest this CPU runs is taken, as capped by
	// TROCHILUS_CPU_MAX.
	tier, err := kernels.Best()
	if err != nil {
		return nil, err
	}
	m, err := engine.Load(ctx, path, engine.Options{Threads: b.Threads, Tier: tier})
	if err != nil {
		return nil, err
	}
	c, err := newEngineChat(m, b.Context)
	if err != nil {
		m.Close()
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return c, nil
}

// engineChat is a model with one session, answering through package assistant.
type engineChat struct {
	c *assistant.Chat
}

func newEngineChat(m *engine.Model, ctxLen int) (*engineChat, error) {
	s, err := m.NewSession(engine.SessionOptions{Context: ctxLen})
	if err != nil {
		return nil, err
	}
	c, err := assistant.New(m, s)
	if err != nil {
		return nil, err
	}
	if !c.CanChat() {
		return nil, assistant.ErrNoTemplate
	}
	return &engineChat{c: c}, nil
}

func (c *engineChat) Path() string { return c.c.Model().Path() }

func (c *engineChat) Context() int { return c.c.Context() }

func (c *engineChat) Close() error { return c.c.Model().Close() }

func (c *engineChat) Reply(ctx context.Context, turns []chat.Message, opts assistant.Options) (Reply, error) {
	r, err := c.c.Reply(ctx, turns, opts)
	if errors.Is(err, engine.ErrContextFull) && r.Tokens == 0 {
		err = fmt.Errorf("%w: start a new chat", err)
	}
	return r, err
}
