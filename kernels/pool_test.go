package kernels

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestPoolCoversRange checks that For calls fn on contiguous chunks that cover [0, n) exactly
// once, for many n and thread counts, with the caller's chunk first.
func TestPoolCoversRange(t *testing.T) {
	for _, threads := range []int{1, 2, 3, 8} {
		p := NewPool(threads)
		for _, n := range []int{0, 1, 2, 3, 7, 8, 9, 100, 1001} {
			hits := make([]int32, n)
			var calls atomic.Int32
			p.For(n, func(lo, hi int) {
				calls.Add(1)
				if lo >= hi {
					t.Errorf("threads %d n %d: empty chunk [%d, %d)", threads, n, lo, hi)
				}
				for i := lo; i < hi; i++ {
					atomic.AddInt32(&hits[i], 1)
				}
			})
			for i, h := range hits {
				if h != 1 {
					t.Fatalf("threads %d n %d: index %d run %d times", threads, n, i, h)
				}
			}
			if want := min(threads, n); int(calls.Load()) != want {
				t.Errorf("threads %d n %d: %d chunks, want %d", threads, n, calls.Load(), want)
			}
		}
		p.Close()
	}
}

// TestPoolActive checks SetActive: For and the balanced loop split over that many threads
// (clamped to [1, Threads()]), each index exactly once, with the goroutines of the spare
// threads running nothing; and the counts change back and forth between calls, with idle gaps
// that let the spare threads park, without a lost or doubled chunk.
func TestPoolActive(t *testing.T) {
	const threads = 4
	p := NewPool(threads)
	defer p.Close()
	for round, active := range []int{1, 2, 4, 3, 0, 9, 2, 4, 1, 3} {
		p.SetActive(active)
		want := min(max(active, 1), threads)
		if got := p.Active(); got != want {
			t.Fatalf("SetActive(%d): Active() = %d, want %d", active, got, want)
		}
		for _, n := range []int{1, 3, 7, 100, 1001} {
			hits := make([]int32, n)
			var calls atomic.Int32
			p.For(n, func(lo, hi int) {
				calls.Add(1)
				for i := lo; i < hi; i++ {
					atomic.AddInt32(&hits[i], 1)
				}
			})
			for i, h := range hits {
				if h != 1 {
					t.Fatalf("active %d n %d: index %d run %d times", active, n, i, h)
				}
			}
			if c := int(calls.Load()); c != min(want, n) {
				t.Errorf("active %d n %d: %d chunks, want %d", active, n, c, min(want, n))
			}
			hits64 := make([]int32, n)
			var blocks atomic.Int32
			p.mu.Lock()
			p.forBalanced(int64(n), 1, func(lo, hi int64) {
				blocks.Add(1)
				for i := lo; i < hi; i++ {
					atomic.AddInt32(&hits64[i], 1)
				}
			})
			p.mu.Unlock()
			for i, h := range hits64 {
				if h != 1 {
					t.Fatalf("active %d n %d: balanced index %d run %d times", active, n, i, h)
				}
			}
			if c := int(blocks.Load()); c > want*maxBlocks {
				t.Errorf("active %d n %d: %d balanced blocks, more than %d threads allow", active, n, c, want*maxBlocks)
			}
		}
		if round%3 == 2 {
			time.Sleep(2 * spinFor) // let the spare workers park
		}
	}
}

// TestPoolManyCalls runs many short jobs back to back and some after idle gaps long enough for
// the workers to park, so both the spinning and the parked hand-over are exercised. Each call
// must have finished all its chunks when For returns (a stale wake-up once let the caller
// return early).
func TestPoolManyCalls(t *testing.T) {
	for _, threads := range []int{2, 4, 8} {
		p := NewPool(threads)
		var sum atomic.Int64
		fn := func(lo, hi int) { sum.Add(int64(hi - lo)) }
		const calls = 10000
		for i := range calls {
			p.For(16, fn)
			if got := sum.Load(); got != int64(16*(i+1)) {
				t.Fatalf("%d threads, call %d: For returned with %d of 16 indices done", threads, i, got-int64(16*i))
			}
			if i%1000 == 0 {
				time.Sleep(2 * spinFor)
			}
		}
		p.Close()
	}
}

