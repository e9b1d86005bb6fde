package assistant

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"unicode"

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
	// forced and lazy are the structured formats of one call: forced ends with the syntax's
	// close (the answer is the call), lazy leaves a list open (the model may go on with it).
	forced, lazy *structured.Format
	// Otherwise each tool's head and arguments, and the tails for a forced and a begun call.
	heads                [][]byte
	args                 []*structured.Format
	tailForced, tailLazy []byte
}

// Format returns the format of a call of one of tools in syntax s. A tool's parameters the
// matcher cannot enforce are refused as structured.ToolCall refuses them.
func (s ToolSyntax) Format(tools []structured.Tool) (*ToolFormat, error) {
	if s == (ToolSyntax{}) {
		return nil, ErrNoTools
	}
	f := &ToolFormat{syntax: s}
	if s.Key == "arguments" {
		var err error
		if f.forced, err = structured.ToolCall(tools, s.Open, s.Close); err != nil {
			return nil, err
		}
		lazyClose := s.Close
		if s.List {
			lazyClose = ""
		}
		f.lazy, _ = structured.ToolCall(tools, s.Open, lazyClose)
		return f, nil
	}
	// The same checks, the same refusals.
	if _, err := structured.ToolCall(tools, "", ""); err != nil {
		return nil, err
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
		args, err := argumentsFormat(t.Parameters)
		if err != nil {
			return nil, fmt.Errorf("tool %q: parameters: %w", t.Name, err)
		}
		f.heads = append(f.heads, []byte(head))
		f.args = append(f.args, args)
	}
	switch {
	case s.Key == "":
		f.tailForced, f.tailLazy = []byte(s.Close), []byte(s.Close)
	case s.List:
		f.tailForced, f.tailLazy = []byte("}"+s.Close), []byte("}")
	default:
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
// syntax's opening, or for a call that is the whole message (where it counts only at the
// answer's start) the beginning of its object.
func (s ToolSyntax) Trigger() string {
	if s.Open == "" {
		return `{"name"`
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
		c.free(t)
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

// free reads free text: a call begins where the trigger is written (for a call that is the
// whole message, only at the answer's start), when what follows it can begin a head; otherwise
// the text stays free.
func (c *callConstraint) free(t []byte) {
	trig := []byte(c.f.syntax.Trigger())
	if c.f.syntax.Open == "" {
		if !c.start {
			return
		}
		c.watch = append(c.watch, t...)
		w := bytes.TrimLeftFunc(c.watch, unicode.IsSpace)
		if len(w) < len(trig) {
			c.start = bytes.HasPrefix(trig, w)
			return
		}
		c.start = false
		if bytes.HasPrefix(w, trig) {
			c.begin(w)
		}
		return
	}
	c.watch = append(c.watch, t...)
	if i := bytes.Index(c.watch, trig); i >= 0 {
		w := slices.Clone(c.watch[i:])
		c.watch = c.watch[:0]
		c.begin(w)
		return
	}
	if keep := len(trig) - 1; len(c.watch) > keep {
		c.watch = append(c.watch[:0], c.watch[len(c.watch)-keep:]...)
	}
}

// begin starts a call whose text so far is w, when w can begin a head.
func (c *callConstraint) begin(w []byte) {
	if !slices.ContainsFunc(c.f.heads, func(h []byte) bool { return bytes.HasPrefix(h, w) }) {
		return
	}
	c.stage, c.got = stageHead, append(c.got[:0], w...)
	c.afterHead()
}
