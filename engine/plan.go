package engine

import (
	"cmp"
	"errors"
	"fmt"

	"github.com/trochilus-llm/trochilus/engine/machine"
	"github.com/trochilus-llm/trochilus/experts"
	"github.com/trochilus-llm/trochilus/internal/units"
	"github.com/trochilus-llm/trochilus/kernels"
)

// DefaultContext is the positions a session is planned for when the caller names none: the
// model's trained context when that is shorter. Like LM Studio and Ollama, which open a model
// with a default context rather than its trained maximum, the engine does not plan a KV cache
// of every position the model was trained for: Qwen3-30B-A3B's 40,960 take 7.5 GiB of float32
// keys and values, 8192 take 1.5 GiB.
const DefaultContext = 8192

// minFitContext is the shortest context a default one is halved down to when it does not fit.
const minFitContext = 512

// PlanRequest is what the memory planner weighs.
type PlanRequest struct {
	Config    Config    // the model's shape (ReadConfig's, or Describe's for a listing)
	Footprint Footprint // how its file's bytes divide (Describe's)

	// RAMTotal and RAMAvailable are the machine's memory now (machine.ReadMemory); RAMCgroup
	// says they are a memory cgroup's limit and what is left under it. The planner leaves
	// machine.ReserveFor(RAMTotal, RAMCgroup) free. They are not weighed when Weights or
	// ExpertBudget choose the placement.
	RAMTotal, RAMAvailable uint64
	RAMCgroup              bool

	// Context is the positions the session will hold, at most the model's. 0 asks for the
	// default: DefaultContext, or the model's context when shorter, halved (down to 512
	// positions) while it does not fit. A context named is honoured or refused, never shrunk.
	Context int
	// PassSize is the most tokens a forward pass evaluates (0: DefaultPassSize), Threads the
	// workers of the model's pool (0: kernels.DefaultThreads()); both size pass buffers.
	PassSize, Threads int

	ExpertBudget int64   // as Options.ExpertBudget
	Weights      Weights // as Options.Weights

	// Sessions is how many sessions of Context positions the plan holds room for (0: one):
	// a server answering several conversations at once has one each.
	Sessions int
}

// Placement is where a plan puts a model's weights.
type Placement int

const (
	// Refused: not even the dense weights, the session and the fewest experts a pass can run
	// with fit in the RAM the reserve leaves (or the request cannot be met: Plan.Err says).
	Refused Placement = iota
	// ExpertsStreamed: the dense weights and the session fit; some experts stay in RAM, in
	// the store's slots, and the others are read from disk when a token needs them.
	ExpertsStreamed
	// InMemory: every weight stays in memory.
	InMemory
)

func (p Placement) String() string {
	switch p {
	case InMemory:
		return "fits"
	case ExpertsStreamed:
		return "fits with experts from disk"
	case Refused:
		return "won't fit"
	}
	return fmt.Sprintf("Placement(%d)", int(p))
}

// MarshalText writes the placement as String does, for JSON.
func (p Placement) MarshalText() ([]byte, error) { return []byte(p.String()), nil }

// Plan is where a model's bytes live with one session, and the numbers behind the choice.
// Its Text is the sentence the CLI and the app show; the loader refuses with Err.
type Plan struct {
	Placement Placement
	// Forced is set when Weights or ExpertBudget chose the placement: it was not weighed
	// against the RAM. Weights is the placement asked for (WeightsAuto: the planner's).
	Forced  bool
	Weights Weights

	Context      int    // the positions the session is planned for
	AskedContext int    // the positions asked for, or the default; more than Context when they did not fit
	ModelContext int    // the model's trained context
	Explicit     bool   // the caller named the context: it is honoured or refused, never shrunk
	PassSize     int    // the most tokens a pass evaluates
	Threads      int    // the pool's workers
	Sessions     int    // the sessions planned for, each of Session() bytes
	Shared       uint64 // with several sessions, the logits buffer of their shared passes

	Total, Available uint64 // the machine's memory
	Cgroup           bool   // Total is a memory cgroup's limit: the reserve is the cgroup's rule
	Reserve          uint64 // what stays free: machine.ReserveFor(Total, Cgroup)

	Dense   uint64 // bytes of the file besides the experts: always in memory
	Experts uint64 // bytes of all experts
	KV      uint64 // the session's float32 KV cache
	// Pass is the rest of the session: pass buffers, RoPE table, per-worker scratch, logits,
	// and with streamed experts the runner's lists of the store's matrices.
	Pass uint64

	Units       int    // (layer, expert) units in the model
	UnitBytes   uint64 // bytes of one unit in the store
	UnitsInRAM  int    // units the plan keeps in RAM: all when InMemory, the store's slots when streamed
	MinUnits    int    // the fewest units in RAM a pass can run with
	NeedAtLeast uint64 // the least memory the model runs in at Context, the reserve aside

	why error // a refusal: the numbers (wrapping experts.ErrTooBig) or what is wrong with the request
}

