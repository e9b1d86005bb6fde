// Package chat renders a model's chat template over a conversation exactly as Hugging Face
// transformers' apply_chat_template(..., tokenize=False) does: the same Jinja2 environment
// (ImmutableSandboxedEnvironment with trim_blocks, lstrip_blocks and loop controls), the same
// tojson, raise_exception and strftime_now, and the same render variables (messages, tools,
// documents, add_generation_prompt, the special tokens as strings, extra keyword arguments).
package chat

import (
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/trochilus-llm/trochilus/tokenizer/jinja"
)

// Message is one turn of a conversation. Content is usually a string; it may also be nil or a
// list of content parts. Extra holds any other field the template reads (tool_calls,
// tool_call_id, name, reasoning_content, ...); its keys follow role and content in sorted
// order. Conversations whose field order matters to the template (it prints them with tojson)
// should be given as JSON instead (see ParseMessages).
type Message struct {
	Role    string
	Content any
	Extra   map[string]any
}

// SpecialTokens are the tokenizer's special tokens, which transformers passes to the template
// as strings (bos_token, eos_token, ...). An empty field is not passed at all.
type SpecialTokens struct {
	BOS, EOS, UNK, SEP, PAD, CLS, Mask string
	Additional                         []string
}

// Options are the arguments of apply_chat_template besides the conversation.
type Options struct {
	AddGenerationPrompt bool
	// Tools and Documents are passed as given (nil is Python's None). A json.RawMessage or
	// []byte is decoded as JSON, keeping object key order; other values go through
	// jinja.ValueOf.
	Tools, Documents any
	SpecialTokens    SpecialTokens
	// Kwargs are extra template variables (enable_thinking, date_string, ...); like
	// transformers' template kwargs they override the special tokens.
	Kwargs map[string]any
	// Now is the clock behind strftime_now; nil means time.Now. Its location is used as is,
	// like Python's naive datetime.now().
	Now func() time.Time
}

// Template is a parsed chat template. It is safe for concurrent use.
type Template struct {
	t *jinja.Template
}

// environment is transformers' _compile_jinja_template environment.
func environment() *jinja.Environment {
	return &jinja.Environment{
		Options:         jinja.Options{TrimBlocks: true, LStripBlocks: true},
		Filters:         map[string]jinja.Func{"tojson": toJSON},
		Globals:         map[string]jinja.Value{"raise_exception": jinja.Func(raiseException)},
		TransparentTags: []string{"generation"},
	}
}

// Parse parses a chat template (the tokenizer_config.json "chat_template" string, or the
// GGUF's tokenizer.chat_template).
func Parse(src string) (*Template, error) {
	t, err := environment().Parse(src)
	if err != nil {
		return nil, fmt.Errorf("chat template: %w", err)
	}
	return &Template{t: t}, nil
}

// Render parses the template and renders it over messages; see Template.Render.
func Render(template string, messages any, opts Options) (string, error) {
	t, err := Parse(template)
	if err != nil {
		return "", err
	}
	return t.Render(messages, opts)
}

// Render renders the conversation. messages is a []Message, a JSON array of message objects
// (json.RawMessage or []byte, decoded keeping key order), or template values ([]jinja.Value).
func (t *Template) Render(messages any, opts Options) (string, error) {
	msgs, err := messageValues(messages)
	if err != nil {
		return "", err
	}
	tools, err := jsonOrValue(opts.Tools)
	if err != nil {
		return "", fmt.Errorf("chat: tools: %w", err)
	}
	docs, err := jsonOrValue(opts.Documents)
	if err != nil {
		return "", fmt.Errorf("chat: documents: %w", err)
	}
	now := opts.Now
	if now == nil {
		now = time.Now
	}
	vars := map[string]jinja.Value{
		"strftime_now": jinja.Func(func(args []jinja.Value, kwargs map[string]jinja.Value) (jinja.Value, error) {
			if len(args) != 1 || len(kwargs) > 0 {
				return nil, &jinja.Error{Kind: "TypeError", Msg: "strftime_now() takes exactly one argument"}
			}
			format, ok := args[0].(string)
			if !ok {
				return nil, &jinja.Error{Kind: "TypeError", Msg: "strftime() argument 1 must be str"}
			}
			return Strftime(now(), format), nil
		}),
	}
	st := opts.SpecialTokens
	for name, tok := range map[string]string{
		"bos_token": st.BOS, "eos_token": st.EOS, "unk_token": st.UNK, "sep_token": st.SEP,
		"pad_token": st.PAD, "cls_token": st.CLS, "mask_token": st.Mask,
	} {
		if tok != "" {
			vars[name] = tok
		}
	}
	if len(st.Additional) > 0 {
		add := make([]jinja.Value, len(st.Additional))
		for i, s := range st.Additional {
			add[i] = s
		}
		vars["additional_special_tokens"] = add
	}
	for k, v := range opts.Kwargs {
		cv, err := jsonOrValue(v)
		if err != nil {
			return "", fmt.Errorf("chat: template argument %q: %w", k, err)
		}
		vars[k] = cv
	}
	vars["messages"] = msgs
	vars["tools"] = tools
	vars["documents"] = docs
	vars["add_generation_prompt"] = opts.AddGenerationPrompt
	out, err := t.t.Render(vars)
	if err != nil {
		return "", fmt.Errorf("chat template: %w", err)
	}
	return out, nil
}

