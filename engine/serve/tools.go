package serve

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/trochilus-llm/trochilus/engine/assistant"
	"github.com/trochilus-llm/trochilus/engine/structured"
)

// Tools. The model's own chat template shows it the tools (as apply_chat_template(tools=…)
// does), and its answer is read for the calls it writes in the template's syntax
// (assistant.ToolSyntax: Hermes/Qwen <tool_call>, Llama 3.1's JSON message, Mistral's
// [TOOL_CALLS]). tool_choice "auto" (the default with tools) lets the model choose between text
// and calls, and a call it begins is held to the tools (by constrained decoding from the
// syntax's opening on: a name of the tools', that tool's arguments; for Llama, whose call has no
// marker and is the whole message, from an answer that begins with {); "required" and a named
// function make the answer one call the same way, from its first token; "none" shows the tools
// and reads no call (whatever the model writes stays text). Only a call of one of the tools
// whose arguments hold to its schema is ever read back; tools whose schemas the constraint
// cannot hold are refused with a 400, forced or not.

// toolPlan is what a request's tools, tool_choice and parallel_tool_calls ask for.
type toolPlan struct {
	tools  json.RawMessage       // the tools for the template; nil without tools
	read   bool                  // read calls from the answer
	forced *assistant.ToolFormat // one call, constrained; nil when the model chooses
	// lazy, when the model chooses, constrains the calls it writes (from the syntax's opening
	// on); nil when a tool's parameters use keywords the matcher cannot enforce: such calls
	// are read as written.
	lazy   *assistant.ToolFormat
	one    bool // at most one call (parallel_tool_calls false, or a syntax of one call)
	syntax assistant.ToolSyntax
}

// functionName is what OpenAI allows a function's name to be; ollamaFunctionName what Ollama
// allows (MCP tools' names have dots and colons).
var (
	functionName       = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)
	ollamaFunctionName = regexp.MustCompile(`^[a-zA-Z0-9_.:-]{1,128}$`)
)

// parseTools reads tools, tool_choice and parallel_tool_calls for a model whose template
// writes calls in syntax (ok false: it cannot).
func parseTools(rawTools, rawChoice json.RawMessage, parallel *bool, syntax assistant.ToolSyntax, ok bool, names *regexp.Regexp) (toolPlan, error) {
	var p toolPlan
	var list []struct {
		Type     string          `json:"type"`
		Function json.RawMessage `json:"function"`
	}
	if !isNull(rawTools) {
		if err := json.Unmarshal(rawTools, &list); err != nil {
			return p, badParam("tools", "tools: want a list of {\"type\": \"function\", \"function\": {…}}")
		}
	}
	var defs []structured.Tool
	for i, t := range list {
		if t.Type != "function" {
			return p, badParam("tools", "tools[%d].type %q: only \"function\" tools are supported", i, t.Type)
		}
		var fn struct {
			Name        string          `json:"name"`
			Description *string         `json:"description"`
			Parameters  json.RawMessage `json:"parameters"`
			Strict      *bool           `json:"strict"`
		}
		if err := decodeNested(t.Function, &fn, "tools["+strconv.Itoa(i)+"].function"); err != nil {
			return p, err
		}
		if !names.MatchString(fn.Name) {
			return p, badParam("tools", "tools[%d].function.name %q: want a name of the form %s", i, fn.Name, names)
		}
		if !isNull(fn.Parameters) && !isObject(fn.Parameters) {
			return p, badParam("tools", "tools[%d].function.parameters: want a JSON Schema object", i)
		}
		defs = append(defs, structured.Tool{Name: fn.Name, Parameters: fn.Parameters})
	}
	choice := "auto"
	var named string
	if !isNull(rawChoice) {
		if json.Unmarshal(rawChoice, &choice) != nil {
			var c struct {
				Type     string `json:"type"`
				Function struct {
					Name string `json:"name"`
				} `json:"function"`
			}
			if json.Unmarshal(rawChoice, &c) != nil || c.Type != "function" || c.Function.Name == "" {
				return p, badParam("tool_choice", "tool_choice: want \"none\", \"auto\", \"required\" or {\"type\": \"function\", \"function\": {\"name\": …}}")
			}
			choice, named = "function", c.Function.Name
		}
	}
	switch choice {
	case "none", "auto", "required", "function":
	default:
		return p, badParam("tool_choice", "tool_choice %q: want \"none\", \"auto\", \"required\" or a function", choice)
	}
	if len(defs) == 0 {
		if choice == "required" || choice == "function" {
			return p, badParam("tool_choice", "tool_choice %q: there are no tools", choice)
		}
		return p, nil
	}
	if !ok {
		e := badParam("tools", "tools: %v", assistant.ErrNoTools)
		e.code = "unsupported_parameter"
		return p, e
	}
	p.tools, p.syntax = rawTools, syntax
	p.read = choice != "none"
	p.one = parallel != nil && !*parallel || syntax.Single
	if choice == "auto" {
		// The calls the model chooses to write are held to the tools as the forced ones are;
		// tools whose schemas the constraint cannot hold are refused alike, rather than
		// read back unchecked.
		f, err := syntax.Format(defs)
		if err != nil {
			e := badParam("tools", "tools: %v", err)
			e.code = "unsupported_parameter"
			return p, e
		}
		p.lazy = f
	}
	if choice == "required" || choice == "function" {
		chosen := defs
		if named != "" {
			chosen = nil
			for _, d := range defs {
				if d.Name == named {
					chosen = append(chosen, d)
				}
			}
			if len(chosen) == 0 {
				return p, badParam("tool_choice", "tool_choice names %q, which is not among the tools", named)
			}
		}
		f, err := syntax.Format(chosen)
		if err != nil {
			e := badParam("tools", "tools: %v", err)
			e.code = "unsupported_parameter"
			return p, e
		}
		p.forced = f
	}
	return p, nil
}

