package library

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/trochilus-llm/trochilus/engine"
	"github.com/trochilus-llm/trochilus/engine/machine"
	"github.com/trochilus-llm/trochilus/gguf"
)

// Model is what a GGUF file's header says about the model inside: engine.Describe's
// description (the shape as the loader reads it, why the engine would refuse the file if it
// would, the bytes by weight type, the footprint the memory planner weighs), with where the
// file is and its name for the list.
type Model struct {
	Path string
	Size int64 // bytes of the file

	// Quant names the file's weight mix as people know it ("Q4_K_M", "Q8_0"): llama.cpp's name
	// of general.file_type, or, in a file without one, the type of most of its bytes. Two
	// quantizations of one model share general.name; this is what tells them apart.
	Quant string
	engine.Description
}

// Describe reads the header of the GGUF file at path. A file that is not a well-formed GGUF is
// an error naming what is wrong; one of an architecture the engine does not run is described
// all the same, with the reason in Unsupported (the caller decides what to offer).
func Describe(path string) (Model, error) {
	f, err := gguf.Open(path)
	if err != nil {
		return Model{}, fmt.Errorf("library: %w", err)
	}
	defer f.Close()
	d, err := engine.DescribeModel(f)
	if err != nil {
		return Model{}, fmt.Errorf("library: %s: %w", path, err)
	}
	m := Model{Path: path, Size: f.Size(), Description: d, Quant: quantName(f, d.Types)}
	if m.Name == "" {
		m.Name = strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
	}
	return m, nil
}

// quantName returns the weight mix's name: general.file_type's without llama.cpp's MOSTLY_ or
// ALL_ prefix (as Ollama's quantization_level shows it), else the largest type's name, else "".
func quantName(f *gguf.File, types []engine.TypeTotal) string {
	if v, err := f.Uint64("general.file_type"); err == nil {
		if name := gguf.FileTypeName(v); name != "" {
			return strings.TrimPrefix(strings.TrimPrefix(name, "MOSTLY_"), "ALL_")
		}
	}
	if len(types) > 0 {
		return types[0].Type.String()
	}
	return ""
}

// TypesText lists the weight types by share of the bytes, e.g. "Q4_K 71%, Q6_K 27%, F32 2%".
func (m *Model) TypesText() string {
	var parts []string
	for _, s := range m.Types {
		pct := 0.0
		if m.All.Bytes > 0 {
			pct = 100 * float64(s.Bytes) / float64(m.All.Bytes)
		}
		if pct < 0.5 {
			parts = append(parts, s.Type.String()+" <1%")
			continue
		}
		parts = append(parts, fmt.Sprintf("%s %.0f%%", s.Type, pct))
	}
	return strings.Join(parts, ", ")
}

// PlanFor works out how the model would use the memory profile p describes with a session of
// ctx positions (0: the engine's default, engine.DefaultContext or the model's context when
// shorter, less when that does not fit): engine.PlanMemory, the planner engine.Load follows,
// so what the library shows and what a load does agree. A load that would leave less than
// the reserve is refused: the placement is engine.Refused, with the numbers in the plan's Text.
func (m *Model) PlanFor(p machine.Profile, ctx int) engine.Plan {
	pl, _ := engine.PlanMemory(engine.PlanRequest{Config: m.Config, Footprint: m.Footprint,
		RAMTotal: p.RAMTotal, RAMAvailable: p.RAMAvailable, RAMCgroup: p.RAMCgroup, Context: ctx})
	return pl // a refusal is in the plan
}
