package engine

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"

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

// TraceRoutes makes every later forward pass of the model's sessions write the experts each
// token's router named, layer by layer, to w in the experts package's route trace format
// (experts.TraceWriter; the input of the eviction replay, tools/replay), whether the experts
// are in memory or streamed. A pass of several tokens that wants only the last one's logits
// (Eval's) is recorded as a prompt pass, the others (decode, verify, Model.Step's shared
// passes) as decode passes; a pass that fails before its last layer's routing is not
// recorded. stop detaches the trace and flushes it, returning the first error writing met;
// call it once the passes to record are done. One trace at a time.
func (m *Model) TraceRoutes(w io.Writer) (stop func() error, err error) {
	net, ok := m.net.(*moe)
	if !ok {
		return nil, fmt.Errorf("engine: %s: a route trace needs a Mixture-of-Experts model", m.path)
	}
	layout, err := expertLayout(m.file, &m.cfg, architectures()[m.cfg.Arch].experts)
	if err != nil {
		return nil, fmt.Errorf("engine: %s: route trace: %w", m.path, err)
	}
	h := experts.TraceHeader{Model: filepath.Base(m.path), Layers: m.cfg.Layers, Experts: m.cfg.Experts, Used: m.cfg.ExpertsUsed}
	for _, parts := range layout.Layers {
		var n uint64
		for _, p := range parts {
			n += uint64(p.Size)
		}
		h.UnitBytes = append(h.UnitBytes, n)
	}
	t, err := experts.NewTraceWriter(w, h)
	if err != nil {
		return nil, fmt.Errorf("engine: %s: route trace: %w", m.path, err)
	}
	if !net.trace.CompareAndSwap(nil, t) {
		return nil, errors.New("engine: a route trace is already being recorded")
	}
	return func() error {
		net.trace.CompareAndSwap(t, nil)
		return t.Close()
	}, nil
}
