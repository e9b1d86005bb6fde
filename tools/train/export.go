package main

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"os"
	"slices"

	"github.com/trochilus-llm/trochilus/gguf"
	"github.com/trochilus-llm/trochilus/internal/modelgen"
)

// shape is the model train.py trains, as it writes it into the weights file's metadata.
type shape struct {
	Arch        string  `json:"arch"`
	Layers      int     `json:"layers"`
	Hidden      int     `json:"hidden"`
	Heads       int     `json:"heads"`
	KVHeads     int     `json:"kv_heads"`
	HeadDim     int     `json:"head_dim"`
	Experts     int     `json:"experts"`
	ExpertsUsed int     `json:"experts_used"`
	ExpertFFN   int     `json:"expert_ffn"`
	Vocab       int     `json:"vocab"`
	Context     int     `json:"context"`
	RopeTheta   float32 `json:"rope_theta"`
	RMSEps      float32 `json:"rms_eps"`
	NormTopK    bool    `json:"norm_topk_prob"`
}

// safetensors holds a float32 safetensors file: its tensors by name and its metadata.
type safetensors struct {
	data     []byte
	tensors  map[string]stTensor
	metadata map[string]string
}

type stTensor struct {
	DType   string   `json:"dtype"`
	Shape   []int    `json:"shape"`
	Offsets [2]int64 `json:"data_offsets"`
}

// readSafetensors reads the file format Hugging Face's safetensors defines: a little-endian
// 64-bit header length, a JSON header, the data. Only F32 tensors are accepted.
func readSafetensors(path string) (*safetensors, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	if len(b) < 8 {
		return nil, fmt.Errorf("%s: too short for a safetensors file", path)
	}
	n := binary.LittleEndian.Uint64(b)
	if n > uint64(len(b)-8) {
		return nil, fmt.Errorf("%s: header of %d bytes in a file of %d", path, n, len(b))
	}
	var head map[string]json.RawMessage
	if err := json.Unmarshal(b[8:8+n], &head); err != nil {
		return nil, fmt.Errorf("%s: header: %w", path, err)
	}
	st := &safetensors{data: b[8+n:], tensors: map[string]stTensor{}}
	for name, raw := range head {
		if name == "__metadata__" {
			if err := json.Unmarshal(raw, &st.metadata); err != nil {
				return nil, fmt.Errorf("%s: metadata: %w", path, err)
			}
			continue
		}
		var t stTensor
		if err := json.Unmarshal(raw, &t); err != nil {
			return nil, fmt.Errorf("%s: tensor %s: %w", path, name, err)
		}
		elems := int64(1)
		for _, d := range t.Shape {
			elems *= int64(d)
		}
		if t.DType != "F32" || t.Offsets[0] < 0 || t.Offsets[1] > int64(len(st.data)) ||
			t.Offsets[1]-t.Offsets[0] != 4*elems {
			return nil, fmt.Errorf("%s: tensor %s: %s %v at %v is not a float32 tensor inside the file", path, name, t.DType, t.Shape, t.Offsets)
		}
		st.tensors[name] = t
	}
	return st, nil
}

// values returns tensor name's floats; they are in ggml order already, since a torch shape
// is the reverse of ggml's dims and both store the last torch dim fastest.
func (st *safetensors) values(name string, elems int) ([]float32, error) {
	t, ok := st.tensors[name]
	if !ok {
		return nil, fmt.Errorf("not in the weights file")
	}
	raw := st.data[t.Offsets[0]:t.Offsets[1]]
	if len(raw) != 4*elems {
		return nil, fmt.Errorf("%d values in the weights file (shape %v), the model needs %d", len(raw)/4, t.Shape, elems)
	}
	x := make([]float32, elems)
	for i := range x {
		x[i] = math.Float32frombits(binary.LittleEndian.Uint32(raw[4*i:]))
	}
	return x, nil
}

