// Package osmem allocates memory outside the Go heap, aligned as asked, with an explicit free:
// the engine's resident weights and KV caches (on 2 MiB boundaries, in huge pages on Linux) and
// the expert store's slots (page-aligned, so that unbuffered reads land in them). The collector
// neither scans nor counts such memory, so gigabytes of weights do not raise the heap goal, and
// Free gives it back to the system at once. Where the system offers no anonymous memory to the
// program (js, wasip1, plan9) the bytes come from the Go heap and Free leaves them to the
// collector.
package osmem

import (
	"fmt"
	"math"
)

// HugePage is the size of the transparent huge pages Linux backs aligned anonymous memory with
// (x86-64, and arm64 with 4 KiB base pages).
const HugePage = 2 << 20

// A Region is memory Alloc gave.
type Region struct {
	// Data is the bytes asked for, zeroed, starting on the alignment asked for.
	Data []byte
	// HugePages reports that the kernel took the advice to back Data with huge pages.
	HugePages bool

	size int
	free func() error // nil once freed
}

// Alloc returns n zeroed bytes starting on a multiple of align (a power of two): from mmap on
// unix systems, VirtualAlloc on Windows, the Go heap elsewhere. With huge set, and where
// HugePagesSupported, the region (rounded out to whole multiples of align, so that an align of
// HugePage covers whole huge pages) is advised MADV_HUGEPAGE, so that Linux backs it with huge
// pages where it can (also under the common THP setting "madvise"); a kernel that refuses the
// advice still gives the memory, with Region.HugePages false.
func Alloc(n int64, align int, huge bool) (*Region, error) {
	if n <= 0 {
		return nil, fmt.Errorf("osmem: allocate %d bytes: nothing to allocate", n)
	}
	if align <= 0 || align&(align-1) != 0 {
		return nil, fmt.Errorf("osmem: allocate %d bytes: alignment %d is not a power of two", n, align)
	}
	if n > math.MaxInt-2*int64(align) {
		return nil, fmt.Errorf("osmem: allocate %d bytes: they do not fit this platform's address space", n)
	}
	r, err := alloc(int(n), align, huge)
	if err != nil {
		return nil, fmt.Errorf("osmem: allocate %d bytes aligned to %d: %w", n, align, err)
	}
	r.size = int(n)
	return r, nil
}

// Free gives the region back to the system; its Data must not be used afterwards (not through
// a copy of the slice either). A second call does nothing. Free must not run concurrently with
// itself.
func (r *Region) Free() error {
	if r == nil || r.free == nil {
		return nil
	}
	free := r.free
	r.free, r.Data = nil, nil
	if err := free(); err != nil {
		return fmt.Errorf("osmem: free %d bytes: %w", r.size, err)
	}
	return nil
}

// alignUp returns the offset from p to the next multiple of align (a power of two).
func alignUp(p uintptr, align int) int {
	return int(-p & uintptr(align-1))
}
