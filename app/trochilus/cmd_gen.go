package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/trochilus-llm/trochilus/internal/modelgen"
	"github.com/trochilus-llm/trochilus/internal/units"
)

// runGen writes a deterministic OLMoE- or Qwen3-MoE-shaped model with random weights.
func runGen(ctx context.Context, cl *commandLine, stdout, stderr io.Writer) error {
	out := cl.String("o", "", "the GGUF file to write (required)")
	preset := cl.String("preset", "tiny", "the shape to start from: tiny, full (OLMoE-1B-7B), qwen3-tiny or qwen3-full (Qwen3-30B-A3B)")
	typ := cl.String("type", "q8_0", "weight types: "+strings.Join(modelgen.MixNames(), ", "))
	seed := cl.Uint64("seed", 1, "the random seed")
	name := cl.String("name", "", "general.name (default: made from the preset and type)")
	tokDir := cl.String("tokenizer", "", "folder holding the tokenizer.json (default: OLMoE's, built in; Qwen3's from .deps/npm in a source tree)")
	noTok := cl.Bool("no-tokenizer", false, "write no tokenizer metadata")
	layers := cl.Int("layers", 0, "override: layers")
	hidden := cl.Int("hidden", 0, "override: hidden width")
	heads := cl.Int("heads", 0, "override: attention heads")
	kvHeads := cl.Int("kv-heads", 0, "override: key/value heads")
	experts := cl.Int("experts", 0, "override: experts per layer")
	used := cl.Int("experts-used", 0, "override: experts used per token")
	ffn := cl.Int("ffn", 0, "override: expert FFN width")
	vocab := cl.Int("vocab", 0, "override: vocabulary rows")
	ctxLen := cl.Int("context", 0, "override: context length")
	theta := cl.Float64("rope-theta", 0, "override: RoPE theta")
	eps := cl.Float64("rms-eps", 0, "override: RMSNorm epsilon")
	normTopK := cl.Bool("norm-topk-prob", false, "renormalise the chosen experts' weights (olmoe.expert_weights_norm)")
	clip := cl.Float64("clip-qkv", 0, "clamp q, k, v to this magnitude (olmoe.attention.clamp_kqv); 0: no clamp")
	if err := cl.parse(); err != nil {
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
	override(cl, "layers", &cfg.Layers, *layers)
	override(cl, "hidden", &cfg.Hidden, *hidden)
	// -heads sets the key/value heads too, unless -kv-heads, applied after it, says otherwise.
	override(cl, "heads", &cfg.Heads, *heads)
	override(cl, "heads", &cfg.KVHeads, *heads)
	override(cl, "kv-heads", &cfg.KVHeads, *kvHeads)
	override(cl, "experts", &cfg.Experts, *experts)
	override(cl, "experts-used", &cfg.ExpertsUsed, *used)
	override(cl, "ffn", &cfg.ExpertFFN, *ffn)
	override(cl, "vocab", &cfg.Vocab, *vocab)
	override(cl, "context", &cfg.Context, *ctxLen)
	override(cl, "rope-theta", &cfg.RopeTheta, float32(*theta))
	override(cl, "rms-eps", &cfg.RMSEps, float32(*eps))
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
func override[T any](cl *commandLine, name string, field *T, v T) {
	if cl.given(name) {
		*field = v
	}
}