func runExport(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("export", flag.ContinueOnError)
	weights := fs.String("w", "", "trained weights `file` (safetensors, from train.py)")
	typ := fs.String("type", "q8_0", "weight `type`: one of "+fmt.Sprint(modelgen.MixNames()))
	out := fs.String("o", "", "output GGUF `file`")
	name := fs.String("name", "", "general.name (default: from the shape)")
	compact := fs.String("compact", "", "also write the compact form (modelgen.CompactTrained) to this `file`")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *weights == "" || *out == "" {
		return fmt.Errorf("export: -w and -o are required")
	}
	st, err := readSafetensors(*weights)
	if err != nil {
		return err
	}
	var sh shape
	if err := json.Unmarshal([]byte(st.metadata["shape"]), &sh); err != nil {
		return fmt.Errorf("%s: metadata \"shape\": %w", *weights, err)
	}
	w, err := modelgen.ParseWeights(*typ)
	if err != nil {
		return err
	}
	var tok *modelgen.Tokenizer
	switch sh.Arch {
	case "olmoe":
		tok, err = modelgen.FindOLMoETokenizer("")
	case "qwen3moe":
		// Qwen3's tokenizer as the project's generated Qwen3 models carry it (tools/deps.sh).
		tok, err = modelgen.FindQwen3Tokenizer("")
	default:
		return fmt.Errorf("%s: architecture %q: olmoe or qwen3moe are exported", *weights, sh.Arch)
	}
	if err != nil {
		return err
	}
	arch := ""
	if sh.Arch != "olmoe" {
		arch = sh.Arch
	}
	cfg := modelgen.Config{
		Name: *name, Arch: arch,
		Layers: sh.Layers, Hidden: sh.Hidden, Heads: sh.Heads, KVHeads: sh.KVHeads, Experts: sh.Experts,
		ExpertsUsed: sh.ExpertsUsed, ExpertFFN: sh.ExpertFFN, Vocab: sh.Vocab, Context: sh.Context,
		RopeTheta: sh.RopeTheta, RMSEps: sh.RMSEps, NormTopKProb: sh.NormTopK, Weights: w,
		Tokenizer: tok, Values: st.values,
		Description: "trained by trochilus tools/train: " + st.metadata["recipe"],
	}
	if sh.HeadDim != 0 && (sh.HeadDim != sh.Hidden/sh.Heads || arch != "") {
		cfg.HeadDimension = sh.HeadDim
	}
	if cfg.Name == "" {
		cfg.Name = fmt.Sprintf("OLMoE tiny trained %s", w.Name)
		if arch == "qwen3moe" {
			cfg.Name = fmt.Sprintf("Qwen3-MoE tiny trained %s", w.Name)
		}
	}
	// The embedding rows of the token ids the data never uses (whose output rows train.py
	// left zero) were never trained: they are written zero too, so that an unseen token is
	// nothing, as its logit is, and the committed compact form can leave both out.
	trained, err := trainedRows(st, sh)
	if err != nil {
		return err
	}
	used := map[string]bool{}
	cfg.Values = func(name string, elems int) ([]float32, error) {
		used[name] = true
		x, err := st.values(name, elems)
		if err == nil && name == "token_embd.weight" {
			for r := range sh.Vocab {
				if !trained[r] {
					clear(x[r*sh.Hidden : (r+1)*sh.Hidden])
				}
			}
		}
		return x, err
	}
	if err := modelgen.Write(ctx, *out, cfg); err != nil {
		return err
	}
	if *compact != "" {
		if err := writeCompact(*out, *compact); err != nil {
			return err
		}
	}
	var left []string
	for n := range st.tensors {
		if !used[n] {
			left = append(left, n)
		}
	}
	if len(left) > 0 {
		slices.Sort(left)
		os.Remove(*out)
		return fmt.Errorf("%s: tensors the model does not have: %v", *weights, left)
	}
	return nil
}

// trainedRows reports, by token id, whether train.py trained the id's rows: its output row is
// not all zero.
func trainedRows(st *safetensors, sh shape) ([]bool, error) {
	out, err := st.values("output.weight", sh.Vocab*sh.Hidden)
	if err != nil {
		return nil, fmt.Errorf("output.weight: %w", err)
	}
	rows := make([]bool, sh.Vocab)
	for r := range rows {
		for _, v := range out[r*sh.Hidden : (r+1)*sh.Hidden] {
			if v != 0 {
				rows[r] = true
				break
			}
		}
	}
	return rows, nil
}

// writeCompact writes the compact form of the GGUF at full to path.
func writeCompact(full, path string) error {
	f, err := gguf.Open(full)
	if err != nil {
		return err
	}
	defer f.Close()
	tmp := path + ".tmp"
	w, err := os.Create(tmp)
	if err != nil {
		return err
	}
	if err := modelgen.CompactTrained(w, f); err != nil {
		w.Close()
		os.Remove(tmp)
		return err
	}
	if err := w.Close(); err != nil {
		os.Remove(tmp)
		return err
	}
	return os.Rename(tmp, path)
}
