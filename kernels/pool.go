package kernels

import (
	"cmp"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/klauspost/cpuid/v2"
)

// spinFor is how long an idle worker (and a caller waiting for its workers) polls before
// parking: long enough to catch the next matrix product of a decode step and to outlast waking
// parked workers one by one (with 16 threads at 50 µs, workers woken first timed out while the
// last were still being woken, and every call paid the whole wake-up chain again), short enough
// not to burn a shared core between requests.
const spinFor = 500 * time.Microsecond

// Pool is a persistent set of worker goroutines that run parallel-for loops over contiguous
// chunks of an index range. The engine makes one per process. The goroutine calling For is
// worker 0 and runs the first chunk itself; the others are started once by NewPool, spin
// briefly after each job and then park until the next.
//
// A Pool runs one For at a time; calls from several goroutines wait their turn. For must not be
// called from inside fn of the same pool.
type Pool struct {
	threads int
	active  atomic.Int32 // how many of the threads For uses (see SetActive)

	mu         sync.Mutex // serializes For calls and Close
	closed     bool
	dispatches uint64 // jobs handed to the workers, each a wake-up and a join

	// job is the current job's generation (its high bits, a change tells workers a new job
	// or Close is out) and its chunk count (its low 16 bits): a worker reads both in one load,
	// so one that missed a job it had no chunk of cannot pair a later job's word with the
	// count of another.
	job     atomic.Uint64
	pending atomic.Int32 // workers that have not finished the current job
	fn      func(lo, hi int)
	n       int

	caller  parker // the caller waiting for the last worker
	workers []workerSlot
	exited  sync.WaitGroup

	// spinYield is how many polls a waiting goroutine makes between runtime.Gosched calls.
	// Yielding rarely (every 4096 polls) was measured against every 64 on a 16-CPU VM and was
	// not better (2026-11-30, docs/MEASUREMENTS.md), so 64 stays the default.
	spinYield int

	// pin, when set, binds worker id's OS thread to a physical core (see coreBinder).
	pin func(id int)

	minRun int64 // see poolOptions

	// The balanced loop in flight (see forBalanced) and the matrix products it runs for
	// MatMulMany, guarded by mu; the funcs are made once so that a call allocates nothing.
	bal         balancedJob
	balRun      func(lo, hi int)
	products    productsJob
	productsRun func(lo, hi int64)
}

// parker lets a goroutine sleep until another wakes it, without a lost wake-up: the sleeper
// sets asleep and re-checks its condition; the waker clears asleep and, only if it found it
// set, sends a token.
type parker struct {
	asleep atomic.Bool
	wake   chan struct{}
	yield  int      // polls between runtime.Gosched calls; a power of two
	_      [40]byte // keep each slot on its own cache line
}

type workerSlot struct{ parker }

// DefaultThreads returns the number of physical cores this process may run on: SMT siblings
// share a core's multiply units and slow matrix products down rather than up.
func DefaultThreads() int {
	n := runtime.NumCPU()
	if phys := cpuid.CPU.PhysicalCores; phys > 0 && phys < n {
		n = phys
	}
	return max(n, 1)
}

// NewPool starts a pool of the given number of threads (the caller counts as one), or of
// DefaultThreads() when threads <= 0.
func NewPool(threads int) *Pool {
	if threads <= 0 {
		threads = DefaultThreads()
	}
	return newPool(threads, poolOptions{})
}

// poolOptions are the pool's speed choices, kept apart so benchmarks can put them side by
// side; none changes a result.
type poolOptions struct {
	pin       bool  // bind each worker's OS thread to its own physical core (Linux); off by default
	spinYield int   // polls between Gosched calls (a power of two); 0 means 64
	minRun    int64 // the shortest run of weight bytes MatMulMany hands a thread; 0 means minRunBytes
}

