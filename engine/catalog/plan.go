package catalog

import (
	"fmt"

	"github.com/trochilus-llm/trochilus/engine/machine"
)

// Verdict says whether a model can run in this machine's memory.
type Verdict int

const (
	// WontFit: not even the dense weights, the session and the fewest experts that can run
	// fit in the RAM the reserve leaves.
	WontFit Verdict = iota
	// FitsExpertsFromDisk: the dense weights and the session fit; only some experts stay in
	// RAM and the others are read from disk when a token needs them.
	FitsExpertsFromDisk
	// Fits: everything stays in RAM.
	Fits
)

func (v Verdict) String() string {
	switch v {
	case Fits:
		return "fits"
	case FitsExpertsFromDisk:
		return "fits with experts from disk"
	case WontFit:
		return "won't fit"
	}
	return fmt.Sprintf("verdict %d", int(v))
}

// Reserve returns the RAM a load must leave free for the rest of the system: the larger of
// 2 GiB and a tenth of the machine's RAM (machine.Reserve, which the engine's loader applies too).
func Reserve(total uint64) uint64 { return machine.Reserve(total) }

// PassSize is the most tokens the engine evaluates in one forward pass (engine.DefaultPassSize),
// which sizes a session's working buffers.
const PassSize = 512

// SessionBytes estimates the memory one session of ctx positions takes: its float32 KV cache
// and the buffers of a forward pass of PassSize tokens, as the engine allocates them.
func (m *Model) SessionBytes(ctx int) int64 {
	if ctx <= 0 {
		ctx = m.Context
	}
	n := int64(min(PassSize, max(ctx, 1)))
	k := int64(max(m.ExpertsUsed, 1))
	kv := 2 * int64(m.Layers) * int64(ctx) * int64(m.KVWidth)
	qDim := int64(m.Hidden) // OLMoE's query width equals the hidden width
	pass := n*(3*int64(m.Hidden)+2*qDim+2*int64(m.KVWidth)+int64(m.Experts)) +
		n*k*(2*int64(m.Hidden)+2*int64(m.ExpertFFN)) + int64(m.Vocab)
	return 4 * (kv + pass)
}

// Plan is how a model would sit in this machine's memory.
type Plan struct {
	Verdict Verdict

	Total     uint64 // RAM of the machine
	Available uint64 // RAM available now
	Reserve   uint64 // RAM left to the system (Reserve(Total))

	Dense   int64 // bytes of weights every token uses
	Experts int64 // bytes of all experts
	Session int64 // KV cache and pass buffers of one session

	Units       int   // (layer, expert) units in the model
	UnitBytes   int64 // bytes of one unit
	UnitsInRAM  int   // units the plan keeps in RAM (all of them when Verdict is Fits)
	MinUnits    int   // the fewest units in RAM that can run: one layer's experts and one token's
	NeedAtLeast int64 // the least RAM the model runs in, the reserve aside
}

// PlanFor works out how the model would use the memory profile p describes with a session of
// ctx positions (0: the model's context length). Loads that would leave less than the reserve
// are refused: the verdict is WontFit.
func (m *Model) PlanFor(p machine.Profile, ctx int) Plan {
	pl := Plan{
		Total: p.RAMTotal, Available: p.RAMAvailable, Reserve: Reserve(p.RAMTotal),
		Dense: m.DenseBytes, Experts: m.ExpertBytes, Session: m.SessionBytes(ctx),
		Units: m.Layers * m.Experts, UnitBytes: m.ExpertUnitBytes(),
	}
	var room int64
	if pl.Available > pl.Reserve {
		room = int64(min(pl.Available-pl.Reserve, 1<<62))
	}
	all := pl.Dense + pl.Experts + pl.Session
	if pl.Units == 0 || pl.UnitBytes == 0 {
		// A dense model has no experts to leave on disk.
		pl.NeedAtLeast = all
		if all <= room {
			pl.Verdict, pl.UnitsInRAM = Fits, pl.Units
		}
		return pl
	}
	pl.MinUnits = min(m.Experts+max(m.ExpertsUsed, 1), pl.Units)
	pl.NeedAtLeast = pl.Dense + pl.Session + int64(pl.MinUnits)*pl.UnitBytes
	switch {
	case all <= room:
		pl.Verdict, pl.UnitsInRAM = Fits, pl.Units
	case pl.NeedAtLeast <= room:
		pl.Verdict = FitsExpertsFromDisk
		pl.UnitsInRAM = int(min((room-pl.Dense-pl.Session)/pl.UnitBytes, int64(pl.Units)))
	}
	return pl
}

// Text explains the plan in a sentence, with the numbers behind it.
func (pl Plan) Text() string {
	room := "no RAM"
	if pl.Available > pl.Reserve {
		room = machine.Bytes(pl.Available-pl.Reserve) + " of RAM"
	}
	usable := "no RAM is"
	if pl.Available > pl.Reserve {
		usable = "only " + machine.Bytes(pl.Available-pl.Reserve) + " is"
	}
	keep := fmt.Sprintf("%s available, %s kept for the system", machine.Bytes(pl.Available), machine.Bytes(pl.Reserve))
	switch pl.Verdict {
	case Fits:
		return fmt.Sprintf("Fits: weights %s and session %s in %s (%s).",
			machine.Bytes(uint64(pl.Dense+pl.Experts)), machine.Bytes(uint64(pl.Session)), room, keep)
	case FitsExpertsFromDisk:
		return fmt.Sprintf("Fits with experts from disk: %d of %d experts (%s of %s) stay in RAM, the rest are read from disk as tokens need them (%s).",
			pl.UnitsInRAM, pl.Units, machine.Bytes(uint64(int64(pl.UnitsInRAM)*pl.UnitBytes)), machine.Bytes(uint64(pl.Experts)), keep)
	}
	return fmt.Sprintf("Won't fit: needs at least %s (dense weights, session and %d experts), %s usable (%s).",
		machine.Bytes(uint64(pl.NeedAtLeast)), pl.MinUnits, usable, keep)
}
