package directio

import (
	"os"

	"golang.org/x/sys/unix"
)

// openUnbuffered opens path and turns the page cache off for it with F_NOCACHE (macOS has no
// O_DIRECT; F_NOCACHE asks for no alignment, but the reads keep Align's so one code path
// serves every system).
func openUnbuffered(path string) (*os.File, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	if _, err := unix.FcntlInt(f.Fd(), unix.F_NOCACHE, 1); err != nil {
		f.Close()
		return nil, &os.PathError{Op: "fcntl F_NOCACHE", Path: path, Err: err}
	}
	return f, nil
}
