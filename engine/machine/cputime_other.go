//go:build !unix && !windows

package machine

import "time"

// ProcessCPUTime is not available on this system.
func ProcessCPUTime() (time.Duration, bool) { return 0, false }
