// Command trochilus is the command-line face of Trochilus: it inspects GGUF files, reports what
// the machine offers, generates test models, downloads and lists models in the app's models
// folder and runs Mixture-of-Experts models. It is built without cgo and needs no display.
//
// Exit codes: 0 success, 1 a failure while working (bad file, I/O error), 2 a usage error,
// 130 interrupted (Ctrl-C).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sort"
)

// A command is one subcommand: its one-line summary and the function that runs it with the
// arguments after its name.
type command struct {
	summary string
	run     func(ctx context.Context, args []string, stdout, stderr io.Writer) error
}

func commands() map[string]command {
	return map[string]command{
		"chat":     {"chat with a model on the terminal, through its chat template", runChat},
		"cpu":      {"print what this machine offers (cores, SIMD, RAM)", runCPU},
		"inspect":  {"describe a GGUF file: config, metadata, tensors", runInspect},
		"gen":      {"write a deterministic test model (tiny or full-size OLMoE or Qwen3-MoE shape)", runGen},
		"generate": {"generate greedily from token ids; print the new ids", runGenerate},
		"logits":   {"write the float32 logits after every token of a prompt", runLogits},
		"ls":       {"list the models folder: size, architecture, weight types, fit", runLs},
		"pull":     {"download a model from Hugging Face (REPO[:FILE]), verified and resumable", runPull},
		"rm":       {"delete a model (and its unfinished download) from the models folder", runRm},
		"run":      {"continue raw text greedily (no chat template)", runRun},
		"search":   {"find GGUF models on Hugging Face by name, or list a repository's models", runSearch},
		"serve":    {"answer OpenAI-style HTTP requests (chat, completions, streaming)", runServe},
		"tokenize": {"print the token ids and pieces of a text", runTokenize},
		"template": {"render a conversation with the model's chat template", runTemplate},
	}
}

// errUsage marks an error as the caller's (exit code 2).
var errUsage = errors.New("usage")

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: trochilus COMMAND [flags]\n\ncommands:")
	cmds := commands()
	names := make([]string, 0, len(cmds))
	for n := range cmds {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-10s %s\n", n, cmds[n].summary)
	}
	fmt.Fprintln(w, "\nRun 'trochilus COMMAND -h' for a command's flags.")
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		usage(stderr)
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	cmd, ok := commands()[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "trochilus: unknown command %q\n", args[0])
		usage(stderr)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	err := cmd.run(ctx, args[1:], stdout, stderr)
	switch {
	case err == nil:
		return 0
	case errors.Is(err, flag.ErrHelp):
		return 0
	case errors.Is(err, errUsage):
		fmt.Fprintf(stderr, "trochilus %s: %v\n", args[0], err)
		return 2
	case ctx.Err() != nil:
		fmt.Fprintf(stderr, "trochilus %s: interrupted\n", args[0])
		return 130
	default:
		fmt.Fprintf(stderr, "trochilus %s: %v\n", args[0], err)
		return 1
	}
}
