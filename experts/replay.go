package experts

import (
	"container/heap"
	"fmt"
	"math"
)

// Policy is an eviction rule the replay simulates.
type Policy string

const (
	// LRU evicts the least recently named unit (one recency over every layer's units).
	LRU Policy = "lru"
	// LayerLRU splits the slots evenly over the layers (the first S mod layers get one more)
	// and runs an LRU in each: colibri's store.
	LayerLRU Policy = "layer-lru"
	// Hot is the store's own rule (Store.Acquire: ds4's hotness, prompt routings scaled to 64
	// tokens, halvings every 16 tokens' worth of calls), decision for decision.
	Hot Policy = "hot"
	// Belady is the optimal offline rule: after each call the store keeps the units whose next
	// use is nearest (a unit may be read and not kept, when every other's is nearer). It bounds
	// every rule, the store's included, from below.
	Belady Policy = "belady"
)

// replayMaxUnits bounds the units a replay simulates (the tables it makes are per unit), far
// above any model's: DeepSeek-V3 has 61 × 256.
const replayMaxUnits = 1 << 22

// Policies are the rules Replay knows, in the order reports list them.
var Policies = []Policy{LRU, LayerLRU, Hot, Belady}

// ReplayResult counts what a store of Slots slots under Policy does on a trace. Units are
// read whole: a miss costs its layer's unit bytes (the store's direct reads also read the
// pages around a part's ends, a few KiB more).
type ReplayResult struct {
	Policy Policy
	Slots  int

	Hits, Misses             uint64
	PromptHits, PromptMisses uint64 // of prompt passes' calls
	DecodeHits, DecodeMisses uint64 // of decode and verify passes' calls
	BytesRead, DecodeBytes   uint64 // all, and decode and verify passes'
	PromptTokens             int
	DecodeTokens             int // tokens of decode and verify passes: those generated
}

// simulator is one policy's store: access makes c's units present as the policy would and
// sets hit[i] to whether c.IDs[i] was present before the call.
type simulator interface {
	access(i int, c *Call, hit []bool)
}

// Replay simulates a store of slots slots (at most one per unit) under p on the trace. A call
// naming more units than a policy has room for beside them (fewer slots than Layout.MinSlots,
// which the real store refuses, or a layer's share of layer-lru's) reads its excess units
// without keeping them.
func Replay(tr *Trace, p Policy, slots int) (ReplayResult, error) {
	return ReplayCalls(&tr.TraceHeader, tr.Calls(), p, slots)
}

// ReplayCalls is Replay on the store calls of a trace of shape h (Trace.Calls).
func ReplayCalls(h *TraceHeader, calls []Call, p Policy, slots int) (ReplayResult, error) {
	if err := h.check(); err != nil {
		return ReplayResult{}, err
	}
	if slots < 1 {
		return ReplayResult{}, fmt.Errorf("experts: replay of a store of %d slots", slots)
	}
	if h.units() > replayMaxUnits {
		return ReplayResult{}, fmt.Errorf("experts: replay of %d layers × %d experts (at most %d units)", h.Layers, h.Experts, replayMaxUnits)
	}
	slots = min(slots, h.units())
	var sim simulator
	switch p {
	case LRU:
		sim = newLRUSim(h, slots, false)
	case LayerLRU:
		sim = newLRUSim(h, slots, true)
	case Hot:
		sim = newHotSim(h, slots)
	case Belady:
		sim = newBeladySim(h, calls, slots)
	default:
		return ReplayResult{}, fmt.Errorf("experts: no eviction policy %q (know %v)", p, Policies)
	}
	r := ReplayResult{Policy: p, Slots: slots}
	var hit []bool
	last := -1
	for i := range calls {
		c := &calls[i]
		if c.Layer < 0 || c.Layer >= h.Layers || len(c.IDs) != len(c.Counts) || c.Tokens < 1 {
			return ReplayResult{}, fmt.Errorf("experts: call %d: layer %d, %d ids, %d counts, %d tokens", i, c.Layer, len(c.IDs), len(c.Counts), c.Tokens)
		}
		for j, e := range c.IDs {
			if e < 0 || e >= h.Experts || j > 0 && e <= c.IDs[j-1] {
				return ReplayResult{}, fmt.Errorf("experts: call %d names expert %d after %v", i, e, c.IDs[:j])
			}
		}
		if c.Pass != last {
			last = c.Pass
			if c.Prompt {
				r.PromptTokens += c.Tokens
			} else {
				r.DecodeTokens += c.Tokens
			}
		}
		if cap(hit) < len(c.IDs) {
			hit = make([]bool, len(c.IDs))
		}
		hit = hit[:len(c.IDs)]
		sim.access(i, c, hit)
		for _, ok := range hit {
			switch {
			case ok && c.Prompt:
				r.PromptHits++
			case ok:
				r.DecodeHits++
			case c.Prompt:
				r.PromptMisses++
				r.BytesRead += h.UnitBytes[c.Layer]
			default:
				r.DecodeMisses++
				r.BytesRead += h.UnitBytes[c.Layer]
				r.DecodeBytes += h.UnitBytes[c.Layer]
			}
		}
	}
	r.Hits, r.Misses = r.PromptHits+r.DecodeHits, r.PromptMisses+r.DecodeMisses
	return r, nil
}

