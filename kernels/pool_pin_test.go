package kernels

import (
	"fmt"
	"runtime"
	"sync/atomic"
	"testing"
)

// TestPoolPinned: a pool whose workers bind themselves to physical cores covers every index
// once, like any other.
func TestPoolPinned(t *testing.T) {
	p := newPool(3, poolOptions{pin: true})
	defer p.Close()
	for _, n := range []int{1, 2, 3, 7, 100} {
		seen := make([]atomic.Int32, n)
		p.For(n, func(lo, hi int) {
			for i := lo; i < hi; i++ {
				seen[i].Add(1)
			}
		})
		for i := range seen {
			if c := seen[i].Load(); c != 1 {
				t.Fatalf("n=%d: index %d ran %d times", n, i, c)
			}
		}
	}
	t.Logf("pinned pool (binder set: %v) covered every index once", p.pin != nil)
}

// BenchmarkPoolForOptions puts the pool's speed choices side by side at 2, 4, 8 and 16 threads
// (as far as the machine has CPUs): "yield64" is the default (Gosched every 64 polls), run twice
// as an A/A control, "yield4096" yields 64 times less often, "pinned" is the default with
// workers bound to physical cores.
func BenchmarkPoolForOptions(b *testing.B) {
	fn := func(lo, hi int) {}
	for _, threads := range []int{2, 4, 8, 16} {
		if threads > runtime.NumCPU() {
			break
		}
		for _, v := range []struct {
			name string
			o    poolOptions
		}{{"yield64", poolOptions{}}, {"yield64-again", poolOptions{}}, {"yield4096", poolOptions{spinYield: 4096}}, {"pinned", poolOptions{pin: true}}} {
			b.Run(fmt.Sprintf("threads%d/%s", threads, v.name), func(b *testing.B) {
				p := newPool(threads, v.o)
				defer p.Close()
				for b.Loop() {
					p.For(64, fn)
				}
			})
		}
	}
}
