package catalog

import (
	"errors"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// openUnbuffered opens path and turns the page cache off for it with F_NOCACHE, or reads
// through the cache when that is refused, saying which.
func openUnbuffered(path string) (*os.File, bool, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, false, err
	}
	if _, err := unix.FcntlInt(f.Fd(), unix.F_NOCACHE, 1); err != nil {
		return f, false, nil
	}
	return f, true, nil
}

func isInvalid(err error) bool { return errors.Is(err, syscall.EINVAL) }
