package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime/pprof"
	"strconv"
	"strings"
	"time"

	"github.com/trochilus-llm/trochilus/engine"
	"github.com/trochilus-llm/trochilus/engine/assistant"
)

// modelFlags are the flags of the commands that run a model.
type modelFlags struct {
	path    *string
	threads *int
	pass    *int
	context *int
	profile *string
	experts *string
	draft   *int
	head    *string
	// sessions is how many sessions the load plans room for (0: one); set by serve's
	// -parallel, not a flag of every command.
	sessions int
}

// addModelFlags defines on fs the flags every command that runs a model shares: -m, -t, -b, -c,
// -cpuprofile, -expert-budget, -draft and -head-bound.
func addModelFlags(fs *flag.FlagSet) *modelFlags {
	return &modelFlags{
		path:    fs.String("m", "", "the GGUF model to run: a path, or a name in the models folder (required)"),
		threads: fs.Int("t", 0, "worker threads (0: one per physical core, and each kind of decode pass on as many of them as it is timed fastest on)"),
		pass:    fs.Int("b", engine.DefaultPassSize, "most tokens evaluated in one forward pass"),
		context: fs.Int("c", 0, fmt.Sprintf("positions the session holds (0: %d, or the model's context when shorter; less when that does not fit)", engine.DefaultContext)),
		profile: fs.String("cpuprofile", "", "write a CPU profile of the run (pprof format) to this file"),
		experts: fs.String("expert-budget", "", "stream the experts from disk through this many MiB of RAM, or \"min\" (default: only when the file does not fit)"),
		draft:   fs.Int("draft", engine.DefaultDraft, "draft up to N tokens at a time from the context and verify them in one pass where that is measured to be faster (speculative decoding: the same tokens, faster where the text repeats itself); 0: off"),
		head:    fs.String("head-bound", "auto", "on: choose greedy tokens computing only the output rows a bound says can win (the same tokens); off: every row; auto: on for heads wide enough to gain"),
	}
}

// expertBudget reads -expert-budget: "" (the loader decides), "min", or MiB.
func (f *modelFlags) expertBudget() (int64, error) {
	switch v := strings.TrimSpace(*f.experts); v {
	case "":
		return 0, nil
	case "min":
		return engine.ExpertBudgetMin, nil
	default:
		mib, err := strconv.ParseInt(v, 10, 64)
		if err != nil || mib < 1 || mib > 1<<40 {
			return 0, fmt.Errorf("%w: -expert-budget %q: want MiB (a whole number from 1) or min", errUsage, v)
		}
		return mib << 20, nil
	}
}

// open loads the model and makes a session, reporting the load on stderr, and starts the CPU
// profile when one is asked for. The caller calls done when finished: it stops the profile and
// closes the session and the model.
func (f *modelFlags) open(ctx context.Context, stderr io.Writer) (m *engine.Model, s *engine.Session, done func(), err error) {
	m, s, err = f.load(ctx, stderr)
	if err != nil {
		return nil, nil, nil, err
	}
	if *f.profile == "" {
		return m, s, func() { s.Close(); m.Close() }, nil
	}
	pf, err := os.Create(*f.profile)
	if err == nil {
		err = pprof.StartCPUProfile(pf)
		if err != nil {
			pf.Close()
		}
	}
	if err != nil {
		s.Close()
		m.Close()
		return nil, nil, nil, fmt.Errorf("cpu profile: %w", err)
	}
	return m, s, func() {
		pprof.StopCPUProfile()
		if err := pf.Close(); err != nil {
			fmt.Fprintf(stderr, "cpu profile %s: %v\n", *f.profile, err)
		}
		s.Close()
		m.Close()
	}, nil
}

func (f *modelFlags) load(ctx context.Context, stderr io.Writer) (*engine.Model, *engine.Session, error) {
	if *f.path == "" {
		return nil, nil, fmt.Errorf("%w: -m MODEL is required", errUsage)
	}
	if *f.draft < 0 {
		return nil, nil, fmt.Errorf("%w: -draft %d: want 0 (off) or more", errUsage, *f.draft)
	}
	if *f.threads < 0 || *f.pass < 1 || *f.context < 0 {
		return nil, nil, fmt.Errorf("%w: -t %d, -b %d, -c %d: want -t >= 0, -b >= 1, -c >= 0", errUsage, *f.threads, *f.pass, *f.context)
	}
	budget, err := f.expertBudget()
	if err != nil {
		return nil, nil, err
	}
	if h := *f.head; h != "auto" && h != "on" && h != "off" {
		return nil, nil, fmt.Errorf("%w: -head-bound %q: want on, off or auto", errUsage, h)
	}
	if *f.path, err = resolveModel(*f.path); err != nil {
		return nil, nil, err
	}
	start := time.Now()
	// The loader plans the memory for the session opened here: the context -c asks for
	// (honoured or refused with the numbers), or the default, shortened when it does not fit.
	m, err := engine.Load(ctx, *f.path, engine.Options{Threads: *f.threads, ExpertBudget: budget,
		Context: *f.context, PassSize: *f.pass, Sessions: f.sessions})
	if err != nil {
		return nil, nil, err
	}
	if *f.head != "auto" {
		m.SetHeadBound(*f.head == "on")
	}
	plan := m.Plan()
	s, err := m.NewSession(engine.SessionOptions{Context: plan.Context, PassSize: *f.pass})
	if err != nil {
		m.Close()
		return nil, nil, err
	}
	c := m.Config()
	fmt.Fprintf(stderr, "model: %s (%s, %d layers, %d experts, %d used), %d threads, %s, pass %d, kernels %s, weights %v, experts %s, loaded in %.2fs\n",
		*f.path, c.Arch, c.Layers, c.Experts, c.ExpertsUsed, m.Threads(), plan.ContextText(), s.PassSize(), m.Kernels(), m.Weights(), m.Experts(), time.Since(start).Seconds())
	fmt.Fprintf(stderr, "memory: %s\n", plan.Text())
	return m, s, nil
}

// openChat loads the model as open does and makes an assistant.Chat over its session; the
// caller calls done when finished.
func (f *modelFlags) openChat(ctx context.Context, stderr io.Writer) (*assistant.Chat, func(), error) {
	m, s, done, err := f.open(ctx, stderr)
	if err != nil {
		return nil, nil, err
	}
	c, err := assistant.New(m, s)
	if err != nil {
		done()
		return nil, nil, fmt.Errorf("%s: %w", *f.path, err)
	}
	return c, done, nil
}
