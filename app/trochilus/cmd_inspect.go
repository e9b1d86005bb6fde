package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/trochilus-llm/trochilus/engine"
	"github.com/trochilus-llm/trochilus/engine/machine"
	"github.com/trochilus-llm/trochilus/gguf"
	"github.com/trochilus-llm/trochilus/internal/units"
)

// runInspect describes a GGUF file: its architecture's configuration, its metadata, its tensors
// and what they add up to. Only the header is read.
func runInspect(ctx context.Context, cl *commandLine, stdout, stderr io.Writer) error {
	asJSON := cl.Bool("json", false, "print the description as JSON")
	if err := cl.parse(); err != nil {
		return err
	}
	path := cl.Arg(0)
	cpu0, cpuOK := machine.ProcessCPUTime()
	start := time.Now()
	f, err := gguf.Open(path)
	took := time.Since(start)
	cpu1, _ := machine.ProcessCPUTime()
	if err != nil {
		return err
	}
	defer f.Close()
	d := describe(path, f, took)
	if cpuOK {
		d.HeaderCPUMS = float64((cpu1 - cpu0).Microseconds()) / 1000
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(d)
	}
	return d.write(stdout)
}

// description is what inspect reports, in a form both the text and the JSON output use.
type description struct {
	Path       string  `json:"path"`
	FileBytes  int64   `json:"file_bytes"`
	Version    uint32  `json:"version"`
	Alignment  int64   `json:"alignment"`
	DataOffset int64   `json:"data_offset"`
	HeaderMS   float64 `json:"header_ms"` // time to open the file and parse its header
	// HeaderCPUMS is the processor time that took: on a busy machine wall time measures the
	// queue, processor time the work.
	HeaderCPUMS float64      `json:"header_cpu_ms,omitempty"`
	Config      archConfig   `json:"config"`
	Metadata    []metaLine   `json:"metadata"`
	Tensors     []tensorLine `json:"tensors"`
	Totals      []typeTotal  `json:"totals"`
	Sum         typeTotal    `json:"sum"`
}

// archConfig is the model's shape as the engine reads it from the <arch>.* keys and the
// tensors' shapes; what the file does not give is nil.
type archConfig struct {
	Architecture      string   `json:"architecture"`
	Name              string   `json:"name,omitempty"`
	Layers            *uint64  `json:"layers,omitempty"`
	Hidden            *uint64  `json:"hidden,omitempty"`
	Heads             *uint64  `json:"heads,omitempty"`
	KVHeads           *uint64  `json:"kv_heads,omitempty"`
	HeadDim           *uint64  `json:"head_dim,omitempty"`
	FFN               *uint64  `json:"ffn,omitempty"`
	Experts           *uint64  `json:"experts,omitempty"`
	ExpertsUsed       *uint64  `json:"experts_used,omitempty"`
	Vocab             *uint64  `json:"vocab,omitempty"`
	Context           *uint64  `json:"context,omitempty"`
	RopeTheta         *float64 `json:"rope_theta,omitempty"`
	RMSEps            *float64 `json:"rms_eps,omitempty"`
	ExpertWeightsNorm *bool    `json:"expert_weights_norm,omitempty"`
	ClampKQV          *float64 `json:"clamp_kqv,omitempty"`
	FileType          *uint64  `json:"file_type,omitempty"`
	FileTypeName      string   `json:"file_type_name,omitempty"`
	// Unsupported says why the engine would not run the file; "" when it does.
	Unsupported string `json:"unsupported,omitempty"`
}

type metaLine struct {
	Key   string `json:"key"`
	Type  string `json:"type"`
	Value string `json:"value"` // rendered, long arrays and strings elided
}

type tensorLine struct {
	Name   string   `json:"name"`
	Type   string   `json:"type"`
	Dims   []uint64 `json:"dims"`
	Bytes  int64    `json:"bytes"`
	Offset int64    `json:"offset"`
}