// ParseMessages decodes a JSON array of message objects, keeping each object's key order.
func ParseMessages(data []byte) ([]jinja.Value, error) {
	v, err := jinja.ParseJSON(data)
	if err != nil {
		return nil, fmt.Errorf("chat: messages: %w", err)
	}
	list, ok := v.([]jinja.Value)
	if !ok {
		return nil, fmt.Errorf("chat: messages: JSON is not an array")
	}
	return list, nil
}

func messageValues(messages any) (jinja.Value, error) {
	switch m := messages.(type) {
	case []Message:
		out := make([]jinja.Value, len(m))
		for i, msg := range m {
			d, err := msg.value()
			if err != nil {
				return nil, fmt.Errorf("chat: message %d: %w", i, err)
			}
			out[i] = d
		}
		return out, nil
	case json.RawMessage:
		return ParseMessages(m)
	case []byte:
		return ParseMessages(m)
	case []jinja.Value:
		return m, nil
	}
	return nil, fmt.Errorf("chat: messages of type %T: want []Message, JSON or []jinja.Value", messages)
}

func (m Message) value() (*jinja.Dict, error) {
	d := jinja.NewDict()
	d.SetString("role", m.Role)
	content, err := jinja.ValueOf(m.Content)
	if err != nil {
		return nil, err
	}
	d.SetString("content", content)
	keys := make([]string, 0, len(m.Extra))
	for k := range m.Extra {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		v, err := jsonOrValue(m.Extra[k])
		if err != nil {
			return nil, fmt.Errorf("field %q: %w", k, err)
		}
		d.SetString(k, v)
	}
	return d, nil
}

func jsonOrValue(v any) (jinja.Value, error) {
	switch x := v.(type) {
	case json.RawMessage:
		return jinja.ParseJSON(x)
	case []byte:
		return jinja.ParseJSON(x)
	}
	return jinja.ValueOf(v)
}

// IsRefusal reports whether err is a template refusing the conversation it was given (its
// raise_exception: roles out of order, a role or a turn it does not take): the caller's
// messages are at fault, not the template or the renderer.
func IsRefusal(err error) bool {
	var e *jinja.Error
	return errors.As(err, &e) && e.Kind == "TemplateError"
}

// raiseException is transformers' raise_exception global: it fails the render with the
// template's message as a jinja2 TemplateError.
func raiseException(args []jinja.Value, kwargs map[string]jinja.Value) (jinja.Value, error) {
	msg := ""
	if len(args) > 0 {
		msg = fmt.Sprint(jinja.Str(args[0]))
	}
	return nil, &jinja.Error{Kind: "TemplateError", Msg: msg}
}

// toJSON is transformers' tojson filter: json.dumps(x, ensure_ascii=False, indent=None,
// separators=None, sort_keys=False), returning a plain string.
func toJSON(args []jinja.Value, kwargs map[string]jinja.Value) (jinja.Value, error) {
	names := []string{"x", "ensure_ascii", "indent", "separators", "sort_keys"}
	vals := []jinja.Value{nil, false, nil, nil, false}
	if len(args) > len(names) {
		return nil, &jinja.Error{Kind: "TypeError", Msg: fmt.Sprintf("tojson() takes from 1 to 5 positional arguments but %d were given", len(args))}
	}
	copy(vals, args)
	for k, v := range kwargs {
		i := indexOf(names, k)
		if i < 1 {
			return nil, &jinja.Error{Kind: "TypeError", Msg: fmt.Sprintf("tojson() got an unexpected keyword argument '%s'", k)}
		}
		if i < len(args) {
			return nil, &jinja.Error{Kind: "TypeError", Msg: fmt.Sprintf("tojson() got multiple values for argument '%s'", k)}
		}
		vals[i] = v
	}
	opts := jinja.JSONOptions{EnsureASCII: jinja.Truth(vals[1]), Indent: vals[2], SortKeys: jinja.Truth(vals[4])}
	if vals[3] != nil {
		items, ok := jinja.Items(vals[3])
		if !ok || len(items) != 2 {
			return nil, &jinja.Error{Kind: "ValueError", Msg: "separators must be a pair of strings"}
		}
		a, okA := items[0].(string)
		b, okB := items[1].(string)
		if !okA || !okB {
			return nil, &jinja.Error{Kind: "TypeError", Msg: "separators must be strings"}
		}
		opts.Separators = &[2]string{a, b}
	}
	return jinja.DumpJSON(vals[0], opts)
}

func indexOf(list []string, s string) int {
	for i, x := range list {
		if x == s {
			return i
		}
	}
	return -1
}
