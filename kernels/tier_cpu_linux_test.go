package kernels

import "golang.org/x/sys/unix"

// threadCPUTime returns the CPU time the calling OS thread has used, in nanoseconds.
func threadCPUTime() int64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts); err != nil {
		return 0
	}
	return ts.Nano()
}
