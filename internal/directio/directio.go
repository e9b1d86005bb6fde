// Package directio opens files for reads that bypass the operating system's page cache: the
// expert store reads through it (so the page cache does not hold the streamed experts a second
// time) and so does the library's disk-speed probe (so it measures the disk, not memory).
//
// Open proves the mode with one aligned read before handing the file out, because some file
// systems accept the unbuffered open and then fail every read (tmpfs refuses the flag; Docker
// bind mounts have accepted it and then failed the reads). A caller that gets an error reads
// through the page cache instead; the error says why.
package directio

import (
	"fmt"
	"os"
	"unsafe"
)

// Align is what unbuffered reads need aligned: the file offset, the length and the buffer's
// address must each be a multiple of it. It is the largest logical sector size in common use
// (4096) and the x86-64 page, so it satisfies O_DIRECT and FILE_FLAG_NO_BUFFERING alike; a
// device that wants more fails Open's proving read and is read buffered.
const Align = 4096

// Open opens path read-only for reads that bypass the page cache (O_DIRECT on Linux,
// FILE_FLAG_NO_BUFFERING on Windows, F_NOCACHE on macOS) and proves it with one aligned read of
// the file's first Align bytes (so a file shorter than that is refused too). Every read of the
// file must be aligned as Align says; one that reaches past the end of the file returns the
// bytes up to the end and then an error, since the rest of it would start unaligned. When the
// system or the file system refuses, Open returns nil and an error saying why.
func Open(path string) (*os.File, error) {
	f, err := openUnbuffered(path)
	if err != nil {
		return nil, fmt.Errorf("directio: %w", err) // err names the path and the flag
	}
	if _, err := f.ReadAt(AlignedBuffer(Align), 0); err != nil {
		f.Close()
		return nil, fmt.Errorf("directio: %s opened unbuffered but an aligned read of its first %d bytes failed: %w",
			path, Align, err)
	}
	return f, nil
}

// AlignedBuffer returns n bytes of the Go heap starting on an Align boundary, for the reads of
// a file Open returned.
func AlignedBuffer(n int) []byte {
	raw := make([]byte, n+Align)
	skip := (Align - int(uintptr(unsafe.Pointer(unsafe.SliceData(raw)))%Align)) % Align
	return raw[skip : skip+n : skip+n]
}
