package catalog

import (
	"github.com/trochilus-llm/trochilus/engine"
	"github.com/trochilus-llm/trochilus/engine/machine"
)

// Verdict says whether a model can run in this machine's memory: the placement of the
// engine's plan.
type Verdict = engine.Placement

const (
	// WontFit: not even the dense weights, the session and the fewest experts that can run
	// fit in the RAM the reserve leaves.
	WontFit = engine.Refused
	// FitsExpertsFromDisk: the dense weights and the session fit; only some experts stay in
	// RAM and the others are read from disk when a token needs them.
	FitsExpertsFromDisk = engine.ExpertsStreamed
	// Fits: everything stays in RAM.
	Fits = engine.InMemory
)

// Reserve returns the RAM a load must leave free for the rest of the system: the larger of
// 2 GiB and a tenth of the machine's RAM (machine.Reserve, which the engine's planner applies).
func Reserve(total uint64) uint64 { return machine.Reserve(total) }

// Plan is how a model would sit in this machine's memory: the engine's plan, whose Text the
// app and the CLI show and whose Placement is the verdict.
type Plan = engine.Plan

// PlanFor works out how the model would use the memory profile p describes with a session of
// ctx positions (0: the engine's default, engine.DefaultContext or the model's context when
// shorter, less when that does not fit): engine.PlanMemory, the planner engine.Load follows,
// so the verdict and the load agree. Loads that would leave less than the reserve are
// refused: the placement is WontFit.
func (m *Model) PlanFor(p machine.Profile, ctx int) Plan {
	pl, _ := engine.PlanMemory(engine.PlanRequest{Config: m.Config, Footprint: m.Footprint,
		RAMTotal: p.RAMTotal, RAMAvailable: p.RAMAvailable, Context: ctx})
	return pl // a refusal is in the plan: WontFit, with the numbers in Text
}
