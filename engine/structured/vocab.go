package structured

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"slices"
	"unicode/utf8"
)

// A Vocabulary is what the mask needs of a model's tokens: each one's bytes, sorted so that
// tokens sharing a beginning are tried from one state, and the tokens that end an answer. It
// is built once per model and read by any number of constraints at once.
type Vocabulary struct {
	size  int
	order []int32  // the tokens with text, sorted by their bytes
	text  [][]byte // their bytes, in that order
	lcp   []int32  // how many leading bytes each shares with the one before it
	at    []int32  // each token's place in order, −1 for those not there
	// chars is, for a token that is plain string content (whole UTF-8 characters, none of
	// them '"', '\\' or a control character), its characters; −1 for the others. Inside a
	// string every plain token that fits may come next, which the mask knows without reading
	// it: that is most of a vocabulary, in the state most of a JSON answer is in.
	chars []int32
	never []int32 // tokens that are never text (control tokens, no bytes)
	ends  []int32 // tokens that end the answer
}

// NewVocabulary returns the vocabulary of tokens (tokens[id] the bytes of token id; nil or
// empty for a token that is not text, such as a control token) whose answers end with one
// of ends.
func NewVocabulary(tokens [][]byte, ends []int32) *Vocabulary {
	v := &Vocabulary{size: len(tokens), ends: slices.Clone(ends)}
	for id, t := range tokens {
		if len(t) == 0 || slices.Contains(ends, int32(id)) {
			if !slices.Contains(ends, int32(id)) {
				v.never = append(v.never, int32(id))
			}
			continue
		}
		v.order = append(v.order, int32(id))
	}
	slices.SortStableFunc(v.order, func(a, b int32) int { return bytes.Compare(tokens[a], tokens[b]) })
	v.at = make([]int32, len(tokens))
	for id := range v.at {
		v.at[id] = -1
	}
	v.text = make([][]byte, len(v.order))
	v.lcp = make([]int32, len(v.order))
	v.chars = make([]int32, len(v.order))
	for i, id := range v.order {
		v.at[id] = int32(i)
		v.text[i] = tokens[id]
		v.chars[i] = plainChars(tokens[id])
		if i > 0 {
			prev, t := v.text[i-1], v.text[i]
			n := 0
			for n < len(prev) && n < len(t) && prev[n] == t[n] {
				n++
			}
			v.lcp[i] = int32(n)
		}
	}
	return v
}

// plainChars returns the characters of t if it is plain string content, else −1.
func plainChars(t []byte) int32 {
	if !utf8.Valid(t) {
		return -1
	}
	for _, b := range t {
		if b == '"' || b == '\\' || b < 0x20 {
			return -1
		}
	}
	return int32(utf8.RuneCount(t))
}

// A Constraint follows one answer in a format: Mask before each token is chosen, Accept after.
// It is not safe for concurrent use.
type Constraint struct {
	v      *Vocabulary
	m      matcher   // the document so far
	states []matcher // the mask's states after each byte of the token being tried
	ended  bool

	// With a trigger (StartAfter), the answer is free text until it writes the trigger, then a
	// document of f from the trigger on, then free again.
	f       *Format
	trigger []byte
	free    bool
	tail    []byte // the free text's last bytes, where a trigger may be beginning
	// crossers are the tokens (places in v.order) that hold the trigger's last byte: the only
	// ones that can complete it, tried by Mask in free text. Found on the first free Mask.
	crossers []int32
	begin    matcher // a document's start, and a scratch copy of it to try a token on
	trial    matcher
	scratch  []byte
}

// ErrNoToken is returned by Mask when no token of the vocabulary can continue the document
// (or every one that could is banned).
var ErrNoToken = errors.New("structured: no token can continue the document")

// Start returns a constraint at the start of an answer in format f over vocabulary v.
func (f *Format) Start(v *Vocabulary) *Constraint {
	return &Constraint{v: v, m: f.start()}
}

// StartAfter returns a constraint that leaves the answer free until its text holds trigger,
// and then makes the text from the trigger on a document of f (whose opening text begins
// with the trigger), after which the answer is free again: a tool call where the model
// chooses to write one. Every trigger the free text writes begins a document: a token that
// would complete the trigger with text after it that the document cannot hold is masked like
// any token that cannot continue a document (a reader that takes the trigger for the start of
// a call never meets one that was not held to f).
func (f *Format) StartAfter(v *Vocabulary, trigger string) *Constraint {
	return &Constraint{v: v, f: f, trigger: []byte(trigger), free: true}
}

// Complete reports whether the text so far is a whole document: the answer may end here.
func (c *Constraint) Complete() bool { return c.free || c.m.canEnd() }

