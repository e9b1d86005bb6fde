//go:build linux || darwin || freebsd

package download

import (
	"os"

	"golang.org/x/sys/unix"
)

// freeSpace returns the bytes an unprivileged user may still write on dir's file system.
func freeSpace(dir string) (uint64, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return 0, &os.PathError{Op: "statfs", Path: dir, Err: err}
	}
	return uint64(st.Bavail) * uint64(st.Bsize), nil
}

// syncDir makes a rename inside dir durable. Failure only weakens durability, so it is ignored.
func syncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
}