// Session returns the bytes of one planned session: its KV cache and the rest.
func (p Plan) Session() uint64 { return p.KV + p.Pass }

// Err returns why the plan refuses the load (nil unless Placement is Refused): a memory
// refusal wraps experts.ErrTooBig and says how much is short.
func (p Plan) Err() error { return p.why }

// PlanMemory decides where a model's weights live with one session: every weight in memory,
// the experts streamed from disk through a store of some slots, or refused with the numbers
// (the error, also in Plan.Err). It is the one memory planner: engine.Load plans with it
// before it maps a byte, the library's fit verdict (engine/library) is its Plan, and the CLI
// and the app open their session at the Context it planned. It lives in package engine, not
// experts, because a session's memory is the engine's: the KV cache and pass buffers it counts
// are the lengths newRunner allocates (sessionSizes), so the plan cannot drift from the
// allocation; experts.PlanFor does the slot arithmetic.
func PlanMemory(req PlanRequest) (Plan, error) {
	c := &req.Config
	p := Plan{
		Forced: req.ExpertBudget != 0 || req.Weights != WeightsAuto, Weights: req.Weights,
		ModelContext: c.Context, Explicit: req.Context != 0,
		PassSize: cmp.Or(req.PassSize, DefaultPassSize), Threads: cmp.Or(req.Threads, kernels.DefaultThreads()),
		Sessions: max(req.Sessions, 1),
		Total:    req.RAMTotal, Available: req.RAMAvailable, Cgroup: req.RAMCgroup, Reserve: machine.ReserveFor(req.RAMTotal, req.RAMCgroup),
		Dense: req.Footprint.Dense(), Experts: req.Footprint.Experts,
		Units: req.Footprint.Units, UnitBytes: req.Footprint.SlotBytes, MinUnits: req.Footprint.MinSlots,
	}
	var bad error
	switch {
	case req.Context < 0 || req.Context > c.Context:
		bad = fmt.Errorf("session context %d outside [1, %d] (the model's context length)", req.Context, c.Context)
	case req.PassSize < 0 || req.Threads < 0 || req.Sessions < 0:
		bad = fmt.Errorf("pass size %d, %d threads, %d sessions: want 0 (the default) or more", req.PassSize, req.Threads, req.Sessions)
	case req.ExpertBudget < 0 && req.ExpertBudget != ExpertBudgetMin:
		bad = fmt.Errorf("expert budget %d: want bytes, 0 (automatic) or ExpertBudgetMin", req.ExpertBudget)
	case req.Weights < WeightsAuto || req.Weights > WeightsMapped:
		bad = fmt.Errorf("weights placement %v is not one of auto, resident, mapped", req.Weights)
	}
	if bad != nil {
		p.Context, p.AskedContext, p.why = req.Context, req.Context, bad
		return p, bad
	}
	ctx := req.Context
	if ctx == 0 {
		ctx = min(c.Context, DefaultContext)
	}
	p.AskedContext = ctx
	first := p.at(&req, ctx)
	// A default context that does not fit is halved while that helps: a short chat that runs
	// is what a default promises; a context asked for is the caller's to change.
	for pl := first; errors.Is(pl.why, experts.ErrTooBig) && !p.Explicit && !p.Forced && ctx > minFitContext; {
		ctx = max(ctx/2, minFitContext)
		if pl = p.at(&req, ctx); pl.why == nil {
			return pl, nil
		}
	}
	if first.why != nil && ctx < first.Context {
		first.why = fmt.Errorf("%w (nor down to %d positions)", first.why, ctx)
	}
	return first, first.why
}

