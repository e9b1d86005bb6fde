package experts

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/trochilus-llm/trochilus/gguf"
	"github.com/trochilus-llm/trochilus/internal/directio"
	"github.com/trochilus-llm/trochilus/internal/osmem"
	"github.com/trochilus-llm/trochilus/kernels"
)

// Part is one of the matrices every expert of a layer has (gate, up, down): expert e's bytes
// are Size bytes at file offset Offset + e·Size.
type Part struct {
	Offset, Size int64
	Type         gguf.Type
	Rows, Cols   int
}

// Layout is where the experts' parts are in the file: Layers[l] lists layer l's parts, in the
// order Acquire returns them.
type Layout struct {
	Experts int
	Layers  [][]Part
}

// Bytes returns the bytes of every expert of every layer.
func (l *Layout) Bytes() uint64 {
	var n uint64
	for _, parts := range l.Layers {
		for _, p := range parts {
			n += uint64(p.Size) * uint64(l.Experts)
		}
	}
	return n
}

const page = 4096

// areas returns the bytes a slot gives each part (the largest over layers, on whole pages, and
// one page more, so that a read aligned for O_DIRECT — from the page holding the part's start
// to the page holding its end — lands inside the area) and the slot's size.
func (l *Layout) areas() (area []int64, slot int64) {
	for _, parts := range l.Layers {
		for p, part := range parts {
			if p == len(area) {
				area = append(area, 0)
			}
			area[p] = max(area[p], (part.Size+page-1)/page*page+page)
		}
	}
	for _, a := range area {
		slot += a
	}
	return area, slot
}

// SlotBytes returns the bytes one (layer, expert) unit takes in a store of this layout.
func (l *Layout) SlotBytes() uint64 {
	_, s := l.areas()
	return uint64(s)
}

// MinSlots returns the fewest slots a store needs: a pass may name every expert of a layer,
// and units named by a call are never evicted by it; used more (one token's experts) lets the
// next call find some of its units. Evaluations running at once with so few slots take turns
// at a layer's experts (see Store); more slots let them hold their units side by side.
func (l *Layout) MinSlots(used int) int { return l.Experts + used }

// Stats count a store's work.
type Stats struct {
	Calls, Hits, Misses uint64
	// BytesRead is what the reads asked the file for: each part's bytes, and with unbuffered
	// reads the rest of the pages holding its first and last byte (what the disk transfers).
	BytesRead uint64
	// ReadTime is the wall time spent in those reads, one clock pair per miss (the reads run
	// under the store's lock, outside any kernel): the disk's share of a run.
	ReadTime time.Duration

	// Waits counts the calls that found too few slots free of other evaluations' units and
	// waited for a Release: a measure of what concurrent evaluations cost each other.
	Waits uint64
}

// Sub returns the work done between an earlier snapshot o and s: a run's own figures when
// the store has served others before it.
func (s Stats) Sub(o Stats) Stats {
	return Stats{Calls: s.Calls - o.Calls, Hits: s.Hits - o.Hits, Misses: s.Misses - o.Misses,
		BytesRead: s.BytesRead - o.BytesRead, ReadTime: s.ReadTime - o.ReadTime, Waits: s.Waits - o.Waits}
}

// Store keeps some experts in RAM, in fixed slots, and reads the others from the file when a
// pass names them. It changes which bytes are in memory, never the bytes: a unit's matrices
// are the file's bytes as they are. The victim of a miss follows ds4's rule (see Acquire).
//
// A Store may serve several evaluations at once, from different goroutines. Acquire pins the
// units it hands out until the matching Release, and a pinned unit is never evicted, so one
// evaluation's misses cannot overwrite the bytes another is multiplying by; the matrices are
// read outside the store's lock, so evaluations use their units in parallel. The bookkeeping
// and the reads of misses run under the lock: Acquire calls take turns, in arrival order,
// and one that finds too few unpinned slots waits (holding back those after it) until
// Releases free enough. Every unit stays the file's bytes, so results do not depend on how
// evaluations interleave; only Stats do.
type Store struct {
	layout    Layout
	parts     int
	area      []int64
	slotBytes int64
	mem       []byte
	free      func() error
	file      *reader

	// mu guards every field below and the slots' bytes while they are filled; cond (on mu)
	// wakes the calls waiting for their turn or for slots.
	mu   sync.Mutex
	cond sync.Cond

	unitSlot  []int32 // unit → slot, −1 when absent
	slotUnit  []int32 // slot → unit, −1 when free
	shift     []int32 // [slot·parts + part]: where the part starts in its area
	hot       []uint32
	named     []uint64 // unit → the call that last named it
	used      []uint64 // slot → the call that last named its unit
	freeSlots []int32
	pins      []int32 // slot → the acquisitions holding its unit, not yet released
	pinned    int     // slots with pins > 0
	next      uint64  // the ticket the next Acquire takes
	turn      uint64  // the ticket of the Acquire whose turn it is
	period    uint64  // calls between halvings of every hotness
	stats     Stats
}

