package ui

import (
	"context"

	"github.com/trochilus-llm/trochilus/engine/assistant"
	"github.com/trochilus-llm/trochilus/engine/machine"
	"github.com/trochilus-llm/trochilus/tokenizer/chat"
)

// Backend is what the screens need from the engine. Its methods are called off the UI
// goroutine and may take long; they must honour ctx.
type Backend interface {
	// Machine measures the computer: processor, memory, the models folder's disk, GPU.
	Machine(ctx context.Context) (MachineReport, error)

	// Load loads the model at path for chatting, refusing one that would leave less RAM than
	// the reserve.
	Load(ctx context.Context, path string) (ChatModel, error)

	// Architectures lists the model architectures Load runs (general.architecture values).
	Architectures() []string
}

// MachineReport is what Backend.Machine measured.
type MachineReport struct {
	Profile machine.Profile
	Threads int    // worker threads a model runs
	Kernels string // the kernel tier the engine runs (scalar, avx2, ...), chosen from CPUID

	Disk    machine.ReadSpeed // the models folder's read speed
	DiskErr error             // why Disk is missing, if it is

	GPU string // the accelerator the engine would use, or why none
}

// ChatModel is a loaded model holding one conversation's KV cache. Its methods are called by
// one goroutine at a time.
type ChatModel interface {
	// Path returns the model's file.
	Path() string

	// Context returns the positions its session holds.
	Context() int

	// Reply renders turns with the model's chat template (asking for the assistant's turn),
	// keeps the KV cache of the longest token prefix this rendering shares with what the
	// session holds, evaluates the rest and generates (greedily, or sampled as opts.Sampling
	// says) until the end-of-sequence token, opts.MaxTokens (0: the context's end) or ctx's
	// cancellation. opts.OnText receives the new text as it becomes whole UTF-8. On an error
	// (a cancellation included) the Reply holds what was made before it.
	Reply(ctx context.Context, turns []chat.Message, opts assistant.Options) (Reply, error)

	// Continue generates more of the last of turns, an assistant's answer that was cut short
	// (the length limit, the context's end): the model reads what Reply would have given it
	// for the turns before that answer, then the answer's own tokens when this model made it
	// (a sampled one drawing on from where it stopped), and goes on as if it had never
	// stopped; otherwise the answer's text, and the Reply is Inexact. Reply's text is only
	// what was added, after the answer less its last Replaced bytes. opts are Reply's.
	Continue(ctx context.Context, turns []chat.Message, opts assistant.Options) (Reply, error)

	// Count returns the tokens the model would read for turns: Reply's prompt or, with cont,
	// Continue's. It evaluates nothing and leaves the KV cache as it is, so that fitting a
	// conversation to the context costs no prefix it could reuse.
	Count(turns []chat.Message, cont bool) (int, error)

	// Close releases the model; it must not be used afterwards.
	Close() error
}

// Reply is one answer and what it cost.
type Reply = assistant.Reply
