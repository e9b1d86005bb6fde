package catalog

import (
	"errors"
	"os"

	"golang.org/x/sys/windows"
)

// openUnbuffered opens path with FILE_FLAG_NO_BUFFERING, or normally when that is refused,
// saying which.
func openUnbuffered(path string) (*os.File, bool, error) {
	p, err := windows.UTF16PtrFromString(path)
	if err != nil {
		return nil, false, err
	}
	h, err := windows.CreateFile(p, windows.GENERIC_READ, windows.FILE_SHARE_READ, nil, windows.OPEN_EXISTING,
		windows.FILE_FLAG_NO_BUFFERING|windows.FILE_FLAG_SEQUENTIAL_SCAN, 0)
	if err != nil {
		f, err := os.Open(path)
		return f, false, err
	}
	return os.NewFile(uintptr(h), path), true, nil
}

func isInvalid(err error) bool { return errors.Is(err, windows.ERROR_INVALID_PARAMETER) }
