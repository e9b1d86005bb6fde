package experts

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/trochilus-llm/trochilus/gguf"
	"github.com/trochilus-llm/trochilus/kernels"
)

// testFile writes random bytes and a layout of layers × experts × three parts of odd sizes
// at unaligned offsets over them.
func testFile(t *testing.T, layers, experts int) (string, Layout, []byte) {
	t.Helper()
	rng := rand.New(rand.NewPCG(1, 2))
	l := Layout{Experts: experts}
	off := int64(123)
	for range layers {
		var parts []Part
		for _, size := range []int64{1000, 5000 + int64(rng.IntN(50)), 4097} {
			parts = append(parts, Part{Offset: off, Size: size, Type: gguf.TypeQ8_0, Rows: 1, Cols: 32})
			off += size*int64(experts) + int64(rng.IntN(300))
		}
		l.Layers = append(l.Layers, parts)
	}
	data := make([]byte, off+17)
	for i := range data {
		data[i] = byte(rng.Uint32())
	}
	path := filepath.Join(t.TempDir(), "experts.bin")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return path, l, data
}

// check acquires ids of layer and compares every matrix with the file's bytes.
func check(t *testing.T, s *Store, data []byte, layer int, ids []int) {
	t.Helper()
	counts := make([]int, len(ids))
	for i := range counts {
		counts[i] = 1
	}
	dst := make([]kernels.Matrix, len(ids)*s.parts)
	if err := s.Acquire(layer, ids, counts, 1, dst); err != nil {
		t.Fatal(err)
	}
	for i, e := range ids {
		for p, part := range s.layout.Layers[layer] {
			want := data[part.Offset+int64(e)*part.Size : part.Offset+int64(e+1)*part.Size]
			if m := dst[i*s.parts+p]; !bytes.Equal(m.Data, want) || m.Type != part.Type {
				t.Fatalf("layer %d expert %d part %d: not the file's bytes", layer, e, p)
			}
		}
	}
}

func TestStoreGivesTheFilesBytes(t *testing.T) {
	path, l, data := testFile(t, 3, 8)
	for _, direct := range []bool{true, false} {
		for _, slots := range []int{l.MinSlots(2), 13, 24, 100} {
			s, err := NewStore(path, l, slots)
			if err != nil {
				t.Fatal(err)
			}
			if !direct {
				s.file.direct.Close()
				s.file.direct = nil
			}
			rng := rand.New(rand.NewPCG(uint64(slots), 9))
			for range 300 {
				ids := rng.Perm(8)[:1+rng.IntN(8)]
				check(t, s, data, rng.IntN(3), ids)
			}
			st := s.Stats()
			if st.Hits == 0 || st.Misses == 0 && slots < 24 || st.Calls != 300 {
				t.Fatalf("slots %d: stats %+v", slots, st)
			}
			t.Logf("direct %v (available: %v), %d slots: %+v", direct, s.Direct(), s.Slots(), st)
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
		}
	}
}

func TestStoreEviction(t *testing.T) {
	path, l, data := testFile(t, 2, 8)
	s, err := NewStore(path, l, 10)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	present := func(layer, e int) bool { return s.unitSlot[layer*8+e] >= 0 }
	// A call naming every expert of a layer fills 8 slots; the next layer's 8 evict only
	// units the call does not name, and the call's own units all end present.
	check(t, s, data, 0, []int{0, 1, 2, 3, 4, 5, 6, 7})
	check(t, s, data, 1, []int{0, 1, 2, 3, 4, 5, 6, 7})
	for e := range 8 {
		if !present(1, e) {
			t.Fatalf("layer 1 expert %d named by the call, yet absent", e)
		}
	}
	// Hotness: layer 1's expert 0 named three more times, its expert 1 not: the next miss
	// takes the coldest unit, and among equals the least recently named.
	for range 3 {
		check(t, s, data, 1, []int{0})
	}
	check(t, s, data, 0, []int{5})
	check(t, s, data, 0, []int{6})
	if !present(1, 0) {
		t.Fatal("the hottest unit was evicted")
	}
	// Layer 0's two survivors have hotness 1 like layer 1's experts 1-7 but were named
	// earlier: they went first, and layer 1 is whole.
	for e := 1; e < 8; e++ {
		if !present(1, e) {
			t.Fatalf("layer 1 expert %d (hotness %d) evicted before older units of equal hotness", e, s.hot[8+e])
		}
	}
	if s.hot[8] != 4 {
		t.Fatalf("hotness of a unit named four times: %d", s.hot[8])
	}
	// Every 16 tokens' worth of calls halves every hotness.
	for s.stats.Calls%s.period != s.period-1 {
		check(t, s, data, 1, []int{0})
	}
	before := s.hot[8]
	check(t, s, data, 0, []int{7})
	if s.hot[8] != before/2 {
		t.Fatalf("hotness %d after a halving, was %d", s.hot[8], before)
	}
	// A prompt pass adds each unit's count scaled to 64 tokens.
	h := s.hot[2]
	dst := make([]kernels.Matrix, 3)
	if err := s.Acquire(0, []int{2}, []int{10}, 128, dst); err != nil || s.hot[2] != h+5 {
		t.Fatalf("count 10 of 128 tokens added %d (%v), want 5", s.hot[2]-h, err)
	}
}

