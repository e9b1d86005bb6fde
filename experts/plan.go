package experts

import (
	"errors"
	"fmt"
)

// Need is what a model asks of memory.
type Need struct {
	Dense     uint64 // bytes that must stay in RAM: every tensor but the experts
	Experts   uint64 // bytes of all experts of all layers
	Session   uint64 // the session's working memory (KV cache, activations)
	SlotBytes uint64 // bytes one (layer, expert) unit takes in the store
	MinSlots  int    // the fewest slots a pass can run with: one layer's experts and one token's
}

// Machine is the memory the machine has now.
type Machine struct {
	Total, Available uint64
	Reserve          uint64 // what must stay free for the system (machine.Reserve)
}

// Plan is where a model's experts live.
type Plan struct {
	Resident bool   // every expert fits with the rest: no store, no reads
	Slots    int    // otherwise: the store's slots
	Budget   uint64 // the store's bytes, Slots × SlotBytes
}

// ErrTooBig is wrapped by PlanFor's error when not even the fewest slots fit.
var ErrTooBig = errors.New("the model does not fit in this machine's memory")

// PlanFor decides where a model's experts live. Everything is resident when dense weights,
// all experts and the session fit with the reserve left free. Otherwise the experts stream
// from disk through a store of as many slots as the memory left after the reserve, the dense
// weights and the session holds (at most one per unit), and at least need.MinSlots; a machine
// without room for that many is refused rather than made to swap.
func PlanFor(need Need, m Machine) (Plan, error) {
	if need.SlotBytes == 0 || need.MinSlots < 1 {
		return Plan{}, fmt.Errorf("experts: plan for slots of %d bytes, at least %d", need.SlotBytes, need.MinSlots)
	}
	all := need.Dense + need.Experts + need.Session
	if all <= m.Available && m.Available-all >= m.Reserve {
		return Plan{Resident: true, Budget: need.Experts}, nil
	}
	fixed := need.Dense + need.Session + m.Reserve
	min := uint64(need.MinSlots) * need.SlotBytes
	if fixed > m.Available || m.Available-fixed < min {
		short := fixed + min - min64(m.Available, fixed+min)
		return Plan{}, fmt.Errorf("%w: it needs %s for the weights besides the experts and the session, %s for the fewest expert slots (%d), and %s kept for the system, of %s available (%s short)",
			ErrTooBig, sizeText(need.Dense+need.Session), sizeText(min), need.MinSlots, sizeText(m.Reserve), sizeText(m.Available), sizeText(short))
	}
	slots := (m.Available - fixed) / need.SlotBytes
	units := need.Experts / need.SlotBytes // at most one slot a unit: a store never needs more
	if units > 0 && slots > units {
		slots = units
	}
	return Plan{Slots: int(slots), Budget: slots * need.SlotBytes}, nil
}

// WithBudget returns the plan for a store of at most budget bytes (a caller's choice, for
// measurements and tests), or the fewest slots when budget is smaller than that.
func WithBudget(need Need, budget uint64) (Plan, error) {
	if need.SlotBytes == 0 || need.MinSlots < 1 {
		return Plan{}, fmt.Errorf("experts: plan for slots of %d bytes, at least %d", need.SlotBytes, need.MinSlots)
	}
	slots := max(int(budget/need.SlotBytes), need.MinSlots)
	return Plan{Slots: slots, Budget: uint64(slots) * need.SlotBytes}, nil
}

func min64(a, b uint64) uint64 {
	if a < b {
		return a
	}
	return b
}

// sizeText formats n in binary units, for messages.
func sizeText(n uint64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	v, suffix := float64(n)/unit, "KiB"
	for _, s := range []string{"MiB", "GiB", "TiB"} {
		if v < unit {
			break
		}
		v, suffix = v/unit, s
	}
	return fmt.Sprintf("%.2f %s", v, suffix)
}
