//go:build linux

package kernels

import (
	"bufio"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/trochilus-llm/trochilus/gguf"
)

// streamVariant is one way of reading a four-row call's weights in BenchmarkStreamPrefetch:
// a Q4_K or a Q6_K four-row kernel, or a plain read of the same bytes (the ceiling).
type streamVariant struct {
	name string
	q4K  func(w []byte, rowBytes int, digits []int16, sums, scale []float64, dst []float32)
	q6K  func(w []byte, rowBytes int, digits []int16, scale []float64, dst []float32)
	read func(w []byte) uint64
	l2   bool // the kernel over the same 384 KiB of weights again and again (in L2), as many bytes
}

// BenchmarkStreamPrefetch streams expert-shaped matrices (1024×2048 and 2048×1024, Q4_K and
// Q6_K) from RAM through the fastest tier's four-row decode kernel on one thread, the rows of a
// call contiguous as in the engine, from a 512 MiB buffer on the Go heap ("heap") and in
// anonymous memory advised to use 2 MiB pages ("huge", as the engine keeps its weights). Each
// round runs every variant once, each over the next matrix of the buffer, timed in the
// thread's CPU time, and starts one variant later than the round before (a variant's speed
// depends on which one ran before it): "tier" is the tier's kernel, "again" the same kernel
// (the A/A control), "l2" the same kernel over the same 384 KiB again and again (the weights
// in L2: the kernel's speed with no RAM in the way) and "goread" a plain Go read of the same
// bytes in the same pieces (what one core streams with no arithmetic). It reports each
// variant's median GB/s and its median speed-up over "tier"; "hugeMiB" is the process's
// anonymous memory in huge pages after the fill (the heap buffer's own pages are not).
//
// To compare prefetch schemes, generate the variant kernels into a scratch copy of the
// package and add them to the variants: the kernels' comments name what was measured.
func BenchmarkStreamPrefetch(b *testing.B) {
	tiers := usableSIMD()
	if len(tiers) == 0 || tiers[len(tiers)-1].asm.q4Kr4 == nil || tiers[len(tiers)-1].asm.q6KQuad == nil {
		b.Skip("no four-row Q4_K and Q6_K kernels on this CPU")
	}
	a := tiers[len(tiers)-1].asm
	variants := []streamVariant{
		{name: "tier", q4K: a.q4Kr4, q6K: a.q6KQuad},
		{name: "again", q4K: a.q4Kr4, q6K: a.q6KQuad},
		{name: "l2", q4K: a.q4Kr4, q6K: a.q6KQuad, l2: true},
		{name: "goread", read: goRead},
	}
	const size = 512 << 20
	rng := rand.New(rand.NewPCG(41, 42))
	for _, where := range []string{"heap", "huge"} {
		buf, free, err := streamBuffer(size, where == "huge")
		if err != nil {
			b.Fatal(err)
		}
		for _, typ := range []gguf.Type{gguf.TypeQ4_K, gguf.TypeQ6_K} {
			for _, shape := range [][2]int{{1024, 2048}, {2048, 1024}} {
				rows, cols := shape[0], shape[1]
				m := randMatrix(rng, typ, rows, cols)
				data := buf[:len(buf)/len(m.Data)*len(m.Data)]
				for i := 0; i < len(data); i += len(m.Data) {
					copy(data[i:], m.Data)
				}
				huge := anonHugeMiB()
				in := preparedBatch(b, randFloats(rng, cols, false, false), 1, cols)
				x := &in.q4k[0]
				b.Run(fmt.Sprintf("%s/%v/%dx%d", where, typ, rows, cols), func(b *testing.B) {
					runtime.LockOSThread()
					defer runtime.UnlockOSThread()
					times := make([][]float64, len(variants))
					names := make([]string, len(variants))
					var sink float32
					var sum uint64
					off := 0
					call := 4 * m.RowBytes()
					for i := range variants {
						names[i] = variants[i].name
					}
					round := 0
					for b.Loop() {
						// Each round starts one variant later, so that no variant always
						// follows the same one.
						round++
						for i := range variants {
							v := (round + i) % len(variants)
							sv := variants[v]
							w := data[off : off+len(m.Data)]
							off = (off + len(m.Data)) % len(data)
							hot := (384 << 10) / call * call
							start := threadCPUTime()
							for r := 0; r+call <= len(w); r += call {
								c := w[r : r+call]
								if sv.l2 {
									h := r % hot
									c = m.Data[h : h+call]
								}
								switch {
								case sv.read != nil:
									sum += sv.read(c)
								case typ == gguf.TypeQ4_K:
									var y [4]float32
									sv.q4K(c, call/4, x.wide.digits, x.wide.sums, x.scale, y[:])
									sink += y[0]
								default:
									var y [4]float32
									sv.q6K(c, call/4, x.wide.digits, x.scale, y[:])
									sink += y[0]
								}
							}
							times[v] = append(times[v], float64(threadCPUTime()-start))
						}
					}
					reportRatios(b, times, names, float64(len(m.Data)), "GB/s")
					b.ReportMetric(float64(huge), "hugeMiB")
					if sink == 1 && sum == 1 {
						b.Log("") // keeps the results alive
					}
				})
			}
		}
		if err := free(); err != nil {
			b.Fatal(err)
		}
	}
}

// goRead sums w as 64-bit words, eight independent sums (whole words only).
func goRead(w []byte) uint64 {
	u := unsafe.Slice((*uint64)(unsafe.Pointer(unsafe.SliceData(w))), len(w)/8)
	var s [8]uint64
	for i := 0; i+8 <= len(u); i += 8 {
		s[0] += u[i]
		s[1] += u[i+1]
		s[2] += u[i+2]
		s[3] += u[i+3]
		s[4] += u[i+4]
		s[5] += u[i+5]
		s[6] += u[i+6]
		s[7] += u[i+7]
	}
	return s[0] + s[1] + s[2] + s[3] + s[4] + s[5] + s[6] + s[7]
}

// streamBuffer returns size bytes on the Go heap, or (huge) in anonymous memory starting on a 2
// MiB boundary and advised to use huge pages, as engine.allocWeights keeps the weights, with
// the function that frees it.
func streamBuffer(size int, huge bool) ([]byte, func() error, error) {
	if !huge {
		return make([]byte, size), func() error { return nil }, nil
	}
	const page = 2 << 20
	raw, err := unix.Mmap(-1, 0, size+page, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		return nil, nil, fmt.Errorf("map %d bytes: %w", size+page, err)
	}
	skip := 0
	if rem := int(uintptr(unsafe.Pointer(unsafe.SliceData(raw))) % page); rem != 0 {
		skip = page - rem
	}
	buf := raw[skip : skip+size]
	if err := unix.Madvise(buf, unix.MADV_HUGEPAGE); err != nil {
		return nil, nil, fmt.Errorf("advise huge pages: %w", err)
	}
	return buf, func() error { return unix.Munmap(raw) }, nil
}

// anonHugeMiB returns the process's anonymous memory in huge pages (AnonHugePages of
// /proc/self/smaps_rollup) in MiB, or -1 where it cannot be read.
func anonHugeMiB() int {
	f, err := os.Open("/proc/self/smaps_rollup")
	if err != nil {
		return -1
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if v, ok := strings.CutPrefix(s.Text(), "AnonHugePages:"); ok {
			kb, err := strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")))
			if err != nil {
				return -1
			}
			return kb >> 10
		}
	}
	return -1
}