// NewStore opens path for reading experts laid out as l into a store of slots slots.
func NewStore(path string, l Layout, slots int) (*Store, error) {
	if l.Experts < 1 || len(l.Layers) == 0 {
		return nil, fmt.Errorf("experts: a store for %d experts in %d layers", l.Experts, len(l.Layers))
	}
	parts := len(l.Layers[0])
	for i, ps := range l.Layers {
		if len(ps) != parts || parts == 0 {
			return nil, fmt.Errorf("experts: layer %d has %d parts, layer 0 %d", i, len(ps), parts)
		}
		for p, part := range ps {
			if part.Size <= 0 || part.Offset < 0 {
				return nil, fmt.Errorf("experts: layer %d part %d: %d bytes at %d", i, p, part.Size, part.Offset)
			}
		}
	}
	units := len(l.Layers) * l.Experts
	slots = min(slots, units)
	if slots < 1 {
		return nil, fmt.Errorf("experts: a store of %d slots", slots)
	}
	area, slotBytes := l.areas()
	f, err := openReader(path)
	if err != nil {
		return nil, err
	}
	mem, err := osmem.Alloc(int64(slots)*slotBytes, page, false)
	if err != nil {
		f.close()
		return nil, fmt.Errorf("experts: %d slots of %d bytes: %w", slots, slotBytes, err)
	}
	s := &Store{layout: l, parts: parts, area: area, slotBytes: slotBytes, mem: mem.Data, free: mem.Free, file: f,
		unitSlot: make([]int32, units), slotUnit: make([]int32, slots), shift: make([]int32, slots*parts),
		hot: make([]uint32, units), named: make([]uint64, units), used: make([]uint64, slots),
		pins: make([]int32, slots), period: 16 * uint64(len(l.Layers))}
	s.cond.L = &s.mu
	for i := range s.unitSlot {
		s.unitSlot[i] = -1
	}
	for i := range s.slotUnit {
		s.slotUnit[i] = -1
		s.freeSlots = append(s.freeSlots, int32(slots-1-i))
	}
	return s, nil
}

// Close frees the slots and closes the file. No call may be in progress, and no matrix an
// Acquire handed out may be used afterwards.
func (s *Store) Close() error {
	err := s.file.close()
	if s.free != nil {
		err = errors.Join(err, s.free())
		s.free = nil
	}
	return err
}

// Slots returns the number of slots.
func (s *Store) Slots() int { return len(s.slotUnit) }

// Direct reports whether reads bypass the page cache (internal/directio: O_DIRECT on Linux,
// FILE_FLAG_NO_BUFFERING on Windows, F_NOCACHE on macOS).
func (s *Store) Direct() bool { return s.file.direct != nil }

// Stats returns the work done so far.
func (s *Store) Stats() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stats
}

// hotPrompt is the most tokens' worth one call adds to a unit's hotness: a pass of more
// tokens adds each expert's routed count scaled down to 64 tokens, so a long prompt's counts do
// not outlive many halvings.
const hotPrompt = 64

// hotAdd is what a call of nTok tokens, count of them routed to a unit, adds to its hotness:
// the count itself, scaled down to hotPrompt tokens (rounded half up, at least 1) for longer
// passes, as ds4 weighs them. Shorter passes are not scaled up: a verify pass of 2 tokens
// counted 32 where a one-token pass counts 1, which cost 1–13% more misses in the eviction
// replay of the trained models' traces (docs/MEASUREMENTS.md, session 11).
func hotAdd(count, nTok int) uint32 {
	if nTok <= hotPrompt {
		return uint32(count)
	}
	return uint32(max((count*hotPrompt*2+nTok)/(2*nTok), 1))
}

