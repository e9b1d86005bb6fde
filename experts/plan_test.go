package experts

import (
	"errors"
	"strings"
	"testing"
)

// TestPlanForStoreAndDense checks what PlanFor weighs beyond TestPlan's cases: the session
// memory only a streamed load takes (Need.Store) counts against the slots, not against a load
// that keeps every expert; a model with nothing to stream fits whole or is refused with the
// numbers; and Least is the least memory the model runs in, refused or not.
func TestPlanForStoreAndDense(t *testing.T) {
	const gib, mib = 1 << 30, 1 << 20
	need := Need{Dense: gib, Experts: 6 * gib, Session: gib / 2, Store: 64 * mib, SlotBytes: 64 * mib, MinSlots: 8}
	m := Machine{Total: 16 * gib, Available: 2*gib + gib + 6*gib + gib/2, Reserve: 2 * gib}
	if p, err := PlanFor(need, m); err != nil || !p.Resident || p.Least != need.Dense+need.Experts+need.Session {
		t.Fatalf("everything fits, the store's lists aside: %+v %v", p, err)
	}
	m.Available = 2*gib + gib + gib/2 + 64*mib + 10*64*mib // reserve, dense, session, store, 10 slots
	p, err := PlanFor(need, m)
	if err != nil || p.Resident || p.Slots != 10 || p.Least != gib+gib/2+64*mib+8*64*mib {
		t.Fatalf("streamed, the store's lists counted: %+v %v", p, err)
	}
	m.Available -= 3 * 64 * mib // room for 7 slots: refused
	if p, err := PlanFor(need, m); !errors.Is(err, ErrTooBig) || p.Least != gib+gib/2+64*mib+8*64*mib || !strings.Contains(err.Error(), "64.00 MiB short") {
		t.Fatalf("a slot short: %+v %v", p, err)
	}

	dense := Need{Dense: 3 * gib, Session: gib}
	m.Available = 6 * gib
	if p, err := PlanFor(dense, m); err != nil || !p.Resident {
		t.Fatalf("a dense model that fits: %+v %v", p, err)
	}
	m.Available = 6*gib - 1
	if p, err := PlanFor(dense, m); !errors.Is(err, ErrTooBig) || p.Least != 4*gib || !strings.Contains(err.Error(), "1 B short") {
		t.Fatalf("a dense model a byte short: %+v %v", p, err)
	}
	if _, err := WithBudget(dense, gib); err == nil {
		t.Fatal("a store budget for a model with nothing to stream was accepted")
	}
}
