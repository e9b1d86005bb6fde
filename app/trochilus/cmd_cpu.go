package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/trochilus-llm/trochilus/engine"
	"github.com/trochilus-llm/trochilus/engine/library"
	"github.com/trochilus-llm/trochilus/engine/machine"
	"github.com/trochilus-llm/trochilus/internal/units"
)

// runCPU prints the machine profile: processor, cores, SIMD features and RAM; with -m, how a
// model would sit in that memory.
func runCPU(ctx context.Context, cl *commandLine, stdout, stderr io.Writer) error {
	asJSON := cl.Bool("json", false, "print the profile (and with -m the plan) as JSON")
	model := cl.String("m", "", "also plan this GGUF model in this machine's memory: a path, or a name in the models folder")
	positions := cl.Int("c", 0, "with -m: positions the session holds (0: the default a load opens)")
	// The same flag and reading as the commands that run a model, so that the plan shown is
	// the one `generate -expert-budget N` would load with.
	mf := modelFlags{experts: cl.String("expert-budget", "", "with -m: plan the experts streamed through this many MiB of RAM, or \"min\" (default: only when the file does not fit)")}
	if err := cl.parse(); err != nil {
		return err
	}
	if *positions < 0 || *positions > 0 && *model == "" {
		return fmt.Errorf("%w: -c %d: want a context of 0 or more, with -m", errUsage, *positions)
	}
	budget, err := mf.expertBudget()
	if err != nil {
		return err
	}
	if budget != 0 && *model == "" {
		return fmt.Errorf("%w: -expert-budget plans a model: give it with -m", errUsage)
	}
	p, err := machine.Probe(ctx)
	if err != nil {
		return err
	}
	var desc library.Model
	var plan engine.Plan
	if *model != "" {
		path, err := resolveModel(*model)
		if err != nil {
			return err
		}
		if desc, err = library.Describe(path); err != nil {
			return err
		}
		plan = desc.PlanFor(p, *positions)
		if budget != 0 {
			// PlanFor weighs the machine only; a budget asked for is the loader's request,
			// planned by the same planner with the same inputs.
			plan, _ = engine.PlanMemory(engine.PlanRequest{Config: desc.Config, Footprint: desc.Footprint,
				RAMTotal: p.RAMTotal, RAMAvailable: p.RAMAvailable, RAMCgroup: p.RAMCgroup, Context: *positions, ExpertBudget: budget})
		}
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if *model == "" {
			return enc.Encode(p)
		}
		return enc.Encode(struct {
			Machine machine.Profile `json:"machine"`
			Model   string          `json:"model"`
			Plan    engine.Plan     `json:"plan"`
			Text    string          `json:"text"`
		}{p, desc.Path, plan, plan.Text()})
	}
	if err := p.Write(stdout); err != nil {
		return err
	}
	if *model == "" {
		return nil
	}
	fmt.Fprintf(stdout, "\nmodel: %s (%s, %s)\n", desc.Path, desc.Arch, units.Bytes(uint64(desc.Size)))
	if desc.Unsupported != nil {
		fmt.Fprintf(stdout, "engine: cannot run it: %v\n", desc.Unsupported)
	}
	fmt.Fprintf(stdout, "plan: %s\n", plan.Text())
	_, err = io.WriteString(stdout, planLines(plan))
	return err
}

// planLines spells out plan's figures one to a line, beside its sentence: where the experts
// live (in memory, or the store's slots of all the units, and its bytes), the context the plan
// offers and the KV cache it reserves for it, and the reserve left free with its rule.
func planLines(p engine.Plan) string {
	b := func(n uint64) string { return units.Bytes(n) }
	var sb strings.Builder
	how := p.Placement.String()
	if p.Forced {
		how += " (as asked)"
	}
	fmt.Fprintf(&sb, "placement: %s\n", how)
	// A budget larger than every unit plans more slots than the store can use: it opens
	// one slot a unit (experts.NewStore), and that is what a load holds.
	slots := min(p.UnitsInRAM, p.Units)
	switch {
	case p.Units == 0:
		sb.WriteString("experts: none stream: every weight in memory\n")
	case p.Placement == engine.InMemory:
		fmt.Fprintf(&sb, "experts: resident, all %d units in memory (%s)\n", p.Units, b(p.Experts))
	case p.Placement == engine.ExpertsStreamed:
		fmt.Fprintf(&sb, "experts: streamed from disk through %d slots of %d units: a store of %s (%s a slot; a pass needs at least %d), for %s of experts\n",
			slots, p.Units, b(uint64(slots)*p.UnitBytes), b(p.UnitBytes), p.MinUnits, b(p.Experts))
	default:
		fmt.Fprintf(&sb, "experts: refused, %d units; a pass needs at least %d slots of %s (%s) beside the dense weights' %s\n",
			p.Units, p.MinUnits, b(p.UnitBytes), b(uint64(p.MinUnits)*p.UnitBytes), b(p.Dense))
	}
	// ContextText says "context N (why)": the label is the line's.
	fmt.Fprintf(&sb, "context: %s, KV cache %s reserved (a session of %s in all)\n", strings.TrimPrefix(p.ContextText(), "context "), b(p.KV), b(p.Session()))
	fmt.Fprintf(&sb, "reserve: %s %s\n", b(p.Reserve), machine.ReserveRule(p.Cgroup))
	return sb.String()
}