type typeTotal struct {
	Type    string `json:"type"`
	Tensors int    `json:"tensors"`
	Elems   uint64 `json:"elements"`
	Bytes   int64  `json:"bytes"`
}

func describe(path string, f *gguf.File, took time.Duration) *description {
	d := &description{
		Path: path, FileBytes: f.Size(), Version: f.Version, Alignment: f.Alignment,
		DataOffset: f.DataOffset, HeaderMS: float64(took.Microseconds()) / 1000,
		Config: configOf(f),
	}
	for _, kv := range f.KVs {
		typ := kv.Value.Type().String()
		if kv.Value.Type() == gguf.ValueArray {
			typ = "[]" + kv.Value.ArrayType().String()
		}
		d.Metadata = append(d.Metadata, metaLine{Key: kv.Key, Type: typ, Value: kv.Value.String()})
	}
	for i := range f.Tensors {
		t := &f.Tensors[i]
		d.Tensors = append(d.Tensors, tensorLine{Name: t.Name, Type: t.Type.String(), Dims: t.Dims, Bytes: t.Size, Offset: t.Offset})
	}
	byType, all := engine.TensorTotals(f) // the same totals the library lists
	for _, tt := range byType {
		d.Totals = append(d.Totals, typeTotal{Type: tt.Type.String(), Tensors: tt.Tensors, Elems: tt.Elems, Bytes: tt.Bytes})
	}
	d.Sum = typeTotal{Type: "all", Tensors: all.Tensors, Elems: all.Elems, Bytes: all.Bytes}
	return d
}

// configOf is the model's shape as the engine reads it (engine.Describe, the reading the
// loader and the library use); a field the metadata does not give is left nil.
func configOf(f *gguf.File) archConfig {
	var c archConfig
	if v, err := f.Uint64("general.file_type"); err == nil {
		c.FileType, c.FileTypeName = &v, gguf.FileTypeName(v)
	}
	desc, err := engine.Describe(f)
	if err != nil {
		return c // no architecture: nothing more to say
	}
	count := func(n int) *uint64 {
		if n <= 0 {
			return nil
		}
		v := uint64(n)
		return &v
	}
	float := func(x float32) *float64 {
		if x <= 0 {
			return nil
		}
		v := float64(x)
		return &v
	}
	m := &desc.Config
	c.Architecture, c.Name = m.Arch, desc.Name
	c.Layers, c.Hidden, c.Heads, c.KVHeads = count(m.Layers), count(m.Hidden), count(m.Heads), count(m.KVHeads)
	c.HeadDim, c.FFN, c.Experts, c.ExpertsUsed = count(m.HeadDim), count(m.ExpertFFN), count(m.Experts), count(m.ExpertsUsed)
	c.Vocab, c.Context = count(m.Vocab), count(m.Context)
	c.RopeTheta, c.RMSEps, c.ClampKQV = float(m.RopeTheta), float(m.RMSEps), float(m.ClipQKV)
	if m.NormTopKProb {
		c.ExpertWeightsNorm = &m.NormTopKProb
	}
	if desc.Unsupported != nil {
		c.Unsupported = desc.Unsupported.Error()
	}
	return c
}

