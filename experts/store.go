package experts

import (
	"errors"
	"fmt"
	"os"

	"github.com/trochilus-llm/trochilus/gguf"
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
// next call find some of its units.
func (l *Layout) MinSlots(used int) int { return l.Experts + used }

// Stats count a store's work.
type Stats struct {
	Calls, Hits, Misses uint64
	BytesRead           uint64
}

// Store keeps some experts in RAM, in fixed slots, and reads the others from the file when a
// pass names them. It changes which bytes are in memory, never the bytes: a unit's matrices
// are the file's bytes as they are. The victim of a miss follows ds4's rule (see Acquire).
// A Store is used by one evaluation at a time.
type Store struct {
	layout    Layout
	parts     int
	area      []int64
	slotBytes int64
	mem       []byte
	free      func() error
	file      *reader

	unitSlot  []int32 // unit → slot, −1 when absent
	slotUnit  []int32 // slot → unit, −1 when free
	shift     []int32 // [slot·parts + part]: where the part starts in its area
	hot       []uint32
	named     []uint64 // unit → the call that last named it
	used      []uint64 // slot → the call that last named its unit
	freeSlots []int32
	period    uint64 // calls between halvings of every hotness
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
	mem, free, err := allocate(int64(slots) * slotBytes)
	if err != nil {
		f.close()
		return nil, fmt.Errorf("experts: %d slots of %d bytes: %w", slots, slotBytes, err)
	}
	s := &Store{layout: l, parts: parts, area: area, slotBytes: slotBytes, mem: mem, free: free, file: f,
		unitSlot: make([]int32, units), slotUnit: make([]int32, slots), shift: make([]int32, slots*parts),
		hot: make([]uint32, units), named: make([]uint64, units), used: make([]uint64, slots),
		period: 16 * uint64(len(l.Layers))}
	for i := range s.unitSlot {
		s.unitSlot[i] = -1
	}
	for i := range s.slotUnit {
		s.slotUnit[i] = -1
		s.freeSlots = append(s.freeSlots, int32(slots-1-i))
	}
	return s, nil
}

// Close frees the slots and closes the file.
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

// Direct reports whether reads bypass the page cache (O_DIRECT).
func (s *Store) Direct() bool { return s.file.direct != nil }

// Stats returns the work done so far.
func (s *Store) Stats() Stats { return s.stats }

// hotPrompt is the most one call adds to a unit's hotness: a pass of n tokens adds each
// expert's routed count scaled to 64 tokens, so a long prompt's counts do not outlive many
// halvings.
const hotPrompt = 64

// Acquire makes the units (layer, ids[i]) present and writes their matrices into
// dst[i·parts + p] (valid until the next Acquire). counts[i] is the number of the pass's
// nTok tokens routed to ids[i]; it sets how much the call adds to the unit's hotness.
//
// The victim of a miss is a free slot if there is one; otherwise, of the slots whose unit
// this call does not name, the one of the lowest hotness, the least recently named among
// equals (ds4's rule: an LRU below one token's worth of slots evicts each unit just before
// its reuse). Every 16 tokens' worth of calls (16 per layer) all hotness values halve.
// On a read error the unit being read stays absent and the store stays usable.
func (s *Store) Acquire(layer int, ids, counts []int, nTok int, dst []kernels.Matrix) error {
	l := s.layout
	if layer < 0 || layer >= len(l.Layers) || len(counts) != len(ids) || len(dst) < len(ids)*s.parts || nTok < 1 {
		return fmt.Errorf("experts: acquire layer %d, %d ids, %d counts, %d matrices for %d tokens", layer, len(ids), len(counts), len(dst), nTok)
	}
	if len(ids) > len(s.slotUnit) {
		return fmt.Errorf("experts: a call names %d experts, the store has %d slots", len(ids), len(s.slotUnit))
	}
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
		add := uint32(1)
		if nTok > 1 {
			// count·64/nTok rounded half up, within [1, 64].
			add = uint32(min(max((counts[i]*hotPrompt*2+nTok)/(2*nTok), 1), hotPrompt))
		}
		s.hot[layer*l.Experts+e] += add
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
				return err
			}
			s.slotUnit[slot], s.unitSlot[u] = int32(u), slot
		}
		s.used[slot] = call
		for p, part := range l.Layers[layer] {
			start := int64(slot)*s.slotBytes + s.offset(p) + int64(s.shift[int(slot)*s.parts+p])
			dst[i*s.parts+p] = kernels.Matrix{Type: part.Type, Rows: part.Rows, Cols: part.Cols,
				Data: s.mem[start : start+part.Size : start+part.Size]}
		}
	}
	return nil
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
		if s.named[u] == call {
			continue
		}
		if best < 0 || s.hot[u] < s.hot[s.slotUnit[best]] ||
			s.hot[u] == s.hot[s.slotUnit[best]] && s.used[slot] < s.used[best] {
			best = int32(slot)
		}
	}
	// Acquire checked that a call names no more units than there are slots, so some slot
	// holds a unit this call does not name.
	s.unitSlot[s.slotUnit[best]] = -1
	s.slotUnit[best] = -1
	return best
}

// fill reads expert e of layer into slot.
func (s *Store) fill(slot int32, layer, e int) error {
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
	direct   *os.File // nil when O_DIRECT is not available for this file
}

func openReader(path string) (*reader, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("experts: %w", err)
	}
	return &reader{buffered: f, direct: openDirect(path)}, nil
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
