package engine

import (
	"context"
	"fmt"

	"github.com/trochilus-llm/trochilus/engine/machine"
	"github.com/trochilus-llm/trochilus/experts"
	"github.com/trochilus-llm/trochilus/gguf"
)

// expertLayout finds every layer's stacked expert tensors (blk.N.NAME.weight, ggml dims
// [cols, rows, experts]) in the file.
func expertLayout(f *gguf.File, c *Config, names []string) (experts.Layout, error) {
	// Checked before the layers are allocated: a corrupt count must be an error, not a
	// table of billions of layers.
	if c.Experts < 1 || c.Layers < 1 || int64(c.Layers)*int64(len(names)) > int64(len(f.Tensors)) {
		return experts.Layout{}, fmt.Errorf("%d layers of %d experts in %d tensors: not a Mixture-of-Experts layout", c.Layers, c.Experts, len(f.Tensors))
	}
	l := experts.Layout{Experts: c.Experts, Layers: make([][]experts.Part, c.Layers)}
	for i := range c.Layers {
		for _, name := range names {
			full := fmt.Sprintf("blk.%d.%s.weight", i, name)
			t, ok := f.Tensor(full)
			if !ok {
				return l, fmt.Errorf("tensor %q is missing", full)
			}
			if len(t.Dims) != 3 || t.Dims[2] != uint64(c.Experts) || t.Size%int64(c.Experts) != 0 {
				return l, fmt.Errorf("tensor %q has dims %v and %d bytes: not %d experts", full, t.Dims, t.Size, c.Experts)
			}
			l.Layers[i] = append(l.Layers[i], experts.Part{Offset: t.Offset, Size: t.Size / int64(c.Experts),
				Type: t.Type, Rows: int(t.Dims[1]), Cols: int(t.Dims[0])})
		}
	}
	return l, nil
}

// planLoad is the loader's plan (see PlanMemory): it reads the machine's memory through ram
// (machine.ReadMemory; tests pass their own) only when the placement is the planner's to choose, and
// returns a refusal as the error, with the numbers.
func planLoad(ctx context.Context, req PlanRequest, ram func(context.Context) (machine.Memory, error)) (Plan, error) {
	if req.ExpertBudget == 0 && req.Weights == WeightsAuto {
		mem, err := ram(ctx)
		if err != nil {
			return Plan{}, fmt.Errorf("planning memory: %w", err)
		}
		req.RAMTotal, req.RAMAvailable, req.RAMCgroup = mem.Total, mem.Available, mem.Cgroup
	}
	return PlanMemory(req)
}
