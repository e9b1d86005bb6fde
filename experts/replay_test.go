package experts

import (
	"math/bits"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/trochilus-llm/trochilus/kernels"
)

// TestReplayHotIsTheStore drives the real store and the simulator of its rule with the same
// calls (prompt passes and decode passes, past several halvings) and asserts the same hit or
// miss for every unit named and the same unit in every slot after every call.
func TestReplayHotIsTheStore(t *testing.T) {
	const layers, experts, used = 3, 8, 2
	path, l, data := testFile(t, layers, experts)
	rng := rand.New(rand.NewPCG(7, 8))
	tr := randomTrace(rng, layers, experts, used, 300) // 900 calls: 18 halvings
	calls := tr.Calls()
	for _, slots := range []int{l.MinSlots(used), 13, 17, layers * experts} {
		s := openStore(t, path, l, slots)
		sim := newHotSim(&tr.TraceHeader, slots)
		hit := make([]bool, experts)
		var hits, misses uint64
		for i := range calls {
			c := &calls[i]
			want := hit[:len(c.IDs)]
			for j, e := range c.IDs {
				want[j] = s.unitSlot[c.Layer*experts+e] >= 0
			}
			dst := make([]kernels.Matrix, len(c.IDs)*s.parts)
			if err := s.Acquire(c.Layer, c.IDs, c.Counts, c.Tokens, dst); err != nil {
				t.Fatal(err)
			}
			if err := same(s, data, c.Layer, c.IDs, dst); err != nil {
				t.Fatal(err)
			}
			s.Release(c.Layer, c.IDs)
			got := make([]bool, len(c.IDs))
			sim.access(i, c, got)
			if !slices.Equal(got, want) {
				t.Fatalf("%d slots, call %d (layer %d, ids %v, counts %v of %d): simulated hits %v, the store's %v",
					slots, i, c.Layer, c.IDs, c.Counts, c.Tokens, got, want)
			}
			if !slices.Equal(sim.slotUnit, s.slotUnit) {
				t.Fatalf("%d slots, call %d: simulated slots %v, the store's %v", slots, i, sim.slotUnit, s.slotUnit)
			}
			for _, ok := range want {
				if ok {
					hits++
				} else {
					misses++
				}
			}
		}
		r, err := Replay(tr, Hot, slots)
		if err != nil {
			t.Fatal(err)
		}
		st := s.Stats()
		if r.Hits != st.Hits || r.Misses != st.Misses || st.Hits != hits || st.Misses != misses {
			t.Fatalf("%d slots: replay %d hits %d misses, store %d and %d", slots, r.Hits, r.Misses, st.Hits, st.Misses)
		}
		if slots < layers*experts && (st.Hits == 0 || st.Misses <= uint64(layers*experts)) {
			t.Fatalf("%d slots: %d hits, %d misses: the store did not evict", slots, st.Hits, st.Misses)
		}
		t.Logf("%d slots: %d hits, %d misses", slots, st.Hits, st.Misses)
	}
}

// optimal returns the fewest misses any store of slots slots has on calls (each unit of a call
// a miss when absent; after the call it holds any slots of the units it had and those the
// call named), by trying every set of units after every call: the tiny traces' ground truth.
// Holding more never costs more later, so only the fullest sets are tried.
func optimal(h *TraceHeader, calls []Call, slots int) int {
	states := 1 << h.units()
	best, next := make([]int, states), make([]int, states)
	for i := range best {
		best[i] = -1
	}
	best[0] = 0
	for _, c := range calls {
		var named int
		for _, e := range c.IDs {
			named |= 1 << (c.Layer*h.Experts + e)
		}
		for i := range next {
			next[i] = -1
		}
		for held, cost := range best {
			if cost < 0 {
				continue
			}
			cost += bits.OnesCount(uint(named &^ held))
			all := held | named
			keep := min(slots, bits.OnesCount(uint(all)))
			for sub := all; ; sub = (sub - 1) & all {
				if bits.OnesCount(uint(sub)) == keep && (next[sub] < 0 || cost < next[sub]) {
					next[sub] = cost
				}
				if sub == 0 {
					break
				}
			}
		}
		best, next = next, best
	}
	fewest := -1
	for _, cost := range best {
		if cost >= 0 && (fewest < 0 || cost < fewest) {
			fewest = cost
		}
	}
	return fewest
}

