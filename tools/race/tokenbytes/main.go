// Command tokenbytes reports how many weight bytes one generated token reads from a
// mixture-of-experts GGUF: every dense tensor in full, one row of the token embedding, and of
// each expert tensor the share of the experts a token uses (expert_used_count of expert_count).
// Dividing a measured RAM bandwidth by this figure bounds the generation speed from above.
//
// usage: tokenbytes [-json] FILE...
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"strings"

	"github.com/trochilus-llm/trochilus/gguf"
)

// Report is the weight traffic of one token of one file.
type Report struct {
	File        string `json:"file"`
	FileBytes   int64  `json:"file_bytes"`
	Experts     uint32 `json:"experts"`
	ExpertsUsed uint32 `json:"experts_used"`
	DenseBytes  int64  `json:"dense_bytes"`  // attention, norms, router, output head
	EmbedBytes  int64  `json:"embed_bytes"`  // the one embedding row looked up
	ExpertBytes int64  `json:"expert_bytes"` // the used experts' share of the expert tensors
	TokenBytes  int64  `json:"token_bytes"`  // the sum of the three
}

func main() {
	asJSON := flag.Bool("json", false, "print one JSON object per file")
	flag.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: tokenbytes [-json] FILE...")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() == 0 {
		flag.Usage()
		os.Exit(2)
	}
	for _, path := range flag.Args() {
		r, err := measure(path)
		if err != nil {
			fmt.Fprintln(os.Stderr, "tokenbytes:", err)
			os.Exit(1)
		}
		if *asJSON {
			b, _ := json.Marshal(r)
			fmt.Println(string(b))
			continue
		}
		fmt.Printf("%s: %.3f GB a token (dense %.3f, embedding row %.6f, %d of %d experts %.3f); file %.3f GB\n",
			r.File, gb(r.TokenBytes), gb(r.DenseBytes), gb(r.EmbedBytes), r.ExpertsUsed, r.Experts, gb(r.ExpertBytes), gb(r.FileBytes))
	}
}

func gb(n int64) float64 { return float64(n) / 1e9 }

func measure(path string) (Report, error) {
	f, err := gguf.Open(path)
	if err != nil {
		return Report{}, err
	}
	defer f.Close()
	r := Report{File: path, FileBytes: f.Size()}
	arch, err := f.Str("general.architecture")
	if err != nil {
		return r, fmt.Errorf("%s: %w", path, err)
	}
	if r.Experts, err = f.Uint32(arch + ".expert_count"); err != nil {
		return r, fmt.Errorf("%s: %w", path, err)
	}
	if r.ExpertsUsed, err = f.Uint32(arch + ".expert_used_count"); err != nil {
		return r, fmt.Errorf("%s: %w", path, err)
	}
	if r.Experts == 0 || r.ExpertsUsed > r.Experts {
		return r, fmt.Errorf("%s: %d of %d experts used", path, r.ExpertsUsed, r.Experts)
	}
	for _, t := range f.Tensors {
		switch {
		case strings.Contains(t.Name, "_exps."):
			// The expert index is the slowest dimension, so each expert is an equal slice.
			r.ExpertBytes += t.Size / int64(r.Experts) * int64(r.ExpertsUsed)
		case strings.HasPrefix(t.Name, "token_embd."):
			if len(t.Dims) != 2 || t.Dims[1] == 0 {
				return r, fmt.Errorf("%s: tensor %q: dims %v, want two", path, t.Name, t.Dims)
			}
			r.EmbedBytes += t.Size / int64(t.Dims[1])
		default:
			r.DenseBytes += t.Size
		}
	}
	r.TokenBytes = r.DenseBytes + r.EmbedBytes + r.ExpertBytes
	return r, nil
}
