// Package assistant holds a conversation with a model: it renders the turns with the model's
// own chat template (as apply_chat_template does), keeps the KV cache of whatever the new
// prompt repeats of what the session already holds, generates (greedily, or sampled with a seed)
// and streams the answer as whole UTF-8 text. The desktop app's chat, `trochilus chat` and `trochilus serve` all
// answer through it, so an answer is the same bytes wherever it is asked for.
package assistant

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/trochilus-llm/trochilus/engine"
	"github.com/trochilus-llm/trochilus/engine/structured"
	"github.com/trochilus-llm/trochilus/tokenizer"
	"github.com/trochilus-llm/trochilus/tokenizer/chat"
)

// Chat is a model's session with its tokenizer and chat template. Its methods must not be
// called concurrently: one session holds one sequence.
type Chat struct {
	m       *engine.Model
	s       *engine.Session
	tok     *tokenizer.Tokenizer
	tmpl    *chat.Template // nil when the file has no chat template
	special chat.SpecialTokens
	eos     int32
	ends    []int32                // the tokens that end an answer: eos, and the tool syntax's End
	held    []int32                // the tokens at the session's positions 0 .. Pos()-1
	vocab   *structured.Vocabulary // the tokens' bytes for structured answers, made when first needed
	texts   [][]byte               // the same bytes by token id, made with vocab
	tools   ToolSyntax             // how the template writes tool calls; zero when it cannot
	last    lastAnswer             // the latest answer's tokens, which Continue goes on with
}

// ErrNoTemplate is returned by Reply when the model file carries no chat template.
var ErrNoTemplate = errors.New("the file has no chat template (tokenizer.chat_template): it cannot chat")

// ErrNoTools is returned by Reply when tools are given and the model's template does not
// render them, or writes calls in a syntax this package cannot read (ToolSyntax).
var ErrNoTools = errors.New("the model's chat template does not render tools in a call syntax Trochilus reads (Hermes/Qwen <tool_call>, Llama 3.1's JSON, Mistral's [TOOL_CALLS])")

// ErrBadTurn is what the turns' tool calls and results fail with when they cannot be put into
// the template's form (a tool_calls list that is not one): the caller's messages are at fault.
var ErrBadTurn = errors.New("assistant: a turn's tool calls cannot be rendered")

// New makes a Chat over session s of model m, reading the tokenizer and chat template from
// the model's file. A file without a chat template still completes raw text (Complete).
func New(m *engine.Model, s *engine.Session) (*Chat, error) {
	tok, err := tokenizer.FromGGUF(m.File())
	if err != nil {
		return nil, err
	}
	eos := tok.EOS()
	if eos < 0 {
		return nil, errors.New("the tokenizer names no end-of-sequence token: answers could not end")
	}
	c := &Chat{m: m, s: s, tok: tok, eos: eos, ends: []int32{eos}}
	if src, err := m.File().Str("tokenizer.chat_template"); err == nil && strings.TrimSpace(src) != "" {
		if c.tmpl, err = chat.Parse(src); err != nil {
			return nil, fmt.Errorf("chat template: %w", err)
		}
	}
	c.special = chat.SpecialTokens{BOS: tokenText(tok, tok.BOS()), EOS: tokenText(tok, eos),
		UNK: tokenText(tok, tok.UNK()), PAD: tokenText(tok, tok.PAD())}
	if c.tmpl != nil {
		src, _ := m.File().Str("tokenizer.chat_template")
		c.tools, _ = toolSyntax(c.tmpl, src, c.special)
		// A call the model ends with the syntax's own end token (Llama's <|eom_id|>) ends the
		// answer as the end-of-sequence token does.
		if id, ok := controlToken(tok, c.tools.End); ok && id != eos {
			c.ends = append(c.ends, id)
		}
	}
	return c, nil
}

// controlToken returns the control token whose text is text.
func controlToken(t *tokenizer.Tokenizer, text string) (int32, bool) {
	if text == "" {
		return 0, false
	}
	ids := t.Encode(text, true)
	if len(ids) != 1 || t.Type(ids[0]) != tokenizer.Control {
		return 0, false
	}
	return ids[0], true
}

func tokenText(t *tokenizer.Tokenizer, id int32) string {
	if id < 0 {
		return ""
	}
	return t.Token(id)
}

