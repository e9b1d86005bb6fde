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

// sessionAllowance is the memory planned for a session besides the weights: the KV cache of
// the context a chat or server opens (the model's, at most 4096 positions).
func sessionAllowance(c *Config) uint64 {
	positions := uint64(min(c.Context, 4096))
	return 2 * uint64(c.Layers) * uint64(c.KVHeads*c.HeadDim) * 4 * positions
}

// planExperts decides where the experts live (see Options.ExpertBudget): in the model's
// memory (Resident), or streamed through a store of Slots slots. A file that does not fit
// even with the fewest slots is refused, saying how much memory is missing.
func planExperts(ctx context.Context, size int64, l *experts.Layout, c *Config, opts *Options,
	ram func(context.Context) (uint64, uint64, error)) (experts.Plan, error) {
	need := experts.Need{Dense: uint64(size) - min(l.Bytes(), uint64(size)), Experts: l.Bytes(),
		Session: sessionAllowance(c), SlotBytes: l.SlotBytes(), MinSlots: l.MinSlots(c.ExpertsUsed)}
	switch {
	case opts.ExpertBudget > 0:
		return experts.WithBudget(need, uint64(opts.ExpertBudget))
	case opts.ExpertBudget == ExpertBudgetMin:
		return experts.WithBudget(need, 0)
	case opts.ExpertBudget < 0:
		return experts.Plan{}, fmt.Errorf("expert budget %d: want bytes, 0 (automatic) or ExpertBudgetMin", opts.ExpertBudget)
	case opts.Weights != WeightsAuto:
		// A placement was asked for: mapped, the page cache decides what stays; resident,
		// the whole file is read in or refused.
		return experts.Plan{Resident: true}, nil
	}
	total, avail, err := ram(ctx)
	if err != nil {
		return experts.Plan{}, err
	}
	reserve := machine.Reserve(total)
	if uint64(size) <= avail && avail-uint64(size) >= reserve {
		return experts.Plan{Resident: true}, nil
	}
	return experts.PlanFor(need, experts.Machine{Total: total, Available: avail, Reserve: reserve})
}
