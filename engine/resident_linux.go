package engine

import (
	"fmt"
	"unsafe"

	"golang.org/x/sys/unix"
)

// allocWeights returns size bytes of zeroed anonymous memory, starting on a 2 MiB boundary and
// marked MADV_HUGEPAGE, so that the kernel backs it with huge pages where it can (also under the
// common THP setting "madvise"). A kernel that refuses the advice still gives the memory.
func allocWeights(size int64) (*mapping, error) {
	if size > int64(^uint(0)>>1)-2*hugePage {
		return nil, fmt.Errorf("%d bytes do not fit this platform's address space", size)
	}
	// One huge page more than needed, so that an aligned start exists inside the mapping.
	n := (int(size) + hugePage - 1) &^ (hugePage - 1)
	raw, err := unix.Mmap(-1, 0, n+hugePage, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		return nil, fmt.Errorf("allocate %d bytes for the weights: %w", size, err)
	}
	skip := 0
	if rem := int(uintptr(unsafe.Pointer(unsafe.SliceData(raw))) % hugePage); rem != 0 {
		skip = hugePage - rem
	}
	data := raw[skip : skip+n]
	huge := unix.Madvise(data, unix.MADV_HUGEPAGE) == nil
	return &mapping{data: data[:size:size], resident: true, hugePages: huge,
		unmap: func() error { return unix.Munmap(raw) }}, nil
}
