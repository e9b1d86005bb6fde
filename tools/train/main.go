// Command train prepares the data for, and exports, the project's small trained MoE models:
// the realistic workload random weights cannot give (flat logits, random routing, text that
// never repeats its context). The training itself is train.py (Debian's PyTorch on the CPU);
// recipe.sh runs the whole recipe. README.md says what each step writes.
//
//	go run ./tools/train data -o DIR                 tokens of the corpus and the chat examples
//	go run ./tools/train export -w W.safetensors -type q8_0 -o M.gguf
//
// The tokens come from the project's own tokenizer (checked against Hugging Face's by the
// tokenizer's oracle tests) and the chat examples from the model's own chat template rendered
// by tokenizer/chat (checked against transformers'), so the model is trained on exactly what
// the engine will feed it.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: train data|export [flags]")
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "data":
		err = runData(os.Args[2:])
	case "export":
		err = runExport(ctx, os.Args[2:])
	default:
		fmt.Fprintf(os.Stderr, "train: unknown command %q (data or export)\n", os.Args[1])
		os.Exit(2)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "train:", err)
		os.Exit(1)
	}
}
