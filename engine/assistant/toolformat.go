package assistant

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/trochilus-llm/trochilus/engine"
	"github.com/trochilus-llm/trochilus/engine/structured"
)

// A ToolFormat holds the tool calls an answer writes, in a model's syntax, to a list of tools:
// the name one of theirs, the arguments that tool's JSON Schema. Where the syntax's call is the
// object {"name", "arguments"} between two texts (Hermes, Mistral's list) it is
// structured.ToolCall's format; otherwise (Llama's "parameters", Mistral's name[ARGS]{…}) the
// call is each tool's head (the text up to its arguments, canonical as the template writes
// it), that tool's arguments (its schema compiled by structured) and the tail, and a token
// that would cross from one to the next is not chosen (the call is still exact, only written
// in more tokens).
type ToolFormat struct {
	syntax ToolSyntax
	// forced and lazy are the structured formats of a call: forced is one call, ending with
	// the syntax's close (the answer is the call); lazy is one call, or for a list the whole
	// list of calls, each held to the tools.
	forced, lazy *structured.Format
	// Otherwise each tool's head, and the tails for a forced and a begun call.
	heads                [][]byte
	tailForced, tailLazy []byte
	// Each tool's name and its arguments' format, in every syntax: the constraint writes the
	// arguments with them, and Parse checks the calls it reads against them.
	names []string
	args  []*structured.Format
}

// Format returns the format of a call of one of tools in syntax s. A tool's parameters the
// matcher cannot enforce are refused as structured.ToolCall refuses them.
func (s ToolSyntax) Format(tools []structured.Tool) (*ToolFormat, error) {
	if s == (ToolSyntax{}) {
		return nil, ErrNoTools
	}
	f := &ToolFormat{syntax: s}
	// The same checks, the same refusals, in every syntax.
	if _, err := structured.ToolCall(tools, "", ""); err != nil {
		return nil, err
	}
	for _, t := range tools {
		args, err := argumentsFormat(t.Parameters)
		if err != nil {
			return nil, fmt.Errorf("tool %q: parameters: %w", t.Name, err)
		}
		f.names = append(f.names, t.Name)
		f.args = append(f.args, args)
	}
	if s.Key == "arguments" {
		var err error
		if f.forced, err = structured.ToolCall(tools, s.Open, s.Close); err != nil {
			return nil, err
		}
		if open, ok := strings.CutSuffix(s.Open, "["); s.List && ok && s.Close == "]" {
			// The list is a JSON array of calls after its marker: every call in it is held.
			f.lazy, err = structured.ToolCallList(tools, open, "")
		} else {
			f.lazy, err = structured.ToolCall(tools, s.Open, s.Close)
		}
		if err != nil {
			return nil, err
		}
		return f, nil
	}
	if s.List {
		return nil, fmt.Errorf("assistant: a list of calls whose key is %q is not supported", s.Key)
	}
	for _, t := range tools {
		var head string
		if s.Key != "" {
			name, _ := json.Marshal(t.Name)
			key, _ := json.Marshal(s.Key)
			head = s.Open + `{"name": ` + string(name) + `, ` + string(key) + `: `
		} else {
			head = s.Open + t.Name + s.ArgsMarker
		}
		f.heads = append(f.heads, []byte(head))
	}
	if s.Key == "" {
		f.tailForced, f.tailLazy = []byte(s.Close), []byte(s.Close)
	} else {
		f.tailForced, f.tailLazy = []byte("}"+s.Close), []byte("}"+s.Close)
	}
	return f, nil
}

// constraining are the keywords that make a schema more than "any object" for the arguments.
var constraining = []string{"type", "properties", "required", "additionalProperties", "$ref", "anyOf", "oneOf", "allOf", "enum", "const"}

// argumentsFormat compiles a tool's parameters; none, or a schema that constrains nothing, is
// any object (the arguments are one).
func argumentsFormat(params json.RawMessage) (*structured.Format, error) {
	var m map[string]json.RawMessage
	if t := bytes.TrimSpace(params); len(t) == 0 || string(t) == "null" || string(t) == "true" ||
		json.Unmarshal(t, &m) == nil && !slices.ContainsFunc(constraining, func(k string) bool { _, ok := m[k]; return ok }) {
		return structured.JSONObject(), nil
	}
	return structured.CompileSchema(params)
}

// Trigger is the text a call the model chooses to write begins with: the first word of the
// syntax's opening (for a list, without the bracket that opens the list: ParseToolCalls reads
// "[TOOL_CALLS] [" as "[TOOL_CALLS]["), or for a call that is the whole message (where it
// counts only at the answer's start) the beginning of its object. Wherever ParseToolCalls reads
// a call, the answer writes the trigger there first.
func (s ToolSyntax) Trigger() string {
	if s.Open == "" {
		return `{"name"`
	}
	if t := firstWord(strings.TrimSuffix(s.Open, "[")); s.List && t != "" {
		return t
	}
	return firstWord(s.Open)
}

