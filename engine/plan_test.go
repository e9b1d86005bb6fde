package engine

import (
	"errors"
	"strings"
	"testing"
	"unsafe"

	"github.com/trochilus-llm/trochilus/experts"
	"github.com/trochilus-llm/trochilus/gguf"
	"github.com/trochilus-llm/trochilus/internal/modelgen"
	"github.com/trochilus-llm/trochilus/internal/units"
	"github.com/trochilus-llm/trochilus/kernels"
)

// bytesOf returns the bytes a slice's backing array holds: its capacity times its element's
// size.
func bytesOf[T any](s []T) uint64 {
	var z T
	return uint64(cap(s)) * uint64(unsafe.Sizeof(z))
}

// allocated counts what a session really holds, slice by slice: the KV cache, and the rest
// (RoPE table, pass buffers, per-worker scratch, the store's lists, logits). It reads the
// buffers themselves, not sessionSizes, so a buffer the runner grows without the planner
// knowing shows up as a difference.
func allocated(s *Session) (kv, rest uint64) {
	r := s.r.(*moeRunner)
	kv = bytesOf(r.kv.keys) + bytesOf(r.kv.values)
	cos, sin := r.rope.CosSin(0) // rows of the table: their capacity runs to its end
	rest = bytesOf(cos) + bytesOf(sin)
	for _, b := range [][]float32{r.x, r.h, r.tmp, r.q, r.att, r.k, r.v, r.router, r.selW, r.xe, r.ge, r.ue, r.ye, s.logits} {
		rest += bytesOf(b)
	}
	for _, b := range [][]int{r.sel, r.offsets, r.fill, r.named, r.counts} {
		rest += bytesOf(b)
	}
	rest += bytesOf(r.order) + bytesOf(r.where) + bytesOf(r.stepErr) + bytesOf(r.jobs)
	rest += bytesOf(r.expertIn) + bytesOf(r.expertOut)
	for _, m := range [][]kernels.Matrix{r.acquired, r.gateS, r.upS, r.downS} {
		rest += bytesOf(m)
	}
	rest += bytesOf(r.scores) + bytesOf(r.mul.rows) + bytesOf(r.mul.err)
	for i := range r.scores {
		rest += bytesOf(r.scores[i])
	}
	for i := range r.mul.rows {
		rest += bytesOf(r.mul.rows[i])
	}
	return kv, rest
}

// TestSessionBytesMatchAllocation opens sessions of several shapes (OLMoE and Qwen3-MoE, with
// every expert in memory and streamed, passes of 1 to the whole context) and checks that the
// KV cache and the rest of what each really allocated are, to the byte, what the load's plan
// counted for it.
func TestSessionBytesMatchAllocation(t *testing.T) {
	for _, tm := range testModels() {
		if tm.name != "q8_0" && tm.name != "qwen3-q4_k_m" {
			continue
		}
		for _, c := range []struct {
			opts Options
			want Placement
		}{
			{Options{Threads: 2, Context: 300, PassSize: 7}, InMemory},
			{Options{Threads: 3, Context: 64, PassSize: 64}, InMemory},
			{Options{Threads: 1, PassSize: 1}, InMemory},
			{Options{Threads: 2, Context: 200, PassSize: 32, ExpertBudget: ExpertBudgetMin}, ExpertsStreamed},
		} {
			m := tm.load(t, c.opts)
			pl := m.Plan()
			if pl.Placement != c.want || pl.Threads != m.Threads() {
				t.Fatalf("%s %+v: plan %v with %d threads, want %v with %d", tm.name, c.opts, pl.Placement, pl.Threads, c.want, m.Threads())
			}
			s, err := m.NewSession(SessionOptions{Context: pl.Context, PassSize: c.opts.PassSize})
			if err != nil {
				t.Fatal(err)
			}
			kv, rest := allocated(s)
			// The KV cache is float32 keys and values: layers × 2 × KV heads × head width ×
			// positions × 4 bytes.
			cfg := m.Config()
			if want := uint64(cfg.Layers * 2 * cfg.KVHeads * cfg.HeadDim * pl.Context * 4); kv != want || pl.KV != kv {
				t.Errorf("%s %+v: KV cache allocated %d bytes, planned %d, want %d", tm.name, c.opts, kv, pl.KV, want)
			}
			if rest != pl.Pass {
				t.Errorf("%s %+v: session buffers allocated %d bytes, planned %d", tm.name, c.opts, rest, pl.Pass)
			}
			t.Logf("%s, context %d, pass %d, %v: KV %d + %d bytes", tm.name, pl.Context, s.PassSize(), pl.Placement, kv, rest)
		}
	}
}

