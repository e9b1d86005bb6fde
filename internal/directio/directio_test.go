package directio

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"unsafe"
)

// writeFile writes n bytes of a pattern to a new file in dir and returns its path and bytes.
func writeFile(t *testing.T, dir string, n int) (string, []byte) {
	t.Helper()
	data := make([]byte, n)
	for i := range data {
		data[i] = byte(i*7 + i>>12)
	}
	path := filepath.Join(dir, "data.bin")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return path, data
}

// TestOpenReads opens a file unbuffered where the test's file system allows it and checks that
// aligned reads give its bytes, the one past the end included. Where the file system refuses,
// it checks that the refusal names the file.
func TestOpenReads(t *testing.T) {
	path, data := writeFile(t, t.TempDir(), 3*Align+123)
	f, err := Open(path)
	if err != nil {
		if f != nil || !strings.Contains(err.Error(), path) {
			t.Fatalf("Open refused with file %v and error %q, want nil and an error naming %s", f, err, path)
		}
		t.Logf("this file system reads buffered (%s): %v", runtime.GOOS, err)
		return
	}
	defer f.Close()
	buf := AlignedBuffer(2 * Align)
	if n, err := f.ReadAt(buf, Align); err != nil || !bytes.Equal(buf[:n], data[Align:3*Align]) {
		t.Fatalf("aligned read of 2 pages at %d: %d bytes, %v, or not the file's bytes", Align, n, err)
	}
	// Past the end: the tail arrives, then an error (EOF, or the refused unaligned remainder).
	n, err := f.ReadAt(buf, 2*Align)
	if n != Align+123 || err == nil || !bytes.Equal(buf[:n], data[2*Align:]) {
		t.Fatalf("read over the end: %d bytes (%v), want the %d of the tail and an error", n, err, Align+123)
	}
	checkUnbuffered(t, f)
}

// TestOpenRefuses checks the refusals: a missing file, and one too short for the proving read.
func TestOpenRefuses(t *testing.T) {
	dir := t.TempDir()
	if f, err := Open(filepath.Join(dir, "missing")); f != nil || !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Open of a missing file: %v, %v; want nil and fs.ErrNotExist", f, err)
	}
	path, _ := writeFile(t, dir, Align-1)
	if f, err := Open(path); f != nil || err == nil || !strings.Contains(err.Error(), path) {
		t.Errorf("Open of a %d-byte file: %v, %v; want nil and an error naming it", Align-1, f, err)
	}
}

func TestAlignedBuffer(t *testing.T) {
	for _, n := range []int{0, 1, Align - 1, Align, 3*Align + 5, 1 << 20} {
		b := AlignedBuffer(n)
		if len(b) != n || cap(b) != n {
			t.Errorf("AlignedBuffer(%d): len %d cap %d", n, len(b), cap(b))
		}
		if p := uintptr(unsafe.Pointer(unsafe.SliceData(b))); n > 0 && p%Align != 0 {
			t.Errorf("AlignedBuffer(%d) starts at %#x, not on a %d-byte boundary", n, p, Align)
		}
	}
}
