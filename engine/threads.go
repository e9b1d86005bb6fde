package engine

import (
	"sync"
	"time"
)

// threadTuner chooses how many of the pool's threads run each kind of pass a generation makes
// after its prompt — a one-token decode, a verify pass of a few rows — by timing them during the
// first tokens, as the C engine this project learns from does: a decode step is bound by memory
// bandwidth, which fewer threads than cores may already saturate, and then the extra threads'
// wake-ups and joins only cost. The count changes how fast a pass runs, never a bit of it (every
// loop over the pool writes by index; the thread-count tests pin that).
//
// Per kind it times the candidate counts from the most down, one pass each, and stops going
// down at a count slower than tuneGiveUp times the best so far (fewer threads will not be
// faster on a compute-bound pass); then each candidate left is timed until it has tuneSamples
// passes, and the count with the fastest pass is kept for the model's life. The fastest, not the
// mean: a pass is never faster than the machine allows, but the load of other programs makes
// some slower.
type threadTuner struct {
	mu    sync.Mutex
	cands []int // the counts tried, the pool's all first
	kinds [tuneKinds]tuneKind
}

// tuneKind is one kind of pass's trial.
type tuneKind struct {
	fastest []float64 // per candidate: the fastest pass timed, in seconds; 0: none yet
	timed   []int     // per candidate: passes timed
	down    int       // the descent's next candidate; len(cands) once it has ended
	chosen  int       // the count kept; 0 while trying
}

const (
	// tuneKinds: passes of 1 row, 2–4, 5–8 and more rows.
	tuneKinds = 4
	// tuneSamples is how many passes each surviving candidate is timed on.
	tuneSamples = 3
	// tuneGiveUp: a count whose pass took this many times the fastest so far ends the
	// descent and drops out.
	tuneGiveUp = 1.5
)

// tuneKindOf returns the kind of a pass of width rows.
func tuneKindOf(width int) int {
	switch {
	case width <= 1:
		return 0
	case width <= 4:
		return 1
	case width <= 8:
		return 2
	}
	return 3
}

// newThreadTuner returns a tuner for a pool of threads threads: the candidates are every count
// up to 4 threads, and beyond that all, three quarters, half, a quarter and one.
func newThreadTuner(threads int) *threadTuner {
	var cands []int
	if threads <= 4 {
		for n := threads; n >= 1; n-- {
			cands = append(cands, n)
		}
	} else {
		for _, n := range []int{threads, threads * 3 / 4, threads / 2, threads / 4, 1} {
			if len(cands) == 0 || n < cands[len(cands)-1] {
				cands = append(cands, max(n, 1))
			}
		}
	}
	t := &threadTuner{cands: cands}
	for i := range t.kinds {
		t.kinds[i].fastest = make([]float64, len(cands))
		t.kinds[i].timed = make([]int, len(cands))
	}
	return t
}

// pick returns the thread count to run the next pass of width rows on.
func (t *threadTuner) pick(width int) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	k := &t.kinds[tuneKindOf(width)]
	if k.chosen != 0 {
		return k.chosen
	}
	if k.down < len(t.cands) {
		return t.cands[k.down]
	}
	// The candidates left, each to tuneSamples passes, the least timed first.
	best := -1
	for i := range t.cands {
		if k.alive(i) && k.timed[i] < tuneSamples && (best < 0 || k.timed[i] < k.timed[best]) {
			best = i
		}
	}
	if best < 0 { // every survivor timed: keep the fastest
		k.choose(t.cands)
		return k.chosen
	}
	return t.cands[best]
}

// observe records that a pass of width rows on threads threads took d.
func (t *threadTuner) observe(width, threads int, d time.Duration) {
	t.mu.Lock()
	defer t.mu.Unlock()
	k := &t.kinds[tuneKindOf(width)]
	if k.chosen != 0 || d <= 0 {
		return
	}
	i := -1
	for j, n := range t.cands {
		if n == threads {
			i = j
		}
	}
	if i < 0 {
		return
	}
	secs := d.Seconds()
	if k.fastest[i] == 0 || secs < k.fastest[i] {
		k.fastest[i] = secs
	}
	k.timed[i]++
	if k.down < len(t.cands) && i == k.down {
		if k.alive(i) {
			k.down++
		} else {
			k.down = len(t.cands)
		}
	}
}

// alive reports whether candidate i is still in the trial: timed at least once (the descent
// reached it) and not slower than tuneGiveUp times the fastest pass.
func (k *tuneKind) alive(i int) bool {
	if k.timed[i] == 0 {
		return false
	}
	best := 0.0
	for _, s := range k.fastest {
		if s > 0 && (best == 0 || s < best) {
			best = s
		}
	}
	return k.fastest[i] <= tuneGiveUp*best
}

// choose keeps the candidate with the fastest pass (the most threads among equals).
func (k *tuneKind) choose(cands []int) {
	best := -1
	for i := range cands {
		if k.timed[i] > 0 && (best < 0 || k.fastest[i] < k.fastest[best]) {
			best = i
		}
	}
	k.chosen = cands[max(best, 0)]
}

// chosen returns the thread count kept for each kind of pass (1 row, 2–4, 5–8, more), 0 for a
// kind still being tried.
func (t *threadTuner) chosen() [tuneKinds]int {
	t.mu.Lock()
	defer t.mu.Unlock()
	var c [tuneKinds]int
	for i := range t.kinds {
		c[i] = t.kinds[i].chosen
	}
	return c
}

// tuneBegin sets the pool to the thread count the model's tuner picks for a pass of width rows
// and returns it; 0 when the pass runs on all of them untimed: the model has no tuner (a
// caller set Options.Threads), or another generation shares the pool now (its passes would
// run on this count too, and this pass's time would include theirs). tuneEnd, with the pass's
// time, gives the tuner its measurement and the pool all its threads back for the passes that
// are not tuned (prompts). A pair of calls rather than a func around the pass: the decode loop
// allocates nothing; Generate's deferred tuneRestore gives the threads back if a pass panics.
func (m *Model) tuneBegin(width int) int {
	if m.tuner == nil || m.generating.Load() > 1 {
		return 0
	}
	n := m.tuner.pick(width)
	m.pool.SetActive(n)
	return n
}

// tuneEnd ends a pass begun by tuneBegin, which returned threads; d is the pass's time, ok
// whether it completed. A pass during which another generation began is not counted.
func (m *Model) tuneEnd(width, threads int, d time.Duration, ok bool) {
	if threads == 0 {
		return
	}
	m.pool.SetActive(m.pool.Threads())
	if ok && m.generating.Load() == 1 {
		m.tuner.observe(width, threads, d)
	}
}

// tuneRestore gives the pool all its threads back (a generation's end, however it ends).
func (m *Model) tuneRestore() {
	if m.tuner != nil {
		m.pool.SetActive(m.pool.Threads())
	}
}