// TestReplayBeladyIsOptimal: on random traces Belady misses no more than any other policy at
// any size, and on traces small enough to try every choice it misses exactly the fewest.
func TestReplayBeladyIsOptimal(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	for trial := range 300 {
		layers, experts := 1+rng.IntN(3), 2+rng.IntN(6)
		used := 1 + rng.IntN(min(experts, 3))
		tiny := layers*experts <= 10 && trial%2 == 0
		passes := 5 + rng.IntN(60)
		if tiny {
			passes = 3 + rng.IntN(5)
		}
		tr := randomTrace(rng, layers, experts, used, passes)
		calls := tr.Calls()
		for slots := 1; slots <= layers*experts; slots++ {
			b, err := ReplayCalls(&tr.TraceHeader, calls, Belady, slots)
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range Policies {
				r, err := ReplayCalls(&tr.TraceHeader, calls, p, slots)
				if err != nil {
					t.Fatal(err)
				}
				if r.Misses < b.Misses {
					t.Fatalf("trial %d, %d×%d (%d used), %d slots: %s misses %d, Belady %d", trial, layers, experts, used, slots, p, r.Misses, b.Misses)
				}
				if r.Hits+r.Misses != b.Hits+b.Misses {
					t.Fatalf("trial %d: %s named %d units, Belady %d", trial, p, r.Hits+r.Misses, b.Hits+b.Misses)
				}
			}
			if tiny {
				if o := optimal(&tr.TraceHeader, calls, slots); int(b.Misses) != o {
					t.Fatalf("trial %d, %d×%d, %d slots: Belady misses %d, the optimum %d", trial, layers, experts, slots, b.Misses, o)
				}
			}
		}
	}
}

// TestReplayPolicies checks each simulator on a trace whose answer is known by hand.
func TestReplayPolicies(t *testing.T) {
	// Two layers of three experts, one used a token; four slots.
	h := TraceHeader{Layers: 2, Experts: 3, Used: 1, UnitBytes: []uint64{10, 100}}
	call := func(layer int, ids ...int) Call {
		return Call{Layer: layer, IDs: ids, Counts: slices.Repeat([]int{1}, len(ids)), Tokens: 1}
	}
	// Layer 0 names 0, 1, 2 round and round; layer 1 names 0 each time.
	var calls []Call
	for i := range 6 {
		calls = append(calls, call(0, i%3), call(1, 0))
		calls[len(calls)-1].Pass, calls[len(calls)-2].Pass = i, i
	}
	for _, tc := range []struct {
		p      Policy
		slots  int
		misses uint64
	}{
		// Four slots hold all four units named: each misses once; but per layer, layer 0's
		// two slots cycle its three units: 6 + 1.
		{LRU, 4, 4}, {LayerLRU, 4, 7}, {Hot, 4, 4}, {Belady, 4, 4},
		// Two slots: LRU keeps layer 1's unit (named every other call) and cycles layer 0's
		// three in one slot: 1 + 6 misses. Per layer, one slot each: the same. Belady keeps
		// layer 1's unit and expert 0 of layer 0 over the read of expert 1 (named later):
		// its second use hits, 1 + 5.
		{LRU, 2, 7}, {LayerLRU, 2, 7}, {Belady, 2, 6},
		// Three slots: LRU cycles layer 0's three through two slots (each evicted just before
		// its reuse): 1 + 6, and per layer (two slots for layer 0) the same; Belady keeps
		// experts 0 and 1 over 2's first read, so their reuses hit: 1 + 4.
		{LRU, 3, 7}, {LayerLRU, 3, 7}, {Belady, 3, 5},
	} {
		r, err := ReplayCalls(&h, calls, tc.p, tc.slots)
		if err != nil {
			t.Fatal(err)
		}
		if r.Misses != tc.misses || r.Hits != 12-tc.misses || r.DecodeTokens != 6 {
			t.Errorf("%s at %d slots: %d misses, %d hits, %d tokens; want %d misses", tc.p, tc.slots, r.Misses, r.Hits, r.DecodeTokens, tc.misses)
		}
		var bytes uint64
		// Layer 1's unit is read once whatever the policy; the rest are layer 0's.
		bytes = 100 + 10*(tc.misses-1)
		if r.BytesRead != bytes || r.DecodeBytes != bytes {
			t.Errorf("%s at %d slots: %d bytes read, want %d", tc.p, tc.slots, r.BytesRead, bytes)
		}
	}
	if _, err := ReplayCalls(&h, calls, "mru", 2); err == nil {
		t.Error("an unknown policy replayed")
	}
	if _, err := ReplayCalls(&h, []Call{call(0, 2, 1)}, LRU, 2); err == nil {
		t.Error("a call with ids out of order replayed")
	}
	if _, err := ReplayCalls(&h, []Call{call(2, 0)}, LRU, 2); err == nil {
		t.Error("a call of layer 2 of 2 replayed")
	}
}
