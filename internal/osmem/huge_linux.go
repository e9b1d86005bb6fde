package osmem

import "golang.org/x/sys/unix"

// HugePagesSupported reports whether Alloc's huge argument does anything on this system: on
// Linux it asks for transparent huge pages (MADV_HUGEPAGE).
const HugePagesSupported = true

// adviseHuge asks the kernel to back b with transparent huge pages and reports whether it took
// the advice.
func adviseHuge(b []byte) bool { return unix.Madvise(b, unix.MADV_HUGEPAGE) == nil }
