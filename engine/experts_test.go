package engine

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/trochilus-llm/trochilus/engine/machine"
	"github.com/trochilus-llm/trochilus/experts"
	"github.com/trochilus-llm/trochilus/gguf"
)

// TestStreamedExpertsSameLogits checks that streaming the experts through a store changes no
// bit: tiny models' logits over the determinism prompt, whole and in passes of 1, 7 and
// 64 tokens, token by token and after rewinds, are those of the model with every expert in
// memory, with the fewest slots (misses on nearly every call) and with a slot for every unit.
func TestStreamedExpertsSameLogits(t *testing.T) {
	// The store hands the kernels the file's bytes whatever their type, so a few models cover
	// it: Q8_0, the Q4_K_M mix (parts of different sizes in different layers), BF16 and the
	// variant (another shape), Qwen3-MoE; the rest would add half a minute under each GOAMD64 level.
	for _, tm := range testModels() {
		if !slices.Contains([]string{"q8_0", "q4_k_m", "bf16", "variant-q8_0", "qwen3-q4_k_m"}, tm.name) {
			continue
		}
		t.Run(tm.name, func(t *testing.T) {
			prompt := matrixPrompt(tm.cfg.Vocab)
			want := wholePrompt(512)(t, tm.load(t, Options{Threads: 2}), prompt)
			for _, budget := range []int64{ExpertBudgetMin, 1 << 40} {
				m := tm.load(t, Options{Threads: 2, ExpertBudget: budget})
				if !strings.Contains(m.Experts(), "streamed") || m.Weights() != WeightsMapped {
					t.Fatalf("budget %d: experts %s, weights %v", budget, m.Experts(), m.Weights())
				}
				runs := append([]logitsRun{{"pass 512", wholePrompt(512)}}, matrixRuns(len(prompt))...)
				for _, run := range runs {
					if run.name == "pass 64" || strings.HasPrefix(run.name, "split") {
						continue // covered by the others here; the matrix runs them in memory
					}
					got := run.run(t, m, prompt)
					if i := firstDifference(want, got); i >= 0 {
						t.Errorf("budget %d, %s: row %d logit %d is %v, not %v", budget, run.name, i/tm.cfg.Vocab, i%tm.cfg.Vocab, got[i], want[i])
					}
				}
				st := m.ExpertStats()
				if st.Misses == 0 || budget == ExpertBudgetMin && st.Misses < uint64(tm.cfg.Layers*tm.cfg.Experts) {
					t.Errorf("budget %d: %+v: the store was not exercised", budget, st)
				}
				t.Logf("budget %d: %s; %+v", budget, m.Experts(), st)
			}
		})
	}
}

// TestPlanExperts checks the loader's choice for an OLMoE-sized layout (16 layers of 64
// experts, three 2 MiB parts each: 6 GiB of experts, 1 GiB dense) on machines of given memory.
func TestPlanExperts(t *testing.T) {
	const gib, mib = 1 << 30, 1 << 20
	cfg := Config{Layers: 16, Experts: 64, ExpertsUsed: 8, KVHeads: 16, HeadDim: 128, Context: 4096}
	l := experts.Layout{Experts: 64}
	off := int64(gib)
	for range cfg.Layers {
		var parts []experts.Part
		for range 3 {
			parts = append(parts, experts.Part{Offset: off, Size: 2 * mib, Type: gguf.TypeQ4_K, Rows: 1024, Cols: 2048})
			off += 64 * 2 * mib
		}
		l.Layers = append(l.Layers, parts)
	}
	size := off
	ram := func(avail uint64) func(context.Context) (machine.Memory, error) {
		return func(context.Context) (machine.Memory, error) {
			return machine.Memory{Total: 16 * gib, Available: avail}, nil
		}
	}
	plan := func(avail uint64, opts Options) (Plan, error) {
		req := PlanRequest{Config: cfg, Footprint: footprint(size, &l, &cfg), Threads: 2,
			Context: opts.Context, ExpertBudget: opts.ExpertBudget, Weights: opts.Weights}
		return planLoad(context.Background(), req, ram(avail))
	}
	// The session the plan holds: 16 layers × 2 × 2048 × 4 bytes × 4096 positions = 1 GiB of
	// KV cache, and the pass buffers of 512 tokens.
	sz := newSessionSizes(&cfg, 4096, 512, 2)
	kv, pass, store := sz.bytes()
	if kv != gib {
		t.Fatalf("KV cache %d bytes, want 1 GiB", kv)
	}
	reserve := uint64(2 * gib) // machine.Reserve of 16 GiB
	if p, err := plan(reserve+uint64(size)+kv+pass, Options{}); err != nil || p.Placement != InMemory || p.KV != kv || p.Pass != pass {
		t.Fatalf("the file and the session fit: %+v %v", p, err)
	}
	if p, err := plan(reserve+uint64(size)+kv+pass-1, Options{}); err != nil || p.Placement != ExpertsStreamed {
		t.Fatalf("the file fits, the session does not: %+v %v", p, err)
	}
	session := kv + pass + store
	slot := l.SlotBytes() // three areas of 2 MiB + a page
	avail := reserve + gib + session + 100*slot
	if p, err := plan(avail, Options{}); err != nil || p.Placement != ExpertsStreamed || p.UnitsInRAM != 100 || p.Session() != session {
		t.Fatalf("streaming: %+v %v", p, err)
	}
	if p, err := plan(avail-(100-72)*slot, Options{}); err != nil || p.UnitsInRAM != 72 {
		t.Fatalf("the fewest slots (64 + 8): %+v %v", p, err)
	}
	// One slot short: a context asked for is refused with the numbers; the default one is
	// halved to what fits, and the plan says so.
	p, err := plan(avail-(100-71)*slot, Options{Context: 4096})
	if !errors.Is(err, experts.ErrTooBig) || !strings.Contains(err.Error(), "short") || p.Placement != Refused ||
		p.NeedAtLeast != gib+session+72*slot || p.Err() != err || !strings.HasPrefix(p.Text(), "Won't fit: ") {
		t.Fatalf("too little memory: %+v %v", p, err)
	}
	t.Logf("refused: %v; %s", err, p.Text())
	if p, err := plan(avail-(100-71)*slot, Options{}); err != nil || p.Placement != ExpertsStreamed || p.Context != 2048 ||
		p.AskedContext != 4096 || !strings.Contains(p.Text(), "context 2048 (the model's 4096 does not fit)") {
		t.Fatalf("the default context one slot short: %+v %v", p, err)
	} else {
		t.Logf("shrunk: %s", p.Text())
	}
	for _, o := range []Options{{Weights: WeightsMapped}, {Weights: WeightsResident}} {
		if p, err := plan(0, o); err != nil || p.Placement != InMemory || !p.Forced {
			t.Fatalf("%v asked for: %+v %v", o.Weights, p, err)
		}
	}
	if p, err := plan(0, Options{ExpertBudget: ExpertBudgetMin}); err != nil || p.UnitsInRAM != 72 {
		t.Fatalf("ExpertBudgetMin: %+v %v", p, err)
	}
	if p, err := plan(0, Options{ExpertBudget: int64(200 * slot)}); err != nil || p.UnitsInRAM != 200 {
		t.Fatalf("a budget of 200 slots: %+v %v", p, err)
	}
	if _, err := plan(0, Options{ExpertBudget: -2}); err == nil {
		t.Fatal("a budget of -2 was accepted")
	}
}