// slotSim is what the slot-based simulators share: which unit each slot holds.
type slotSim struct {
	experts  int
	unitSlot []int32 // unit → slot, −1 when absent
	slotUnit []int32 // slot → unit, −1 when free
}

func newSlotSim(h *TraceHeader, slots int) slotSim {
	s := slotSim{experts: h.Experts, unitSlot: make([]int32, h.units()), slotUnit: make([]int32, slots)}
	for i := range s.unitSlot {
		s.unitSlot[i] = -1
	}
	for i := range s.slotUnit {
		s.slotUnit[i] = -1
	}
	return s
}

// place puts unit u into slot, evicting the unit there.
func (s *slotSim) place(slot int32, u int) {
	if old := s.slotUnit[slot]; old >= 0 {
		s.unitSlot[old] = -1
	}
	s.slotUnit[slot], s.unitSlot[u] = int32(u), slot
}

// hotSim is Store's bookkeeping without the bytes: the same fields, updated in the same order,
// so that it chooses the same slot for every miss (TestReplayHotIsTheStore drives both).
type hotSim struct {
	slotSim
	hot       []uint32
	named     []uint64 // unit → the call that last named it
	used      []uint64 // slot → the call that last named its unit
	freeSlots []int32
	calls     uint64
	period    uint64
}

func newHotSim(h *TraceHeader, slots int) *hotSim {
	s := &hotSim{slotSim: newSlotSim(h, slots), hot: make([]uint32, h.units()), named: make([]uint64, h.units()),
		used: make([]uint64, slots), period: 16 * uint64(h.Layers)} // NewStore's period
	for i := range slots {
		s.freeSlots = append(s.freeSlots, int32(slots-1-i))
	}
	return s
}

func (s *hotSim) access(_ int, c *Call, hit []bool) {
	s.calls++
	call := s.calls
	if call%s.period == 0 {
		for i := range s.hot {
			s.hot[i] >>= 1
		}
	}
	base := c.Layer * s.experts
	for i, e := range c.IDs {
		s.named[base+e] = call
		s.hot[base+e] += hotAdd(c.Counts[i], c.Tokens)
	}
	for i, e := range c.IDs {
		u := base + e
		slot := s.unitSlot[u]
		if hit[i] = slot >= 0; !hit[i] {
			if slot = s.victim(call); slot < 0 {
				continue // no room beside the call's own units: read, not kept
			}
			s.place(slot, u)
		}
		s.used[slot] = call
	}
}

// victim is Store.victim: a free slot, else the unit of the lowest hotness not named by the
// call, the least recently named among equals, the lowest slot among those; −1 when every
// slot holds a unit of the call.
func (s *hotSim) victim(call uint64) int32 {
	if n := len(s.freeSlots); n > 0 {
		slot := s.freeSlots[n-1]
		s.freeSlots = s.freeSlots[:n-1]
		return slot
	}
	best := int32(-1)
	for slot, u := range s.slotUnit {
		if s.named[u] == call {
			continue
		}
		if best < 0 || s.hot[u] < s.hot[s.slotUnit[best]] ||
			s.hot[u] == s.hot[s.slotUnit[best]] && s.used[slot] < s.used[best] {
			best = int32(slot)
		}
	}
	return best
}

// lruSim is an LRU over groups of slots: one group of every slot, or (perLayer) one per layer,
// the slots split evenly.
type lruSim struct {
	slotSim
	stamp  []uint64 // slot → the access that last named its unit
	named  []int    // unit → 1 + the call that last named it
	lo, hi []int    // layer → its group's slots [lo, hi)
	filled []int    // layer → slots of its group filled so far (from lo on)
	group  []int    // layer → the group it shares (its own, or 0)
	clock  uint64
}

