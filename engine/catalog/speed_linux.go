package catalog

import (
	"errors"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// openUnbuffered opens path with O_DIRECT, or normally when the file system refuses it
// (tmpfs, some overlay and network file systems), saying which.
func openUnbuffered(path string) (*os.File, bool, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|unix.O_DIRECT, 0)
	if err == nil {
		return f, true, nil
	}
	if !isInvalid(err) {
		return nil, false, err
	}
	f, err = os.Open(path)
	return f, false, err
}

func isInvalid(err error) bool { return errors.Is(err, syscall.EINVAL) }
