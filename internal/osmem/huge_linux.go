package osmem

import "golang.org/x/sys/unix"

// HugePagesSupported reports whether Alloc's huge argument does anything on this system: on
// Linux it asks for transparent huge pages (MADV_HUGEPAGE).
const HugePagesSupported = true

// adviseHuge asks the kernel to back b with transparent huge pages and reports whether it took
// the advice.
func adviseHuge(b []byte) bool { return unix.Madvise(b, unix.MADV_HUGEPAGE) == nil }

// AdviseSmallPages asks the kernel to back b with ordinary pages even where transparent huge
// pages are always on (MADV_NOHUGEPAGE), so that only the pages written are faulted in and
// zeroed. It is advice: an error leaves b as it was, usable.
func AdviseSmallPages(b []byte) { _ = unix.Madvise(b, unix.MADV_NOHUGEPAGE) }