// at returns p planned for a session of ctx positions.
func (p Plan) at(req *PlanRequest, ctx int) Plan {
	p.Context = ctx
	sz := newSessionSizes(&req.Config, ctx, min(p.PassSize, ctx), p.Threads)
	kv, pass, store := sz.bytes()
	p.Shared = 0
	if p.Sessions > 1 {
		// The sessions' shared passes write their logits to one buffer (engine.Batcher): a
		// row per session of a pass, beyond the row each session keeps.
		p.Shared = uint64(min(p.Sessions, p.PassSize, ctx)) * uint64(req.Config.Vocab) * 4
	}
	need := experts.Need{Dense: p.Dense, Experts: p.Experts, Session: uint64(p.Sessions)*(kv+pass) + p.Shared, Store: store,
		SlotBytes: p.UnitBytes, MinSlots: p.MinUnits}
	var ep experts.Plan
	var err error
	switch {
	case req.ExpertBudget > 0:
		ep, err = experts.WithBudget(need, uint64(req.ExpertBudget))
	case req.ExpertBudget == ExpertBudgetMin:
		ep, err = experts.WithBudget(need, 0)
	case req.Weights != WeightsAuto:
		// A placement was asked for: mapped, the page cache decides what stays; resident,
		// the whole file is read in or refused by the loader's guard (placeWeights).
		ep = experts.Plan{Resident: true, Least: need.Dense + need.Experts + need.Session}
	default:
		ep, err = experts.PlanFor(need, experts.Machine{Total: p.Total, Available: p.Available, Reserve: p.Reserve})
	}
	p.KV, p.Pass, p.NeedAtLeast = kv, pass, ep.Least
	switch {
	case err != nil:
		p.Placement, p.UnitsInRAM = Refused, 0
		if p.Sessions > 1 {
			p.why = fmt.Errorf("with %d sessions of %d positions: %w", p.Sessions, ctx, err)
		} else {
			p.why = fmt.Errorf("with a session of %d positions: %w", ctx, err)
		}
	case ep.Resident:
		p.Placement, p.UnitsInRAM = InMemory, p.Units
	default:
		p.Placement, p.UnitsInRAM = ExpertsStreamed, ep.Slots
		p.Pass += store
	}
	return p
}

// ContextText says which context the plan holds and why, e.g. "context 8192 (the default;
// the model's is 40960)" or "context 2048 (the default 8192 does not fit; the model's is
// 40960)".
func (p Plan) ContextText() string {
	switch {
	case p.Context < p.AskedContext && p.AskedContext == p.ModelContext:
		return fmt.Sprintf("context %d (the model's %d does not fit)", p.Context, p.AskedContext)
	case p.Context < p.AskedContext:
		return fmt.Sprintf("context %d (the default %d does not fit; the model's is %d)", p.Context, p.AskedContext, p.ModelContext)
	case p.Explicit:
		return fmt.Sprintf("context %d", p.Context)
	case p.Context == p.ModelContext:
		return fmt.Sprintf("context %d (the model's)", p.Context)
	}
	return fmt.Sprintf("context %d (the default; the model's is %d)", p.Context, p.ModelContext)
}

// Text explains the plan in a sentence, with the numbers behind it.
func (p Plan) Text() string {
	b := func(n uint64) string { return units.Bytes(n) }
	// Which rule kept the reserve: inside a cgroup it is this process's, not the system's.
	keep := fmt.Sprintf("%s available, %s %s", b(p.Available), b(p.Reserve), machine.ReserveRule(false))
	if p.Cgroup {
		keep = fmt.Sprintf("%s available under the memory cgroup's limit of %s, %s %s", b(p.Available), b(p.Total), b(p.Reserve), machine.ReserveRule(true))
	}
	session := fmt.Sprintf("a session of %s (KV cache %s) at %s", b(p.Session()), b(p.KV), p.ContextText())
	if p.Sessions > 1 {
		session = fmt.Sprintf("%d sessions of %s each (KV cache %s) at %s", p.Sessions, b(p.Session()), b(p.KV), p.ContextText())
	}
	usable := "no RAM is usable"
	if p.Available > p.Reserve {
		usable = "only " + b(p.Available-p.Reserve) + " is usable"
	}
	inRAM := b(uint64(p.UnitsInRAM) * p.UnitBytes)
	switch {
	case p.Placement == Refused && p.why == nil:
		return "Not planned." // the zero Plan
	case p.Placement == Refused && !errors.Is(p.why, experts.ErrTooBig):
		return fmt.Sprintf("Cannot load: %v.", p.why)
	case p.Forced && p.Placement == InMemory:
		return fmt.Sprintf("Every expert in memory, weights %v as asked: weights %s and %s.", p.Weights, b(p.Dense+p.Experts), session)
	case p.Forced:
		return fmt.Sprintf("Experts from disk as asked: %d of %d experts (%s of %s) stay in RAM; dense weights %s and %s.",
			p.UnitsInRAM, p.Units, inRAM, b(p.Experts), b(p.Dense), session)
	case p.Placement == InMemory:
		return fmt.Sprintf("Fits: weights %s and %s, in %s of RAM (%s).", b(p.Dense+p.Experts), session, b(p.Available-p.Reserve), keep)
	case p.Placement == ExpertsStreamed:
		return fmt.Sprintf("Fits with experts from disk: %d of %d experts (%s of %s) stay in RAM, the rest are read from disk as tokens need them; dense weights %s and %s; %s.",
			p.UnitsInRAM, p.Units, inRAM, b(p.Experts), b(p.Dense), session, keep)
	}
	return fmt.Sprintf("Won't fit: needs at least %s (dense weights %s, %s, and %d experts), %s; %s.",
		b(p.NeedAtLeast), b(p.Dense), session, p.MinUnits, usable, keep)
}