// Mask sets to −Inf the logits of the tokens that cannot come next: a text token whose bytes
// cannot continue the document, an end token before the document is complete, a token that is
// not text. len(logits) is the vocabulary's size.
func (c *Constraint) Mask(logits []float32) error {
	v := c.v
	if len(logits) != v.size {
		return fmt.Errorf("structured: %d logits for a vocabulary of %d tokens", len(logits), v.size)
	}
	if c.free {
		c.maskTrigger(logits)
		return nil
	}
	inf := float32(math.Inf(-1))
	for _, id := range v.never {
		logits[id] = inf
	}
	canEnd := c.m.canEnd()
	allowed := false
	for _, id := range v.ends {
		if canEnd && !c.ended {
			allowed = allowed || choosable(logits[id])
		} else {
			logits[id] = inf
		}
	}
	if c.ended {
		return ErrNoToken
	}
	// states[d] is the state after the first d bytes of the token last tried; have of them
	// are valid. failed ≥ 0: that token's first failed+1 bytes cannot come next.
	if len(c.states) == 0 {
		c.states = make([]matcher, 1, 64)
	}
	c.states[0].copyFrom(&c.m)
	room := c.m.stringRoom()
	have, failed := 0, -1
	for i, t := range v.text {
		id := v.order[i]
		l := int(v.lcp[i])
		if failed >= 0 && l > failed {
			logits[id] = inf // it begins with the bytes that failed
			continue
		}
		failed = -1
		if n := v.chars[i]; n >= 0 && n <= room {
			// Plain content inside a string: it may come. The states stay those of the last
			// token read, valid as far as this one shares with it.
			have = min(have, l)
			allowed = allowed || choosable(logits[id])
			continue
		}
		d := min(l, have)
		for ; d < len(t); d++ {
			if d+1 >= len(c.states) {
				c.states = append(c.states, matcher{})
			}
			next := &c.states[d+1]
			next.copyFrom(&c.states[d])
			if !next.feed(t[d]) {
				failed = d
				break
			}
		}
		if failed >= 0 {
			have = failed
			logits[id] = inf
			continue
		}
		have = len(t)
		allowed = allowed || choosable(logits[id])
	}
	if !allowed {
		return ErrNoToken
	}
	return nil
}

// choosable reports whether a token with logit l can be chosen: not NaN, not −Inf (a ban, such
// as a logit bias of −100, that the mask must not count as a way on).
func choosable(l float32) bool { return l > float32(math.Inf(-1)) }

// Accept records token id, chosen from logits that Mask masked.
func (c *Constraint) Accept(id int32) error {
	v := c.v
	if slices.Contains(v.ends, id) {
		if !c.Complete() || c.ended {
			return fmt.Errorf("structured: token %d ends an incomplete document", id)
		}
		c.ended = true
		return nil
	}
	if c.free {
		if id >= 0 && int(id) < v.size && v.at[id] >= 0 {
			return c.freeText(id, v.text[v.at[id]])
		}
		return nil
	}
	if id < 0 || int(id) >= v.size || v.at[id] < 0 {
		return fmt.Errorf("structured: token %d is not text", id)
	}
	for _, b := range v.text[v.at[id]] {
		if !c.m.feed(b) {
			return fmt.Errorf("structured: token %d cannot continue the document", id)
		}
	}
	if c.trigger != nil && c.m.frames[0].phase == docDone {
		c.free, c.tail = true, c.tail[:0] // the document is whole: free text again
	}
	return nil
}

// maskTrigger masks, in free text, the tokens that would complete the trigger with text after
// it that the document cannot hold.
func (c *Constraint) maskTrigger(logits []float32) {
	if len(c.trigger) == 0 {
		return
	}
	v := c.v
	if c.crossers == nil {
		c.crossers, c.begin = make([]int32, 0, 64), c.f.start()
		last := c.trigger[len(c.trigger)-1]
		for i, t := range v.text {
			if bytes.IndexByte(t, last) >= 0 {
				c.crossers = append(c.crossers, int32(i))
			}
		}
	}
	inf := float32(math.Inf(-1))
	for _, i := range c.crossers {
		if !c.fitsAfter(v.text[i]) {
			logits[v.order[i]] = inf
		}
	}
}

// fitsAfter reports whether token text t, after the free text so far, either leaves the
// trigger unwritten or writes it followed by what can begin (or be) a document.
func (c *Constraint) fitsAfter(t []byte) bool {
	c.scratch = append(append(c.scratch[:0], c.tail...), t...)
	i := bytes.Index(c.scratch, c.trigger)
	if i < 0 {
		return true
	}
	c.trial.copyFrom(&c.begin)
	for _, b := range c.scratch[i:] {
		if !c.trial.feed(b) {
			return false
		}
	}
	return true
}

// freeText reads free text: when it completes the trigger, the document begins there (or,
// when the token holds the whole document, has been written and the text is free again).
func (c *Constraint) freeText(id int32, t []byte) error {
	c.tail = append(c.tail, t...)
	if i := bytes.Index(c.tail, c.trigger); i >= 0 {
		m := c.f.start()
		for _, b := range c.tail[i:] {
			if !m.feed(b) {
				return fmt.Errorf("structured: token %d writes the trigger %q with text the document cannot hold", id, c.trigger)
			}
		}
		c.tail = c.tail[:0]
		if m.frames[0].phase != docDone {
			c.m, c.free = m, false
		}
		return nil
	}
	if keep := len(c.trigger) - 1; len(c.tail) > keep {
		c.tail = append(c.tail[:0], c.tail[len(c.tail)-keep:]...)
	}
	return nil
}
