package kernels

import (
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"strings"
	"testing"
	"unsafe"

	"github.com/trochilus-llm/trochilus/gguf"
	"golang.org/x/sys/unix"
)

// guardedCopy copies src into new pages with an inaccessible page on each side, flush against
// the front guard page (atEnd false) or the back one (atEnd true), so that a kernel reading one
// element before or after the slice faults instead of reading a neighbour. free unmaps them.
func guardedCopy[T int16 | float64 | byte](src []T, atEnd bool) (dst []T, free func(), err error) {
	var zero T
	n := len(src) * int(unsafe.Sizeof(zero))
	page := os.Getpagesize()
	size := (max(n, 1) + page - 1) / page * page
	mem, err := unix.Mmap(-1, 0, size+2*page, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANON)
	if err != nil {
		return nil, nil, fmt.Errorf("mmap of %d bytes: %w", size+2*page, err)
	}
	free = func() { unix.Munmap(mem) }
	for _, p := range [][]byte{mem[:page], mem[len(mem)-page:]} {
		if err := unix.Mprotect(p, unix.PROT_NONE); err != nil {
			free()
			return nil, nil, fmt.Errorf("mprotect: %w", err)
		}
	}
	start := page
	if atEnd {
		start = len(mem) - page - n
	}
	if len(src) == 0 {
		return src[:0:0], free, nil
	}
	dst = unsafe.Slice((*T)(unsafe.Pointer(&mem[start])), len(src))
	copy(dst, src)
	return dst, free, nil
}

// guarded is guardedCopy in a test: it fails the test on error and unmaps at its end.
func guarded[T int16 | float64 | byte](t *testing.T, src []T, atEnd bool) []T {
	dst, free, err := guardedCopy(src, atEnd)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(free)
	return dst
}

// TestQ4KRows4Bounds runs each four-row Q4_K kernel on rows, digits, sums and scales placed
// flush against an inaccessible page, before and after (one of each per run), for rows of 0
// to 9 blocks and 1 to 3 groups: a kernel that reads one byte outside its arguments (the
// software-pipelined unpack of a next block past the last one, say) faults, which kills the
// test binary. Each result must also equal dotQ4K. A child process checks that the guard
// works: a kernel told of one block more than each row has must die there.
func TestQ4KRows4Bounds(t *testing.T) {
	tiers := q4KRows4Tiers(t)
	if os.Getenv("TROCHILUS_GUARD_CHILD") == "1" {
		guardChild(tiers[len(tiers)-1].asm.q4Kr4)
		return
	}
	checked := 0
	for _, st := range tiers {
		checked += checkQ4KRows4Bounds(t, st.name, st.asm.q4Kr4)
	}
	t.Logf("%d results of kernels whose arguments touch inaccessible pages equal dotQ4K, no fault", checked)

	// The guard must catch an over-read: the same kernel, told of one block more than the rows
	// hold, in a child process.
	cmd := exec.Command(os.Args[0], "-test.run=^TestQ4KRows4Bounds$")
	cmd.Env = append(os.Environ(), "TROCHILUS_GUARD_CHILD=1")
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "SIGSEGV") {
		t.Fatalf("a kernel reading one block past its rows ran without a fault (err %v):\n%s", err, out)
	}
	t.Logf("a kernel reading one block past its rows faults (%v)", err)
}

// checkQ4KRows4Bounds runs k on rows of 0 to 9 blocks, 1 to 3 groups, with each argument flush
// against an inaccessible page (w and sums at one end, digits and scale at the other, then the
// other way round), compares every result with dotQ4K and returns the number compared.
func checkQ4KRows4Bounds(t *testing.T, name string, k q4KRows4Kernel) (checked int) {
	rng := rand.New(rand.NewPCG(47, 48))
	for blocks := range 10 {
		n := blocks * kElems
		for groups := 1; groups <= 3; groups++ {
			m := randMatrix(rng, gguf.TypeQ4_K, 4*groups, n)
			var in q4KInput
			if err := prepareQ4K(&in, randFloats(rng, n, false, false)); err != nil {
				t.Fatal(err)
			}
			for _, atEnd := range []bool{false, true} {
				w := guarded(t, m.Data, atEnd)
				digits := guarded(t, in.wide.digits[:2*n], !atEnd)
				sums := guarded(t, in.wide.sums[:n/32], atEnd)
				scale := guarded(t, in.scale[:blocks], !atEnd)
				dst := make([]float32, 4*groups)
				k(w, m.RowBytes(), digits, sums, scale, dst)
				for r := range dst {
					checked++
					if want := dotQ4K(m.Row(r), &in); !sameBits(dst[r], want) {
						t.Errorf("%s, %d blocks, %d groups, guard at the end %v: row %d = %g, want %g", name, blocks, groups, atEnd, r, dst[r], want)
					}
				}
			}
		}
	}
	return checked
}

// guardChild runs k over rows one block shorter than the input's blocks, the rows flush
// against an inaccessible page: it must fault.
func guardChild(k q4KRows4Kernel) {
	rng := rand.New(rand.NewPCG(49, 50))
	const blocks = 3
	m := randMatrix(rng, gguf.TypeQ4_K, 4, blocks*kElems)
	var in q4KInput
	if err := prepareQ4K(&in, randFloats(rng, (blocks+1)*kElems, false, false)); err != nil {
		panic(err)
	}
	w, _, err := guardedCopy(m.Data, true)
	if err != nil {
		panic(err)
	}
	dst := make([]float32, 4)
	// rowBytes stays that of the shorter rows, so rows 0-2 read their neighbours' first
	// block and row 3 reads past the end.
	k(w, m.RowBytes(), in.wide.digits, in.wide.sums, in.scale, dst)
	os.Exit(0) // not reached when the guard works
}
