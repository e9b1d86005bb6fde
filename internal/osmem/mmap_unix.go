//go:build unix

package osmem

import (
	"os"
	"unsafe"

	"golang.org/x/sys/unix"
)

// alloc maps anonymous private memory: zeroed, and page-aligned by the kernel.
func alloc(n, align int, huge bool) (*Region, error) {
	const prot, flags = unix.PROT_READ | unix.PROT_WRITE, unix.MAP_ANON | unix.MAP_PRIVATE
	if align <= os.Getpagesize() {
		b, err := unix.Mmap(-1, 0, n, prot, flags)
		if err != nil {
			return nil, err
		}
		return &Region{Data: b, HugePages: huge && adviseHuge(b), free: func() error { return unix.Munmap(b) }}, nil
	}
	// One alignment more than needed, so that an aligned start exists inside the mapping.
	m := (n + align - 1) &^ (align - 1)
	raw, err := unix.Mmap(-1, 0, m+align, prot, flags)
	if err != nil {
		return nil, err
	}
	skip := alignUp(uintptr(unsafe.Pointer(unsafe.SliceData(raw))), align)
	data := raw[skip : skip+m]
	return &Region{Data: data[:n:n], HugePages: huge && adviseHuge(data), free: func() error { return unix.Munmap(raw) }}, nil
}
