package directio

import (
	"os"
	"testing"

	"golang.org/x/sys/unix"
)

// checkUnbuffered checks that the kernel holds f open with O_DIRECT.
func checkUnbuffered(t *testing.T, f *os.File) {
	t.Helper()
	flags, err := unix.FcntlInt(f.Fd(), unix.F_GETFL, 0)
	if err != nil {
		t.Fatal(err)
	}
	if flags&unix.O_DIRECT == 0 {
		t.Errorf("file status flags %#x lack O_DIRECT", flags)
	}
}
