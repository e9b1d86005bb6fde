package oracle_test

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/trochilus-llm/trochilus/internal/oracle"
)

// script returns the absolute path of a Python file in this folder.
func script(t testing.TB, name string) string {
	t.Helper()
	p, err := filepath.Abs(name)
	if err != nil {
		t.Fatalf("abs %s: %v", name, err)
	}
	return p
}

// python returns Debian's python3 once it has checked that numpy (and torch, when withTorch)
// import: a missing one skips the test, or fails it in the gate (package internal/oracle).
func python(t testing.TB, withTorch bool) string {
	t.Helper()
	if withTorch {
		return oracle.Python(t, "numpy", "torch")
	}
	return oracle.Python(t, "numpy")
}

// runPython runs the interpreter py with args and returns its stdout; a non-zero exit fails t
// with stderr.
func runPython(t testing.TB, py string, args ...string) []byte {
	t.Helper()
	out, stderr, err := tryPython(t, py, args...)
	if err != nil {
		t.Fatalf("python %s: %v\nstderr:\n%s", strings.Join(args, " "), err, stderr)
	}
	return out
}

// tryPython is runPython that hands back the error and stderr instead of failing.
func tryPython(t testing.TB, py string, args ...string) (stdout, stderr []byte, err error) {
	t.Helper()
	cmd := exec.Command(py, args...)
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	start := time.Now()
	err = cmd.Run()
	t.Logf("python %s: %.2fs", filepath.Base(args[0]), time.Since(start).Seconds())
	return o.Bytes(), e.Bytes(), err
}

// readFloats reads a little-endian file of float32s or float64s.
func readFloats[T float32 | float64](t testing.TB, path string) []T {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var zero T
	size := binary.Size(zero)
	if len(b)%size != 0 {
		t.Fatalf("%s: %d bytes is not a whole number of %Ts", path, len(b), zero)
	}
	out := make([]T, len(b)/size)
	if _, err := binary.Decode(b, binary.LittleEndian, out); err != nil {
		t.Fatal(err)
	}
	return out
}

// argmax is the greedy rule: the lowest index among the largest values; NaN never wins.
func argmax(row []float32) int {
	best := -1
	for i, v := range row {
		if v != v {
			continue
		}
		if best < 0 || v > row[best] {
			best = i
		}
	}
	return best
}

// maxAbsDiff returns the largest |a[i]-b[i]| and where it is.
func maxAbsDiff(a []float32, b []float64) (float64, int) {
	worst, at := 0.0, -1
	for i := range a {
		d := math.Abs(float64(a[i]) - b[i])
		if d > worst || d != d {
			worst, at = d, i
		}
	}
	return worst, at
}

func widen(x []float32) []float64 {
	out := make([]float64, len(x))
	for i, v := range x {
		out[i] = float64(v)
	}
	return out
}

func joinInts(xs []int) string {
	var b strings.Builder
	for i, x := range xs {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprint(&b, x)
	}
	return b.String()
}
