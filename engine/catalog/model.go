package catalog

import (
	"cmp"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/trochilus-llm/trochilus/gguf"
)

// Model is what a GGUF file's header says about the model inside.
type Model struct {
	Path string
	Name string // general.name, or the file name without its extension
	Arch string // general.architecture
	Size int64  // bytes of the file

	Layers      int // <arch>.block_count
	Experts     int // <arch>.expert_count, 0 for a dense model
	ExpertsUsed int // <arch>.expert_used_count
	Context     int // <arch>.context_length
	Hidden      int // <arch>.embedding_length
	KVWidth     int // key (and value) width per token per layer: KV heads times head width
	ExpertFFN   int // <arch>.expert_feed_forward_length or <arch>.feed_forward_length
	Vocab       int // rows of token_embd

	Params      uint64 // weights in all tensors
	DenseBytes  int64  // bytes of tensors every token uses (attention, norms, embeddings, routers)
	ExpertBytes int64  // bytes of the stacked expert tensors (*_exps)
	Types       []TypeShare
}

// TypeShare is how much of a model one weight type holds.
type TypeShare struct {
	Type    gguf.Type
	Tensors int
	Bytes   int64
}

// Describe reads the header of the GGUF file at path. A file that is not a well-formed GGUF is
// an error naming what is wrong; one of an architecture the engine does not run is described
// all the same (the caller decides what to offer).
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
	arch, err := f.Str("general.architecture")
	if err != nil {
		return Model{}, err
	}
	m := Model{Arch: arch, Size: f.Size()}
	m.Name, _ = f.Str("general.name")
	num := func(key string) int {
		v, err := f.Uint32(arch + "." + key)
		if err != nil || v > 1<<30 {
			return 0
		}
		return int(v)
	}
	m.Layers = num("block_count")
	m.Experts = num("expert_count")
	m.ExpertsUsed = num("expert_used_count")
	m.Context = num("context_length")
	m.Hidden = num("embedding_length")
	m.ExpertFFN = num("expert_feed_forward_length")
	if m.ExpertFFN == 0 {
		m.ExpertFFN = num("feed_forward_length")
	}
	heads, kvHeads := num("attention.head_count"), num("attention.head_count_kv")
	if kvHeads == 0 {
		kvHeads = heads
	}
	headDim := num("attention.key_length")
	if headDim == 0 && heads > 0 {
		headDim = m.Hidden / heads
	}
	m.KVWidth = kvHeads * headDim
	if m.Layers == 0 {
		return Model{}, fmt.Errorf("metadata %s.block_count is missing or invalid", arch)
	}

	shares := map[gguf.Type]*TypeShare{}
	for i := range f.Tensors {
		t := &f.Tensors[i]
		m.Params += t.Elems()
		if strings.HasSuffix(t.Name, "_exps.weight") || strings.HasSuffix(t.Name, "_exps") {
			m.ExpertBytes += t.Size
		} else {
			m.DenseBytes += t.Size
		}
		if t.Name == "token_embd.weight" && len(t.Dims) == 2 && t.Dims[1] < 1<<31 {
			m.Vocab = int(t.Dims[1])
		}
		s := shares[t.Type]
		if s == nil {
			s = &TypeShare{Type: t.Type}
			shares[t.Type] = s
		}
		s.Tensors++
		s.Bytes += t.Size
	}
	for _, s := range shares {
		m.Types = append(m.Types, *s)
	}
	slices.SortFunc(m.Types, func(a, b TypeShare) int {
		return cmp.Or(cmp.Compare(b.Bytes, a.Bytes), cmp.Compare(a.Type, b.Type))
	})
	return m, nil
}

// TypesText lists the weight types by share of the bytes, e.g. "Q4_K 71%, Q6_K 27%, F32 2%".
func (m *Model) TypesText() string {
	var total int64
	for _, s := range m.Types {
		total += s.Bytes
	}
	var parts []string
	for _, s := range m.Types {
		pct := 0.0
		if total > 0 {
			pct = 100 * float64(s.Bytes) / float64(total)
		}
		if pct < 0.5 {
			parts = append(parts, s.Type.String()+" <1%")
			continue
		}
		parts = append(parts, fmt.Sprintf("%s %.0f%%", s.Type, pct))
	}
	return strings.Join(parts, ", ")
}

// ExpertUnitBytes returns the bytes of one (layer, expert) unit: its gate, up and down rows,
// or 0 for a dense model.
func (m *Model) ExpertUnitBytes() int64 {
	if m.Experts == 0 || m.Layers == 0 {
		return 0
	}
	return m.ExpertBytes / int64(m.Experts*m.Layers)
}
