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
	"github.com/trochilus-llm/trochilus/internal/units"
)

// modelFlags are the flags of the commands that run a model.
type modelFlags struct {
	path    *string
	threads *int
	pass    *int
	context *int
	profile *string
	experts *string
}

func addModelFlags(fs *flag.FlagSet) *modelFlags {
	return &modelFlags{
		path:    fs.String("m", "", "the GGUF model to run: a path, or a name in the models folder (required)"),
		threads: fs.Int("t", 0, "worker threads (0: one per physical core)"),
		pass:    fs.Int("b", engine.DefaultPassSize, "most tokens evaluated in one forward pass"),
		context: fs.Int("c", 0, fmt.Sprintf("positions the session holds (0: %d, or the model's context when shorter; less when that does not fit)", engine.DefaultContext)),
		profile: fs.String("cpuprofile", "", "write a CPU profile of the run (pprof format) to this file"),
		experts: fs.String("expert-budget", "", "stream the experts from disk through this many MiB of RAM, or \"min\" (default: only when the file does not fit)"),
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
	if *f.threads < 0 || *f.pass < 1 || *f.context < 0 {
		return nil, nil, fmt.Errorf("%w: -t %d, -b %d, -c %d: want -t >= 0, -b >= 1, -c >= 0", errUsage, *f.threads, *f.pass, *f.context)
	}
	budget, err := f.expertBudget()
	if err != nil {
		return nil, nil, err
	}
	if *f.path, err = resolveModel(*f.path); err != nil {
		return nil, nil, err
	}
	start := time.Now()
	// The loader plans the memory for the session opened here: the context -c asks for
	// (honoured or refused with the numbers), or the default, shortened when it does not fit.
	m, err := engine.Load(ctx, *f.path, engine.Options{Threads: *f.threads, ExpertBudget: budget,
		Context: *f.context, PassSize: *f.pass})
	if err != nil {
		return nil, nil, err
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

// parseTokens reads a comma-separated list of token ids.
func parseTokens(s string) ([]int32, error) {
	var ids []int32
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		v, err := strconv.ParseInt(f, 10, 32)
		if err != nil || v < 0 {
			return nil, fmt.Errorf("%w: token %q is not a non-negative integer", errUsage, f)
		}
		ids = append(ids, int32(v))
	}
	if len(ids) == 0 {
		return nil, fmt.Errorf("%w: --tokens lists no token", errUsage)
	}
	return ids, nil
}

// reportRates prints the prompt and generation speeds of g on stderr.
func reportRates(stderr io.Writer, g *engine.Generation) {
	fmt.Fprintf(stderr, "prompt: %d tokens in %.3fs, %.2f tok/s\n", g.PromptTokens, g.PromptTime.Seconds(), g.PromptRate())
	fmt.Fprintf(stderr, "generation: %d tokens (%d decode passes) in %.3fs, %.2f tok/s\n",
		len(g.Tokens), g.DecodeTokens, g.DecodeTime.Seconds(), g.DecodeRate())
}

// runGenerate generates greedily from token ids and prints the new ids.
func runGenerate(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("generate", stderr)
	mf := addModelFlags(fs)
	tokens := fs.String("tokens", "", "the prompt: comma-separated token ids (required)")
	n := fs.Int("n", 32, "most tokens to generate")
	ignoreEOS := fs.Bool("ignore-eos", false, "do not stop at the model's end-of-sequence token")
	repeat := fs.Int("repeat", 1, "run the whole generation this many times in one process (a benchmark: the rates of each run go to stderr, the ids of the last to stdout)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: trochilus generate -m MODEL --tokens 1,2,3 [-n N] [-t T] [-b B] [-c C] [-repeat R]\n\n"+
			"Generate greedily from token ids; print the new ids, comma-separated, on stdout.")
		fs.PrintDefaults()
	}
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 0 {
		return fmt.Errorf("%w: unexpected argument %q", errUsage, fs.Arg(0))
	}
	prompt, err := parseTokens(*tokens)
	if err != nil {
		return err
	}
	if *n < 1 || *repeat < 1 {
		return fmt.Errorf("%w: -n %d, -repeat %d: want at least 1", errUsage, *n, *repeat)
	}
	m, s, done, err := mf.open(ctx, stderr)
	if err != nil {
		return err
	}
	defer done()
	opts := engine.GenerateOptions{MaxTokens: *n}
	if eos, ok := m.EOS(); ok && !*ignoreEOS {
		opts.Stop = []int32{eos}
	}
	for run := 1; run <= *repeat; run++ {
		if err := s.Rewind(0); err != nil {
			return err
		}
		last := run == *repeat
		first := true
		opts.OnToken = func(tok int32) error {
			if !last {
				return nil
			}
			sep := ","
			if first {
				sep, first = "", false
			}
			_, err := fmt.Fprintf(stdout, "%s%d", sep, tok)
			return err
		}
		g, err := s.Generate(ctx, prompt, opts)
		if last {
			fmt.Fprintln(stdout)
		}
		if err != nil {
			return err
		}
		if *repeat > 1 {
			fmt.Fprintf(stderr, "run %d of %d\n", run, *repeat)
		}
		reportRates(stderr, &g)
		reportExperts(stderr, m)
	}
	return nil
}

// reportExperts prints what the expert store has done so far, when the experts stream.
func reportExperts(stderr io.Writer, m *engine.Model) {
	st := m.ExpertStats()
	if st.Calls == 0 {
		return
	}
	fmt.Fprintf(stderr, "experts: %d calls, %d hits, %d misses (%.1f%% of units named), %s read from disk\n",
		st.Calls, st.Hits, st.Misses, 100*float64(st.Misses)/float64(max(st.Hits+st.Misses, 1)), units.Bytes(st.BytesRead))
}
