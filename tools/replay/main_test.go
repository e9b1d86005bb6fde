package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/trochilus-llm/trochilus/experts"
)

// writeTrace writes a trace of 2 layers × 4 experts (2 used): a prompt of 3 tokens, then 4
// decode passes naming experts 0 and 1 at layer 0 and 2 and 3 at layer 1.
func writeTrace(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "t.trace")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w, err := experts.NewTraceWriter(f, experts.TraceHeader{Model: "test", Layers: 2, Experts: 4, Used: 2, UnitBytes: []uint64{1 << 20, 1 << 20}})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Pass(true, 3, []int{0, 1, 1, 2, 2, 3, 0, 1, 1, 2, 2, 3}); err != nil {
		t.Fatal(err)
	}
	for range 4 {
		if err := w.Pass(false, 1, []int{0, 1, 2, 3}); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestReplayTable(t *testing.T) {
	path := writeTrace(t)
	var out strings.Builder
	if err := run([]string{"-slots", "min,100%", "-join", path, path}, &out); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	// Joined, 8 prompt tokens' and 8 decode passes' calls. With every unit in RAM (8 slots)
	// only the first prompt misses, each of its 8 units once: no decode miss.
	for _, want := range []string{"2 prompt passes (6 tokens), 8 decode/verify passes (8 tokens generated).",
		"| 8 (100%) | hot | 0.00 | 100.0% | 0.000 | 8 | 8 | +0.0% |",
		"| 8 (100%) | belady | 0.00 | 100.0% | 0.000 | 8 | 8 | +0.0% |",
		"| 6 (min) | lru |"} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}
	bad := filepath.Join(t.TempDir(), "bad.trace")
	if err := os.WriteFile(bad, []byte("TRRT\x09\x00"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{}, {"-slots", "0%", path}, {"-slots", "x", path}, {bad}, {filepath.Join(t.TempDir(), "none")}} {
		if err := run(args, &out); err == nil {
			t.Errorf("replay %q: no error", args)
		}
	}
}
