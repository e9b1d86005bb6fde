//go:build !linux && !darwin && !windows

package directio

import (
	"errors"
	"fmt"
	"os"
	"runtime"
)

// openUnbuffered refuses: the unbuffered flags of the other systems (FreeBSD's O_DIRECT, say)
// are not wired up, as none of them is a platform the project builds for.
func openUnbuffered(path string) (*os.File, error) {
	return nil, fmt.Errorf("%s: unbuffered reads are not wired up on %s: %w", path, runtime.GOOS, errors.ErrUnsupported)
}