// isObject reports whether raw is a JSON object.
func isObject(raw json.RawMessage) bool {
	t := bytes.TrimSpace(raw)
	return len(t) > 0 && t[0] == '{' && json.Valid(t)
}

// parse reads the calls of an answer: its text and the calls, or the whole text and none.
func (p *toolPlan) parse(reply *assistant.Reply) (string, []assistant.ToolCall) {
	if !p.read {
		return reply.Text, nil
	}
	// A call is read only when it names one of the tools and its arguments hold to that
	// tool's schema (ToolFormat.Parse): the constraint wrote it so, and one the model wrote
	// otherwise (under a response_format in the constraint's place) stays text.
	f := p.forced
	if f == nil {
		f = p.lazy
	}
	var text string
	var calls []assistant.ToolCall
	if f != nil {
		text, calls = f.Parse(reply.Text)
	} else {
		text, calls = assistant.ParseToolCalls(reply.Text, p.syntax)
	}
	if p.one && len(calls) > 1 {
		calls = calls[:1]
	}
	return text, calls
}

// ollamaCalls is parse with the calls in Ollama's shape: {"function": {"name", "arguments"}},
// the arguments an object.
func (p *toolPlan) ollamaCalls(reply *assistant.Reply) (string, []map[string]any) {
	text, calls := p.parse(reply)
	var out []map[string]any
	for _, c := range calls {
		out = append(out, map[string]any{"function": map[string]any{"name": c.Name, "arguments": c.Arguments}})
	}
	return text, out
}

// calls is parse with the calls in OpenAI's shape: an id, the arguments a string of JSON.
func (p *toolPlan) calls(reply *assistant.Reply) (string, []map[string]any) {
	text, calls := p.parse(reply)
	var out []map[string]any
	for _, c := range calls {
		var args bytes.Buffer
		json.Compact(&args, c.Arguments)
		id := newID("call_")
		if n := p.syntax.IDLen; n > 0 {
			// The template takes back only ids of its length (Mistral's nine alphanumerics):
			// the client sends this one back with the call and its result.
			id = newID("")[:n]
		}
		out = append(out, map[string]any{"id": id, "type": "function",
			"function": map[string]any{"name": c.Name, "arguments": args.String()}})
	}
	return text, out
}

// A holdBack passes an answer's text on as it streams, except from where a tool call begins
// (and the blanks before it): that part is kept until the answer is read whole. With start, a
// call begins only at the answer's beginning (a syntax whose call is the whole message).
type holdBack struct {
	marker string
	start  bool
	out    func(string)
	buf    string // not passed on yet
	hit    bool   // the marker was seen: everything from it is kept
	passed int    // bytes passed on
}

