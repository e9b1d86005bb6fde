package machine

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestMeasureReadSpeed(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "small.gguf"), []byte("GGUF"), 0o644) // too small to measure with: a probe is written
	s, err := MeasureReadSpeed(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	if s.Bytes != probeSize || s.BytesPerSec <= 0 || !strings.HasPrefix(filepath.Base(s.File), ".read-speed-") {
		t.Fatalf("measured %+v", s)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Fatalf("probe file left behind: %d entries", len(entries))
	}
	t.Logf("%s: %v", dir, s)

	if _, err := MeasureReadSpeed(context.Background(), filepath.Join(dir, "missing")); err == nil {
		t.Fatal("missing folder measured")
	}
}