// Model returns the model the chat runs.
func (c *Chat) Model() *engine.Model { return c.m }

// Context returns the positions the session holds.
func (c *Chat) Context() int { return c.s.Context() }

// CanChat reports whether the model has a chat template (Reply works).
func (c *Chat) CanChat() bool { return c.tmpl != nil }

// Options shape one answer.
type Options struct {
	// MaxTokens is the most tokens to generate; 0 or more than the context has room for
	// means as many as fit.
	MaxTokens int
	// Stop lists texts that end the answer where they first appear; the answer (and the
	// streamed text) stops before it. Empty strings are ignored.
	Stop []string
	// Sampling, when set, draws the tokens at random with its seed (see engine.Sampling);
	// nil answers greedily.
	Sampling *engine.Sampling
	// SpecialText makes Complete turn control-token text in its prompt (<|endoftext|>, …) into
	// those tokens instead of reading it as text. Reply ignores it: templates always do.
	SpecialText bool
	// Draft drafts up to that many tokens at a time from the conversation and verifies them in
	// one pass (engine.GenerateOptions.Draft): faster where the answer repeats what came
	// before, never different. 0: off.
	Draft int
	// Logprobs asks for each answer token's log probability (engine.Logprobs, at temperature 1),
	// and TopLogprobs for that many most likely alternatives at each position as well.
	Logprobs    bool
	TopLogprobs int
	// OnLogprob, with Logprobs, receives each token's log probability as it is chosen, with
	// the offset in the answer's text where the token's text begins (before OnText shows it).
	// The tokens an answer's Logprobs keeps are those received with an offset below the
	// length of its text, in order.
	OnLogprob func(lp TokenLogprob, at int)
	// IgnoreEOS goes on past the end-of-sequence token (for benchmarks; the token's own text is
	// never shown).
	IgnoreEOS bool
	// Format, when set, makes the answer a document of that format (a JSON object, or one a
	// JSON Schema describes: structured.Format), by masking the tokens that cannot continue
	// it; the answer ends when the document is complete. Not with IgnoreEOS.
	Format *structured.Format
	// Trigger, with Format, leaves the answer free until it writes Trigger; the format's
	// document begins there, and the answer is free again after it (a tool call where the
	// model chooses to write one: structured.Format.StartAfter).
	Trigger string
	// ToolCall, when set, holds the tool calls the answer writes to the tools' names and
	// schemas (ToolSyntax.Format): with ForceToolCall the answer is one call; otherwise it is
	// free, and a call the model begins (at the syntax's opening text, ToolFormat.Trigger) is
	// held to the format. Not with Format.
	ToolCall      *ToolFormat
	ForceToolCall bool
	// Tools, when set, are the tools the template shows the model: a JSON list of OpenAI
	// function tools ({"type": "function", "function": {"name", "description",
	// "parameters"}}), passed to the template as apply_chat_template's tools. Reply only.
	Tools json.RawMessage
	// LogitBias adds to tokens' logits before each choice (OpenAI's logit_bias): the sum
	// rounded once to float32, −Inf for a bias of −100 or less (the token is never chosen).
	// The log probabilities are those of the biased logits.
	LogitBias map[int32]float32
	// Batch, when set, evaluates the answer's tokens in passes shared with other chats'
	// answers (engine.Batcher): several conversations served at once, the same tokens.
	Batch *engine.Batcher
	// OnText, when set, receives the answer as it grows, in pieces of whole, valid UTF-8
	// text (bytes that make no character show as U+FFFD, as HF tokenizers' decode shows them).
	OnText func(string)
}

// maxTopLogprobs is the most alternatives a position reports, as OpenAI's API allows.
const maxTopLogprobs = 20