// constraint returns the constraint of one answer: one call (forced), or free text in which a
// call the model begins is held to the format.
func (f *ToolFormat) constraint(c *Chat, forced bool) engine.Constraint {
	v := c.vocabulary()
	if f.forced != nil {
		if forced {
			return f.forced.Start(v)
		}
		return f.lazy.StartAfter(v, f.syntax.Trigger())
	}
	cc := &callConstraint{f: f, vocab: v, texts: c.texts, ends: c.ends, forced: forced, start: true}
	if forced {
		cc.stage = stageHead
	}
	return cc
}

type callStage uint8

const (
	stageFree callStage = iota // free text (the model chooses)
	stageHead                  // a tool's head
	stageArgs                  // its arguments
	stageTail                  // the tail after them
	stageDone                  // the call is whole and the answer must end
)

// A callConstraint follows an answer through a ToolFormat of heads, arguments and tails.
type callConstraint struct {
	f      *ToolFormat
	vocab  *structured.Vocabulary
	texts  [][]byte // each token's bytes; nil for those that are never text
	ends   []int32
	forced bool

	stage callStage
	got   []byte                 // the head or tail so far
	inner *structured.Constraint // the arguments
	watch []byte                 // free text in which the trigger may be beginning
	start bool                   // nothing but white space written yet

	// trig is the syntax's trigger; crossers the tokens that can begin a call (they hold the
	// trigger's last byte, or '{' for a call that is the whole message), found by the first
	// free mask.
	trig     []byte
	crossers []int32
	scratch  []byte
}

var errCall = errors.New("assistant: the token cannot continue the tool call")

func (c *callConstraint) tail() []byte {
	if c.forced {
		return c.f.tailForced
	}
	return c.f.tailLazy
}

// Mask sets to −Inf the logits of the tokens that cannot come next.
func (c *callConstraint) Mask(logits []float32) error {
	inf := float32(math.Inf(-1))
	switch c.stage {
	case stageFree:
		c.maskFree(logits)
		return nil
	case stageArgs:
		return c.inner.Mask(logits)
	case stageDone:
		allowed := false
		for id := range logits {
			if slices.Contains(c.ends, int32(id)) {
				allowed = allowed || !math.IsInf(float64(logits[id]), -1)
				continue
			}
			logits[id] = inf
		}
		if !allowed {
			return structured.ErrNoToken
		}
		return nil
	}
	var cands [][]byte // the literals the text so far begins
	if c.stage == stageHead {
		for _, h := range c.f.heads {
			if bytes.HasPrefix(h, c.got) {
				cands = append(cands, h[len(c.got):])
			}
		}
	} else {
		cands = [][]byte{c.tail()[len(c.got):]}
	}
	allowed := false
	for id := range logits {
		var t []byte
		if id < len(c.texts) {
			t = c.texts[id]
		}
		fits := len(t) > 0 && slices.ContainsFunc(cands, func(rest []byte) bool { return bytes.HasPrefix(rest, t) })
		if !fits {
			logits[id] = inf
		} else {
			allowed = allowed || !math.IsInf(float64(logits[id]), -1)
		}
	}
	if !allowed {
		return structured.ErrNoToken
	}
	return nil
}

// Accept follows the chosen token.
func (c *callConstraint) Accept(id int32) error {
	if slices.Contains(c.ends, id) {
		if c.stage != stageFree && c.stage != stageDone {
			return fmt.Errorf("assistant: token %d ends an unfinished tool call", id)
		}
		return nil
	}
	var t []byte
	if id >= 0 && int(id) < len(c.texts) {
		t = c.texts[id]
	}
	switch c.stage {
	case stageFree:
		if !c.free(t) {
			return fmt.Errorf("token %d begins a call no head holds: %w", id, errCall)
		}
	case stageHead:
		c.got = append(c.got, t...)
		c.afterHead()
		if c.stage == stageHead && !slices.ContainsFunc(c.f.heads, func(h []byte) bool { return bytes.HasPrefix(h, c.got) }) {
			return fmt.Errorf("token %d: %w", id, errCall)
		}
	case stageArgs:
		if err := c.inner.Accept(id); err != nil {
			return err
		}
		if c.inner.Complete() {
			c.stage, c.got = stageTail, c.got[:0]
			c.afterTail()
		}
	case stageTail:
		c.got = append(c.got, t...)
		if !bytes.HasPrefix(c.tail(), c.got) {
			return fmt.Errorf("token %d: %w", id, errCall)
		}
		c.afterTail()
	case stageDone:
		return fmt.Errorf("token %d after the tool call: %w", id, errCall)
	}
	return nil
}

