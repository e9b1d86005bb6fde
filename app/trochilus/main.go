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

	"github.com/trochilus-llm/trochilus/engine/hub"
	"github.com/trochilus-llm/trochilus/engine/library"
)

// A command is one subcommand: its one-line summary, its help (-h prints it), the arguments
// it takes after its flags, and the function that runs it. The table holds every command's
// help so that run makes each command's flag set (newCommandLine) and no command restates its
// name or help in its own code.
type command struct {
	summary  string
	synopsis string // the usage line, after "usage: "; "" keeps the flag package's help
	about    string // what the command does, printed between the synopsis and the flags
	// args checks the arguments after the flags, returning a usage error; nil allows none.
	args func(args []string) error
	run  func(ctx context.Context, cl *commandLine, stdout, stderr io.Writer) error
}

func commands() map[string]command {
	return map[string]command{
		"chat": {
			summary:  "chat with a model on the terminal, through its chat template",
			synopsis: "trochilus chat -m MODEL [-system TEXT] [-n N] [-t T] [-b B] [-c C]",
			about: "Chat with the model on the terminal, through its own chat template: greedily, or sampled\n" +
				"with -temp (the same seed gives the same answers on any machine).\n" + chatHelp,
			run: runChat,
		},
		"cpu": {
			summary:  "print what this machine offers (cores, SIMD, RAM)",
			synopsis: "trochilus cpu [-json] [-m MODEL [-c C]]",
			about: "Print what this machine offers: processor, cores, SIMD features, RAM. With -m, the memory plan\n" +
				"a load of the model would follow: every weight in RAM, experts from disk, or won't fit, with the numbers.",
			run: runCPU,
		},
		"inspect": {
			summary:  "describe a GGUF file: config, metadata, tensors",
			synopsis: "trochilus inspect [-json] FILE",
			about:    "Describe a GGUF file: architecture config, metadata, tensors, totals.",
			args:     oneArg("FILE"),
			run:      runInspect,
		},
		"gen": {
			summary:  "write a deterministic test model (tiny or full-size OLMoE or Qwen3-MoE shape)",
			synopsis: "trochilus gen -o FILE [-preset tiny|full] [-type TYPE] [-seed N] [overrides]",
			about:    "Write an OLMoE- or Qwen3-MoE-shaped GGUF with random weights; the same flags give the same bytes.",
			run:      runGen,
		},
		"generate": {
			summary:  "generate greedily from token ids; print the new ids",
			synopsis: "trochilus generate -m MODEL --tokens 1,2,3 [-n N] [-t T] [-b B] [-c C] [-repeat R]",
			about:    "Generate greedily from token ids; print the new ids, comma-separated, on stdout.",
			run:      runGenerate,
		},
		"logits": {
			summary:  "write the float32 logits after every token of a prompt",
			synopsis: "trochilus logits -m MODEL --tokens 1,2,3 [-o FILE] [--hex] [-t T] [-b B] [-c C]",
			about: "Evaluate token ids and write the logits after every token: float32 little-endian,\n" +
				"[tokens][vocab], to FILE or stdout; --hex writes one line of hex per position instead.",
			run: runLogits,
		},
		"ls": {
			summary:  "list the models folder: size, architecture, weight types, fit",
			synopsis: "trochilus ls",
			about: "List the app's models folder ($" + library.HomeEnv + "/models when set) and the models opened from\n" +
				"elsewhere: size, architecture, weight types and whether each fits this machine's memory.",
			run: runLs,
		},
		"pull": {
			summary:  "download a model from Hugging Face (REPO[:FILE]), verified and resumable",
			synopsis: "trochilus pull REPO[:FILE]",
			about: "Download a GGUF model from Hugging Face ($" + hub.EndpointEnv + " replaces https://huggingface.co) into\n" +
				"the app's models folder ($" + library.HomeEnv + "/models when set), verifying the SHA-256 the\n" +
				"repository publishes. FILE is a file name (foo-Q4_K_M.gguf) or a quant tag (Q4_K_M); without\n" +
				"it the repository's only .gguf, or its Q4_K_M one, is taken. An interrupted pull (Ctrl-C, a\n" +
				"lost connection) keeps what it received; pulling again resumes there.\n\n" +
				"example: trochilus pull allenai/OLMoE-1B-7B-0125-Instruct-GGUF:Q4_K_M",
			args: oneArg("REPO[:FILE]"),
			run:  runPull,
		},
		"rm": {
			summary:  "delete a model (and its unfinished download) from the models folder",
			synopsis: "trochilus rm NAME...",
			about: "Delete models from the app's models folder ($" + library.HomeEnv + "/models when set), with any\n" +
				"unfinished download of them. NAME is a file name there, with or without .gguf, or the start\n" +
				"of one that no other model shares ('trochilus ls' lists them). Files elsewhere are never touched.",
			args: someArgs("name the model to delete"),
			run:  runRm,
		},
		"run": {
			summary:  "continue raw text greedily (no chat template)",
			synopsis: "trochilus run -m MODEL (-p TEXT | -f FILE) [-n N] [-t T] [-b B] [-c C]",
			about:    "Tokenize raw text (no chat template), generate greedily and print the new text.",
			run:      runRun,
		},
		"search": {
			summary:  "find GGUF models on Hugging Face by name, or list a repository's models",
			synopsis: "trochilus search [-n N] [-fit] TEXT | OWNER/NAME",
			about: "Search Hugging Face ($" + hub.EndpointEnv + " replaces https://huggingface.co) for repositories of GGUF\n" +
				"models whose names contain TEXT, most downloaded first; or, given a repository, list its models:\n" +
				"each file (a split model's parts as one), its size and quant tag, and with -fit whether it fits\n" +
				"this machine, read from its header by range requests before any download.\n\n" +
				"examples: trochilus search olmoe\n" +
				"          trochilus search -fit allenai/OLMoE-1B-7B-0125-Instruct-GGUF",
			args: oneArg("TEXT or OWNER/NAME"),
			run:  runSearch,
		},
		"serve": {
			summary:  "answer OpenAI-style HTTP requests (chat, completions, streaming)",
			synopsis: "trochilus serve -m MODEL [-addr HOST:PORT] [-api-key KEY] [-cors ORIGINS] [-name ID] [-parallel N] [-queue N] [-t T] [-b B] [-c C]",
			about: "Answer HTTP requests in the shape of OpenAI's API: POST /v1/chat/completions,\n" +
				"POST /v1/completions, POST /v1/responses (\"stream\": true for server-sent events),\n" +
				"GET /v1/models[/ID], GET /health;\n" +
				"greedy unless a request sets a temperature (then sampled with its seed, or a fresh one the\n" +
				"response reports). And in the shape of Ollama's: POST /api/chat, /api/generate (lines of JSON\n" +
				"unless \"stream\": false; Ollama's sampling defaults, a seed in the options reproduces),\n" +
				"/api/show, GET /api/tags, /api/ps, /api/version. -parallel N answers N requests at once\n" +
				"(each with its own session and KV cache, their tokens sharing forward passes: the same answers);\n" +
				"-queue N requests more may wait their turn, the next gets 429 with Retry-After.\n" +
				"Listens on loopback unless -addr says otherwise, which then needs -api-key. SIGINT or\n" +
				"SIGTERM stops it (status 0): the answers in flight end with an error saying so.",
			run: runServe,
		},
		// tokenize and template have no help of their own (the flag package's lists their
		// flags) and have always let arguments follow the flags.
		"tokenize": {summary: "print the token ids and pieces of a text", args: anyArgs, run: runTokenize},
		"template": {summary: "render a conversation with the model's chat template", args: anyArgs, run: runTemplate},
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
	err := cmd.run(ctx, newCommandLine(args[0], args[1:], stderr), stdout, stderr)
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
