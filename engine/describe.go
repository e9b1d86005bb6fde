package engine

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/trochilus-llm/trochilus/experts"
	"github.com/trochilus-llm/trochilus/gguf"
)

// Description is what a GGUF file's header says about the model inside, read once for every
// caller: the loader's configuration, the library's listing (engine/library) and the CLI's
// inspect report all come from Describe.
type Description struct {
	// Config is the model's shape: ReadConfig's when Unsupported is nil, else as much of it
	// as the metadata gives (0 where it gives nothing).
	Config
	Name string // general.name; "" when absent

	// Unsupported says why Load would refuse the file (its architecture, its configuration,
	// its expert tensors); nil when the engine runs it.
	Unsupported error

	// Footprint is how the file's bytes divide for the memory planner.
	Footprint Footprint

	Types []TypeTotal // the tensors by weight type, largest share of the bytes first
	All   TypeTotal   // every tensor (Type is 0)
}

// TypeTotal is what the tensors of one weight type add up to.
type TypeTotal struct {
	Type    gguf.Type
	Tensors int
	Elems   uint64 // weights
	Bytes   int64
}

// Footprint is how a model file's bytes divide for the memory planner: the experts, which can
// stream from disk through a store, and the rest (Dense), which stays in memory.
type Footprint struct {
	FileSize  int64
	Experts   uint64 // bytes of every expert of every layer; 0 when none can stream
	SlotBytes uint64 // bytes one (layer, expert) unit takes in the store (experts.Layout.SlotBytes)
	Units     int    // (layer, expert) units
	MinSlots  int    // the fewest slots a pass runs with: one layer's experts and one token's
}

// Dense returns the bytes that stay in memory whatever the experts do: the file but its
// experts (the header included: it is mapped or read with the rest).
func (fp *Footprint) Dense() uint64 {
	return uint64(max(fp.FileSize, 0)) - min(fp.Experts, uint64(max(fp.FileSize, 0)))
}

// footprint returns the planner's view of a file of size bytes whose experts l lays out.
func footprint(size int64, l *experts.Layout, c *Config) Footprint {
	fp := Footprint{FileSize: size}
	if n := l.Bytes(); n > 0 && n <= uint64(max(size, 0)) {
		fp.Experts, fp.SlotBytes = n, l.SlotBytes()
		fp.Units, fp.MinSlots = len(l.Layers)*l.Experts, l.MinSlots(c.ExpertsUsed)
	}
	return fp
}

// defaultExperts names the stacked expert tensors of an architecture the loader does not know:
// llama.cpp's names, which every MoE architecture it writes shares.
var defaultExperts = []string{"ffn_gate_exps", "ffn_up_exps", "ffn_down_exps"}

// Describe reads what f's header says about the model. Only a file without
// general.architecture is an error; one the engine does not run is described as far as its
// metadata goes, with the reason in Unsupported.
func Describe(f *gguf.File) (Description, error) {
	name, err := f.Str("general.architecture")
	if err != nil {
		return Description{}, fmt.Errorf("engine: %w", err)
	}
	var d Description
	d.Name, _ = f.Str("general.name")
	names := defaultExperts
	if arch, ok := architectures()[name]; ok {
		d.Config, d.Unsupported = readConfig(f, name, arch)
		names = arch.experts
	} else {
		d.Config, _ = moeConfig(f, name) // the reason is the architecture
		d.Config.Arch, d.Unsupported = name, unsupportedArch(name)
	}
	layout, err := expertLayout(f, &d.Config, names)
	if err != nil {
		// Nothing can stream: the plan counts the experts with the dense weights.
		layout = experts.Layout{}
		if d.Unsupported == nil {
			d.Unsupported = err
		}
	}
	d.Footprint = footprint(f.Size(), &layout, &d.Config)
	d.Types, d.All = TensorTotals(f)
	return d, nil
}

// DescribeModel is Describe for a file that must hold a model: a header without a layer count
// is an error too. The library and the hub list models so; inspect describes any file.
func DescribeModel(f *gguf.File) (Description, error) {
	d, err := Describe(f)
	if err == nil && d.Layers == 0 {
		err = fmt.Errorf("engine: metadata %s.block_count is missing or invalid", d.Arch)
	}
	return d, err
}

// TensorTotals adds up f's tensors by weight type (largest share of the bytes first, then by
// type id) and all together.
func TensorTotals(f *gguf.File) (byType []TypeTotal, all TypeTotal) {
	at := map[gguf.Type]int{}
	for i := range f.Tensors {
		t := &f.Tensors[i]
		j, ok := at[t.Type]
		if !ok {
			j = len(byType)
			at[t.Type] = j
			byType = append(byType, TypeTotal{Type: t.Type})
		}
		for _, s := range []*TypeTotal{&byType[j], &all} {
			s.Tensors++
			s.Elems += t.Elems()
			s.Bytes += t.Size
		}
	}
	slices.SortFunc(byType, func(a, b TypeTotal) int {
		return cmp.Or(cmp.Compare(b.Bytes, a.Bytes), cmp.Compare(a.Type, b.Type))
	})
	return byType, all
}
