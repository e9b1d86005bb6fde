package assistant

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/trochilus-llm/trochilus/engine"
	"github.com/trochilus-llm/trochilus/tokenizer"
	"github.com/trochilus-llm/trochilus/tokenizer/chat"
)

// lastAnswer is what Continue needs of the chat's latest answer to go on with it exactly: the
// tokens the model read and chose, and the state of the choosing that the tokens do not
// carry (the sampler's draws). Reading the answer's text back through the tokenizer is not
// enough: a model may choose tokens that the tokenizer, given their text, would split
// otherwise (" Hel" + "lo" where it writes " Hello"), and the continuation of other tokens is
// another continuation.
type lastAnswer struct {
	prompt  []int32 // the tokens before the answer, nil when there is no answer
	tokens  []int32 // the answer's tokens, its last chosen but not evaluated (Generate's way)
	text    string  // the answer's text, as the Replies (and their Replaced) made it
	drawn   int     // the draws its sampler's stream made: one a token
	cut     bool    // cut short by the token limit or a cancellation: it may go on
	choice  choice  // the options that chose its tokens
	inexact string  // why the answer is not an uninterrupted one; "" when it is
}

// choice is what of an answer's Options decides its tokens beside the prompt: a continuation
// asked with other settings is another answer.
type choice struct {
	sampling    *engine.Sampling // a copy; nil: greedy
	stop        []string         // the stop texts, empty ones left out
	bias        map[int32]float32
	ignoreEOS   bool
	constrained bool // held to a format or a tool call, whose matcher's state is not kept
}

func choiceOf(opts Options) choice {
	ch := choice{stop: slices.DeleteFunc(slices.Clone(opts.Stop), func(s string) bool { return s == "" }),
		bias: maps.Clone(opts.LogitBias), ignoreEOS: opts.IgnoreEOS, constrained: opts.Format != nil || opts.ToolCall != nil}
	if opts.Sampling != nil {
		sp := *opts.Sampling
		ch.sampling = &sp
	}
	return ch
}

// same reports whether b chooses tokens as a does; which names what differs.
func (a choice) same(b choice) (ok bool, which string) {
	switch {
	case (a.sampling == nil) != (b.sampling == nil) || a.sampling != nil && *a.sampling != *b.sampling:
		return false, "the sampling (or its seed)"
	case !slices.Equal(a.stop, b.stop):
		return false, "the stop texts"
	case !maps.Equal(a.bias, b.bias):
		return false, "the logit bias"
	case a.ignoreEOS != b.ignoreEOS:
		return false, "IgnoreEOS"
	}
	return true, ""
}

// resume is the answer an answer goes on with, as answer needs it.
type resume struct {
	answer  []int32                  // its tokens, at the end of the ids answer is given
	dec     *tokenizer.StreamDecoder // fed its tokens (a character they begin is pending); nil: a fresh one
	kept    string                   // its text as the new tokens' text follows it
	shown   string                   // its text as the caller has it: kept, then what the continuation replaces
	drawn   int                      // the draws its sampler's stream made
	inexact string                   // why the continuation is not the uninterrupted answer, or ""
}

// remember records the answer just made (ids, then g's tokens, whose text whole is) as the
// one Continue may go on with.
func (c *Chat) remember(ids []int32, res resume, opts Options, g engine.Generation, whole string, stopped bool, err error, maxTokens int) {
	if len(g.Tokens) == 0 && len(res.answer) > 0 {
		// A continuation cancelled (or failed) before its first token added nothing: the
		// answer remembered is still the one to go on with.
		return
	}
	n := len(ids) - len(res.answer)
	c.last = lastAnswer{
		prompt:  slices.Clone(ids[:n]),
		tokens:  append(slices.Clone(ids[n:]), g.Tokens...),
		text:    whole,
		drawn:   res.drawn + len(g.Tokens),
		choice:  choiceOf(opts),
		inexact: res.inexact,
	}
	// A cancelled answer stopped between two tokens as a cut one does: each token chosen was
	// drawn, none half-made. Another error may have come from anywhere: not continued exactly.
	c.last.cut = len(g.Tokens) > 0 && !g.Stopped && !stopped &&
		(err == nil && len(g.Tokens) == maxTokens || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded))
}

