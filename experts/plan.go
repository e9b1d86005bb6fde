package experts

import (
	"errors"
	"fmt"

	"github.com/trochilus-llm/trochilus/internal/units"
)

// Need is what a model asks of memory.
type Need struct {
	Dense   uint64 // bytes that must stay in RAM: every tensor but the experts
	Experts uint64 // bytes of all experts of all layers
	Session uint64 // the session's working memory (KV cache, activations)
	// Store is the session memory only a streamed load takes (the runner's lists of the
	// matrices the store hands out), counted when the experts stream.
	Store     uint64
	SlotBytes uint64 // bytes one (layer, expert) unit takes in the store; 0: nothing can stream
	MinSlots  int    // the fewest slots a pass can run with: one layer's experts and one token's
}

// Machine is the memory the machine has now.
type Machine struct {
	Total, Available uint64
	Reserve          uint64 // what must stay free for the system (machine.ReserveFor)
}

// Plan is where a model's experts live.
type Plan struct {
	Resident bool   // every expert fits with the rest: no store, no reads
	Slots    int    // otherwise: the store's slots
	Budget   uint64 // the store's bytes, Slots × SlotBytes
	// Least is the least memory the model runs in, the reserve aside: everything when nothing
	// can stream, else the dense weights, the session and the fewest slots. PlanFor sets it
	// when it refuses too, for the message.
	Least uint64
}

// ErrTooBig is wrapped by PlanFor's error when not even the fewest slots fit.
var ErrTooBig = errors.New("the model does not fit in this machine's memory")

// PlanFor decides where a model's experts live: the arithmetic of engine.PlanMemory, which
// every caller (the loader, the library's verdict, the CLI) plans through. Everything is
// resident when dense weights, all experts and the session fit with the reserve left free.
// Otherwise the experts stream from disk through a store of as many slots as the memory left
// after the reserve, the dense weights and the session holds (at most one per unit), and at
// least need.MinSlots; a machine without room for that many, or a model with nothing to stream
// (SlotBytes 0) that does not fit whole, is refused rather than made to swap.
func PlanFor(need Need, m Machine) (Plan, error) {
	if need.SlotBytes > 0 && need.MinSlots < 1 {
		return Plan{}, fmt.Errorf("experts: plan for slots of %d bytes, at least %d", need.SlotBytes, need.MinSlots)
	}
	all := need.Dense + need.Experts + need.Session
	if all <= m.Available && m.Available-all >= m.Reserve {
		return Plan{Resident: true, Budget: need.Experts, Least: all}, nil
	}
	if need.SlotBytes == 0 {
		short := all + m.Reserve - min(m.Available, all+m.Reserve)
		return Plan{Least: all}, fmt.Errorf("%w: it needs %s for the weights and the session, and %s kept for the system, of %s available (%s short)",
			ErrTooBig, units.Bytes(all), units.Bytes(m.Reserve), units.Bytes(m.Available), units.Bytes(short))
	}
	session := need.Session + need.Store
	fixed := need.Dense + session + m.Reserve
	least := uint64(need.MinSlots) * need.SlotBytes
	p := Plan{Least: need.Dense + session + least}
	if fixed > m.Available || m.Available-fixed < least {
		short := fixed + least - min(m.Available, fixed+least)
		return p, fmt.Errorf("%w: it needs %s for the weights besides the experts and the session, %s for the fewest expert slots (%d), and %s kept for the system, of %s available (%s short)",
			ErrTooBig, units.Bytes(need.Dense+session), units.Bytes(least), need.MinSlots, units.Bytes(m.Reserve), units.Bytes(m.Available), units.Bytes(short))
	}
	slots := (m.Available - fixed) / need.SlotBytes
	units := need.Experts / need.SlotBytes // at most one slot a unit: a store never needs more
	if units > 0 && slots > units {
		slots = units
	}
	p.Slots, p.Budget = int(slots), slots*need.SlotBytes
	return p, nil
}

// WithBudget returns the plan for a store of at most budget bytes (a caller's choice, for
// measurements and tests), or the fewest slots when budget is smaller than that.
func WithBudget(need Need, budget uint64) (Plan, error) {
	if need.SlotBytes == 0 || need.MinSlots < 1 {
		return Plan{}, fmt.Errorf("experts: plan for slots of %d bytes, at least %d", need.SlotBytes, need.MinSlots)
	}
	slots := max(int(min(budget/need.SlotBytes, 1<<40)), need.MinSlots)
	return Plan{Slots: slots, Budget: uint64(slots) * need.SlotBytes,
		Least: need.Dense + need.Session + need.Store + uint64(need.MinSlots)*need.SlotBytes}, nil
}
