//go:build linux || darwin

package tokenizer

import (
	"syscall"
	"testing"
	"time"
)

// cpuTime returns the process's user+system CPU time, so that speed can be reported per CPU
// second on a machine that other work is also using.
func cpuTime(tb testing.TB) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		tb.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
