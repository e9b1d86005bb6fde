package engine

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/trochilus-llm/trochilus/internal/modelgen"
	"github.com/trochilus-llm/trochilus/internal/oracle"
	"github.com/trochilus-llm/trochilus/kernels"
)

// TestCLIGOAMD64Long builds the trochilus command twice, at GOAMD64=v1 and at v3 (where the
// compiler may fuse a*b+c into an FMA wherever the source lets it), runs `trochilus logits` on
// every tiny model (and the full-vocabulary tiny Q4_K_M) with each, on the scalar tier and on
// the fastest, and checks that all of them and this test binary's engine give the same logits
// bytes: no definition anywhere in the engine's path leaves a rounding to the compiler.
func TestCLIGOAMD64Long(t *testing.T) {
	oracle.Long(t)
	if runtime.GOARCH != "amd64" {
		t.Skipf("GOAMD64 levels exist on amd64 only, not %s", runtime.GOARCH)
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		goTool = filepath.Join(runtime.GOROOT(), "bin", "go")
	}
	root := oracle.Root(t)
	dir := t.TempDir()
	bins := map[string]string{}
	for _, level := range []string{"v1", "v3"} {
		bin := filepath.Join(dir, "trochilus-"+level)
		cmd := exec.Command(goTool, "build", "-o", bin, "./app/trochilus")
		cmd.Dir = root
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOARCH=amd64", "GOAMD64="+level)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go build at GOAMD64=%s: %v\n%s", level, err, out)
		}
		bins[level] = bin
	}

	models := testModels()
	models = append(models, testModel{name: "q4_k_m-full-vocab", cfg: modelgen.Tiny(modelgen.Q4KM())})
	for _, tm := range models {
		t.Run(tm.name, func(t *testing.T) {
			path, err := filepath.Abs(tm.file(t))
			if err != nil {
				t.Fatal(err)
			}
			prompt := tm.testPrompts()[1]
			ids := make([]string, len(prompt))
			for i, v := range prompt {
				ids[i] = fmt.Sprint(v)
			}
			// Each build on the scalar definitions and on the fastest tier this CPU has.
			var outs [][]byte
			var names []string
			for _, level := range []string{"v1", "v3"} {
				for _, tier := range []string{"scalar", ""} {
					out := filepath.Join(dir, tm.name+"-"+level+"-"+tier+".bin")
					cmd := exec.Command(bins[level], "logits", "-m", path, "--tokens", strings.Join(ids, ","), "-o", out, "-t", "2", "-b", "5")
					cmd.Env = append(os.Environ(), kernels.CPUMaxEnv+"="+tier)
					if msg, err := cmd.CombinedOutput(); err != nil {
						t.Fatalf("GOAMD64=%s %s=%s logits: %v\n%s", level, kernels.CPUMaxEnv, tier, err, msg)
					}
					b, err := os.ReadFile(out)
					if err != nil {
						t.Fatal(err)
					}
					outs = append(outs, b)
					names = append(names, fmt.Sprintf("GOAMD64=%s %s=%q", level, kernels.CPUMaxEnv, tier))
				}
			}
			// This binary's own engine, whatever level it was built at.
			m := tm.load(t, Options{Threads: 3})
			s := newTestSession(t, m, 0)
			logits := make([]float32, len(prompt)*tm.cfg.Vocab)
			if err := s.EvalAll(context.Background(), prompt, logits); err != nil {
				t.Fatal(err)
			}
			own := make([]byte, 4*len(logits))
			for i, v := range logits {
				binary.LittleEndian.PutUint32(own[4*i:], math.Float32bits(v))
			}
			if len(outs[0]) != len(own) {
				t.Fatalf("the CLI wrote %d bytes, want %d (%d rows of %d)", len(outs[0]), len(own), len(prompt), tm.cfg.Vocab)
			}
			for k := 1; k < len(outs); k++ {
				if i := firstByteDifference(outs[0], outs[k]); i >= 0 {
					t.Errorf("%s and %s differ at byte %d (row %d)", names[0], names[k], i, i/4/tm.cfg.Vocab)
				}
			}
			if i := firstByteDifference(outs[0], own); i >= 0 {
				t.Errorf("the CLI and this test's engine differ at byte %d (row %d)", i, i/4/tm.cfg.Vocab)
			}
			if !t.Failed() {
				t.Logf("%s: %d bytes of logits identical across GOAMD64=v1 and v3, scalar and best tier, and the test binary", tm.name, len(own))
			}
		})
	}
}

func firstByteDifference(a, b []byte) int {
	if bytes.Equal(a, b) {
		return -1
	}
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}
