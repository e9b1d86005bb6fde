package machine

import (
	"time"

	"golang.org/x/sys/windows"
)

// ProcessCPUTime returns the processor time (user and system) this process has used so far. On
// a busy machine it measures work where wall-clock time measures the queue.
func ProcessCPUTime() (time.Duration, bool) {
	var creation, exit, kernel, user windows.Filetime
	if err := windows.GetProcessTimes(windows.CurrentProcess(), &creation, &exit, &kernel, &user); err != nil {
		return 0, false
	}
	// A Filetime counts 100 ns ticks.
	ticks := func(f windows.Filetime) int64 { return int64(f.HighDateTime)<<32 | int64(f.LowDateTime) }
	return time.Duration((ticks(kernel) + ticks(user)) * 100), true
}
