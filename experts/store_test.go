package experts

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
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

// check acquires ids of layer, compares every matrix with the file's bytes and releases them.
func check(t *testing.T, s *Store, data []byte, layer int, ids []int) {
	t.Helper()
	dst := acquire(t, s, layer, ids)
	if err := same(s, data, layer, ids, dst); err != nil {
		t.Fatal(err)
	}
	s.Release(layer, ids)
}

// acquire acquires ids of layer, each routed one token, and returns the matrices.
func acquire(t *testing.T, s *Store, layer int, ids []int) []kernels.Matrix {
	t.Helper()
	dst := make([]kernels.Matrix, len(ids)*s.parts)
	if err := s.Acquire(layer, ids, ones(len(ids)), 1, dst); err != nil {
		t.Fatal(err)
	}
	return dst
}

func ones(n int) []int {
	c := make([]int, n)
	for i := range c {
		c[i] = 1
	}
	return c
}

// same says where the matrices Acquire handed out for ids of layer differ from the file's
// bytes (nil: nowhere). It reads the matrices, so it may run while other calls go on.
func same(s *Store, data []byte, layer int, ids []int, dst []kernels.Matrix) error {
	for i, e := range ids {
		for p, part := range s.layout.Layers[layer] {
			want := data[part.Offset+int64(e)*part.Size : part.Offset+int64(e+1)*part.Size]
			if m := dst[i*s.parts+p]; !bytes.Equal(m.Data, want) || m.Type != part.Type {
				return fmt.Errorf("layer %d expert %d part %d: not the file's bytes", layer, e, p)
			}
		}
	}
	return nil
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

// openStore opens a Store of path's experts laid out as l with the given slots, closed when
// the test ends.
func openStore(t *testing.T, path string, l Layout, slots int) *Store {
	t.Helper()
	s, err := NewStore(path, l, slots)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestStoreEviction(t *testing.T) {
	path, l, data := testFile(t, 2, 8)
	s := openStore(t, path, l, 10)
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
	s.Release(0, []int{2})
	// A pass of 64 tokens or fewer (a verify pass, a short prompt) adds the count itself, as
	// that many one-token passes would, never scaled up.
	h = s.hot[2]
	if err := s.Acquire(0, []int{2}, []int{1}, 2, dst); err != nil || s.hot[2] != h+1 {
		t.Fatalf("count 1 of 2 tokens added %d (%v), want 1", s.hot[2]-h, err)
	}
	s.Release(0, []int{2})
	for _, c := range []struct{ count, n, want int }{{3, 17, 3}, {64, 64, 64}, {1, 65, 1}, {65, 65, 64}, {1, 4096, 1}, {4096, 4096, 64}} {
		if got := hotAdd(c.count, c.n); int(got) != c.want {
			t.Errorf("hotAdd(%d, %d) = %d, want %d", c.count, c.n, got, c.want)
		}
	}
}

func TestStoreRefusesAndRecovers(t *testing.T) {
	path, l, data := testFile(t, 2, 8)
	s := openStore(t, path, l, 10)
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
	s2 := openStore(t, path, bad, 10)
	if err := s2.Acquire(1, []int{3}, []int{1}, 1, dst); err == nil || !strings.Contains(err.Error(), "expert 3 of layer 1") {
		t.Fatalf("read past the end: %v", err)
	}
	if s2.unitSlot[8+3] >= 0 || len(s2.freeSlots) != 10 {
		t.Fatalf("after a failed read: slot %d, %d free", s2.unitSlot[11], len(s2.freeSlots))
	}
	// A call failing after a hit and a miss leaves nothing pinned: the caller does not
	// release a failed call. Here layer 1's experts from 4 on end past the file's end.
	bad.Layers[1][2].Offset = int64(len(data)) - 4*4097 - 50
	s3 := openStore(t, path, bad, 10)
	check(t, s3, data, 1, []int{0})
	if err := s3.Acquire(1, []int{0, 2, 5}, []int{1, 1, 1}, 1, dst); err == nil || !strings.Contains(err.Error(), "expert 5 of layer 1") || s3.pinned != 0 {
		t.Fatalf("a failed call after a hit and a miss: %v, %d slots pinned", err, s3.pinned)
	}
	check(t, s3, data, 1, []int{0, 1, 2, 3})
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

// TestStoreConcurrent runs goroutines that acquire random experts of random layers through the
// fewest slots, check the bytes while the others go on, and release them: pinned units must
// never be evicted under another call's matrices (with -race, the read into a slot also
// races with a reader of it if they are not ordered).
func TestStoreConcurrent(t *testing.T) {
	path, l, data := testFile(t, 3, 8)
	s := openStore(t, path, l, l.MinSlots(2))
	const workers, calls = 4, 200
	errs := make([]error, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(w), 5))
			dst := make([]kernels.Matrix, 8*s.parts)
			for range calls {
				layer, ids := rng.IntN(3), rng.Perm(8)[:1+rng.IntN(8)]
				if err := s.Acquire(layer, ids, ones(len(ids)), 1, dst); err != nil {
					errs[w] = err
					return
				}
				err := same(s, data, layer, ids, dst)
				runtime.Gosched() // let the others run misses while these units are held
				if err == nil {
					err = same(s, data, layer, ids, dst)
				}
				s.Release(layer, ids)
				if err != nil {
					errs[w] = err
					return
				}
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	st := s.Stats()
	if st.Calls != workers*calls || s.pinned != 0 || st.Misses == 0 {
		t.Fatalf("stats %+v, %d slots still pinned", st, s.pinned)
	}
	t.Logf("%+v", st)
}

// TestStoreWaitsForRelease checks, without timing, that a call whose misses find only pinned
// slots waits for the Release, that the pinned bytes stay the file's meanwhile, and that the
// calls after a waiting one keep their turn even when they would fit.
func TestStoreWaitsForRelease(t *testing.T) {
	path, l, data := testFile(t, 2, 8)
	s := openStore(t, path, l, l.MinSlots(2)) // 10 slots
	all := []int{0, 1, 2, 3, 4, 5, 6, 7}
	held := acquire(t, s, 0, all) // 8 of the 10 slots pinned
	type result struct {
		dst []kernels.Matrix
		err error
	}
	start := func(layer int, ids []int) chan result {
		done := make(chan result, 1)
		go func() {
			dst := make([]kernels.Matrix, len(ids)*s.parts)
			err := s.Acquire(layer, ids, ones(len(ids)), 1, dst)
			done <- result{dst, err}
		}()
		return done
	}
	// Layer 1's 8 misses have 2 victims: the call waits for the Release.
	second := start(1, all)
	for s.Stats().Waits == 0 {
		runtime.Gosched()
	}
	// A call naming one pinned unit (a hit) would fit, but its turn comes after the waiting one.
	third := start(0, []int{3})
	for {
		s.mu.Lock()
		queued := s.next == 3
		s.mu.Unlock()
		if queued {
			break
		}
		runtime.Gosched()
	}
	select {
	case r := <-second:
		t.Fatalf("a call found room among pinned slots: %v", r.err)
	case r := <-third:
		t.Fatalf("a call overtook one waiting for slots: %v", r.err)
	default:
	}
	if err := same(s, data, 0, all, held); err != nil {
		t.Fatal(err)
	}
	s.Release(0, all)
	r := <-second
	if r.err != nil {
		t.Fatal(r.err)
	}
	if err := same(s, data, 1, all, r.dst); err != nil {
		t.Fatal(err)
	}
	r3 := <-third
	if r3.err != nil {
		t.Fatal(r3.err)
	}
	if err := same(s, data, 0, []int{3}, r3.dst); err != nil {
		t.Fatal(err)
	}
	s.Release(1, all)
	s.Release(0, []int{3})
	if s.pinned != 0 || s.Stats().Waits != 1 {
		t.Fatalf("%d slots pinned, %+v", s.pinned, s.Stats())
	}
	// Releasing what no call holds is a bug, reported at once.
	defer func() {
		if v := recover(); v == nil || !strings.Contains(fmt.Sprint(v), "no call holds") {
			t.Fatalf("a second Release: %v", v)
		}
	}()
	s.Release(0, []int{3})
}

// With a slot for every unit, each unit is read once, on the call that first names it: the
// store's BytesRead is those units' bytes, to the byte (with unbuffered reads, the whole
// pages holding each part), its ReadTime is spent only on those calls, and Sub gives a
// stretch of calls its own figures.
func TestStoreStatsCountTheReads(t *testing.T) {
	path, l, data := testFile(t, 3, 8)
	for _, direct := range []bool{true, false} {
		s := openStore(t, path, l, 24)
		if !direct && s.file.direct != nil {
			s.file.direct.Close()
			s.file.direct = nil
		}
		// The bytes a read of expert e of layer asks the file for.
		unitBytes := func(layer, e int) uint64 {
			var n uint64
			for _, p := range l.Layers[layer] {
				off := p.Offset + int64(e)*p.Size
				if s.Direct() {
					lo, hi := off/page*page, min((off+p.Size+page-1)/page*page, int64(len(data)))
					n += uint64(hi - lo)
				} else {
					n += uint64(p.Size)
				}
			}
			return n
		}
		seen := map[int]bool{}
		var want Stats
		rng := rand.New(rand.NewPCG(5, 6))
		var mid Stats
		for call := range 60 {
			if call == 30 {
				mid = s.Stats()
			}
			layer, ids := rng.IntN(3), rng.Perm(8)[:1+rng.IntN(4)]
			want.Calls++
			for _, e := range ids {
				if u := layer*8 + e; seen[u] {
					want.Hits++
				} else {
					seen[u] = true
					want.Misses++
					want.BytesRead += unitBytes(layer, e)
				}
			}
			check(t, s, data, layer, ids)
		}
		st := s.Stats()
		if st.Calls != want.Calls || st.Hits != want.Hits || st.Misses != want.Misses || st.BytesRead != want.BytesRead {
			t.Errorf("direct %v: %+v, want %+v", s.Direct(), st, want)
		}
		if st.ReadTime <= 0 || mid.ReadTime <= 0 || mid.ReadTime > st.ReadTime {
			t.Errorf("direct %v: read time %v, %v after 30 calls", s.Direct(), st.ReadTime, mid.ReadTime)
		}
		if d := st.Sub(mid); d.Calls != 30 || d.Hits != st.Hits-mid.Hits || d.Misses != st.Misses-mid.Misses ||
			d.BytesRead != st.BytesRead-mid.BytesRead || d.ReadTime != st.ReadTime-mid.ReadTime {
			t.Errorf("Sub: %+v - %+v = %+v", st, mid, d)
		}
	}
}
