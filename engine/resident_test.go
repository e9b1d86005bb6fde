package engine

import (
	"context"
	"errors"
	"os"
	"runtime"
	"strings"
	"testing"
	"unsafe"

	"github.com/trochilus-llm/trochilus/engine/machine"
	"github.com/trochilus-llm/trochilus/gguf"
	"github.com/trochilus-llm/trochilus/internal/modelgen"
	"github.com/trochilus-llm/trochilus/internal/modelgen/modelgentest"
	"github.com/trochilus-llm/trochilus/internal/osmem"
)

// TestWeightsPlacement loads one model mapped, resident and by the loader's own choice and
// checks that each reports where its weights live and that all give the same logits, bit for
// bit, for a prompt and for decode tokens after it.
func TestWeightsPlacement(t *testing.T) {
	cfg := tinyConfig(modelgen.Uniform(gguf.TypeQ8_0))
	mapped := loadTest(t, cfg, Options{Threads: 2, Weights: WeightsMapped})
	if got := mapped.Weights(); got != WeightsMapped {
		t.Fatalf("mapped load reports %v", got)
	}
	path := modelgentest.TestModel(t, cfg)
	resident, err := Load(context.Background(), path, Options{Threads: 2, Weights: WeightsResident})
	if runtime.GOOS != "linux" {
		if !errors.Is(err, errNotResident) {
			t.Fatalf("resident load on %s: %v, want errNotResident", runtime.GOOS, err)
		}
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	defer resident.Close()
	if got := resident.Weights(); got != WeightsResident {
		t.Fatalf("resident load reports %v", got)
	}
	if p := uintptr(unsafe.Pointer(unsafe.SliceData(resident.data.data))); p%osmem.HugePage != 0 {
		t.Errorf("resident weights start at %#x, not on a 2 MiB boundary", p)
	}
	auto := loadTest(t, cfg, Options{Threads: 1})
	// A tiny file always fits in the RAM the reserve leaves.
	if got := auto.Weights(); got != WeightsResident {
		t.Errorf("auto load of a %d-byte file reports %v, want resident", len(auto.data.data), got)
	}
	prompt := matrixPrompt(mapped.cfg.Vocab)[:20]
	want := afterRewind(t, mapped, prompt)
	for name, m := range map[string]*Model{"resident": resident, "auto": auto} {
		if i := firstDifference(want, afterRewind(t, m, prompt)); i >= 0 {
			t.Errorf("%s weights: logits differ from mapped at %d", name, i)
		}
	}
	if _, err := Load(context.Background(), path, Options{Weights: Weights(7)}); err == nil || !strings.Contains(err.Error(), "Weights(7)") {
		t.Errorf("Load with Weights(7): %v, want an error naming it", err)
	}
}

// openTiny opens a tiny Q8_0 model file for the tests that read it themselves; the file closes
// when the test ends.
func openTiny(t *testing.T) (path string, f *os.File, size int64) {
	t.Helper()
	path = tinyQ8(t)
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	st, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	return path, f, st.Size()
}

// TestReadResidentErrors checks the resident reader's failures: a file shorter than the size
// asked for names the offset, and a cancelled context stops it with ctx's error.
func TestReadResidentErrors(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("resident weights are read on Linux only")
	}
	path, f, size := openTiny(t)
	if _, err := readResident(context.Background(), f, size+residentChunk, 2); err == nil || !strings.Contains(err.Error(), "at offset") {
		t.Errorf("reading past the end: %v, want an error naming the offset", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := readResident(ctx, f, size, 1); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled read: %v", err)
	}
	m, err := readResident(context.Background(), f, size, 3)
	if err != nil {
		t.Fatal(err)
	}
	defer m.close()
	disk, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if string(disk) != string(m.data) {
		t.Fatal("resident bytes differ from the file's")
	}
	// Many small chunks over three readers: every byte lands where it belongs.
	for _, chunk := range []int{4096, 4096 + 17, len(disk) - 1} {
		dst := make([]byte, len(disk))
		if err := readChunks(context.Background(), f, dst, 3, chunk); err != nil {
			t.Fatal(err)
		}
		if string(dst) != string(disk) {
			t.Fatalf("read in %d-byte chunks: bytes differ from the file's", chunk)
		}
	}
}

// TestWeightsRAMGuard checks the loader against the machine's memory: a resident load that would
// leave less than the reserve is refused with the figures, the automatic choice maps the file
// instead, and both load when the memory is there.
func TestWeightsRAMGuard(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("resident weights are read on Linux only")
	}
	_, f, size := openTiny(t)
	const gib = 1 << 30
	memory := func(m machine.Memory) func(context.Context) (machine.Memory, error) {
		return func(context.Context) (machine.Memory, error) { return m, nil }
	}
	tight := memory(machine.Memory{Total: 8 * gib, Available: 2*gib + uint64(size) - 1})
	roomy := memory(machine.Memory{Total: 8 * gib, Available: 4 * gib})
	broken := func(context.Context) (machine.Memory, error) { return machine.Memory{}, errors.New("no meminfo") }
	// In a 3 GiB memory cgroup the reserve is 256 MiB and a 32nd of the limit: 352 MiB.
	const cgroupReserve = 352 << 20
	cgroupTight := memory(machine.Memory{Total: 3 * gib, Available: cgroupReserve + uint64(size) - 1, Cgroup: true})
	cgroupRoomy := memory(machine.Memory{Total: 3 * gib, Available: cgroupReserve + uint64(size), Cgroup: true})
	ctx := context.Background()
	if _, err := placeWeights(ctx, f, size, Options{Weights: WeightsResident}, tight); err == nil ||
		!strings.Contains(err.Error(), "do not fit in RAM") || !strings.Contains(err.Error(), "2.00 GiB kept for the system") {
		t.Errorf("resident load one byte short of the reserve: %v, want a refusal with the figures", err)
	}
	if _, err := placeWeights(ctx, f, size, Options{Weights: WeightsResident}, cgroupTight); err == nil ||
		!strings.Contains(err.Error(), "352.00 MiB kept for this process beside the plan, inside a memory cgroup") {
		t.Errorf("resident load one byte short of a cgroup's reserve: %v, want a refusal with the cgroup's figures", err)
	}
	if _, err := placeWeights(ctx, f, size, Options{Weights: WeightsResident}, broken); err == nil {
		t.Error("resident load with the memory unknown was not refused")
	}
	for _, c := range []struct {
		name     string
		ram      func(context.Context) (machine.Memory, error)
		weights  Weights
		resident bool
	}{
		{"auto, tight", tight, WeightsAuto, false},
		{"auto, memory unknown", broken, WeightsAuto, false},
		{"auto, roomy", roomy, WeightsAuto, true},
		{"auto, roomy in a cgroup", cgroupRoomy, WeightsAuto, true},
		{"auto, tight in a cgroup", cgroupTight, WeightsAuto, false},
		{"resident, roomy", roomy, WeightsResident, true},
		{"mapped, roomy", roomy, WeightsMapped, false},
	} {
		m, err := placeWeights(ctx, f, size, Options{Weights: c.weights}, c.ram)
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if m.resident != c.resident || int64(len(m.data)) != size {
			t.Errorf("%s: resident %v with %d bytes, want resident %v with %d", c.name, m.resident, len(m.data), c.resident, size)
		}
		m.close()
	}
}