// tail passes on what a reply's text (the text beside its calls, which begins with what was
// passed on) holds beyond what was: the text after the calls.
func (h *holdBack) tail(text string) {
	if h.passed < len(text) {
		h.out(text[h.passed:])
		h.passed = len(text)
	}
}

func (h *holdBack) write(s string) {
	h.buf += s
	if h.hit {
		return
	}
	if h.start {
		// Everything is kept while the answer may still begin with the marker; once it cannot,
		// it all streams.
		t := strings.TrimLeft(h.buf, " \n")
		if strings.HasPrefix(t, h.marker) || strings.HasPrefix(h.marker, t) {
			h.hit = strings.HasPrefix(t, h.marker)
			return
		}
		h.start = false
		h.out(h.buf)
		h.passed += len(h.buf)
		h.buf = ""
		h.marker = "\x00" // no call can begin later
		return
	}
	cut := len(h.buf)
	if i := strings.Index(h.buf, h.marker); i >= 0 {
		h.hit, cut = true, i
	} else {
		// What may be the start of the marker stays back.
		for k := min(len(h.marker)-1, len(h.buf)); k > 0; k-- {
			if strings.HasSuffix(h.buf, h.marker[:k]) {
				cut = len(h.buf) - k
				break
			}
		}
	}
	cut = len(strings.TrimRight(h.buf[:cut], " \n"))
	if cut > 0 {
		h.out(h.buf[:cut])
		h.passed += cut
		h.buf = h.buf[cut:]
	}
}

// rest returns what was kept.
func (h *holdBack) rest() string {
	r := h.buf
	h.buf = ""
	h.passed += len(r)
	return r
}

// templateToolCalls rewrites an assistant message's OpenAI tool_calls for the template: each
// call's arguments, which OpenAI sends as a string of JSON, become that JSON object (what
// transformers' templates expect, and what the model wrote), keys in their order.
func templateToolCalls(raw json.RawMessage) (json.RawMessage, error) {
	var in []struct {
		ID       *string `json:"id"`
		Type     *string `json:"type"`
		Function *struct {
			Name      string          `json:"name"`
			Arguments json.RawMessage `json:"arguments"`
		} `json:"function"`
	}
	if err := json.Unmarshal(raw, &in); err != nil {
		return nil, fmt.Errorf("want a list of {\"id\", \"type\": \"function\", \"function\": {\"name\", \"arguments\"}}")
	}
	type function struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	}
	type call struct {
		ID       *string  `json:"id,omitempty"`
		Type     string   `json:"type"`
		Function function `json:"function"`
	}
	out := make([]call, len(in))
	for i, c := range in {
		if c.Function == nil || c.Function.Name == "" || c.Type != nil && *c.Type != "function" {
			return nil, fmt.Errorf("call %d: want a function with a name", i)
		}
		args := c.Function.Arguments
		var s string
		if json.Unmarshal(args, &s) == nil {
			if !isObject(json.RawMessage(s)) {
				return nil, fmt.Errorf("call %d: arguments %q: want a JSON object", i, s)
			}
			args = json.RawMessage(s)
		} else if !isObject(args) {
			return nil, fmt.Errorf("call %d: arguments: want a JSON object or a string of one", i)
		}
		out[i] = call{ID: c.ID, Type: "function", Function: function{Name: c.Function.Name, Arguments: args}}
	}
	b, err := json.Marshal(out)
	return json.RawMessage(b), err
}

// apply sets an answer's options for the plan: the tools for the template and the format of
// the calls (a response_format, when the request has one, wins over the lazy one).
func (p *toolPlan) apply(opts *assistant.Options) {
	opts.Tools = p.tools
	switch {
	case p.forced != nil:
		opts.ToolCall, opts.ForceToolCall = p.forced, true
	case p.lazy != nil && opts.Format == nil:
		opts.ToolCall = p.lazy
	}
}

// marker is the text a call begins with: the first word of the syntax's opening, or for a call
// that is the whole message (no opening) the start of its object.
func (p *toolPlan) marker() string { return p.syntax.Trigger() }

// holdBack returns, for a plan that reads calls, a holdBack passing a streamed answer's text on
// to out; nil for one that reads none (its text streams as it comes).
func (p *toolPlan) holdBack(out func(string)) *holdBack {
	if p == nil || !p.read {
		return nil
	}
	return &holdBack{marker: p.marker(), start: p.syntax.Open == "", out: out}
}
