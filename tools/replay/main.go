// Command replay replays route traces (trochilus generate -route-trace FILE; the experts
// package's format) through simulated expert stores of several sizes under each eviction
// policy the experts package knows (LRU, per-layer LRU, the store's hotness rule, Belady's
// optimum) and prints, as a Markdown table, what each reads per generated token: the evidence
// the store's rule is chosen on (docs/ARCHITECTURE.md, "Where the weights live").
//
//	go run ./tools/replay [-slots 10%,25%,50%,75%,min] [-join] TRACE...
//
// Each trace is replayed alone, from an empty store; -join replays the traces one after
// another through one store instead (a server's sessions, one after another).
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/trochilus-llm/trochilus/experts"
)

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "replay:", err)
		os.Exit(1)
	}
}

func run(args []string, out io.Writer) error {
	fs := flag.NewFlagSet("replay", flag.ContinueOnError)
	sizes := fs.String("slots", "10%,25%,50%,75%,min", "store sizes: slots, a percentage of all units, or min (the store's fewest: a layer's experts and one token's)")
	join := fs.Bool("join", false, "replay the traces one after another through one store")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() == 0 {
		return fmt.Errorf("no trace named (usage: replay [-slots LIST] [-join] TRACE...)")
	}
	var traces []*experts.Trace
	for _, path := range fs.Args() {
		tr, err := readTrace(path)
		if err != nil {
			return err
		}
		traces = append(traces, tr)
	}
	if *join {
		tr, err := joinTraces(traces)
		if err != nil {
			return err
		}
		tr.Model = strings.Join(fs.Args(), " + ")
		traces = []*experts.Trace{tr}
	}
	for _, tr := range traces {
		if err := report(out, tr, *sizes); err != nil {
			return err
		}
	}
	return nil
}

func readTrace(path string) (*experts.Trace, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	tr, err := experts.ReadTrace(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if tr.Model == "" {
		tr.Model = path
	}
	return tr, nil
}

// joinTraces puts traces of one shape one after another.
func joinTraces(traces []*experts.Trace) (*experts.Trace, error) {
	all := &experts.Trace{TraceHeader: traces[0].TraceHeader}
	for i, tr := range traces {
		h := tr.TraceHeader
		if h.Layers != all.Layers || h.Experts != all.Experts || h.Used != all.Used {
			return nil, fmt.Errorf("trace %d has %d layers × %d experts (%d used), the first %d × %d (%d)", i+1, h.Layers, h.Experts, h.Used, all.Layers, all.Experts, all.Used)
		}
		all.Passes = append(all.Passes, tr.Passes...)
	}
	return all, nil
}

// parseSizes reads the -slots list for a trace of units units whose store needs at least
// fewest slots.
func parseSizes(list string, units, fewest int) ([]int, []string, error) {
	var slots []int
	var names []string
	for _, f := range strings.Split(list, ",") {
		f = strings.TrimSpace(f)
		switch {
		case f == "":
			continue
		case f == "min":
			slots, names = append(slots, fewest), append(names, "min")
		case strings.HasSuffix(f, "%"):
			p, err := strconv.ParseFloat(strings.TrimSuffix(f, "%"), 64)
			if err != nil || p <= 0 || p > 100 {
				return nil, nil, fmt.Errorf("-slots %q: not a percentage in (0, 100]", f)
			}
			slots, names = append(slots, max(1, int(p*float64(units)/100+0.5))), append(names, f)
		default:
			n, err := strconv.Atoi(f)
			if err != nil || n < 1 {
				return nil, nil, fmt.Errorf("-slots %q: not a positive count", f)
			}
			slots, names = append(slots, min(n, units)), append(names, f)
		}
	}
	return slots, names, nil
}

func report(out io.Writer, tr *experts.Trace, sizes string) error {
	units, fewest := tr.Layers*tr.Experts, tr.Experts+tr.Used
	slots, names, err := parseSizes(sizes, units, fewest)
	if err != nil {
		return err
	}
	calls := tr.Calls()
	var prompts, decodes, promptTokens, decodeTokens int
	for _, p := range tr.Passes {
		if p.Prompt {
			prompts, promptTokens = prompts+1, promptTokens+p.Tokens
		} else {
			decodes, decodeTokens = decodes+1, decodeTokens+p.Tokens
		}
	}
	var unitBytes uint64
	for _, b := range tr.UnitBytes {
		unitBytes += b
	}
	fmt.Fprintf(out, "## %s\n\n%d layers × %d experts (%d used a token): %d units, %.2f MiB each on average; the store's fewest slots %d.\n",
		tr.Model, tr.Layers, tr.Experts, tr.Used, units, float64(unitBytes)/float64(tr.Layers)/(1<<20), fewest)
	fmt.Fprintf(out, "%d prompt passes (%d tokens), %d decode/verify passes (%d tokens generated).\n\n", prompts, promptTokens, decodes, decodeTokens)
	fmt.Fprintln(out, "| slots | policy | misses/gen. token | decode hit rate | MiB read/gen. token | prompt misses | all misses | vs hot |")
	fmt.Fprintln(out, "|---|---|---:|---:|---:|---:|---:|---:|")
	for i, s := range slots {
		var hot experts.ReplayResult
		results := make([]experts.ReplayResult, len(experts.Policies))
		for j, p := range experts.Policies {
			if results[j], err = experts.ReplayCalls(&tr.TraceHeader, calls, p, s); err != nil {
				return err
			}
			if p == experts.Hot {
				hot = results[j]
			}
		}
		label := fmt.Sprintf("%d (%s)", s, names[i])
		if s < fewest {
			label += " †"
		}
		for _, r := range results {
			gen := float64(max(r.DecodeTokens, 1))
			rate := float64(r.DecodeHits) / float64(max(r.DecodeHits+r.DecodeMisses, 1))
			vs := "—"
			if hot.Misses > 0 {
				vs = fmt.Sprintf("%+.1f%%", 100*(float64(r.Misses)/float64(hot.Misses)-1))
			}
			fmt.Fprintf(out, "| %s | %s | %.2f | %.1f%% | %.3f | %d | %d | %s |\n", label, r.Policy,
				float64(r.DecodeMisses)/gen, 100*rate, float64(r.DecodeBytes)/gen/(1<<20), r.PromptMisses, r.Misses, vs)
		}
	}
	fmt.Fprintln(out, "\n† fewer slots than the store takes (its fewest: a layer's experts and one token's): a call's units beyond the room are read and not kept.")
	fmt.Fprintln(out)
	return nil
}