// Continue generates more of the answer that ends turns (an assistant message), cut short by
// the token limit or a cancellation, and returns what it adds: opts.MaxTokens new tokens at
// most, Text the new text (to follow the answer less its last Replaced bytes; OnText and
// OnLogprob's offsets are of it), Tokens the new tokens, Prompt the tokens read, the answer's
// included.
//
// When the answer is the chat's latest, made for the turns before it and not since changed,
// the model goes on from the answer's own tokens (the last of them, chosen but never
// evaluated, is evaluated first; the KV cache of the rest is kept) and a sampled answer's
// stream from the draw it would have made next: with the same options, the answer so far
// followed by the continuation is, token for token, the answer one Reply with the two limits
// together gives. Otherwise (a chat reopened, a model loaded anew, the answer or the turns
// edited, another answer made since) the model reads the turns as Reply renders them and then
// the answer's text as the tokenizer reads it, from a fresh sampler stream, and the Reply says
// so (Inexact, InexactReason). A structured answer (Format, ToolCall) is not continued.
func (c *Chat) Continue(ctx context.Context, turns []chat.Message, opts Options) (Reply, error) {
	if opts.Format != nil || opts.ToolCall != nil {
		return Reply{Context: c.s.Context()}, errors.New("a structured answer cannot be continued: its format's state at the cut is not kept")
	}
	ids, res, err := c.continuation(turns, opts)
	if err != nil {
		return Reply{Context: c.s.Context()}, err
	}
	return c.answer(ctx, ids, opts, res)
}

// CountContinue returns the tokens Continue would read for turns (the prompt and the answer
// so far), rendering and tokenizing only: nothing is evaluated and the session is left as it
// is. Of opts only Tools changes it.
func (c *Chat) CountContinue(turns []chat.Message, opts Options) (int, error) {
	ids, _, err := c.continuation(turns, opts)
	return len(ids), err
}

// continuation returns the tokens Continue gives the model for turns, and the answer it goes
// on with: the remembered answer's tokens when turns end in it, its text re-read otherwise.
func (c *Chat) continuation(turns []chat.Message, opts Options) ([]int32, resume, error) {
	n := len(turns)
	if n == 0 || turns[n-1].Role != "assistant" {
		return nil, resume{}, errors.New("nothing to continue: the conversation does not end in an answer")
	}
	partial, ok := turns[n-1].Content.(string)
	if !ok {
		return nil, resume{}, fmt.Errorf("the answer to continue is %T, not text", turns[n-1].Content)
	}
	if opts.Tools != nil && c.tools == (ToolSyntax{}) {
		return nil, resume{}, ErrNoTools
	}
	// What the model read when it began the answer: the turns before it asking for the
	// assistant's turn (not the template's rendering of a finished message, which ends the
	// turn and may rewrite the answer: a moved <think> block, trimmed spaces).
	prompt, err := c.prompt(turns[:n-1], opts.Tools)
	if err != nil {
		return nil, resume{}, err
	}
	res, ok, why := c.resumeLast(prompt, partial, opts)
	if ok {
		return append(prompt, res.answer...), res, nil
	}
	// The answer's text read back as Reply reads the template's: control-token text as those
	// tokens, as the model writes them.
	reread := c.tok.Encode(partial, true)
	return append(prompt, reread...), resume{answer: reread, kept: partial, shown: partial,
		inexact: "read back from the answer's text (" + why + "): the tokenizer may split it otherwise than the model did"}, nil
}

// resumeLast returns the remembered answer as answer goes on with it, when it is the one
// that follows prompt with the text partial; otherwise why not. Asked with options that
// choose tokens otherwise, the answer's tokens are still read, the continuation marked
// inexact.
func (c *Chat) resumeLast(prompt []int32, partial string, opts Options) (res resume, ok bool, why string) {
	l := &c.last
	switch {
	case l.prompt == nil:
		return res, false, "this chat made no answer yet: reopened, or the model loaded anew"
	case !slices.Equal(l.prompt, prompt):
		return res, false, "the chat's latest answer was made for other turns"
	case l.text != partial:
		return res, false, "the answer's text is not the one the chat made"
	case !l.cut:
		return res, false, "the answer had come to its end"
	case l.choice.constrained:
		return res, false, "the answer was held to a format"
	}
	// The decoder as it stood after the answer's last token: a character they began and did
	// not finish is pending (the text shows it as U+FFFD, which the continuation replaces
	// with the character).
	dec := c.tok.NewStreamDecoder()
	var kept strings.Builder
	for _, id := range l.tokens {
		if !slices.Contains(c.ends, id) {
			kept.WriteString(tokenizer.ValidUTF8(dec.Next(id)))
		}
	}
	if !strings.HasPrefix(partial, kept.String()) {
		return res, false, "the answer's tokens do not read as its text"
	}
	res = resume{answer: l.tokens, dec: dec, kept: kept.String(), shown: partial, drawn: l.drawn, inexact: l.inexact}
	want := choiceOf(opts)
	if same, which := l.choice.same(want); !same {
		res.inexact = "continued from the answer's own tokens, but with other options than it was made with: " + which
		if (l.choice.sampling == nil) != (want.sampling == nil) || l.choice.sampling != nil && *l.choice.sampling != *want.sampling {
			res.drawn = 0 // another stream: drawn from its start
		}
	}
	return res, true, ""
}
