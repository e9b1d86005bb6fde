package machine

import (
	"context"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/trochilus-llm/trochilus/gpu"
)

func TestProbe(t *testing.T) {
	p, err := Probe(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("profile:\n%s", p)
	if p.OS != runtime.GOOS || p.Arch != runtime.GOARCH {
		t.Errorf("system %s/%s, want %s/%s", p.OS, p.Arch, runtime.GOOS, runtime.GOARCH)
	}
	if p.PhysicalCores < 1 {
		t.Errorf("physical cores %d, want at least 1", p.PhysicalCores)
	}
	if p.LogicalCores < p.PhysicalCores {
		t.Errorf("logical cores %d < physical %d", p.LogicalCores, p.PhysicalCores)
	}
	if p.UsableCPUs < 1 || p.UsableCPUs > p.LogicalCores {
		t.Errorf("usable CPUs %d, want 1..%d (logical)", p.UsableCPUs, p.LogicalCores)
	}
	if p.RAMAvailable == 0 || p.RAMAvailable >= p.RAMTotal {
		t.Errorf("RAM available %d, total %d: want total > available > 0", p.RAMAvailable, p.RAMTotal)
	}
	if p.CPU == "" {
		t.Errorf("no CPU brand")
	}
	// The compiler's baseline is a floor: code built for GOAMD64=v3 runs only where AVX2, FMA
	// and F16C exist, and arm64 always has ASIMD.
	if runtime.GOARCH == "arm64" && !p.Features.ASIMD {
		t.Errorf("arm64 without ASIMD")
	}
	if p.Features.AVX512BW && !p.Features.AVX512F {
		t.Errorf("AVX512BW without AVX512F")
	}
}

func TestFeatureNames(t *testing.T) {
	f := Features{AVX2: true, F16C: true, AVX512VNNI: true, SVE: true}
	if got, want := strings.Join(f.Names(), " "), "AVX2 F16C AVX512VNNI SVE"; got != want {
		t.Errorf("names %q, want %q", got, want)
	}
	if n := (Features{}).Names(); len(n) != 0 {
		t.Errorf("empty features named %q", n)
	}
}

func TestWrite(t *testing.T) {
	p := Profile{OS: "linux", Arch: "amd64", CPU: "AMD EPYC 9R14", Vendor: "AMD", PhysicalCores: 2,
		LogicalCores: 4, UsableCPUs: 4, Features: Features{AVX2: true, FMA: true},
		L1D: 48 << 10, L3: 32 << 20, RAMTotal: 24 << 30, RAMAvailable: 3 << 29,
		GPUStatus: "no CUDA driver: libcuda.so.1: cannot open shared object file"}
	want := "system:     linux/amd64\n" +
		"cpu:        AMD EPYC 9R14\n" +
		"cores:      2 physical, 4 logical, 4 usable by this process\n" +
		"caches:     L1d 48.00 KiB, L3 32.00 MiB\n" +
		"simd:       AVX2 FMA\n" +
		"ram:        24.00 GiB total, 1.50 GiB available\n" +
		"gpu:        none (no CUDA driver: libcuda.so.1: cannot open shared object file)\n"
	if got := p.String(); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	// As the H200 lent in session 5 reported itself.
	p.GPUStatus, p.CUDA = "", "13.0"
	p.GPUs = []gpu.Device{{Name: "NVIDIA H200", Major: 9, Minor: 0, SMs: 132, Memory: 150_110_945_280}}
	want = strings.Replace(want, "gpu:        none (no CUDA driver: libcuda.so.1: cannot open shared object file)",
		"gpu:        NVIDIA H200 (compute 9.0, 132 SMs, 139.8 GiB), CUDA 13.0", 1)
	if got := p.String(); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	// In a memory cgroup (a container, tools/emulate.sh): the limit, said to be one.
	p.RAMCgroup = true
	want = strings.Replace(want, "1.50 GiB available\n", "1.50 GiB available (the limit of this process's memory cgroup)\n", 1)
	if got := p.String(); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}

func TestProcessCPUTime(t *testing.T) {
	before, ok := ProcessCPUTime()
	if !ok {
		t.Skip("no process CPU time on this system")
	}
	x := uint64(1)
	for i := 0; i < 50_000_000; i++ { // about 20-50 ms of work
		x = x*6364136223846793005 + 1442695040888963407
	}
	after, _ := ProcessCPUTime()
	t.Logf("busy loop (%d): %v of CPU", x>>63, after-before)
	if after-before < time.Millisecond {
		t.Errorf("a busy loop used %v of CPU, want at least 1 ms", after-before)
	}
}

// TestReserveFor: a machine keeps the larger of 2 GiB and a tenth of its RAM for the rest of
// the system; a memory cgroup keeps 256 MiB and a 32nd of its limit for this process.
func TestReserveFor(t *testing.T) {
	const mib, gib = 1 << 20, 1 << 30
	for _, c := range []struct {
		total  uint64
		cgroup bool
		want   uint64
	}{
		{3 * gib, true, 352 * mib}, {11 * gib / 2, true, 432 * mib}, {25 * gib / 2, true, 656 * mib},
		{3 * gib, false, 2 * gib}, {8 * gib, false, 2 * gib}, {16 * gib, false, 2 * gib}, {24 * gib, false, 2576980377},
	} {
		if got := ReserveFor(c.total, c.cgroup); got != c.want {
			t.Errorf("ReserveFor(%d, %v) = %d, want %d", c.total, c.cgroup, got, c.want)
		}
		m := Memory{Total: c.total, Cgroup: c.cgroup}
		if p := (Profile{RAMTotal: c.total, RAMCgroup: c.cgroup}); m.Reserve() != c.want || p.Reserve() != c.want {
			t.Errorf("%d bytes, cgroup %v: Memory.Reserve %d, Profile.Reserve %d, want %d", c.total, c.cgroup, m.Reserve(), p.Reserve(), c.want)
		}
	}
}