// newPool starts a pool of threads threads (> 0; at most maxThreads are used).
func newPool(threads int, o poolOptions) *Pool {
	threads = min(threads, maxThreads)
	p := &Pool{threads: threads, workers: make([]workerSlot, threads), spinYield: o.spinYield}
	p.active.Store(int32(threads))
	if p.spinYield == 0 {
		p.spinYield = 64
	}
	p.minRun = cmp.Or(o.minRun, minRunBytes)
	if o.pin {
		p.pin = coreBinder()
	}
	p.bal.claims = make([]claim, threads)
	p.balRun = p.bal.run
	p.productsRun = p.products.run
	p.caller.wake = make(chan struct{}, 1)
	p.caller.yield = p.spinYield
	for i := 1; i < threads; i++ {
		p.workers[i].wake = make(chan struct{}, 1)
		p.workers[i].yield = p.spinYield
		p.exited.Add(1)
		go p.work(i)
	}
	return p
}

// Threads returns the number of threads the pool has: the most For splits work over.
func (p *Pool) Threads() int { return p.threads }

// maxThreads is the most threads a pool runs: a job's chunk count has 16 bits of its word.
const maxThreads = 1<<16 - 1

// SetActive makes For use n of the pool's threads (clamped to [1, Threads()]) from its next
// call on; the others stay parked. It changes how fast work is done, never what: every loop
// over the pool writes by index, whichever thread runs the index. The engine times passes at
// several counts and keeps the fastest (a memory-bound decode can run as fast on fewer
// threads, and the spare cores' spinning and wake-ups only cost).
func (p *Pool) SetActive(n int) { p.active.Store(int32(min(max(n, 1), p.threads))) }

// Active returns how many threads For uses now.
func (p *Pool) Active() int { return int(p.active.Load()) }

// Dispatches returns how many jobs the pool has handed to its workers so far, each a wake-up
// and a join of every worker (a call that runs on the caller alone is not one): a figure of
// the synchronisation a computation costs.
func (p *Pool) Dispatches() uint64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.dispatches
}

// For calls fn over [0, n) split into at most Active() contiguous chunks [lo, hi), chunk i
// being [i·n/c, (i+1)·n/c), and returns when all have finished. Chunks run concurrently, so fn
// must only write what its own range owns. For itself does not allocate; a func value made once
// (not a fresh closure each call) keeps the whole call allocation-free. After Close, For runs
// fn(0, n) on the caller.
func (p *Pool) For(n int, fn func(lo, hi int)) {
	if n <= 0 {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.forLocked(n, fn)
}

// forLocked is For with p.mu held.
func (p *Pool) forLocked(n int, fn func(lo, hi int)) {
	p.forChunks(n, min(p.Active(), n), fn)
}

// forChunks runs fn over [0, n) in chunks (≤ Threads()) chunks, worker i taking chunk i.
// p.mu must be held.
func (p *Pool) forChunks(n, chunks int, fn func(lo, hi int)) {
	if chunks <= 1 || p.closed {
		fn(0, n)
		return
	}
	p.dispatches++
	p.fn, p.n = fn, n
	p.pending.Store(int32(chunks - 1))
	// Publishes fn and n to the workers with the new word: a new generation, this count.
	p.job.Store((p.job.Load()>>16+1)<<16 | uint64(chunks))
	for i := 1; i < chunks; i++ {
		p.workers[i].wakeIfAsleep()
	}
	fn(0, n/chunks)
	p.caller.waitFor(func() bool { return p.pending.Load() == 0 }, true)
	p.fn = nil
}

// maxBlocks is how many blocks forBalanced cuts each thread's region into at most: enough to
// even out the tail (a worker that was descheduled or started late), few enough that each
// claim still covers a long contiguous run.
const maxBlocks = 64

// balancedJob is a loop over [0, n) as forBalanced runs it: region w = [w·n/T, (w+1)·n/T) of
// each of the T threads is cut into j.blocks near-equal blocks; a worker claims the blocks of its
// own region front to back, then the blocks left in the other regions, nearest first.
type balancedJob struct {
	fn      func(lo, hi int64)
	n       int64
	threads int
	blocks  int64
	claims  []claim // per region: the next block to claim
}

// claim is one region's next unclaimed block, on its own cache line so that the workers
// claiming in their own regions do not contend.
type claim struct {
	next atomic.Int64
	_    [56]byte
}

// forBalanced calls fn over [0, n) in contiguous blocks of at least minBlock indices (but at
// most maxBlocks a thread), each index exactly once, and returns when all have finished. It
// starts like For, one contiguous region per thread, and then lets a thread that finished its
// own region take the blocks another has not reached yet, so that the slowest thread does not
// hold up the rest. p.mu must be held.
func (p *Pool) forBalanced(n, minBlock int64, fn func(lo, hi int64)) {
	if n <= 0 {
		return
	}
	j := &p.bal
	threads := p.Active()
	j.fn, j.n, j.threads = fn, n, threads
	j.blocks = min(max(n/int64(threads)/max(minBlock, 1), 1), maxBlocks)
	for i := range j.claims[:threads] {
		j.claims[i].next.Store(0)
	}
	p.forChunks(threads, threads, p.balRun)
	j.fn = nil
}

// run runs worker slots [lo, hi) of the balanced job: each slot drains its own region, then the
// others. With one thread (or a closed pool) the caller runs every slot in turn.
func (j *balancedJob) run(lo, hi int) {
	for w := lo; w < hi; w++ {
		for d := range j.threads {
			j.drain((w + d) % j.threads)
		}
	}
}

// drain claims and runs blocks of region w until none is left.
func (j *balancedJob) drain(w int) {
	t := int64(j.threads)
	rlo := int64(w) * j.n / t
	rlen := int64(w+1)*j.n/t - rlo
	next := &j.claims[w].next
	for {
		b := next.Add(1) - 1
		if b >= j.blocks {
			return
		}
		lo, hi := rlo+b*rlen/j.blocks, rlo+(b+1)*rlen/j.blocks
		if lo < hi {
			j.fn(lo, hi)
		}
	}
}

// Close stops the workers and waits for them to exit. The pool still runs For, serially.
func (p *Pool) Close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return
	}
	p.closed = true
	p.job.Store((p.job.Load()>>16 + 1) << 16)
	for i := 1; i < p.threads; i++ {
		p.workers[i].wakeIfAsleep()
	}
	p.exited.Wait()
}

