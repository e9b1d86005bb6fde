package directio

import (
	"os"

	"golang.org/x/sys/windows"
)

// openUnbuffered opens path with FILE_FLAG_NO_BUFFERING: reads bypass the system cache, and
// their offsets, lengths and buffer addresses must be multiples of the volume's sector size
// (Align covers the 512- and 4096-byte sectors of today's disks). It shares the file for reading
// and writing, as os.Open does, so that it refuses no file os.Open would open.
func openUnbuffered(path string) (*os.File, error) {
	p, err := windows.UTF16PtrFromString(path)
	if err != nil {
		return nil, err
	}
	h, err := windows.CreateFile(p, windows.GENERIC_READ, windows.FILE_SHARE_READ|windows.FILE_SHARE_WRITE, nil,
		windows.OPEN_EXISTING, windows.FILE_FLAG_NO_BUFFERING, 0)
	if err != nil {
		return nil, &os.PathError{Op: "CreateFile FILE_FLAG_NO_BUFFERING", Path: path, Err: err}
	}
	return os.NewFile(uintptr(h), path), nil
}
