package kernels

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
)

// TestAsmUpToDate regenerates the assembly and its Go declarations in a temporary directory and
// compares them with the committed files: go generate must reproduce them byte for byte.
func TestAsmUpToDate(t *testing.T) {
	goTool := filepath.Join(runtime.GOROOT(), "bin", "go")
	if _, err := os.Stat(goTool); err != nil {
		if goTool, err = exec.LookPath("go"); err != nil {
			t.Fatalf("no go command to build the generator: %v", err)
		}
	}
	dir := t.TempDir()
	gen := filepath.Join(dir, "asmgen")
	build := exec.Command(goTool, "build", "-o", gen, "./internal/asmgen")
	// For the machine the go command runs on (its default, whatever GOOS and GOARCH the test
	// binary was built for): under qemu-user an arm64 test binary runs the host's go command,
	// and the generator it builds must run here too. Its output depends on neither.
	build.Env = append(os.Environ(), "GOOS=", "GOARCH=", "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building the generator: %v\n%s", err, out)
	}
	// The same arguments as the go:generate line, so the "Code generated" headers match too.
	run := exec.Command(gen, "-out", "kernels_amd64.s", "-stubs", "kernels_stubs_amd64.go", "-pkg", "kernels")
	run.Dir = dir
	if out, err := run.CombinedOutput(); err != nil {
		t.Fatalf("running the generator: %v\n%s", err, out)
	}
	for _, name := range []string{"kernels_amd64.s", "kernels_stubs_amd64.go"} {
		want, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s is not what internal/asmgen generates: run go generate ./kernels", name)
		} else {
			t.Logf("%s: %d bytes, identical to a fresh generation", name, len(got))
		}
	}
}

// TestAsmRegisters checks that the AVX2 functions use only the vector registers 0-15 that VEX
// encodings reach (an AVX2-only CPU faults on anything else), and no zmm at all.
func TestAsmRegisters(t *testing.T) {
	src, err := os.ReadFile("kernels_amd64.s")
	if err != nil {
		t.Fatal(err)
	}
	high := regexp.MustCompile(`\b(Z\d+|[XY](1[6-9]|2\d|3[01])|K[0-7])\b`)
	funcs, lines := 0, 0
	for _, fn := range strings.Split(string(src), "\nTEXT ")[1:] {
		name, _, _ := strings.Cut(fn, "(SB)")
		if !strings.HasSuffix(name, "AVX2") {
			continue
		}
		funcs++
		for _, line := range strings.Split(fn, "\n") {
			lines++
			if r := high.FindString(line); r != "" {
				t.Errorf("%s uses %s, which AVX2 cannot encode: %q", name, r, strings.TrimSpace(line))
			}
		}
	}
	t.Logf("%d AVX2 functions, %d lines: registers 0-15 only", funcs, lines)
	if funcs < 7 {
		t.Errorf("found %d AVX2 functions, want at least 7", funcs)
	}
}

// TestAsmVEXOnly checks that no kernel mixes a legacy-SSE instruction (one without the V of a
// VEX or EVEX encoding, touching a vector register) into its AVX code: with the upper halves of
// the registers dirty, each costs an SSE/AVX transition on Intel cores. One MOVSS in the vector
// Exp's loop made it 3× slower than the scalar Exp it replaced (LESSONS 46).
func TestAsmVEXOnly(t *testing.T) {
	src, err := os.ReadFile("kernels_amd64.s")
	if err != nil {
		t.Fatal(err)
	}
	vector := regexp.MustCompile(`\b[XYZ]\d+\b`)
	funcs, lines := 0, 0
	for _, fn := range strings.Split(string(src), "\nTEXT ")[1:] {
		name, _, _ := strings.Cut(fn, "(SB)")
		funcs++
		for _, line := range strings.Split(fn, "\n")[1:] {
			fields := strings.Fields(line)
			if len(fields) < 2 || strings.HasPrefix(fields[0], "//") || strings.HasSuffix(fields[0], ":") {
				continue
			}
			lines++
			if !strings.HasPrefix(fields[0], "V") && vector.MatchString(line) {
				t.Errorf("%s: legacy-SSE instruction on a vector register: %q", name, strings.TrimSpace(line))
			}
		}
	}
	t.Logf("%d functions, %d instructions: every vector instruction VEX or EVEX", funcs, lines)
	if funcs < 20 {
		t.Errorf("found %d functions, want at least 20", funcs)
	}
}