func (d *description) write(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	p := func(format string, args ...any) { fmt.Fprintf(tw, format, args...) }

	p("file:\t%s\n", d.Path)
	p("size:\t%s (%d bytes)\n", units.Bytes(uint64(d.FileBytes)), d.FileBytes)
	p("format:\tGGUF v%d, alignment %d, tensor data from byte %d\n", d.Version, d.Alignment, d.DataOffset)
	cpu := ""
	if d.HeaderCPUMS > 0 {
		cpu = fmt.Sprintf(" (%.1f ms of CPU)", d.HeaderCPUMS)
	}
	p("header:\tread in %.1f ms%s: %d metadata keys, %d tensors\n", d.HeaderMS, cpu, len(d.Metadata), len(d.Tensors))
	if err := tw.Flush(); err != nil {
		return err
	}

	c := &d.Config
	p("\nconfig\n")
	p("  architecture\t%s\n", orDash(c.Architecture))
	if c.Name != "" {
		p("  name\t%s\n", c.Name)
	}
	for _, row := range []struct {
		label string
		v     *uint64
	}{
		{"layers", c.Layers}, {"hidden", c.Hidden}, {"heads", c.Heads}, {"kv heads", c.KVHeads},
		{"head dim", c.HeadDim}, {"ffn", c.FFN}, {"experts", c.Experts}, {"experts used", c.ExpertsUsed},
		{"vocab", c.Vocab}, {"context", c.Context},
	} {
		if row.v != nil {
			p("  %s\t%d\n", row.label, *row.v)
		}
	}
	if c.RopeTheta != nil {
		p("  rope theta\t%s\n", shortFloat(*c.RopeTheta))
	}
	if c.RMSEps != nil {
		p("  rms eps\t%s\n", shortFloat(*c.RMSEps))
	}
	if c.ExpertWeightsNorm != nil {
		p("  expert weights norm\t%t\n", *c.ExpertWeightsNorm)
	}
	if c.ClampKQV != nil {
		p("  clamp kqv\t%s\n", shortFloat(*c.ClampKQV))
	}
	if c.FileType != nil {
		p("  file type\t%d %s\n", *c.FileType, c.FileTypeName)
	}
	if c.Unsupported != "" {
		p("  engine\tcannot run it: %s\n", c.Unsupported)
	}
	p("  parameters\t%s\n", count(d.Sum.Elems))
	if err := tw.Flush(); err != nil {
		return err
	}

	p("\nmetadata (%d keys)\n", len(d.Metadata))
	for _, m := range d.Metadata {
		p("  %s\t%s\t%s\n", m.Key, m.Type, strings.ReplaceAll(m.Value, "\t", `\t`))
	}
	if err := tw.Flush(); err != nil {
		return err
	}

	p("\ntensors (%d)\n", len(d.Tensors))
	p("  name\ttype\tshape\tbytes\toffset\n")
	for _, t := range d.Tensors {
		p("  %s\t%s\t%s\t%d\t%d\n", t.Name, t.Type, shape(t.Dims), t.Bytes, t.Offset)
	}
	if err := tw.Flush(); err != nil {
		return err
	}

	p("\ntotals by type\n")
	p("  type\ttensors\tparameters\tbytes\t\n")
	for _, t := range append(d.Totals, d.Sum) {
		p("  %s\t%d\t%s\t%d\t%s\n", t.Type, t.Tensors, count(t.Elems), t.Bytes, units.Bytes(uint64(t.Bytes)))
	}
	p("  file\t\t\t%d\t%s\n", d.FileBytes, units.Bytes(uint64(d.FileBytes)))
	return tw.Flush()
}

// shortFloat renders x in the fewest digits that read back to it, as a float32 when it is one
// (most GGUF floats are), so 1e-5 stored in a float32 prints as 1e-05, not 9.99999974e-06.
func shortFloat(x float64) string {
	if float64(float32(x)) == x {
		return strconv.FormatFloat(x, 'g', -1, 32)
	}
	return strconv.FormatFloat(x, 'g', -1, 64)
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// shape renders ggml dims, row first, as "2048x1024x64".
func shape(dims []uint64) string {
	parts := make([]string, len(dims))
	for i, d := range dims {
		parts[i] = fmt.Sprint(d)
	}
	return strings.Join(parts, "x")
}

// count renders a parameter count with a decimal unit ("6.92 B").
func count(n uint64) string {
	switch {
	case n >= 1e9:
		return fmt.Sprintf("%.2f B", float64(n)/1e9)
	case n >= 1e6:
		return fmt.Sprintf("%.2f M", float64(n)/1e6)
	case n >= 1e3:
		return fmt.Sprintf("%.2f K", float64(n)/1e3)
	}
	return fmt.Sprint(n)
}
