package download

import (
	"os"

	"golang.org/x/sys/windows"
)

// freeSpace returns the bytes the calling user may still write on dir's volume.
func freeSpace(dir string) (uint64, error) {
	p, err := windows.UTF16PtrFromString(dir)
	if err != nil {
		return 0, err
	}
	var avail, total, free uint64
	if err := windows.GetDiskFreeSpaceEx(p, &avail, &total, &free); err != nil {
		return 0, &os.PathError{Op: "GetDiskFreeSpaceEx", Path: dir, Err: err}
	}
	return avail, nil
}

// syncDir does nothing: Windows makes a rename durable without syncing the folder.
func syncDir(string) {}