// afterHead begins the arguments when the text so far is a whole head (heads are prefix-free:
// a name is followed by a quote or the arguments' marker, which no name holds).
func (c *callConstraint) afterHead() {
	for i, h := range c.f.heads {
		if bytes.Equal(h, c.got) {
			c.stage, c.inner = stageArgs, c.f.args[i].Start(c.vocab)
			return
		}
	}
}

// afterTail ends the call when its tail is whole: the answer ends after a forced call or a call
// that is the whole message; otherwise it is free again.
func (c *callConstraint) afterTail() {
	if !bytes.Equal(c.got, c.tail()) {
		return
	}
	if c.forced || c.f.syntax.Open == "" {
		c.stage = stageDone
		return
	}
	c.stage, c.watch = stageFree, c.watch[:0]
}

// In free text a call begins where ParseToolCalls would read one: at the trigger (for a call
// that is the whole message, at a '{' that opens the answer, after white space: any object
// there may read as a call). From there the text must be a tool's head as the template writes
// it, so a token that would write the beginning of a call in any other spelling (`{"name":"`
// unspaced, a space after the marker, a token that runs past the head) is masked, and every
// call the parser reads is one the constraint held to the tools.

// maskFree masks the tokens that would begin a call no head holds.
func (c *callConstraint) maskFree(logits []float32) {
	if c.f.syntax.Open == "" && !c.start {
		return // text has begun: the message is not a call
	}
	if c.crossers == nil {
		c.crossers = make([]int32, 0, 64)
		last := byte('{')
		if c.f.syntax.Open != "" {
			last = c.trigger()[len(c.trigger())-1]
		}
		for id, t := range c.texts {
			if bytes.IndexByte(t, last) >= 0 {
				c.crossers = append(c.crossers, int32(id))
			}
		}
	}
	inf := float32(math.Inf(-1))
	for _, id := range c.crossers {
		if int(id) < len(logits) && !c.fits(c.texts[id]) {
			logits[id] = inf
		}
	}
}

// trigger returns the syntax's trigger.
func (c *callConstraint) trigger() []byte {
	if c.trig == nil {
		c.trig = []byte(c.f.syntax.Trigger())
	}
	return c.trig
}

// fits reports whether token text t, after the free text so far, begins no call or the
// beginning of one a head holds.
func (c *callConstraint) fits(t []byte) bool {
	w, begun := c.begins(t)
	return !begun || c.headHolds(w)
}

// begins returns, for token text t after the free text so far, whether a call begins, and the
// call's text so far when it does.
func (c *callConstraint) begins(t []byte) ([]byte, bool) {
	c.scratch = append(append(c.scratch[:0], c.watch...), t...)
	if c.f.syntax.Open == "" {
		w := bytes.TrimLeftFunc(c.scratch, unicode.IsSpace)
		return w, len(w) > 0 && w[0] == '{'
	}
	i := bytes.Index(c.scratch, c.trigger())
	if i < 0 {
		return nil, false
	}
	return c.scratch[i:], true
}

// headHolds reports whether w is the beginning of a head (or a whole one).
func (c *callConstraint) headHolds(w []byte) bool {
	return slices.ContainsFunc(c.f.heads, func(h []byte) bool { return bytes.HasPrefix(h, w) })
}

// free reads free text, reporting false for a token that begins a call no head holds (one the
// mask refused): a call begins where the trigger is written, or for a call that is the whole
// message, at a '{' that opens the answer.
func (c *callConstraint) free(t []byte) bool {
	if c.f.syntax.Open == "" && !c.start {
		return true
	}
	w, begun := c.begins(t)
	if begun {
		if !c.headHolds(w) {
			return false
		}
		c.start = false
		c.stage, c.got, c.watch = stageHead, append(c.got[:0], w...), c.watch[:0]
		c.afterHead()
		return true
	}
	if c.f.syntax.Open == "" {
		// Only white space so far, or the first bytes of a character that may be white space:
		// the answer may still open with a call.
		w := bytes.TrimLeftFunc(c.scratch, unicode.IsSpace)
		if len(w) > 0 && utf8.FullRune(w) {
			c.start = false
			c.watch = c.watch[:0]
			return true
		}
		c.watch = append(c.watch[:0], w...)
		return true
	}
	c.watch = append(c.watch[:0], c.scratch...)
	if keep := len(c.trigger()) - 1; len(c.watch) > keep {
		c.watch = append(c.watch[:0], c.watch[len(c.watch)-keep:]...)
	}
	return true
}