// Reply is one answer and what it cost.
type Reply struct {
	Text    string  // the answer, without the end-of-sequence token or a stop text
	Tokens  int     // tokens generated, the end-of-sequence token included
	Ended   bool    // the model ended its turn (end-of-sequence)
	Stopped bool    // one of Options.Stop ended the answer
	Prompt  int     // tokens of the rendered prompt
	Reused  int     // of those, tokens whose KV cache was kept from the previous call
	Used    int     // positions of the context in use after the answer
	Rate    float64 // generated tokens per second (one-token passes)
	PPRate  float64 // prompt tokens evaluated per second
	Context int     // positions the session holds

	PromptTime, DecodeTime time.Duration // spent evaluating the prompt, and generating

	// Logprobs, with Options.Logprobs, are the answer's tokens with their log probabilities,
	// one a token whose text the answer holds (not the end-of-sequence token, not tokens
	// past a stop text).
	Logprobs []TokenLogprob

	// Inexact, from Continue, says that the answer so far with Text after it may differ from
	// the answer an uninterrupted generation would give, and InexactReason says why: the chat
	// did not hold the answer's own tokens (it was reopened, the turns or the answer were
	// changed, another answer came since), so it read the answer's text back through the
	// tokenizer, which may split it into other tokens than the model chose; or the options
	// that choose tokens differ from the answer's.
	Inexact       bool
	InexactReason string
	// Replaced, from Continue, is how many bytes at the end of the answer's text so far the
	// continuation takes back: the U+FFFD shown for a character whose last bytes only the
	// continuation made, or the start of a stop text it completes. The whole answer is the text
	// so far without them, then Text.
	Replaced int
}

// TokenLogprob is one token of an answer: its bytes (a token may hold part of a character),
// its log probability and, with Options.TopLogprobs, the most likely tokens at its position.
type TokenLogprob struct {
	ID      int32
	Bytes   []byte
	Logprob float32
	Top     []TokenLogprob // most likely first; their Top is nil
}

// Finished reports whether the answer came to an end of its own (end-of-sequence or a stop
// text) rather than being cut short by the token limit or the context.
func (r *Reply) Finished() bool { return r.Ended || r.Stopped }

// Render returns the conversation as the model's chat template writes it, asking for the
// assistant's turn.
func (c *Chat) Render(turns []chat.Message) (string, error) {
	return c.render(turns, nil)
}

// RenderTools is Render with tools (a JSON list of OpenAI function tools, as Options.Tools),
// the calls' ids made as the template requires (ToolSyntax.IDLen).
func (c *Chat) RenderTools(turns []chat.Message, tools json.RawMessage) (string, error) {
	if c.tools == (ToolSyntax{}) {
		return "", ErrNoTools
	}
	return c.render(turns, tools)
}

// render renders turns with tools (nil: none given, as the template's tools is None).
func (c *Chat) render(turns []chat.Message, tools json.RawMessage) (string, error) {
	if c.tmpl == nil {
		return "", ErrNoTemplate
	}
	opts := chat.Options{AddGenerationPrompt: true, SpecialTokens: c.special}
	if tools != nil {
		opts.Tools = tools
		var err error
		if turns, err = c.tools.toolTurns(turns); err != nil {
			return "", err
		}
	}
	return c.tmpl.Render(turns, opts)
}

// Reply renders turns with the model's chat template (asking for the assistant's turn) and
// generates the answer. On an error (a cancellation included) the Reply holds what was made.
func (c *Chat) Reply(ctx context.Context, turns []chat.Message, opts Options) (Reply, error) {
	if opts.Tools != nil && c.tools == (ToolSyntax{}) {
		return Reply{Context: c.s.Context()}, ErrNoTools
	}
	ids, err := c.prompt(turns, opts.Tools)
	if err != nil {
		return Reply{Context: c.s.Context()}, err
	}
	return c.answer(ctx, ids, opts, resume{})
}

// prompt returns the tokens Reply evaluates for turns with tools: the template's rendering
// read as apply_chat_template(tokenize=True) reads it, special-token text as those tokens and
// nothing added beyond what the template wrote.
func (c *Chat) prompt(turns []chat.Message, tools json.RawMessage) ([]int32, error) {
	text, err := c.render(turns, tools)
	if err != nil {
		return nil, err
	}
	return c.tok.Encode(text, true), nil
}

// Count returns the tokens of the prompt Reply would evaluate for turns with opts.Tools (the
// other options do not change it), rendering and tokenizing only: nothing is evaluated and
// the session is left as it is.
func (c *Chat) Count(turns []chat.Message, opts Options) (int, error) {
	if opts.Tools != nil && c.tools == (ToolSyntax{}) {
		return 0, ErrNoTools
	}
	ids, err := c.prompt(turns, opts.Tools)
	return len(ids), err
}

