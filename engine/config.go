package engine

import (
	"fmt"
	"math"
	"strings"

	"github.com/trochilus-llm/trochilus/gguf"
)

// Config is a model's shape and hyperparameters as its GGUF metadata and tensor shapes give
// them.
type Config struct {
	Arch        string  // general.architecture, e.g. "olmoe"
	Layers      int     // transformer blocks
	Hidden      int     // width of the residual stream
	Heads       int     // query heads
	KVHeads     int     // key/value heads (fewer than Heads: grouped-query attention)
	HeadDim     int     // width of one head
	Experts     int     // experts per layer
	ExpertsUsed int     // experts each token is routed to
	ExpertFFN   int     // width of one expert's hidden layer
	Vocab       int     // rows of the embedding and output matrices
	Context     int     // trained context length: the most positions a session may hold
	RopeTheta   float32 // RoPE base frequency
	RMSEps      float32 // RMSNorm epsilon

	NormTopKProb  bool    // renormalise the chosen experts' weights to sum to 1
	ClipQKV       float32 // when > 0, q, k and v are clamped to ±ClipQKV after the q/k norms
	QKNormPerHead bool    // q and k are normed head by head (Qwen3), not over the whole projections (OLMoE)
}

// maxContext bounds a context length from metadata: the RoPE table and KV cache are sized from
// it, so a corrupt value must be an error, not an allocation of terabytes.
const maxContext = 1 << 24

// metaReader reads one architecture's metadata keys, remembering the first error so a config
// is read as a list of fields and checked once.
type metaReader struct {
	f      *gguf.File
	prefix string
	err    error
}

func (r *metaReader) fail(err error) {
	if r.err == nil && err != nil {
		r.err = err
	}
}

// count reads a required positive integer key.
func (r *metaReader) count(key string) int {
	return r.countOr(key, -1)
}

// countOr reads a positive integer key, or returns def when the key is absent and def >= 0
// (0, and the key's absence is the error, when def < 0).
func (r *metaReader) countOr(key string, def int) int {
	full := r.prefix + key
	if _, ok := r.f.Get(full); !ok {
		if def < 0 {
			r.fail(fmt.Errorf("metadata key %q is missing", full))
		}
		return max(def, 0)
	}
	v, err := r.f.Uint64(full)
	if err != nil {
		r.fail(fmt.Errorf("metadata: %w", err))
		return 0
	}
	if v == 0 || v > math.MaxInt32 {
		r.fail(fmt.Errorf("metadata key %q = %d is out of range [1, %d]", full, v, math.MaxInt32))
		return 0
	}
	return int(v)
}

// positive reads a float key that must be finite and positive, or returns def when it is absent
// and def > 0.
func (r *metaReader) positive(key string, def float32) float32 {
	full := r.prefix + key
	if _, ok := r.f.Get(full); !ok {
		if def <= 0 {
			r.fail(fmt.Errorf("metadata key %q is missing", full))
		}
		return def
	}
	v, err := r.f.Float32(full)
	if err != nil {
		r.fail(fmt.Errorf("metadata: %w", err))
		return 0
	}
	if !(v > 0) || math.IsInf(float64(v), 0) {
		r.fail(fmt.Errorf("metadata key %q = %g is not a finite positive number", full, v))
		return 0
	}
	return v
}

// flag reads an optional bool key.
func (r *metaReader) flag(key string) bool {
	full := r.prefix + key
	if _, ok := r.f.Get(full); !ok {
		return false
	}
	v, err := r.f.Bool(full)
	if err != nil {
		r.fail(fmt.Errorf("metadata: %w", err))
	}
	return v
}

// check reports the relations between the fields that every architecture needs: heads divide
// evenly, the head width is even (RoPE rotates pairs), top-k within the experts.
func (c *Config) check() error {
	switch {
	case c.KVHeads > c.Heads || c.Heads%c.KVHeads != 0:
		return fmt.Errorf("%d attention heads are not a multiple of %d key/value heads", c.Heads, c.KVHeads)
	case c.HeadDim%2 != 0:
		return fmt.Errorf("head width %d is odd; RoPE rotates pairs", c.HeadDim)
	case c.ExpertsUsed > c.Experts:
		return fmt.Errorf("%d experts used of %d", c.ExpertsUsed, c.Experts)
	case c.Context > maxContext:
		return fmt.Errorf("context length %d is above the supported %d", c.Context, maxContext)
	case int64(c.Heads)*int64(c.HeadDim) > math.MaxInt32 || int64(c.Experts)*int64(c.ExpertFFN) > math.MaxInt32:
		return fmt.Errorf("%d heads of %d or %d experts of %d are too wide", c.Heads, c.HeadDim, c.Experts, c.ExpertFFN)
	case c.ClipQKV < 0 || c.ClipQKV != c.ClipQKV:
		return fmt.Errorf("clip_qkv %g is negative or NaN", c.ClipQKV)
	}
	return nil
}

// ReadConfig reads the model's shape and hyperparameters from f's metadata and tensor shapes,
// strictly: a file Load would refuse for its architecture or configuration is an error naming
// why. Describe is the lenient form, for listing files the engine does not run.
func ReadConfig(f *gguf.File) (Config, error) {
	name, err := f.Str("general.architecture")
	if err != nil {
		return Config{}, err
	}
	arch, ok := architectures()[name]
	if !ok {
		return Config{Arch: name}, unsupportedArch(name)
	}
	return readConfig(f, name, arch)
}

// readConfig reads a known architecture's configuration.
func readConfig(f *gguf.File, name string, arch architecture) (Config, error) {
	cfg, err := arch.config(f)
	cfg.Arch = name
	if err != nil {
		return cfg, fmt.Errorf("%s config: %w", name, err)
	}
	return cfg, nil
}

// unsupportedArch is the error for an architecture Load does not know.
func unsupportedArch(name string) error {
	return fmt.Errorf("architecture %q is not supported (supported: %s)", name, strings.Join(Architectures(), ", "))
}
