package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"

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
	if err := cl.parse(); err != nil {
		return err
	}
	if *positions < 0 || *positions > 0 && *model == "" {
		return fmt.Errorf("%w: -c %d: want a context of 0 or more, with -m", errUsage, *positions)
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
	_, err = fmt.Fprintf(stdout, "plan: %s\n", plan.Text())
	return err
}
