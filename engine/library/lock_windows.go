//go:build windows

package library

import (
	"errors"
	"os"

	"golang.org/x/sys/windows"
)

// lockRange is where the lock sits: one byte at 4 GiB, beyond the process id at the file's
// start, because a Windows byte-range lock also stops other processes reading what it covers.
var lockRange = windows.Overlapped{OffsetHigh: 1}

// lockFile takes an exclusive byte-range lock on f without waiting; held is false when
// another handle has it.
func lockFile(f *os.File) (held bool, err error) {
	ol := lockRange
	err = windows.LockFileEx(windows.Handle(f.Fd()), windows.LOCKFILE_EXCLUSIVE_LOCK|windows.LOCKFILE_FAIL_IMMEDIATELY, 0, 1, 0, &ol)
	if errors.Is(err, windows.ERROR_LOCK_VIOLATION) {
		return false, nil
	}
	return err == nil, err
}

func unlockFile(f *os.File) error {
	ol := lockRange
	return windows.UnlockFileEx(windows.Handle(f.Fd()), 0, 1, 0, &ol)
}
