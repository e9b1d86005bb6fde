package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/trochilus-llm/trochilus/engine/machine"
	"github.com/trochilus-llm/trochilus/internal/units"
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
	for _, args := range [][]string{{"cpu", "-expert-budget", "min"}, {"cpu", "-m", path, "-expert-budget", "0"}} {
		if code, _, errOut := runCLI(args...); code != 2 || !strings.Contains(errOut, "-expert-budget") {
			t.Errorf("%q: exit %d, %s", args, code, errOut)
		}
	}
}

// cpu -m spells the plan out a figure a line: the placement, where the experts live (every
// unit in memory, or the store's slots and bytes), the context offered with the KV cache it
// reserves, and the reserve with its rule; -expert-budget plans what generate would load.
func TestCPUPlanLines(t *testing.T) {
	path := tinyModel(t)
	code, out, errOut := runCLI("cpu", "-json", "-m", path, "-c", "300")
	var j struct {
		Machine machine.Profile
	}
	if code != 0 || json.Unmarshal([]byte(out), &j) != nil {
		t.Fatalf("cpu -json -m: exit %d, %s%s", code, out, errOut)
	}
	// The RAM moves between the runs: the reserve's rule does not, nor its size on a machine
	// (on one, it depends on the total RAM only; in a cgroup, on the limit).
	reserve := "\nreserve: " + units.Bytes(j.Machine.Reserve()) + " " + machine.ReserveRule(j.Machine.RAMCgroup) + "\n"
	// The tiny model: 2 layers of 8 experts, 2 used; its KV cache is 2 layers × 2 × 64 × 4 bytes
	// a position.
	for _, c := range []struct {
		args []string
		want []string
	}{
		{[]string{"-c", "300"}, []string{
			"\nplacement: fits\n",
			"\nexperts: resident, all 16 units in memory (102.00 KiB)\n",
			"\ncontext: 300, KV cache 300.00 KiB reserved (a session of ",
		}},
		{[]string{"-expert-budget", "min"}, []string{
			"\nplacement: fits with experts from disk (as asked)\n",
			"\nexperts: streamed from disk through 10 slots of 16 units: a store of 240.00 KiB (24.00 KiB a slot; a pass needs at least 10), for 102.00 KiB of experts\n",
			"\ncontext: 4096 (the model's), KV cache 4.00 MiB reserved (a session of ",
		}},
		// 1 MiB holds 42 slots, more than the 16 units: the store opens one a unit.
		{[]string{"-expert-budget", "1", "-c", "1024"}, []string{
			"\nexperts: streamed from disk through 16 slots of 16 units: a store of 384.00 KiB (24.00 KiB a slot; a pass needs at least 10)",
			"\ncontext: 1024, KV cache 1.00 MiB reserved",
		}},
	} {
		code, out, errOut := runCLI(append([]string{"cpu", "-m", path}, c.args...)...)
		if code != 0 {
			t.Fatalf("cpu -m %q: exit %d: %s", c.args, code, errOut)
		}
		for _, want := range append(c.want, reserve) {
			if !strings.Contains(out, want) {
				t.Errorf("cpu -m %q lacks %q:\n%s", c.args, want, out)
			}
		}
	}
	// The streamed plan is the one generate loads with.
	code, _, errOut = runCLI("generate", "-m", path, "--tokens", "1", "-n", "1", "-t", "1", "-expert-budget", "min")
	if code != 0 || !strings.Contains(errOut, "experts streamed from disk: 10 slots of 24.00 KiB") {
		t.Errorf("generate -expert-budget min: exit %d: %s", code, errOut)
	}
}
