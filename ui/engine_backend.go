package ui

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/trochilus-llm/trochilus/engine"
	"github.com/trochilus-llm/trochilus/engine/catalog"
	"github.com/trochilus-llm/trochilus/engine/machine"
	"github.com/trochilus-llm/trochilus/kernels"
	"github.com/trochilus-llm/trochilus/tokenizer"
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
	r := MachineReport{Profile: p, Threads: b.Threads, Kernels: tier.Name,
		// The engine has no GPU path yet (package gpu is empty): say so rather than guess.
		GPU: "none used: this build computes on the CPU"}
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

// engineChat is a model with one session and the tokens that session holds.
type engineChat struct {
	m       *engine.Model
	s       *engine.Session
	tok     *tokenizer.Tokenizer
	tmpl    *chat.Template
	special chat.SpecialTokens
	eos     int32
	held    []int32 // the tokens at the session's positions 0 .. Pos()-1
}

func newEngineChat(m *engine.Model, ctxLen int) (*engineChat, error) {
	tok, err := tokenizer.FromGGUF(m.File())
	if err != nil {
		return nil, err
	}
	src, err := m.File().Str("tokenizer.chat_template")
	if err != nil || strings.TrimSpace(src) == "" {
		return nil, errors.New("the file has no chat template (tokenizer.chat_template): it cannot chat")
	}
	tmpl, err := chat.Parse(src)
	if err != nil {
		return nil, err
	}
	eos := tok.EOS()
	if eos < 0 {
		return nil, errors.New("the tokenizer names no end-of-sequence token: answers could not end")
	}
	s, err := m.NewSession(engine.SessionOptions{Context: ctxLen})
	if err != nil {
		return nil, err
	}
	c := &engineChat{m: m, s: s, tok: tok, tmpl: tmpl, eos: eos}
	c.special = chat.SpecialTokens{BOS: tokenText(tok, tok.BOS()), EOS: tokenText(tok, eos),
		UNK: tokenText(tok, tok.UNK()), PAD: tokenText(tok, tok.PAD())}
	return c, nil
}

func tokenText(t *tokenizer.Tokenizer, id int32) string {
	if id < 0 {
		return ""
	}
	return t.Token(id)
}

func (c *engineChat) Path() string { return c.m.Path() }

func (c *engineChat) Context() int { return c.s.Context() }

func (c *engineChat) Close() error { return c.m.Close() }

func (c *engineChat) Reply(ctx context.Context, turns []chat.Message, maxTokens int, onText func(string)) (Reply, error) {
	text, err := c.tmpl.Render(turns, chat.Options{AddGenerationPrompt: true, SpecialTokens: c.special})
	if err != nil {
		return Reply{}, err
	}
	// As apply_chat_template(tokenize=True) does: special-token text becomes those tokens and
	// nothing is added beyond what the template wrote.
	ids := c.tok.Encode(text, true)
	r := Reply{Prompt: len(ids), Context: c.s.Context()}
	if len(ids) == 0 {
		return r, errors.New("the conversation renders to no tokens")
	}
	if len(ids) >= c.s.Context() {
		return r, fmt.Errorf("the conversation takes %d tokens and the context holds %d: start a new chat (%w)",
			len(ids), c.s.Context(), engine.ErrContextFull)
	}

	// Keep the KV cache of the longest common prefix; at least one token must be evaluated
	// for the logits of the last position.
	keep := commonPrefix(c.held, ids)
	keep = min(keep, len(ids)-1, c.s.Pos())
	if err := c.s.Rewind(keep); err != nil {
		return r, err
	}
	c.held = c.held[:keep]
	r.Reused = keep

	// Generate evaluates all but its last token, so prompt + n − 1 positions must fit.
	room := c.s.Context() - len(ids) + 1
	if maxTokens <= 0 || maxTokens > room {
		maxTokens = room
	}
	dec := c.tok.NewStreamDecoder()
	var answer strings.Builder
	emit := func(s string) {
		if s != "" {
			answer.WriteString(s)
			if onText != nil {
				onText(s)
			}
		}
	}
	g, err := c.s.Generate(ctx, ids[keep:], engine.GenerateOptions{
		MaxTokens: maxTokens,
		Stop:      []int32{c.eos},
		OnToken: func(id int32) error {
			if id != c.eos {
				emit(dec.Next(id))
			}
			return nil
		},
	})
	emit(dec.Flush())

	// The session holds the rendered prompt and then the new tokens, as far as Pos says.
	all := append(append(c.held[:0:0], ids...), g.Tokens...)
	c.held = all[:min(c.s.Pos(), len(all))]

	r.Text = answer.String()
	r.Tokens, r.Ended = len(g.Tokens), g.Stopped
	r.Used = c.s.Pos()
	r.Rate, r.PPRate = g.DecodeRate(), g.PromptRate()
	return r, err
}

// commonPrefix returns the length of the longest common prefix of a and b.
func commonPrefix(a, b []int32) int {
	n := min(len(a), len(b))
	for i := range n {
		if a[i] != b[i] {
			return i
		}
	}
	return n
}
