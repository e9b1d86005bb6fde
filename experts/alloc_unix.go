//go:build unix

package experts

import "golang.org/x/sys/unix"

// allocate returns n bytes of page-aligned anonymous memory outside the Go heap and the
// function that frees them.
func allocate(n int64) ([]byte, func() error, error) {
	b, err := unix.Mmap(-1, 0, int(n), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_ANON|unix.MAP_PRIVATE)
	if err != nil {
		return nil, nil, err
	}
	return b, func() error { return unix.Munmap(b) }, nil
}
