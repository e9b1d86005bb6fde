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
