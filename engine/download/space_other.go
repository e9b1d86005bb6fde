//go:build !linux && !darwin && !freebsd && !windows

package download

import "errors"

// freeSpace is not known on this system; the check before a download is skipped.
func freeSpace(string) (uint64, error) { return 0, errors.ErrUnsupported }

func syncDir(string) {}