// qwen3Full is Qwen3-30B-A3B's configuration (modelgen's qwen3-full preset) as ReadConfig reads
// it from such a file.
func qwen3Full() Config {
	g := modelgen.FullQwen3(modelgen.Q4KM())
	return Config{Arch: g.Arch, Layers: g.Layers, Hidden: g.Hidden, Heads: g.Heads, KVHeads: g.KVHeads,
		HeadDim: g.HeadDim(), Experts: g.Experts, ExpertsUsed: g.ExpertsUsed, ExpertFFN: g.ExpertFFN,
		Vocab: g.Vocab, Context: g.Context, RopeTheta: g.RopeTheta, RMSEps: g.RMSEps,
		NormTopKProb: true, QKNormPerHead: true}
}

// qwen3Layout is a synthetic expert layout of Qwen3-30B-A3B's shape in Q4_K_M: 48 layers of 128
// experts, gate and up Q4_K (768 rows of 2048), down Q6_K (2048 rows of 768) or Q4_K.
func qwen3Layout(c *Config) (experts.Layout, int64) {
	l := experts.Layout{Experts: c.Experts}
	off := int64(1 << 30) // the dense weights first, about 1 GiB
	for range c.Layers {
		var parts []experts.Part
		for _, p := range []struct {
			typ        gguf.Type
			rows, cols int
		}{{gguf.TypeQ4_K, c.ExpertFFN, c.Hidden}, {gguf.TypeQ4_K, c.ExpertFFN, c.Hidden}, {gguf.TypeQ6_K, c.Hidden, c.ExpertFFN}} {
			size := int64(p.rows) * int64(p.cols) / int64(p.typ.BlockElems()) * int64(p.typ.BlockBytes())
			parts = append(parts, experts.Part{Offset: off, Size: size, Type: p.typ, Rows: p.rows, Cols: p.cols})
			off += size * int64(c.Experts)
		}
		l.Layers = append(l.Layers, parts)
	}
	return l, off
}

// TestPlanQwen3FullContext plans Qwen3-30B-A3B (its shape, a synthetic layout, no file) at its
// full 40,960 positions: the KV cache is 48 layers × 2 × 4 KV heads × 128 × 40,960 × 4 bytes
// (7.5 GiB). By default the plan holds DefaultContext, an explicit context above the model's is
// refused, and a full context that does not fit is refused with the numbers, not shrunk.
func TestPlanQwen3FullContext(t *testing.T) {
	const gib = 1 << 30
	c := qwen3Full()
	l, size := qwen3Layout(&c)
	fp := footprint(size, &l, &c)
	req := PlanRequest{Config: c, Footprint: fp, RAMTotal: 64 * gib, RAMAvailable: 60 * gib, Threads: 16, Context: 40960}
	p, err := PlanMemory(req)
	if err != nil {
		t.Fatal(err)
	}
	const wantKV = 48 * 2 * 4 * 128 * 40960 * 4
	if p.KV != wantKV || p.Context != 40960 || p.Placement != InMemory {
		t.Fatalf("full context: KV %d bytes (want %d), context %d, %v", p.KV, wantKV, p.Context, p.Placement)
	}
	t.Logf("%s", p.Text())

	req.Context = 0
	if p, err := PlanMemory(req); err != nil || p.Context != DefaultContext || p.KV != wantKV/5 ||
		!strings.Contains(p.Text(), "context 8192 (the default; the model's is 40960)") {
		t.Fatalf("default context: %+v %v", p, err)
	} else {
		t.Logf("%s", p.Text())
	}
	req.Context = 40961
	if _, err := PlanMemory(req); err == nil || !strings.Contains(err.Error(), "context 40961") {
		t.Fatalf("a context above the model's: %v", err)
	}
	// 16 GiB with 10 free: the full context's KV cache leaves no room for the fewest experts;
	// asked for, it is refused with the numbers; by default the plan holds 8192.
	req.RAMTotal, req.RAMAvailable, req.Context = 16*gib, 10*gib, 40960
	p, err = PlanMemory(req)
	if !errors.Is(err, experts.ErrTooBig) || p.Placement != Refused || p.KV != wantKV || !strings.Contains(err.Error(), "short") {
		t.Fatalf("full context on 10 GiB: %+v %v", p, err)
	}
	t.Logf("%v", err)
	req.Context = 0
	if p, err := PlanMemory(req); err != nil || p.Placement != ExpertsStreamed || p.Context != DefaultContext {
		t.Fatalf("default context on 10 GiB: %+v %v", p, err)
	} else {
		t.Logf("%s", p.Text())
	}
}

