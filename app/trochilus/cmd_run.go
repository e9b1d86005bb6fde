package main

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/trochilus-llm/trochilus/engine"
	"github.com/trochilus-llm/trochilus/tokenizer"
)

// runRun tokenizes text with the model's own tokenizer, generates greedily and prints the text.
func runRun(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("run", stderr)
	mf := addModelFlags(fs)
	prompt := fs.String("p", "", "the prompt text")
	file := fs.String("f", "", "read the prompt text from this file")
	n := fs.Int("n", 128, "most tokens to generate")
	special := fs.Bool("special", false, "turn control-token text in the prompt (<|endoftext|>, ...) into those tokens")
	ignoreEOS := fs.Bool("ignore-eos", false, "do not stop at the end-of-sequence token")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: trochilus run -m MODEL (-p TEXT | -f FILE) [-n N] [-t T] [-b B] [-c C]\n\n"+
			"Tokenize raw text (no chat template), generate greedily and print the new text.")
		fs.PrintDefaults()
	}
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 0 {
		return fmt.Errorf("%w: unexpected argument %q", errUsage, fs.Arg(0))
	}
	if (*prompt == "") == (*file == "") {
		return fmt.Errorf("%w: give the prompt with exactly one of -p TEXT and -f FILE", errUsage)
	}
	if *n < 1 {
		return fmt.Errorf("%w: -n %d: want at least 1", errUsage, *n)
	}
	text := *prompt
	if *file != "" {
		b, err := os.ReadFile(*file)
		if err != nil {
			return err
		}
		text = string(b)
	}
	m, s, done, err := mf.open(ctx, stderr)
	if err != nil {
		return err
	}
	defer done()
	tok, err := tokenizer.FromGGUF(m.File())
	if err != nil {
		return fmt.Errorf("%s: %w", *mf.path, err)
	}
	var ids []int32
	if tok.AddBOS() {
		ids = append(ids, tok.BOS())
	}
	ids = tok.AppendEncode(ids, text, *special)
	if len(ids) == 0 {
		return fmt.Errorf("%w: the prompt is empty after tokenization", errUsage)
	}
	opts := engine.GenerateOptions{MaxTokens: *n}
	if eos := tok.EOS(); eos >= 0 && !*ignoreEOS {
		opts.Stop = []int32{eos}
	}
	dec := tok.NewStreamDecoder()
	opts.OnToken = func(id int32) error {
		if id == tok.EOS() {
			return nil
		}
		_, err := io.WriteString(stdout, dec.Next(id))
		return err
	}
	g, err := s.Generate(ctx, ids, opts)
	io.WriteString(stdout, dec.Flush()+"\n")
	if err != nil {
		return err
	}
	reportRates(stderr, &g)
	reportExperts(stderr, m)
	return nil
}
