package osmem

import (
	"math"
	"os"
	"strings"
	"testing"
	"unsafe"
)

// TestAlloc allocates regions of several sizes and alignments and checks each: its length, its
// start, zeroed bytes that can be written, and a Free that can be repeated.
func TestAlloc(t *testing.T) {
	for _, align := range []int{1, 4096, 64 << 10, HugePage} {
		for _, n := range []int64{1, 4095, 4096, 3*HugePage + 5} {
			r, err := Alloc(n, align, false)
			if err != nil {
				t.Fatalf("Alloc(%d, %d): %v", n, align, err)
			}
			b := r.Data
			if int64(len(b)) != n || int64(cap(b)) != n {
				t.Errorf("Alloc(%d, %d): len %d cap %d", n, align, len(b), cap(b))
			}
			if p := uintptr(unsafe.Pointer(unsafe.SliceData(b))); p%uintptr(align) != 0 {
				t.Errorf("Alloc(%d, %d) starts at %#x", n, align, p)
			}
			for i, v := range b {
				if v != 0 {
					t.Fatalf("Alloc(%d, %d): byte %d is %d, not zero", n, align, i, v)
				}
			}
			b[0], b[n-1] = 1, 2
			if r.HugePages {
				t.Errorf("Alloc(%d, %d) without huge reports huge pages", n, align)
			}
			if err := r.Free(); err != nil {
				t.Errorf("Free of Alloc(%d, %d): %v", n, align, err)
			}
			if err := r.Free(); err != nil || r.Data != nil {
				t.Errorf("second Free: %v, Data %d bytes; want nil and none", err, len(r.Data))
			}
		}
	}
}

// TestAllocHuge asks for huge pages: a Linux kernel with transparent huge pages takes the
// advice; elsewhere the region comes without them.
func TestAllocHuge(t *testing.T) {
	r, err := Alloc(2*HugePage+1, HugePage, true)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Free()
	if p := uintptr(unsafe.Pointer(unsafe.SliceData(r.Data))); p%HugePage != 0 {
		t.Errorf("huge region starts at %#x, not on a 2 MiB boundary", p)
	}
	_, thp := os.Stat("/sys/kernel/mm/transparent_hugepage/enabled")
	switch {
	case !HugePagesSupported && r.HugePages:
		t.Error("huge pages reported where the system has none to give")
	case HugePagesSupported && thp == nil && !r.HugePages:
		t.Error("the kernel has transparent huge pages but refused MADV_HUGEPAGE")
	}
	r.Data[len(r.Data)-1] = 1
}

func TestAllocErrors(t *testing.T) {
	for _, c := range []struct {
		n     int64
		align int
		want  string
	}{
		{0, 4096, "nothing to allocate"},
		{-1, 4096, "nothing to allocate"},
		{1, 3, "not a power of two"},
		{1, 0, "not a power of two"},
		{math.MaxInt64, 4096, "do not fit"},
	} {
		if r, err := Alloc(c.n, c.align, false); r != nil || err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Alloc(%d, %d): %v, %v; want an error saying %q", c.n, c.align, r, err, c.want)
		}
	}
}