// TestPoolConcurrentCallers calls For from several goroutines at once: the calls take turns
// and each sees its whole range.
func TestPoolConcurrentCallers(t *testing.T) {
	p := NewPool(3)
	defer p.Close()
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for range 500 {
				var n atomic.Int64
				p.For(10+g, func(lo, hi int) { n.Add(int64(hi - lo)) })
				if n.Load() != int64(10+g) {
					t.Errorf("caller %d: covered %d of %d", g, n.Load(), 10+g)
					return
				}
			}
		})
	}
	wg.Wait()
}

func TestPoolClose(t *testing.T) {
	p := NewPool(4)
	p.Close()
	p.Close() // a second Close is harmless
	ran := 0
	p.For(10, func(lo, hi int) { ran += hi - lo })
	if ran != 10 {
		t.Errorf("For after Close covered %d of 10", ran)
	}
}

func TestPoolNoAllocs(t *testing.T) {
	p := NewPool(4)
	defer p.Close()
	var sum atomic.Int64
	fn := func(lo, hi int) { sum.Add(int64(hi - lo)) }
	p.For(64, fn)
	if a := testing.AllocsPerRun(200, func() { p.For(64, fn) }); a != 0 {
		t.Errorf("For: %.1f allocations a call, want 0", a)
	}
}

func TestDefaultThreads(t *testing.T) {
	n := DefaultThreads()
	t.Logf("DefaultThreads = %d", n)
	if n < 1 {
		t.Errorf("DefaultThreads = %d", n)
	}
	p := NewPool(0)
	defer p.Close()
	if p.Threads() != n {
		t.Errorf("NewPool(0) has %d threads, want %d", p.Threads(), n)
	}
}

// TestPoolBalancedCoversRange checks that forBalanced calls fn on blocks that cover [0, n)
// exactly once, for many n, block sizes and thread counts.
func TestPoolBalancedCoversRange(t *testing.T) {
	blocks := 0
	for _, threads := range []int{1, 2, 3, 8} {
		p := NewPool(threads)
		for _, n := range []int64{1, 2, 3, 7, 8, 9, 100, 1001, 5000} {
			for _, minBlock := range []int64{0, 1, 3, 64, 1 << 20} {
				hits := make([]int32, n)
				var calls atomic.Int32
				p.mu.Lock()
				p.forBalanced(n, minBlock, func(lo, hi int64) {
					calls.Add(1)
					if lo >= hi || hi-lo < min(minBlock, n/int64(threads)) && hi < n {
						t.Errorf("threads %d n %d min %d: block [%d, %d)", threads, n, minBlock, lo, hi)
					}
					for i := lo; i < hi; i++ {
						atomic.AddInt32(&hits[i], 1)
					}
				})
				p.mu.Unlock()
				for i, h := range hits {
					if h != 1 {
						t.Fatalf("threads %d n %d min %d: index %d run %d times", threads, n, minBlock, i, h)
					}
				}
				if c := int(calls.Load()); c > threads*maxBlocks {
					t.Errorf("threads %d n %d min %d: %d blocks, more than %d", threads, n, minBlock, c, threads*maxBlocks)
				}
				blocks += int(calls.Load())
			}
		}
		p.Close()
	}
	t.Logf("4 thread counts × 9 lengths × 5 block sizes: %d blocks, every index once", blocks)
}

// TestPoolBalancedSteals holds the caller in its first block until the other workers have run
// every other block: the blocks of the caller's region must then have been taken over by them,
// so a slow thread does not hold up the loop.
func TestPoolBalancedSteals(t *testing.T) {
	const threads, n = 4, 4 * maxBlocks
	p := NewPool(threads)
	defer p.Close()
	var done atomic.Int64
	var stolen atomic.Int32
	p.mu.Lock()
	p.forBalanced(n, 1, func(lo, hi int64) {
		if lo == 0 {
			// The caller's first block: wait for the others to run all the rest. Unbounded: a
			// pool that never steals hangs here until the test binary's -timeout, where a
			// deadline would fail a healthy pool on a loaded machine.
			for done.Load() < n-(hi-lo) {
				time.Sleep(50 * time.Microsecond)
			}
		} else if lo < n/threads {
			stolen.Add(1)
		}
		done.Add(hi - lo)
	})
	p.mu.Unlock()
	t.Logf("%d of the caller's %d blocks run by other workers", stolen.Load(), maxBlocks)
	if done.Load() != n {
		t.Fatalf("covered %d of %d", done.Load(), n)
	}
	if stolen.Load() != maxBlocks-1 {
		t.Errorf("other workers ran %d of the caller's %d blocks left, want all", stolen.Load(), maxBlocks-1)
	}
}
