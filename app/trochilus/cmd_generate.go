package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/trochilus-llm/trochilus/engine"
	"github.com/trochilus-llm/trochilus/experts"
	"github.com/trochilus-llm/trochilus/internal/units"
)

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

// reportRates prints the prompt and generation speeds of g on stderr, and how much of the head
// (vocab rows) the greedy choices by the bound computed.
func reportRates(stderr io.Writer, g *engine.Generation, vocab int) {
	fmt.Fprintf(stderr, "prompt: %d tokens in %.3fs, %.2f tok/s\n", g.PromptTokens, g.PromptTime.Seconds(), g.PromptRate())
	fmt.Fprintf(stderr, "generation: %d tokens (%d decode passes) in %.3fs, %.2f tok/s\n",
		len(g.Tokens), g.Passes, g.DecodeTime.Seconds(), g.DecodeRate())
	if g.Drafted > 0 {
		fmt.Fprintf(stderr, "drafts: %d tokens drafted, %d accepted (%.0f%%)\n", g.Drafted, g.Accepted, 100*float64(g.Accepted)/float64(g.Drafted))
	}
	if g.HeadChoices > 0 {
		fmt.Fprintf(stderr, "head: %d greedy choices by the bound, %d rows computed exactly (%.1f%% of the head)\n",
			g.HeadChoices, g.HeadRows, 100*float64(g.HeadRows)/float64(g.HeadChoices)/float64(vocab))
	}
}

// runGenerate generates greedily from token ids and prints the new ids.
func runGenerate(ctx context.Context, cl *commandLine, stdout, stderr io.Writer) (err error) {
	mf := addModelFlags(cl.FlagSet)
	tokens := cl.String("tokens", "", "the prompt: comma-separated token ids (required)")
	n := cl.Int("n", 32, "most tokens to generate")
	ignoreEOS := cl.Bool("ignore-eos", false, "do not stop at the model's end-of-sequence token")
	repeat := cl.Int("repeat", 1, "run the whole generation this many times in one process (a benchmark: the rates of each run go to stderr, the ids of the last to stdout)")
	routeTrace := cl.String("route-trace", "", "write every pass's expert routings to this file (a route trace: the input of go run ./tools/replay)")
	if err := cl.parse(); err != nil {
		return err
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
	if *routeTrace != "" {
		stop, err := traceRoutes(m, *routeTrace)
		if err != nil {
			return err
		}
		defer func() { err = errors.Join(err, stop()) }()
	}
	opts := engine.GenerateOptions{MaxTokens: *n, Draft: *mf.draft}
	if eos, ok := m.EOS(); ok && !*ignoreEOS {
		opts.Stop = []int32{eos}
	}
	for run := 1; run <= *repeat; run++ {
		if err := s.Rewind(0); err != nil {
			return err
		}
		last := run == *repeat
		first := true
		// The store's counts before the run and once the prompt's pass chose the first token
		// (before any decode pass): the run's own figures, the prompt's apart.
		before, prompted, promptDone := m.ExpertStats(), experts.Stats{}, false
		opts.OnToken = func(tok int32) error {
			if !promptDone {
				prompted, promptDone = m.ExpertStats(), true
			}
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
		reportRates(stderr, &g, m.Config().Vocab)
		reportStore(stderr, "experts, prompt", prompted.Sub(before), 0, g.PromptTime)
		reportStore(stderr, "experts, generation", m.ExpertStats().Sub(prompted), g.DecodeTokens, g.DecodeTime)
	}
	return nil
}

// reportStore prints the expert store's work st during one part of a run that took wall and
// generated tokens (0: none to divide by; generate's generation part passes the tokens its
// decode passes chose, as its rate does), when the experts stream: a resident run's store does
// nothing and prints nothing. The read time is the reads' wall time (Stats.ReadTime), so its
// share of wall is the share the cores waited for the disk.
func reportStore(stderr io.Writer, label string, st experts.Stats, tokens int, wall time.Duration) {
	if st.Calls == 0 {
		return
	}
	named := st.Hits + st.Misses
	perToken := ""
	if tokens > 0 {
		perToken = ", " + units.Bytes(st.BytesRead/uint64(tokens)) + " per generated token"
	}
	share := 0.0
	if wall > 0 {
		share = 100 * st.ReadTime.Seconds() / wall.Seconds()
	}
	fmt.Fprintf(stderr, "%s: %d calls named %d units: %d hits, %d misses (%.1f%% hit rate); %s read from disk%s; reading %.1f ms, %.1f%% of %.3fs\n",
		label, st.Calls, named, st.Hits, st.Misses, 100*float64(st.Hits)/float64(max(named, 1)),
		units.Bytes(st.BytesRead), perToken, float64(st.ReadTime)/float64(time.Millisecond), share, wall.Seconds())
}

// traceRoutes records m's routings into a new file at path (engine.Model.TraceRoutes); stop
// ends the trace and closes the file.
func traceRoutes(m *engine.Model, path string) (stop func() error, err error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("route trace: %w", err)
	}
	end, err := m.TraceRoutes(f)
	if err != nil {
		return nil, errors.Join(err, f.Close(), os.Remove(path))
	}
	return func() error {
		if err := errors.Join(end(), f.Close()); err != nil {
			return fmt.Errorf("route trace %s: %w", path, err)
		}
		return nil
	}, nil
}
