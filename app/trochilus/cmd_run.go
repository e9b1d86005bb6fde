package main

import (
	"context"
	"fmt"
	"io"

	"github.com/trochilus-llm/trochilus/engine/assistant"
)

// runRun continues raw text (no chat template) greedily through assistant.Complete, so that it
// streams the same valid UTF-8 text as chat and serve, and prints it.
func runRun(ctx context.Context, cl *commandLine, stdout, stderr io.Writer) error {
	mf := addModelFlags(cl.FlagSet)
	prompt := cl.String("p", "", "the prompt text")
	file := cl.String("f", "", "read the prompt text from this file")
	n := cl.Int("n", 128, "most tokens to generate")
	special := cl.Bool("special", false, "turn control-token text in the prompt (<|endoftext|>, ...) into those tokens")
	ignoreEOS := cl.Bool("ignore-eos", false, "do not stop at the end-of-sequence token")
	if err := cl.parse(); err != nil {
		return err
	}
	if (*prompt == "") == (*file == "") {
		return fmt.Errorf("%w: give the prompt with exactly one of -p TEXT and -f FILE", errUsage)
	}
	if *n < 1 {
		return fmt.Errorf("%w: -n %d: want at least 1", errUsage, *n)
	}
	text, err := textOrFile(*prompt, *file)
	if err != nil {
		return err
	}
	c, done, err := mf.openChat(ctx, stderr)
	if err != nil {
		return err
	}
	defer done()
	var werr error
	before := c.Model().ExpertStats() // the run's own reads, not the load's or an earlier run's
	r, err := c.Complete(ctx, text, assistant.Options{MaxTokens: *n, Draft: *mf.draft, SpecialText: *special, IgnoreEOS: *ignoreEOS,
		OnText: func(piece string) {
			if _, e := io.WriteString(stdout, piece); e != nil && werr == nil {
				werr = e
			}
		}})
	io.WriteString(stdout, "\n")
	if err == nil {
		err = werr
	}
	if err != nil {
		if r.Prompt == 0 {
			return fmt.Errorf("%w: %v", errUsage, err)
		}
		return err
	}
	fmt.Fprintf(stderr, "prompt: %d tokens in %.3fs, %.2f tok/s\n", r.Prompt, r.PromptTime.Seconds(), r.PPRate)
	fmt.Fprintf(stderr, "generation: %d tokens in %.3fs, %.2f tok/s\n", r.Tokens, r.DecodeTime.Seconds(), r.Rate)
	// Complete keeps no count at the prompt's end: the store's figures are the whole run's,
	// per token generated.
	reportStore(stderr, "experts", c.Model().ExpertStats().Sub(before), r.Tokens, r.PromptTime+r.DecodeTime)
	return nil
}