func (p *Pool) work(id int) {
	defer p.exited.Done()
	if p.pin != nil {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		p.pin(id)
	}
	slot := &p.workers[id].parker
	// Word 0 is the pool's start; reading p.job here instead could skip a job published
	// before this goroutine first ran.
	var seen uint64
	spin := true
	for {
		slot.waitFor(func() bool { return p.job.Load() != seen }, spin)
		seen = p.job.Load()
		if p.closed {
			return
		}
		chunks := int(seen & maxThreads)
		// A worker without a chunk owes the job nothing and parks at once: SetActive's spare
		// threads must not spin on the cores the others use.
		spin = id < chunks
		if !spin {
			continue
		}
		lo := int(int64(id) * int64(p.n) / int64(chunks))
		hi := int(int64(id+1) * int64(p.n) / int64(chunks))
		p.fn(lo, hi)
		if p.pending.Add(-1) == 0 {
			p.caller.wakeIfAsleep()
		}
	}
}

// waitFor returns once ready() is true: it polls for spinFor (when spin is set), then parks. A wake-up may be
// stale (the last worker of the previous job can wake the caller after it already saw that job
// finish by polling), so every wake-up is followed by a fresh look at ready().
func (k *parker) waitFor(ready func() bool, spin bool) {
	start := time.Now()
	for i := 1; !ready(); i++ {
		if spin && i&63 != 0 {
			continue
		}
		if spin && time.Since(start) < spinFor {
			if i&(k.yield-1) == 0 {
				runtime.Gosched()
			}
			continue
		}
		k.asleep.Store(true)
		if ready() {
			// The waker may have seen asleep set and sent a token already; take it so it
			// cannot end a later wait early.
			if !k.asleep.CompareAndSwap(true, false) {
				<-k.wake
			}
			return
		}
		<-k.wake // the waker cleared asleep before sending
	}
}

// wakeIfAsleep wakes the parker's goroutine if it is parked (or about to park).
func (k *parker) wakeIfAsleep() {
	if k.asleep.CompareAndSwap(true, false) {
		k.wake <- struct{}{}
	}
}
