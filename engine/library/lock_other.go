//go:build !unix && !windows

package library

import (
	"errors"
	"os"
)

// lockFile: this system offers no file lock the package uses.
func lockFile(*os.File) (bool, error) { return false, errors.ErrUnsupported }

func unlockFile(*os.File) error { return nil }
