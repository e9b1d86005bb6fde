package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/trochilus-llm/trochilus/engine/machine"
)

func TestCPU(t *testing.T) {
	code, out, errOut := runCLI("cpu")
	if code != 0 {
		t.Fatalf("cpu: exit %d: %s", code, errOut)
	}
	for _, label := range []string{"system:", "cpu:", "cores:", "simd:", "ram:"} {
		if !strings.Contains(out, "\n"+label) && !strings.HasPrefix(out, label) {
			t.Errorf("cpu output lacks %q:\n%s", label, out)
		}
	}
	code, out, errOut = runCLI("cpu", "-json")
	var p machine.Profile
	if code != 0 || json.Unmarshal([]byte(out), &p) != nil {
		t.Fatalf("cpu -json: exit %d, %s%s", code, out, errOut)
	}
	if p.PhysicalCores < 1 || p.LogicalCores < p.PhysicalCores || p.RAMTotal <= p.RAMAvailable || p.RAMAvailable == 0 {
		t.Errorf("cpu -json: %+v", p)
	}
}

// cpu -m plans a model in this machine's memory: the same plan a load follows, in words with
// the numbers, or as JSON.
func TestCPUPlansAModel(t *testing.T) {
	path := tinyModel(t)
	code, out, errOut := runCLI("cpu", "-m", path, "-c", "300")
	if code != 0 {
		t.Fatalf("cpu -m: exit %d: %s", code, errOut)
	}
	for _, want := range []string{"\nmodel: " + path + " (olmoe, ", "\nplan: Fits: ", "at context 300", "KV cache 300.00 KiB"} {
		if !strings.Contains(out, want) {
			t.Errorf("cpu -m output lacks %q:\n%s", want, out)
		}
	}
	code, out, errOut = runCLI("cpu", "-json", "-m", path)
	var got struct {
		Model string
		Plan  struct {
			Placement string
			Context   int
			KV        uint64
		}
	}
	if code != 0 || json.Unmarshal([]byte(out), &got) != nil {
		t.Fatalf("cpu -json -m: exit %d, %s%s", code, out, errOut)
	}
	// The tiny model's 4096 positions are under the default: 2 layers × 2 × 64 × 4096 × 4 bytes.
	if got.Model != path || got.Plan.Placement != "fits" || got.Plan.Context != 4096 || got.Plan.KV != 2*2*64*4096*4 {
		t.Errorf("cpu -json -m: %+v", got)
	}
	for _, args := range [][]string{{"cpu", "-c", "10"}, {"cpu", "-m", path, "-c", "-1"}} {
		if code, _, errOut := runCLI(args...); code != 2 || !strings.Contains(errOut, "-c") {
			t.Errorf("%q: exit %d, %s", args, code, errOut)
		}
	}
}
