package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/trochilus-llm/trochilus/internal/modelgen"
	"github.com/trochilus-llm/trochilus/internal/units"
)

// runGen writes a deterministic OLMoE- or Qwen3-MoE-shaped model with random weights.
func runGen(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	cl := commandLine{
		name:     "gen",
		synopsis: "trochilus gen -o FILE [-preset tiny|full] [-type TYPE] [-seed N] [overrides]",
		about:    "Write an OLMoE- or Qwen3-MoE-shaped GGUF with random weights; the same flags give the same bytes.",
	}
	fs := cl.flags(stderr)
	out := fs.String("o", "", "the GGUF file to write (required)")
	preset := fs.String("preset", "tiny", "the shape to start from: tiny, full (OLMoE-1B-7B), qwen3-tiny or qwen3-full (Qwen3-30B-A3B)")
	typ := fs.String("type", "q8_0", "weight types: "+strings.Join(modelgen.MixNames(), ", "))
	seed := fs.Uint64("seed", 1, "the random seed")
	name := fs.String("name", "", "general.name (default: made from the preset and type)")
	tokDir := fs.String("tokenizer", "", "folder holding the tokenizer.json (default: OLMoE's, built in; Qwen3's from .deps/npm in a source tree)")
	noTok := fs.Bool("no-tokenizer", false, "write no tokenizer metadata")
	layers := fs.Int("layers", 0, "override: layers")
	hidden := fs.Int("hidden", 0, "override: hidden width")
	heads := fs.Int("heads", 0, "override: attention heads")
	kvHeads := fs.Int("kv-heads", 0, "override: key/value heads")
	experts := fs.Int("experts", 0, "override: experts per layer")
	used := fs.Int("experts-used", 0, "override: experts used per token")
	ffn := fs.Int("ffn", 0, "override: expert FFN width")
	vocab := fs.Int("vocab", 0, "override: vocabulary rows")
	ctxLen := fs.Int("context", 0, "override: context length")
	theta := fs.Float64("rope-theta", 0, "override: RoPE theta")
	eps := fs.Float64("rms-eps", 0, "override: RMSNorm epsilon")
	normTopK := fs.Bool("norm-topk-prob", false, "renormalise the chosen experts' weights (olmoe.expert_weights_norm)")
	clip := fs.Float64("clip-qkv", 0, "clamp q, k, v to this magnitude (olmoe.attention.clamp_kqv); 0: no clamp")
	if err := cl.parse(fs, args); err != nil {
		return err
	}
	if *out == "" {
		return fmt.Errorf("%w: -o FILE is required", errUsage)
	}
	w, err := modelgen.ParseWeights(*typ)
	if err != nil {
		return fmt.Errorf("%w: %v", errUsage, err)
	}
	var cfg modelgen.Config
	switch *preset {
	case "tiny":
		cfg = modelgen.Tiny(w)
	case "full":
		cfg = modelgen.Full(w)
	case "qwen3-tiny":
		cfg = modelgen.TinyQwen3(w)
	case "qwen3-full":
		cfg = modelgen.FullQwen3(w)
	default:
		return fmt.Errorf("%w: unknown preset %q (want tiny, full, qwen3-tiny or qwen3-full)", errUsage, *preset)
	}
	cfg.Seed = *seed
	if *name != "" {
		cfg.Name = *name
	}
	// An override replaces the preset's value only where its flag is given: a 0 given is a
	// value for Validate to judge, not "the preset's".
	override(fs, "layers", &cfg.Layers, *layers)
	override(fs, "hidden", &cfg.Hidden, *hidden)
	// -heads sets the key/value heads too, unless -kv-heads, applied after it, says otherwise.
	override(fs, "heads", &cfg.Heads, *heads)
	override(fs, "heads", &cfg.KVHeads, *heads)
	override(fs, "kv-heads", &cfg.KVHeads, *kvHeads)
	override(fs, "experts", &cfg.Experts, *experts)
	override(fs, "experts-used", &cfg.ExpertsUsed, *used)
	override(fs, "ffn", &cfg.ExpertFFN, *ffn)
	override(fs, "vocab", &cfg.Vocab, *vocab)
	override(fs, "context", &cfg.Context, *ctxLen)
	override(fs, "rope-theta", &cfg.RopeTheta, float32(*theta))
	override(fs, "rms-eps", &cfg.RMSEps, float32(*eps))
	if cfg.Arch != "qwen3moe" { // Qwen3-MoE always renormalises and clamps nothing
		cfg.NormTopKProb = *normTopK
		cfg.ClipQKV = float32(*clip)
	}
	if err := cfg.Validate(); err != nil {
		return fmt.Errorf("%w: %v", errUsage, err)
	}
	tokNote := ""
	if !*noTok {
		find, tokName := modelgen.FindOLMoETokenizer, "OLMoE tokenizer"
		if cfg.Arch == "qwen3moe" {
			find, tokName = modelgen.FindQwen3Tokenizer, "Qwen3 tokenizer"
		}
		tokNote = tokName
		tok, err := find(*tokDir)
		if err != nil {
			if errors.Is(err, modelgen.ErrNoTokenizer) {
				return fmt.Errorf("%w; pass -tokenizer DIR, or -no-tokenizer for a model without one", err)
			}
			return err
		}
		cfg.Tokenizer = tok
	}

	start := time.Now()
	if err := modelgen.Write(ctx, *out, cfg); err != nil {
		return err
	}
	took := time.Since(start)
	st, err := os.Stat(*out)
	if err != nil {
		return err
	}
	if cfg.Tokenizer == nil {
		tokNote = "no tokenizer"
	}
	fmt.Fprintf(stdout, "wrote %s: %s (%d bytes) in %.2fs, %.0f MB/s\n", *out, units.Bytes(uint64(st.Size())),
		st.Size(), took.Seconds(), float64(st.Size())/1e6/took.Seconds())
	fmt.Fprintf(stdout, "  %s, %s weights, seed %d, %s\n", cfg.Name, w.Name, cfg.Seed, tokNote)
	fmt.Fprintf(stdout, "  %d layers, hidden %d, %d heads (%d kv) of %d, %d experts (%d used) of width %d, vocab %d, context %d\n",
		cfg.Layers, cfg.Hidden, cfg.Heads, cfg.KVHeads, cfg.HeadDim(), cfg.Experts, cfg.ExpertsUsed, cfg.ExpertFFN,
		cfg.Vocab, cfg.Context)
	return nil
}

// override sets *field to v when the flag called name was given on the command line.
func override[T any](fs *flag.FlagSet, name string, field *T, v T) {
	if flagSet(fs, name) {
		*field = v
	}
}