// Complete continues raw text (no chat template): the tokenizer's BOS first when it adds
// one, control-token text left as text unless opts.SpecialText.
func (c *Chat) Complete(ctx context.Context, text string, opts Options) (Reply, error) {
	var ids []int32
	if c.tok.AddBOS() {
		ids = append(ids, c.tok.BOS())
	}
	return c.answer(ctx, c.tok.AppendEncode(ids, text, opts.SpecialText), opts, resume{})
}

// errStopText ends a generation at a stop text; it never leaves answer.
var errStopText = errors.New("stop text")

// answer evaluates what of ids the session does not hold and generates; res is the answer it
// goes on with (Continue), whose tokens end ids, or none.
func (c *Chat) answer(ctx context.Context, ids []int32, opts Options, res resume) (Reply, error) {
	r := Reply{Prompt: len(ids), Context: c.s.Context(), Inexact: res.inexact != "", InexactReason: res.inexact}
	if len(ids) == 0 {
		return r, errors.New("the prompt is no tokens")
	}
	if len(ids) >= c.s.Context() {
		return r, fmt.Errorf("the prompt takes %d tokens and the context holds %d: %w",
			len(ids), c.s.Context(), engine.ErrContextFull)
	}

	// Keep the KV cache of the longest common prefix; at least one token must be evaluated
	// for the logits of the last position.
	keep := min(commonPrefix(c.held, ids), len(ids)-1, c.s.Pos())
	if err := c.s.Rewind(keep); err != nil {
		return r, err
	}
	c.held = c.held[:keep]
	r.Reused = keep

	// Generate evaluates all but its last token, so prompt + n − 1 positions must fit.
	maxTokens := opts.MaxTokens
	if room := c.s.Context() - len(ids) + 1; maxTokens <= 0 || maxTokens > room {
		maxTokens = room
	}
	dec := res.dec
	if dec == nil {
		dec = c.tok.NewStreamDecoder()
	}
	out := newStopWriter(opts.Stop, opts.OnText)
	out.resume(res.kept)
	var stop []int32
	if !opts.IgnoreEOS {
		stop = c.ends
	}
	isEnd := func(id int32) bool { return slices.Contains(c.ends, id) }
	var constraint engine.Constraint
	if opts.ToolCall != nil {
		if opts.Format != nil {
			return r, errors.New("a tool call's format and another format cannot both hold one answer")
		}
		if opts.IgnoreEOS && opts.ForceToolCall {
			return r, errors.New("a forced tool call ends the answer: it cannot ignore the end-of-sequence token")
		}
		constraint = opts.ToolCall.constraint(c, opts.ForceToolCall)
	}
	if opts.Format != nil {
		if opts.IgnoreEOS && opts.Trigger == "" {
			return r, errors.New("a structured answer ends with the document: it cannot ignore the end-of-sequence token")
		}
		if opts.Trigger != "" {
			constraint = opts.Format.StartAfter(c.vocabulary(), opts.Trigger)
		} else {
			constraint = opts.Format.Start(c.vocabulary())
		}
	}
	if len(opts.LogitBias) > 0 {
		for id := range opts.LogitBias {
			if id < 0 || int(id) >= c.m.Config().Vocab {
				return r, fmt.Errorf("logit bias for token %d: the vocabulary has %d tokens", id, c.m.Config().Vocab)
			}
		}
		constraint = biased{bias: opts.LogitBias, then: constraint}
	}
	var onLogits func(int32, []float32) error
	var starts []int // with Logprobs: each token's first byte in the text as shown
	shown := 0
	if opts.Logprobs {
		var tops []engine.TokenProb
		onLogits = func(id int32, logits []float32) error {
			if isEnd(id) && !opts.IgnoreEOS {
				return nil
			}
			var lp float32
			lp, tops = engine.Logprobs(logits, id, min(max(opts.TopLogprobs, 0), maxTopLogprobs), tops[:0])
			t := TokenLogprob{ID: id, Bytes: c.tok.AppendDecode(nil, []int32{id}), Logprob: lp}
			for _, tp := range tops {
				t.Top = append(t.Top, TokenLogprob{ID: tp.ID, Bytes: c.tok.AppendDecode(nil, []int32{tp.ID}), Logprob: tp.Logprob})
			}
			r.Logprobs = append(r.Logprobs, t)
			if opts.OnLogprob != nil {
				opts.OnLogprob(t, shown)
			}
			return nil
		}
	}
	g, err := c.s.Generate(ctx, ids[keep:], engine.GenerateOptions{
		MaxTokens:  maxTokens,
		Stop:       stop,
		Sampling:   opts.Sampling,
		Drawn:      res.drawn,
		Draft:      opts.Draft,
		Before:     ids[:keep],
		OnLogits:   onLogits,
		Constraint: constraint,
		Batch:      opts.Batch,
		OnToken: func(id int32) error {
			if opts.Logprobs && (!isEnd(id) || opts.IgnoreEOS) {
				starts = append(starts, shown) // where this token's text begins in the answer
			}
			if isEnd(id) {
				return nil
			}
			piece := tokenizer.ValidUTF8(dec.Next(id))
			shown += len(piece)
			if out.write(piece) {
				return errStopText
			}
			return nil
		},
	})
	if errors.Is(err, errStopText) {
		err, r.Stopped = nil, true
	} else if !out.write(tokenizer.ValidUTF8(dec.Flush())) {
		out.flush()
	} else {
		r.Stopped = true
	}

	// The session holds the prompt and then the new tokens, as far as Pos says.
	all := append(append(c.held[:0:0], ids...), g.Tokens...)
	c.held = all[:min(c.s.Pos(), len(all))]

	// A continuation's text is what follows the answer so far, less what it takes back of it.
	whole := out.text()
	from := min(len(res.kept), len(whole))
	r.Text, r.Replaced = whole[from:], len(res.shown)-from
	c.remember(ids, res, opts, g, whole, r.Stopped, err, maxTokens)
	if r.Stopped { // the tokens whose text begins past the stop text's start are not in the answer
		for i, at := range starts {
			if at >= len(r.Text) && i < len(r.Logprobs) {
				r.Logprobs = r.Logprobs[:i]
				break
			}
		}
	}
	r.Tokens, r.Ended = len(g.Tokens), g.Stopped
	r.PromptTime, r.DecodeTime = g.PromptTime, g.DecodeTime
	r.Used = c.s.Pos()
	r.Rate, r.PPRate = g.DecodeRate(), g.PromptRate()
	return r, err
}

