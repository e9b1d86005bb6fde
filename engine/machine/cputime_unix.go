//go:build unix

package machine

import (
	"syscall"
	"time"
)

// ProcessCPUTime returns the processor time (user and system) this process has used so far. On
// a busy machine it measures work where wall-clock time measures the queue.
func ProcessCPUTime() (time.Duration, bool) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, false
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), true
}
