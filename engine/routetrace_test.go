package engine

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/trochilus-llm/trochilus/experts"
	"github.com/trochilus-llm/trochilus/internal/modelgen"
	"github.com/trochilus-llm/trochilus/internal/modelgen/modelgentest"
)

// traceGeneration generates n tokens greedily (no stop, no drafts) from prompt on a fresh
// session of m, with the model's routes traced, and returns the trace read back and the
// generation.
func traceGeneration(t *testing.T, m *Model, prompt []int32, n int) (*experts.Trace, Generation) {
	t.Helper()
	var buf bytes.Buffer
	stop, err := m.TraceRoutes(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.TraceRoutes(&buf); err == nil {
		t.Fatal("a second trace at once accepted")
	}
	s, err := m.NewSession(SessionOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	g, err := s.Generate(context.Background(), prompt, GenerateOptions{MaxTokens: n})
	if err != nil {
		t.Fatal(err)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	tr, err := experts.ReadTrace(&buf)
	if err != nil {
		t.Fatal(err)
	}
	return tr, g
}

// TestRouteTrace records a generation of the trained model with its experts in memory and
// streamed at the fewest slots: the traces are the same passes (routing does not depend on
// where the bytes are), of the model's shape, and the simulator of the store's rule replays
// the streamed run's hits and misses exactly — the trace names what the store was asked.
func TestRouteTrace(t *testing.T) {
	path := modelgentest.TrainedModel(t, "q4_k_m")
	prompt := readTrainedPrompts("prompts.json")[0]
	const n = 12
	var traces []*experts.Trace
	for _, opts := range []Options{{Threads: 2}, {Threads: 2, ExpertBudget: ExpertBudgetMin}} {
		m, err := Load(context.Background(), path, opts)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { m.Close() })
		tr, g := traceGeneration(t, m, prompt, n)
		c := m.Config()
		if tr.Layers != c.Layers || tr.Experts != c.Experts || tr.Used != c.ExpertsUsed || tr.Model != filepath.Base(path) {
			t.Fatalf("trace of %d layers × %d experts (%d used), %q; the model %d × %d (%d)", tr.Layers, tr.Experts, tr.Used, tr.Model, c.Layers, c.Experts, c.ExpertsUsed)
		}
		layout, err := expertLayout(m.file, &m.cfg, architectures()[c.Arch].experts)
		if err != nil {
			t.Fatal(err)
		}
		for l, parts := range layout.Layers {
			if want := uint64(parts[0].Size + parts[1].Size + parts[2].Size); tr.UnitBytes[l] != want {
				t.Fatalf("layer %d: unit of %d bytes traced, %d in the file", l, tr.UnitBytes[l], want)
			}
		}
		// The prompt's pass, then one decode pass a token after the first.
		if len(g.Tokens) != n || len(tr.Passes) != 1+g.Passes || g.Passes != n-1 {
			t.Fatalf("%d tokens in %d passes after the prompt; %d passes traced", len(g.Tokens), g.Passes, len(tr.Passes))
		}
		for i, p := range tr.Passes {
			if p.Prompt != (i == 0) || i == 0 && p.Tokens != len(prompt) || i > 0 && p.Tokens != 1 {
				t.Fatalf("pass %d: prompt %v, %d tokens", i, p.Prompt, p.Tokens)
			}
		}
		traces = append(traces, tr)
		if m.store == nil {
			continue
		}
		st := m.ExpertStats()
		r, err := experts.Replay(tr, experts.Hot, m.store.Slots())
		if err != nil {
			t.Fatal(err)
		}
		if r.Hits != st.Hits || r.Misses != st.Misses || st.Calls != uint64(len(tr.Passes)*c.Layers) {
			t.Fatalf("replay at %d slots: %d hits, %d misses; the store %d, %d in %d calls", m.store.Slots(), r.Hits, r.Misses, st.Hits, st.Misses, st.Calls)
		}
		if st.Misses <= uint64(c.Layers*c.Experts) || st.Hits == 0 {
			t.Fatalf("the store at %d slots: %d hits, %d misses: it did not evict", m.store.Slots(), st.Hits, st.Misses)
		}
		t.Logf("%d slots: %d hits, %d misses, replayed alike", m.store.Slots(), st.Hits, st.Misses)
	}
	if !reflect.DeepEqual(traces[0].Passes, traces[1].Passes) {
		t.Fatal("the streamed run's routings differ from the resident run's")
	}
}

// TestRecordTrainedRouteTraces writes the evidence the store's rule is chosen on: with
// $TROCHILUS_ROUTE_TRACES naming a folder, route traces of both trained models (Q4_K_M) on
// each of their prompts, 128 tokens generated greedily after each; replay them with
// go run ./tools/replay. Skipped otherwise.
func TestRecordTrainedRouteTraces(t *testing.T) {
	dir := os.Getenv("TROCHILUS_ROUTE_TRACES")
	if dir == "" {
		t.Skip("set TROCHILUS_ROUTE_TRACES to a folder to record the trained models' route traces")
	}
	for _, model := range []struct{ name, weights, prompts string }{
		{"olmoe-tiny", "q4_k_m", "prompts.json"},
		{"qwen3-tiny", "qwen3-q4_k_m", "qwen3-tiny-prompts.json"},
	} {
		m, err := Load(context.Background(), modelgentest.TrainedModel(t, model.weights), Options{Threads: 2})
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range readPromptFile(t, model.prompts) {
			tr, _ := traceGeneration(t, m, p.IDs, 128)
			tr.Model = model.name + " " + p.Name
			f := filepath.Join(dir, model.name+"-"+p.Name+".trace")
			var buf bytes.Buffer
			if err := tr.Write(&buf); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(f, buf.Bytes(), 0o644); err != nil {
				t.Fatal(err)
			}
			t.Logf("%s: %d passes", f, len(tr.Passes))
		}
		m.Close()
	}
}

// TestTracedDecodeAllocatesNothing: recording a trace costs a decode or prompt pass no
// allocation once the first traced pass has sized the buffers.
func TestTracedDecodeAllocatesNothing(t *testing.T) {
	m := loadTest(t, tinyConfig(modelgen.Q4KM()), Options{Threads: 2, ExpertBudget: ExpertBudgetMin})
	var buf bytes.Buffer
	stop, err := m.TraceRoutes(&buf)
	if err != nil {
		t.Fatal(err)
	}
	buf.Grow(1 << 20) // the trace's own buffer: the engine's allocations are what is counted
	checkDecodeAllocatesNothing(t, m, newTestSession(t, m, 8), "traced, streamed experts")
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	tr, err := experts.ReadTrace(&buf)
	if err != nil || len(tr.Passes) < 11 {
		t.Fatalf("%v, trace of %+v", err, tr)
	}
}
