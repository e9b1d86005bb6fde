package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"

	"github.com/trochilus-llm/trochilus/engine"
	"github.com/trochilus-llm/trochilus/engine/assistant"
	"github.com/trochilus-llm/trochilus/tokenizer/chat"
)

// runChat holds a conversation on the terminal: each line read is the user's turn.
func runChat(ctx context.Context, cl *commandLine, stdout, stderr io.Writer) error {
	// Ctrl-C stops the answer being written and returns to the prompt; at the prompt it ends
	// the chat. The command's own context (cancelled by the first Ctrl-C) is left out of the
	// turns for that reason.
	interrupts := make(chan os.Signal, 1)
	signal.Notify(interrupts, os.Interrupt)
	defer signal.Stop(interrupts)
	interactive := false
	if fi, err := os.Stdin.Stat(); err == nil && fi.Mode()&os.ModeCharDevice != 0 {
		interactive = true
	}
	return chatLoop(ctx, cl, chatIO{in: os.Stdin, out: stdout, err: stderr, interrupts: interrupts, prompt: interactive})
}

// chatIO is where a chat reads and writes.
type chatIO struct {
	in         io.Reader
	out, err   io.Writer
	interrupts <-chan os.Signal
	prompt     bool // show a prompt before each line (a terminal)
	// cancelled, when not nil, is called once an interrupt has cancelled an answer, so that a
	// test can wait for exactly that instead of sleeping.
	cancelled func()
}

const chatHelp = `Type a message and press Enter. Commands: /reset starts a new conversation
(the system message stays), /exit ends (so does end of input). Ctrl-C stops an answer.`

func chatLoop(ctx context.Context, cl *commandLine, term chatIO) error {
	mf := addModelFlags(cl.FlagSet)
	system := cl.String("system", "", "a system message that opens the conversation")
	n := cl.Int("n", 0, "most tokens an answer may have (0: as many as the context has room for)")
	temp := cl.Float64("temp", 0, "sampling temperature (0: greedy, the most likely token each time)")
	topK := cl.Int("top-k", 0, "with -temp: draw from the K most likely tokens only (0: all)")
	topP := cl.Float64("top-p", 1, "with -temp: draw from the most likely tokens adding up to P")
	seed := cl.Uint64("seed", 0, "with -temp: the random seed (default: a fresh one, printed); answer i uses seed+i")
	if err := cl.parse(); err != nil {
		return err
	}
	if *n < 0 {
		return fmt.Errorf("%w: -n %d: want at least 0", errUsage, *n)
	}
	var sampling *engine.Sampling
	if *temp != 0 {
		sampling = &engine.Sampling{Temperature: float32(*temp), TopK: *topK, TopP: float32(*topP), Seed: *seed}
		if err := sampling.Check(); err != nil {
			return fmt.Errorf("%w: %v", errUsage, err)
		}
		if !cl.given("seed") {
			sampling.Seed = engine.NewSeed()
		}
	}
	c, done, err := mf.openChat(ctx, term.err)
	if err != nil {
		return err
	}
	defer done()
	if !c.CanChat() {
		return fmt.Errorf("%s: %w (try: trochilus run)", *mf.path, assistant.ErrNoTemplate)
	}
	if term.prompt {
		fmt.Fprintln(term.err, chatHelp)
	}
	if sampling != nil {
		fmt.Fprintf(term.err, "(sampling: temperature %g, top-k %d, top-p %g, seed %d)\n", *temp, *topK, *topP, sampling.Seed)
	}
	answers := 0

	// Lines come from a goroutine so that a Ctrl-C at the prompt is seen while waiting.
	lines := make(chan string)
	readErr := make(chan error, 1)
	quit := make(chan struct{})
	defer close(quit)
	go func() {
		sc := bufio.NewScanner(term.in)
		sc.Buffer(make([]byte, 64<<10), 16<<20)
		for sc.Scan() {
			select {
			case lines <- sc.Text():
			case <-quit:
				return
			}
		}
		readErr <- sc.Err()
		close(lines)
	}()

	start := func() []chat.Message {
		if *system == "" {
			return nil
		}
		return []chat.Message{{Role: "system", Content: *system}}
	}
	turns := start()
	for {
		if term.prompt {
			fmt.Fprint(term.err, "> ")
		}
		var line string
		select {
		case l, ok := <-lines:
			if !ok {
				return <-readErr
			}
			line = l
		case <-term.interrupts:
			fmt.Fprintln(term.err)
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
		switch text := strings.TrimSpace(line); text {
		case "":
			continue
		case "/exit", "/quit":
			return nil
		case "/reset":
			turns = start()
			fmt.Fprintln(term.err, "(new conversation)")
			continue
		case "/help":
			fmt.Fprintln(term.err, chatHelp)
			continue
		}
		turns = append(turns, chat.Message{Role: "user", Content: line})

		turn, cancel := context.WithCancel(context.WithoutCancel(ctx))
		stop := make(chan struct{})
		go func() {
			select {
			case <-term.interrupts:
				cancel()
				if term.cancelled != nil {
					term.cancelled()
				}
			case <-ctx.Done():
				cancel()
			case <-stop:
			}
		}()
		var werr error
		var sp *engine.Sampling
		if sampling != nil {
			each := *sampling
			each.Seed += uint64(answers)
			sp = &each
		}
		answers++
		r, err := c.Reply(turn, turns, assistant.Options{MaxTokens: *n, Sampling: sp, Draft: *mf.draft, OnText: func(s string) {
			if _, e := term.out.Write([]byte(s)); e != nil && werr == nil {
				werr = e
				cancel()
			}
		}})
		close(stop)
		cancel()
		fmt.Fprintln(term.out)
		switch {
		case werr != nil:
			return werr
		case ctx.Err() != nil:
			return ctx.Err()
		case errors.Is(err, context.Canceled):
			fmt.Fprintf(term.err, "(stopped after %d tokens)\n", r.Tokens)
		case err != nil:
			// The turn is not kept: the conversation goes on as it was before it.
			turns = turns[:len(turns)-1]
			fmt.Fprintf(term.err, "(%v)\n", err)
			continue
		default:
			how := "ended"
			if !r.Finished() {
				how = "cut at the token limit"
			}
			fmt.Fprintf(term.err, "(%d tokens, %s; prompt %d, %d reused, %.1f tok/s; %d of %d positions used)\n",
				r.Tokens, how, r.Prompt, r.Reused, r.Rate, r.Used, r.Context)
		}
		turns = append(turns, chat.Message{Role: "assistant", Content: r.Text})
	}
}