func TestStoreRefusesAndRecovers(t *testing.T) {
	path, l, data := testFile(t, 2, 8)
	s, err := NewStore(path, l, 10)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	dst := make([]kernels.Matrix, 3*11)
	for _, c := range []struct {
		layer  int
		ids    []int
		counts []int
		says   string
	}{
		{2, []int{0}, []int{1}, "acquire layer 2"},
		{0, []int{8}, []int{1}, "no expert 8"},
		{0, []int{1, 1}, []int{1, 1}, "named twice"},
		{0, []int{0, 1, 2, 3, 4, 5, 6, 7, 0, 1, 2}, make([]int, 11), "10 slots"},
	} {
		if err := s.Acquire(c.layer, c.ids, c.counts, 1, dst); err == nil || !strings.Contains(err.Error(), c.says) {
			t.Errorf("acquire %d %v: %v, want %q", c.layer, c.ids, err, c.says)
		}
	}
	// A part past the end of the file fails its read; the store stays usable and the unit
	// absent.
	bad := l
	bad.Layers = [][]Part{l.Layers[0], {l.Layers[1][0], l.Layers[1][1], {Offset: int64(len(data)) - 100, Size: 4097}}}
	s2, err := NewStore(path, bad, 10)
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	if err := s2.Acquire(1, []int{3}, []int{1}, 1, dst); err == nil || !strings.Contains(err.Error(), "expert 3 of layer 1") {
		t.Fatalf("read past the end: %v", err)
	}
	if s2.unitSlot[8+3] >= 0 || len(s2.freeSlots) != 10 {
		t.Fatalf("after a failed read: slot %d, %d free", s2.unitSlot[11], len(s2.freeSlots))
	}
	check(t, s2, data, 0, []int{1, 2})
	if _, err := NewStore(filepath.Join(t.TempDir(), "missing"), l, 10); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("missing file: %v", err)
	}
}

func TestPlan(t *testing.T) {
	const gib = 1 << 30
	need := Need{Dense: 1 * gib, Experts: 6 * gib, Session: gib / 2, SlotBytes: 6 << 20, MinSlots: 72}
	m := Machine{Total: 16 * gib, Available: 12 * gib, Reserve: 2 * gib}
	if p, err := PlanFor(need, m); err != nil || !p.Resident {
		t.Fatalf("all fits: %+v %v", p, err)
	}
	m.Available = 6 * gib // 6 − 2 − 1.5 = 2.5 GiB for slots
	p, err := PlanFor(need, m)
	if err != nil || p.Resident || p.Slots != int(5*gib/2/need.SlotBytes) || p.Budget != uint64(p.Slots)*need.SlotBytes {
		t.Fatalf("streaming plan %+v %v", p, err)
	}
	m.Available = 3*gib + 400<<20 // 3.4 − 3.5 < 0: refused, saying how much is short
	if _, err := PlanFor(need, m); !errors.Is(err, ErrTooBig) || !strings.Contains(err.Error(), "short") {
		t.Fatalf("too small: %v", err)
	}
	if p, _ := WithBudget(need, 1); p.Slots != 72 {
		t.Fatalf("a budget under the fewest slots gives %d", p.Slots)
	}
	if p, _ := WithBudget(need, 100*need.SlotBytes+5); p.Slots != 100 {
		t.Fatalf("a budget of 100 slots gives %d", p.Slots)
	}
}