func newLRUSim(h *TraceHeader, slots int, perLayer bool) *lruSim {
	s := &lruSim{slotSim: newSlotSim(h, slots), stamp: make([]uint64, slots), named: make([]int, h.units()),
		group: make([]int, h.Layers)}
	if !perLayer {
		s.lo, s.hi, s.filled = []int{0}, []int{slots}, []int{0}
		return s
	}
	at := 0
	for l := range h.Layers {
		n := slots / h.Layers
		if l < slots%h.Layers {
			n++
		}
		s.lo, s.hi, s.filled = append(s.lo, at), append(s.hi, at+n), append(s.filled, 0)
		s.group[l] = l
		at += n
	}
	return s
}

func (s *lruSim) access(i int, c *Call, hit []bool) {
	base := c.Layer * s.experts
	for _, e := range c.IDs {
		s.named[base+e] = i + 1
	}
	g := s.group[c.Layer]
	for j, e := range c.IDs {
		u := base + e
		s.clock++
		slot := s.unitSlot[u]
		if hit[j] = slot >= 0; !hit[j] {
			if slot = s.victim(g, i); slot < 0 {
				continue
			}
			s.place(slot, u)
		}
		s.stamp[slot] = s.clock
	}
}

// victim returns group g's next free slot, else its least recently named unit's that call i
// does not name; −1 when there is none.
func (s *lruSim) victim(g, i int) int32 {
	if s.lo[g]+s.filled[g] < s.hi[g] {
		s.filled[g]++
		return int32(s.lo[g] + s.filled[g] - 1)
	}
	best := int32(-1)
	for slot := s.lo[g]; slot < s.hi[g]; slot++ {
		if s.named[s.slotUnit[slot]] == i+1 {
			continue
		}
		if best < 0 || s.stamp[slot] < s.stamp[best] {
			best = int32(slot)
		}
	}
	return best
}

// beladySim keeps, after each call, the slots units (of those present and those the call
// read) whose next use is nearest.
type beladySim struct {
	experts int
	slots   int
	uses    [][]int32 // unit → the calls naming it, in order
	at      []int     // unit → how many of uses[u] are past
	present []bool
	count   int
	far     nextHeap // present units by next use, farthest first; stale entries skipped
}

func newBeladySim(h *TraceHeader, calls []Call, slots int) *beladySim {
	s := &beladySim{experts: h.Experts, slots: slots, uses: make([][]int32, h.units()), at: make([]int, h.units()),
		present: make([]bool, h.units())}
	for i, c := range calls {
		for _, e := range c.IDs {
			if c.Layer >= 0 && c.Layer < h.Layers && e >= 0 && e < h.Experts {
				u := c.Layer*h.Experts + e
				s.uses[u] = append(s.uses[u], int32(i))
			}
		}
	}
	return s
}

// next returns the call that names u next, math.MaxInt when none does.
func (s *beladySim) next(u int) int {
	if s.at[u] < len(s.uses[u]) {
		return int(s.uses[u][s.at[u]])
	}
	return math.MaxInt
}

func (s *beladySim) access(i int, c *Call, hit []bool) {
	base := c.Layer * s.experts
	for j, e := range c.IDs {
		u := base + e
		hit[j] = s.present[u]
		for s.at[u] < len(s.uses[u]) && int(s.uses[u][s.at[u]]) <= i {
			s.at[u]++
		}
		if !s.present[u] {
			s.present[u] = true
			s.count++
		}
		heap.Push(&s.far, nextUse{next: s.next(u), unit: u})
	}
	for s.count > s.slots {
		top := heap.Pop(&s.far).(nextUse)
		if !s.present[top.unit] || s.next(top.unit) != top.next {
			continue // stale: evicted already, or named since
		}
		s.present[top.unit] = false
		s.count--
	}
}

type nextUse struct{ next, unit int }

// nextHeap is a max-heap of next uses.
type nextHeap []nextUse

func (h nextHeap) Len() int { return len(h) }
func (h nextHeap) Less(i, j int) bool {
	return h[i].next > h[j].next || h[i].next == h[j].next && h[i].unit < h[j].unit
}
func (h nextHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *nextHeap) Push(x any)   { *h = append(*h, x.(nextUse)) }
func (h *nextHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}
