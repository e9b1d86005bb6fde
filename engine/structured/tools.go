package structured

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
)

// A Tool is a function a model may call: its name and the JSON Schema of its arguments (nil:
// any object).
type Tool struct {
	Name       string
	Parameters json.RawMessage
}

// ToolCall returns the format of one call of one of tools as chat templates of the Hermes
// family (Qwen's among them) write it: open, then {"name": NAME, "arguments": ARGUMENTS}, then
// close ("<tool_call>\n" and "\n</tool_call>"). The name is one of the tools', and the
// arguments follow that tool's schema.
func ToolCall(tools []Tool, open, close string) (*Format, error) {
	root, err := callNode(tools)
	if err != nil {
		return nil, err
	}
	return &Format{root: root, open: []byte(open), close: []byte(close)}, nil
}

// ToolCallList returns the format of a JSON list of one or more calls of tools, each as
// ToolCall writes one, between open and close: Mistral's [TOOL_CALLS][{…}, {…}], where every
// call of the list is held to the tools, not only the first.
func ToolCallList(tools []Tool, open, close string) (*Format, error) {
	call, err := callNode(tools)
	if err != nil {
		return nil, err
	}
	list := &node{kind: kindArray, items: call, minItems: 1, maxItems: -1}
	if err := (&compiler{}).check(list, map[*node]bool{}); err != nil {
		return nil, err
	}
	return &Format{root: list, open: []byte(open), close: []byte(close)}, nil
}

// Accepts reports whether doc is a whole document of f: one that a constraint of f could have
// written (white space included), which is how a tool call read from an answer is checked
// against its tool's schema.
func (f *Format) Accepts(doc []byte) bool {
	m := f.start()
	for _, b := range doc {
		if !m.feed(b) {
			return false
		}
	}
	return m.canEnd()
}

// callNode compiles the object of one call of tools: {"name": NAME, "arguments": ARGUMENTS}.
func callNode(tools []Tool) (*node, error) {
	if len(tools) == 0 {
		return nil, fmt.Errorf("structured: a tool call needs at least one tool")
	}
	type named struct {
		lit  []byte
		call *node
	}
	var cases []named
	for _, t := range tools {
		args := &node{kind: kindObject, values: &node{kind: kindAny}}
		if p := bytes.TrimSpace(t.Parameters); len(p) > 0 && string(p) != "null" && string(p) != "true" {
			f, err := CompileSchema(t.Parameters)
			if err != nil {
				return nil, fmt.Errorf("tool %q: parameters: %w", t.Name, err)
			}
			switch f.root.kind {
			case kindObject:
				args = f.root
			case kindAny: // {} and the like: any object, as the arguments are one
			default:
				return nil, fmt.Errorf("tool %q: parameters: the arguments are an object; the schema must describe an object alone", t.Name)
			}
		}
		lit := canonical(t.Name)
		if slices.ContainsFunc(cases, func(c named) bool { return bytes.Equal(c.lit, lit) }) {
			return nil, fmt.Errorf("structured: two tools are named %q", t.Name)
		}
		call := &node{kind: kindObject, props: []prop{
			{key: canonical("name"), value: &node{kind: kindLiteral, literals: [][]byte{lit}}, required: true},
			{key: canonical("arguments"), value: args, required: true},
		}}
		setKeySets(call)
		cases = append(cases, named{lit, call})
	}
	// The first property's literals in sorted order, each case at its literal's index.
	slices.SortFunc(cases, func(a, b named) int { return bytes.Compare(a.lit, b.lit) })
	names := &node{kind: kindLiteral}
	root := &node{kind: kindObject}
	for _, c := range cases {
		names.literals = append(names.literals, c.lit)
		root.cases = append(root.cases, c.call)
	}
	root.props = []prop{{key: canonical("name"), value: names, required: true}, cases[0].call.props[1]}
	setKeySets(root)
	c := &compiler{}
	if err := c.check(root, map[*node]bool{}); err != nil {
		return nil, err
	}
	return root, nil
}
