//go:build windows

package engine

import (
	"os"
	"unsafe"

	"golang.org/x/sys/windows"
)

func mapPlatform(f *os.File, size int) (*mapping, error) {
	n := uint64(size)
	h, err := windows.CreateFileMapping(windows.Handle(f.Fd()), nil, windows.PAGE_READONLY, uint32(n>>32), uint32(n), nil)
	if err != nil {
		return nil, err
	}
	addr, err := windows.MapViewOfFile(h, windows.FILE_MAP_READ, 0, 0, uintptr(size))
	if err != nil {
		windows.CloseHandle(h)
		return nil, err
	}
	// The view is not Go memory, so the address may be read as a pointer; going through &addr
	// says so without a uintptr-to-pointer conversion (which vet rightly flags for Go memory).
	data := unsafe.Slice(*(**byte)(unsafe.Pointer(&addr)), size)
	return &mapping{data: data, unmap: func() error {
		err := windows.UnmapViewOfFile(addr)
		if cerr := windows.CloseHandle(h); err == nil {
			err = cerr
		}
		return err
	}}, nil
}