// Acquire makes the units (layer, ids[i]) present, pins them, and writes their matrices into
// dst[i·parts + p]: they stay valid, and the units in their slots, until Release(layer, ids),
// which every Acquire that returns nil needs exactly once (a failed one pins nothing).
// counts[i] is the number of the pass's nTok tokens routed to ids[i]; it sets how much the
// call adds to the unit's hotness.
//
// The victim of a miss is a free slot if there is one; otherwise, of the slots whose unit
// this call does not name and no call pins, the one of the lowest hotness, the least
// recently named among equals (ds4's rule: an LRU below one token's worth of slots evicts
// each unit just before its reuse). Every 16 tokens' worth of calls (16 per layer) all
// hotness values halve. On a read error the unit being read stays absent and the store
// stays usable.
//
// When other evaluations pin so many slots that this call's misses have no victim, it waits
// for their Releases; Layout.MinSlots slots always let one call run alone, so it waits no
// longer than the others take to finish the layers they hold. A caller must not Acquire
// again before releasing what it holds: it could wait for itself.
func (s *Store) Acquire(layer int, ids, counts []int, nTok int, dst []kernels.Matrix) error {
	l := s.layout
	if layer < 0 || layer >= len(l.Layers) || len(counts) != len(ids) || len(dst) < len(ids)*s.parts || nTok < 1 {
		return fmt.Errorf("experts: acquire layer %d, %d ids, %d counts, %d matrices for %d tokens", layer, len(ids), len(counts), len(dst), nTok)
	}
	if len(ids) > len(s.slotUnit) {
		return fmt.Errorf("experts: a call names %d experts, the store has %d slots", len(ids), len(s.slotUnit))
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	// Calls run one at a time in arrival order, so that one waiting for slots is not
	// overtaken forever by smaller calls that fit beside the pinned units.
	ticket := s.next
	s.next++
	for ticket != s.turn {
		s.cond.Wait()
	}
	defer s.passTurn()
	s.stats.Calls++
	call := s.stats.Calls
	if call%s.period == 0 {
		for i := range s.hot {
			s.hot[i] >>= 1
		}
	}
	// Check every id before changing anything.
	for _, e := range ids {
		if e < 0 || e >= l.Experts {
			return fmt.Errorf("experts: layer %d has no expert %d", layer, e)
		}
		u := layer*l.Experts + e
		if s.named[u] == call {
			return fmt.Errorf("experts: expert %d of layer %d named twice in one call", e, layer)
		}
		s.named[u] = call
	}
	for i, e := range ids {
		s.hot[layer*l.Experts+e] += hotAdd(counts[i], nTok)
	}
	if !s.room(layer, ids) {
		s.stats.Waits++
		for !s.room(layer, ids) {
			s.cond.Wait()
		}
	}
	for i, e := range ids {
		u := layer*l.Experts + e
		slot := s.unitSlot[u]
		if slot >= 0 {
			s.stats.Hits++
		} else {
			s.stats.Misses++
			slot = s.victim(call)
			if err := s.fill(slot, layer, e); err != nil {
				s.freeSlots = append(s.freeSlots, slot)
				s.unpin(layer, ids[:i])
				s.cond.Broadcast()
				return err
			}
			s.slotUnit[slot], s.unitSlot[u] = int32(u), slot
		}
		if s.pins[slot] == 0 {
			s.pinned++
		}
		s.pins[slot]++
		s.used[slot] = call
		for p, part := range l.Layers[layer] {
			start := int64(slot)*s.slotBytes + s.offset(p) + int64(s.shift[int(slot)*s.parts+p])
			dst[i*s.parts+p] = kernels.Matrix{Type: part.Type, Rows: part.Rows, Cols: part.Cols,
				Data: s.mem[start : start+part.Size : start+part.Size]}
		}
	}
	return nil
}

// Release unpins the units Acquire(layer, ids, ...) pinned: the matrices it handed out must
// not be used afterwards, and their slots may take other units. Releasing what no call holds
// is a bug in the caller and panics.
func (s *Store) Release(layer int, ids []int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.unpin(layer, ids)
	s.cond.Broadcast()
}

// unpin drops one pin of each unit (layer, ids[i]). s.mu must be held.
func (s *Store) unpin(layer int, ids []int) {
	for _, e := range ids {
		slot := int32(-1)
		if layer >= 0 && layer < len(s.layout.Layers) && e >= 0 && e < s.layout.Experts {
			slot = s.unitSlot[layer*s.layout.Experts+e]
		}
		if slot < 0 || s.pins[slot] == 0 {
			panic(fmt.Sprintf("experts: release of expert %d of layer %d, which no call holds", e, layer))
		}
		s.pins[slot]--
		if s.pins[slot] == 0 {
			s.pinned--
		}
	}
}

// passTurn lets the next Acquire in line run. s.mu must be held.
func (s *Store) passTurn() {
	s.turn++
	s.cond.Broadcast()
}

// room reports whether the call naming ids of layer (marked in named) finds a victim for
// each of its misses: a free slot or one whose unit is neither pinned nor named by it.
// s.mu must be held.
func (s *Store) room(layer int, ids []int) bool {
	misses := 0
	evictable := len(s.slotUnit) - s.pinned // free slots and unpinned units
	for _, e := range ids {
		if slot := s.unitSlot[layer*s.layout.Experts+e]; slot < 0 {
			misses++
		} else if s.pins[slot] == 0 {
			evictable-- // a unit the call names is not its own victim
		}
	}
	return misses <= evictable
}

// offset returns where part p's area starts in a slot.
func (s *Store) offset(p int) int64 {
	var o int64
	for _, a := range s.area[:p] {
		o += a
	}
	return o
}

// victim returns a slot for a new unit: a free one, or the evicted unit's.
func (s *Store) victim(call uint64) int32 {
	if n := len(s.freeSlots); n > 0 {
		slot := s.freeSlots[n-1]
		s.freeSlots = s.freeSlots[:n-1]
		return slot
	}
	best := int32(-1)
	for slot, u := range s.slotUnit {
		if s.named[u] == call || s.pins[slot] > 0 {
			continue
		}
		if best < 0 || s.hot[u] < s.hot[s.slotUnit[best]] ||
			s.hot[u] == s.hot[s.slotUnit[best]] && s.used[slot] < s.used[best] {
			best = int32(slot)
		}
	}
	// Acquire waited until room said some slot holds a unit that this call does not name
	// and no call pins.
	s.unitSlot[s.slotUnit[best]] = -1
	s.slotUnit[best] = -1
	return best
}

// fill reads expert e of layer into slot.
func (s *Store) fill(slot int32, layer, e int) error {
	start := time.Now()
	defer func() { s.stats.ReadTime += time.Since(start) }()
	base := int64(slot) * s.slotBytes
	for p, part := range s.layout.Layers[layer] {
		off := part.Offset + int64(e)*part.Size
		area := s.mem[base+s.offset(p) : base+s.offset(p)+s.area[p]]
		shift, n, err := s.file.read(area, off, part.Size)
		if err != nil {
			return fmt.Errorf("experts: expert %d of layer %d, part %d: %d bytes at offset %d: %w", e, layer, p, part.Size, off, err)
		}
		s.shift[int(slot)*s.parts+p] = int32(shift)
		s.stats.BytesRead += uint64(n)
	}
	return nil
}

// reader reads the file unbuffered where the system allows (so the page cache does not hold
// the experts a second time: the memory the budget saves) and buffered otherwise.
type reader struct {
	buffered *os.File
	direct   *os.File // unbuffered (internal/directio); nil when that is refused for this file
}

func openReader(path string) (*reader, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("experts: %w", err)
	}
	direct, _ := directio.Open(path) // nil where refused: the reads then go through the page cache
	return &reader{buffered: f, direct: direct}, nil
}

func (r *reader) close() error {
	err := r.buffered.Close()
	if r.direct != nil {
		err = errors.Join(err, r.direct.Close())
	}
	return err
}

// read puts size bytes at file offset off into area (page-aligned, at least size rounded up
// to pages plus a page) and returns where they start in area and the bytes read.
func (r *reader) read(area []byte, off, size int64) (shift int64, n int, err error) {
	if r.direct != nil {
		lo := off / page * page
		hi := (off + size + page - 1) / page * page
		n, err = r.direct.ReadAt(area[:hi-lo], lo)
		// The last page of the file may be short: only the part's own bytes must be there.
		if int64(n) >= off-lo+size {
			return off - lo, n, nil
		}
		if err == nil {
			err = fmt.Errorf("read %d bytes of %d", n, hi-lo)
		}
		return 0, n, err
	}
	n, err = r.buffered.ReadAt(area[:size], off)
	if int64(n) == size {
		return 0, n, nil
	}
	if err == nil {
		err = fmt.Errorf("read %d bytes of %d", n, size)
	}
	return 0, n, err
}

// SlotBytes returns the bytes of one slot.
func (s *Store) SlotBytes() uint64 { return uint64(s.slotBytes) }
