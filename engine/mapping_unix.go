//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package engine

import (
	"os"

	"golang.org/x/sys/unix"
)

func mapPlatform(f *os.File, size int) (*mapping, error) {
	data, err := unix.Mmap(int(f.Fd()), 0, size, unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		return nil, err
	}
	return &mapping{data: data, unmap: func() error { return unix.Munmap(data) }}, nil
}