// TestPlanSessions: a plan for several sessions holds room for each, and says so; what no
// longer fits is refused with the numbers.
func TestPlanSessions(t *testing.T) {
	const gib = 1 << 30
	c := qwen3Full()
	l, size := qwen3Layout(&c)
	req := PlanRequest{Config: c, Footprint: footprint(size, &l, &c), RAMTotal: 64 * gib, RAMAvailable: 60 * gib,
		Threads: 16, Context: 8192}
	one, err := PlanMemory(req)
	if err != nil {
		t.Fatal(err)
	}
	req.Sessions = 4
	four, err := PlanMemory(req)
	if err != nil {
		t.Fatal(err)
	}
	shared := uint64(4 * c.Vocab * 4) // a pass of the four sessions' logits
	if four.Session() != one.Session() || four.Shared != shared || four.NeedAtLeast != one.NeedAtLeast+3*one.Session()+shared || four.Sessions != 4 ||
		!strings.Contains(four.Text(), "4 sessions of ") {
		t.Fatalf("4 sessions: need %d (one session %d, need %d): %s", four.NeedAtLeast, one.Session(), one.NeedAtLeast, four.Text())
	}
	// 40,960 positions are 7.5 GiB of KV cache a session: 8 of them do not fit in 60 GiB.
	req.Context, req.Sessions = 40960, 8
	if p, err := PlanMemory(req); !errors.Is(err, experts.ErrTooBig) || p.Placement != Refused || !strings.Contains(err.Error(), "with 8 sessions of 40960 positions") {
		t.Fatalf("8 sessions of 40960: %v %v", p.Placement, err)
	}
	req.Sessions = -1
	if _, err := PlanMemory(req); err == nil || !strings.Contains(err.Error(), "-1 sessions") {
		t.Fatalf("-1 sessions: %v", err)
	}
}

// TestPlanReserve plans Qwen3-30B-A3B (the synthetic layout, 2 threads, 2048 positions) on the
// emulated machines of issue 15 — memory cgroups of 3, 5.5 and 12.5 GiB, where the reserve is
// this process's (machine.CgroupReserve: 256 MiB and a 32nd of the limit) — and on plain
// machines of 8, 16 and 24 GiB, where it is the system's (the larger of 2 GiB and a tenth):
// the reserve, the store's slots and the rule the text names, exactly; and the same memory
// planned by the machine-wide rule, which is what a cgroup got before (the 3 GiB one refused).
func TestPlanReserve(t *testing.T) {
	const mib, gib = 1 << 20, 1 << 30
	c := qwen3Full()
	l, size := qwen3Layout(&c)
	fp := footprint(size, &l, &c)
	for _, m := range []struct {
		name         string
		total, avail uint64
		cgroup       bool
		reserve      uint64
		slots        int
		machineSlots int // the same memory under the machine-wide rule; 0: refused
	}{
		// Cgroups as tools/emulate.sh makes them, with 16 MiB of the limit in use.
		{"3 GiB cgroup", 3 * gib, 3*gib - 16*mib, true, 352 * mib, 401, 0},
		{"5.5 GiB cgroup", 11 * gib / 2, 11*gib/2 - 16*mib, true, 432 * mib, 1247, 696},
		{"12.5 GiB cgroup", 25 * gib / 2, 25*gib/2 - 16*mib, true, 656 * mib, 3618, 3142},
		// Machines whose system and other programs use some of their RAM.
		{"8 GiB machine", 8 * gib, 11 * gib / 2, false, 2 * gib, 701, 701},
		{"16 GiB machine", 16 * gib, 25 * gib / 2, false, 2 * gib, 3148, 3148},
		{"24 GiB machine", 24 * gib, 20 * gib, false, 2576980377, 5630, 5630},
	} {
		req := PlanRequest{Config: c, Footprint: fp, RAMTotal: m.total, RAMAvailable: m.avail, RAMCgroup: m.cgroup,
			Threads: 2, Context: 2048}
		p, err := PlanMemory(req)
		if err != nil {
			t.Fatalf("%s: %v", m.name, err)
		}
		t.Logf("%s: %s", m.name, p.Text())
		rule := "kept for the system: the larger of 2 GiB and a tenth of RAM"
		if m.cgroup {
			rule = "available under the memory cgroup's limit of " + units.Bytes(m.total) + ", " + units.Bytes(m.reserve) +
				" kept for this process beside the plan, inside a memory cgroup: 256 MiB and a 32nd of its limit"
		}
		// The slots are what the memory less the reserve, the dense weights and the session
		// holds (the test's arithmetic, apart from experts.PlanFor's).
		fill := int((m.avail - m.reserve - p.Dense - p.Session()) / p.UnitBytes)
		if p.Reserve != m.reserve || p.Cgroup != m.cgroup || p.Placement != ExpertsStreamed || p.UnitsInRAM != m.slots ||
			fill != m.slots || !strings.Contains(p.Text(), rule) {
			t.Errorf("%s: reserve %d (want %d), %v, %d slots (want %d; the memory holds %d): %s",
				m.name, p.Reserve, m.reserve, p.Placement, p.UnitsInRAM, m.slots, fill, p.Text())
		}
		req.RAMCgroup = false
		wide, err := PlanMemory(req)
		if m.machineSlots == 0 {
			if !errors.Is(err, experts.ErrTooBig) || wide.Placement != Refused {
				t.Errorf("%s under the machine-wide rule: %v, %v; want refused", m.name, wide.Placement, err)
			}
		} else if err != nil || wide.UnitsInRAM != m.machineSlots {
			t.Errorf("%s under the machine-wide rule: %d slots (want %d), %v", m.name, wide.UnitsInRAM, m.machineSlots, err)
		}
	}
}
