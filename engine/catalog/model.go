package catalog

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/trochilus-llm/trochilus/engine"
	"github.com/trochilus-llm/trochilus/gguf"
)

// Model is what a GGUF file's header says about the model inside: engine.Describe's
// description (the shape as the loader reads it, why the engine would refuse the file if it
// would, the bytes by weight type, the footprint the memory planner weighs), with where the
// file is and its name for the list.
type Model struct {
	Path string
	Size int64 // bytes of the file
	engine.Description
}

// TypeShare is how much of a model one weight type holds.
type TypeShare = engine.TypeTotal

// Describe reads the header of the GGUF file at path. A file that is not a well-formed GGUF is
// an error naming what is wrong; one of an architecture the engine does not run is described
// all the same, with the reason in Unsupported (the caller decides what to offer).
func Describe(path string) (Model, error) {
	f, err := gguf.Open(path)
	if err != nil {
		return Model{}, fmt.Errorf("catalog: %w", err)
	}
	defer f.Close()
	m, err := describe(f)
	if err != nil {
		return Model{}, fmt.Errorf("catalog: %s: %w", path, err)
	}
	m.Path = path
	if m.Name == "" {
		m.Name = strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
	}
	return m, nil
}

func describe(f *gguf.File) (Model, error) {
	d, err := engine.Describe(f)
	if err != nil {
		return Model{}, err
	}
	if d.Layers == 0 {
		return Model{}, fmt.Errorf("metadata %s.block_count is missing or invalid", d.Arch)
	}
	return Model{Size: f.Size(), Description: d}, nil
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