// biased adds a logit bias before another constraint (or none) masks.
type biased struct {
	bias map[int32]float32
	then engine.Constraint
}

func (b biased) Mask(logits []float32) error {
	for id, v := range b.bias {
		if v <= -100 {
			logits[id] = float32(math.Inf(-1))
		} else {
			logits[id] += v
		}
	}
	if b.then != nil {
		return b.then.Mask(logits)
	}
	return nil
}

func (b biased) Accept(tok int32) error {
	if b.then != nil {
		return b.then.Accept(tok)
	}
	return nil
}

// vocabulary returns the tokens' bytes as structured answers need them: text tokens (Normal
// and UserDefined) with their bytes, and the control tokens the tool syntax's markers are
// written with ([TOOL_CALLS], [ARGS]: the model writes its calls with them); every other token
// never chosen, the end tokens ending the answer. It has a token for every logit (rows past the
// tokenizer's tokens are never text).
func (c *Chat) vocabulary() *structured.Vocabulary {
	if c.vocab == nil {
		// Each marker on its own: a token spanning two of them (say "][") is none of them.
		markers := []string{c.tools.Open, c.tools.IDMarker, c.tools.ArgsMarker}
		inMarker := func(t string) bool {
			return slices.ContainsFunc(markers, func(m string) bool { return strings.Contains(m, t) })
		}
		tokens := make([][]byte, c.m.Config().Vocab)
		for id := range tokens {
			switch c.tok.Type(int32(id)) {
			case tokenizer.Normal, tokenizer.UserDefined:
				tokens[id] = c.tok.AppendDecode(nil, []int32{int32(id)})
			case tokenizer.Control:
				if t := c.tok.Token(int32(id)); t != "" && inMarker(t) && !slices.Contains(c.ends, int32(id)) {
					tokens[id] = c.tok.AppendDecode(nil, []int32{int32(id)})
				}
			}
		}
		c.texts = tokens
		c.vocab = structured.NewVocabulary(tokens, c.ends)
	}
	return c.vocab
}

// commonPrefix returns the length of the longest common prefix of a and b.
func commonPrefix(a, b []int32) int {
	n := min(len(a), len(b))
	for i := range n {
		if a[i] != b[i] {
			return i
		}
	}
	return n
}
