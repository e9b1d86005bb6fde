package directio

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// openUnbuffered opens path with O_DIRECT: reads go from the device to the buffer, past the
// page cache (the file system may still refuse the flag, with EINVAL).
func openUnbuffered(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|unix.O_DIRECT, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open O_DIRECT", Path: path, Err: errors.Unwrap(err)}
	}
	return f, nil
}
