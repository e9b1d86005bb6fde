package assistant

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"unicode"

	"github.com/trochilus-llm/trochilus/tokenizer/chat"
)

// ToolSyntax is how a model's chat template writes tool calls, as rendering probe calls through
// it shows (toolSyntax): never guessed from the model's name. Three layouts are known:
//
//   - each call wrapped in Open and Close, the call a JSON object {"name": …, Key: …} (Hermes
//     and Qwen: "<tool_call>\n", "\n</tool_call>", Key "arguments");
//   - the calls one list (List): Open, the objects separated by Sep, Close (Mistral Nemo and
//     Small 3.1: "[TOOL_CALLS][" or "[TOOL_CALLS] [", ", ", "]");
//   - a call that is the whole message (Open and Close empty, Single: Llama 3.1 to 3.3's
//     {"name": …, "parameters": …});
//
// and, in the first layout, a call that is its name, ArgsMarker and the arguments rather than one
// object (Key empty: Mistral's newer [TOOL_CALLS]name[ARGS]{…}).
type ToolSyntax struct {
	// Open and Close surround each call, or with List the list of calls. Open is empty when a
	// call is the whole message.
	Open, Close string
	// List: the calls are one list, Sep between them. Without List, Sep is what the template
	// writes between two wrapped calls.
	List bool
	Sep  string
	// Key is the call object's key for the arguments ("arguments"; Llama's "parameters"); empty
	// when the call is the name, IDMarker and an id (when the template writes one), ArgsMarker
	// and the arguments.
	Key                  string
	IDMarker, ArgsMarker string
	// Single: the template renders at most one call per message (Llama's raises on more).
	Single bool
	// IDLen, when not 0, is the length of the alphanumeric call ids the template requires
	// (Mistral's 9); rendering makes every call's id so (toolTurns).
	IDLen int
	// End, when not empty, is a control token's text that also ends an answer, written after a
	// call (Llama's <|eom_id|>).
	End string
}

// hermes is the syntax of the Hermes family of templates (Qwen2.5, Qwen3, Hermes 2 and 3).
var hermes = ToolSyntax{Open: "<tool_call>\n", Close: "\n</tool_call>", Sep: "\n", Key: "arguments"}

// The probe: tools and calls with names no template writes by itself.
const (
	probeTool  = `[{"type":"function","function":{"name":"trochilus_probe_tool","description":"","parameters":{"type":"object","properties":{}}}}]`
	probeName  = "trochilus_probe_tool"
	probeName2 = "trochilus_probe_other"
	probeArgs  = `{"trochilus_probe_arg": 1}`
	probeArgs2 = `{"trochilus_probe_arg": 2}`
	probeText  = "trochilus_probe_text"
)

// toolSyntax finds how the template writes tool calls. It must render the tools it is given (a
// template that ignores them would let the model call tools it was never shown); then the
// assistant's turn is rendered with one call and with two, and the syntax is what surrounds
// them (less what surrounds a turn of text). A syntax is taken only when ParseToolCalls reads
// the rendered calls back exactly.
func toolSyntax(tmpl *chat.Template, src string, special chat.SpecialTokens) (ToolSyntax, bool) {
	if tmpl == nil {
		return ToolSyntax{}, false
	}
	render := func(turns []chat.Message, gen bool) (string, error) {
		return tmpl.Render(turns, chat.Options{AddGenerationPrompt: gen, SpecialTokens: special, Tools: json.RawMessage(probeTool)})
	}
	user := chat.Message{Role: "user", Content: "hi"}
	prompt, err := render([]chat.Message{user}, true)
	if err != nil || !strings.Contains(prompt, probeName) {
		return ToolSyntax{}, false
	}
	// What the template writes around an assistant's text, after the prompt.
	text, err := render([]chat.Message{user, {Role: "assistant", Content: probeText}}, false)
	turn, ok := strings.CutPrefix(text, prompt)
	at := strings.Index(turn, probeText)
	if err != nil || !ok || at < 0 {
		return ToolSyntax{}, false
	}
	before, after := turn[:at], turn[at+len(probeText):]
	// The calls' turn less that: the calls alone. Some templates require ids of a length.
	calls := func(n int, ids []string) (string, bool) {
		var list []string
		for i, name := range []string{probeName, probeName2}[:n] {
			args := []string{probeArgs, probeArgs2}[i]
			list = append(list, `{"id":"`+ids[i]+`","type":"function","function":{"name":"`+name+`","arguments":`+args+`}}`)
		}
		out, err := render([]chat.Message{user, {Role: "assistant", Content: "",
			Extra: map[string]any{"tool_calls": json.RawMessage("[" + strings.Join(list, ",") + "]")}}}, false)
		body, ok := strings.CutPrefix(out, prompt+before)
		if err != nil || !ok || !strings.HasSuffix(body, after) {
			return "", false
		}
		return strings.TrimSuffix(body, after), true
	}
	s := ToolSyntax{}
	ids := []string{"p1", "p2"}
	one, ok := calls(1, ids)
	if !ok {
		ids = []string{"probe0001", "probe0002"}
		if one, ok = calls(1, ids); !ok {
			return ToolSyntax{}, false
		}
		s.IDLen = 9
	}
	c1, ok := s.readCall(one, probeName, probeArgs, ids[0])
	if !ok {
		return ToolSyntax{}, false
	}
	two, ok := calls(2, ids)
	if !ok {
		s.Single = true
	} else if !s.readLayout(two, c1) {
		return ToolSyntax{}, false
	}
	if s.Open == "" {
		s.Single = true // a call that is the whole message: one a message
	} else if strings.TrimSpace(s.Open) == "" {
		return ToolSyntax{}, false // a call that begins with white space alone: nothing marks it
	}
	if strings.Contains(src, "<|eom_id|>") {
		s.End = "<|eom_id|>"
	}
	// The syntax must read back what the template wrote.
	want := []ToolCall{{probeName, json.RawMessage(probeArgs)}, {probeName2, json.RawMessage(probeArgs2)}}
	if !s.readsBack(one, want[:1]) || !s.Single && !s.readsBack(two, want) {
		return ToolSyntax{}, false
	}
	return s, true
}

// readCall reads the one call body holds (name and args, id written or not): its form, Open
// and Close; it returns the call's own text.
func (s *ToolSyntax) readCall(body, name, args, id string) (string, bool) {
	if j := strings.Index(body, `{"name": "`+name+`"`); j >= 0 {
		obj, n := firstObject(body[j:])
		key := ""
		for k, v := range obj {
			if k != "name" && k != "id" && compact(v) == compact(json.RawMessage(args)) {
				key = k
			}
		}
		if key == "" {
			return "", false
		}
		s.Key, s.Open, s.Close = key, body[:j], body[j+n:]
		return body[j : j+n], true
	}
	k := strings.Index(body, name)
	m := strings.Index(body[max(k, 0):], args)
	if k < 0 || m < 0 {
		return "", false
	}
	marker := body[k+len(name) : k+m]
	if i := strings.Index(marker, id); i >= 0 {
		s.IDMarker, marker = marker[:i], marker[i+len(id):]
	}
	if strings.TrimSpace(marker) == "" || strings.ContainsAny(marker, "{}\"") {
		return "", false
	}
	s.ArgsMarker, s.Open, s.Close = marker, body[:k], body[k+m+len(args):]
	return body[k : k+m+len(args)], true
}

// readLayout reads, from the rendering of two calls whose first is c1, whether they are wrapped
// one by one or a list, and what separates them.
func (s *ToolSyntax) readLayout(two, c1 string) bool {
	var c2 string
	if s.Key != "" {
		j := strings.Index(two, `{"name": "`+probeName2+`"`)
		if j < 0 {
			return false
		}
		_, n := firstObject(two[j:])
		c2 = two[j : j+n]
	} else {
		k := strings.Index(two, probeName2)
		m := strings.Index(two[max(k, 0):], probeArgs2)
		if k < 0 || m < 0 {
			return false
		}
		c2 = two[k : k+m+len(probeArgs2)]
	}
	if mid, ok := between(two, s.Open+c1+s.Close, s.Open+c2+s.Close); ok {
		s.Sep = mid
		return true
	}
	if mid, ok := between(two, s.Open+c1, c2+s.Close); ok && s.Key != "" && s.Close != "" {
		s.List, s.Sep = true, mid
		return true
	}
	return false
}

// between returns what lies between prefix and suffix when s is prefix, it and suffix.
func between(s, prefix, suffix string) (string, bool) {
	if !strings.HasPrefix(s, prefix) || !strings.HasSuffix(s, suffix) || len(s) < len(prefix)+len(suffix) {
		return "", false
	}
	return s[len(prefix) : len(s)-len(suffix)], true
}

// readsBack reports whether ParseToolCalls reads body as exactly the calls want.
func (s ToolSyntax) readsBack(body string, want []ToolCall) bool {
	text, got := ParseToolCalls(body, s)
	if text != "" || len(got) != len(want) {
		return false
	}
	for i := range got {
		if got[i].Name != want[i].Name || compact(got[i].Arguments) != compact(want[i].Arguments) {
			return false
		}
	}
	return true
}

// firstObject decodes the JSON object s begins with: its members and its length in bytes (nil
// and 0 when s does not begin with one).
func firstObject(s string) (map[string]json.RawMessage, int) {
	if !strings.HasPrefix(s, "{") {
		return nil, 0
	}
	dec := json.NewDecoder(strings.NewReader(s))
	var obj map[string]json.RawMessage
	if dec.Decode(&obj) != nil || obj == nil {
		return nil, 0
	}
	return obj, int(dec.InputOffset())
}

// compact returns raw without insignificant white space (raw itself when it is not JSON).
func compact(raw json.RawMessage) string {
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return string(raw)
	}
	return b.String()
}

// ToolSyntax returns how the model writes a tool call, and false when its template does not
// render tools or writes calls in a syntax this package cannot read.
func (c *Chat) ToolSyntax() (ToolSyntax, bool) { return c.tools, c.tools != ToolSyntax{} }

// A ToolCall is a call the model wrote: the function's name and its arguments (a JSON object).
type ToolCall struct {
	Name      string
	Arguments json.RawMessage
}

// ParseToolCalls splits an answer into its text and the tool calls it wrote in syntax s (each
// call's name, and its arguments: a JSON object). The text is what comes before the first call,
// without the blank lines that separate it, and then what follows the calls that is not one (a
// call that is not such JSON, an answer cut short, say). An answer whose first call cannot be
// read has no calls: all of it is text. White space in the syntax's markers matches any white
// space, or none ("[TOOL_CALLS] [" reads "[TOOL_CALLS][" too). A call that is the whole message
// (Open empty) is read only when it is: a message that holds more is text.
//
// ParseToolCalls does not know the tools: a client should read an answer with the ToolFormat
// it was generated with (ToolFormat.Parse), which also checks each call's name and arguments.
func ParseToolCalls(answer string, s ToolSyntax) (text string, calls []ToolCall) {
	return s.parse(answer, nil)
}

// Parse splits an answer into its text and tool calls as ParseToolCalls does, reading as a
// call only one of the format's tools whose arguments its schema holds, as the constraint
// writes them (the properties in the schema's order; white space aside): a call that is not
// is not read, and stays text as an unreadable one does. A call the constraint wrote always
// reads; one the model wrote unconstrained (a format the answer was not generated with, a
// response_format in its place) is never returned when it breaks the tools.
func (f *ToolFormat) Parse(answer string) (text string, calls []ToolCall) {
	return f.syntax.parse(answer, f.holds)
}

// holds reports whether call names one of the format's tools and its arguments are a document
// of that tool's arguments' format.
func (f *ToolFormat) holds(call ToolCall) bool {
	i := slices.Index(f.names, call.Name)
	if i < 0 {
		return false
	}
	var args bytes.Buffer
	if json.Compact(&args, call.Arguments) != nil {
		return false
	}
	return f.args[i].Accepts(args.Bytes())
}

// parse is ParseToolCalls, reading as calls only those valid accepts (all, when nil).
func (s ToolSyntax) parse(answer string, valid func(ToolCall) bool) (text string, calls []ToolCall) {
	if valid == nil {
		valid = func(ToolCall) bool { return true }
	}
	if s.Open == "" {
		if s.Key == "" {
			return answer, nil
		}
		call, n, ok := s.callObject(strings.TrimLeftFunc(answer, unicode.IsSpace), valid)
		if !ok || strings.TrimSpace(strings.TrimLeftFunc(answer, unicode.IsSpace)[n:]) != "" {
			return answer, nil
		}
		return "", []ToolCall{call}
	}
	first := indexLoose(answer, s.Open)
	if first < 0 {
		return answer, nil
	}
	text = strings.TrimRight(answer[:first], " \n")
	rest := answer[first:]
	if s.List {
		calls, rest = s.list(rest, valid)
	} else {
		for {
			call, after, ok := s.wrapped(rest, valid)
			if !ok {
				break
			}
			calls, rest = append(calls, call), after
			if strings.TrimSpace(rest) == "" {
				break
			}
		}
	}
	if len(calls) == 0 {
		return answer, nil
	}
	// What follows the calls and is not one stays text, after what came before them.
	if rest = strings.TrimSpace(rest); rest != "" {
		text = strings.TrimLeft(text+"\n\n"+rest, "\n")
	}
	return text, calls
}

// list reads a list of calls at the start of s: the calls and what follows the list. A list
// that is not whole has no calls.
func (s ToolSyntax) list(in string, valid func(ToolCall) bool) ([]ToolCall, string) {
	rest, ok := cutLoose(in, s.Open)
	if !ok {
		return nil, in
	}
	var calls []ToolCall
	for {
		call, n, ok := s.callObject(strings.TrimLeftFunc(rest, unicode.IsSpace), valid)
		if !ok {
			return nil, in
		}
		calls = append(calls, call)
		rest = strings.TrimLeftFunc(rest, unicode.IsSpace)[n:]
		if after, ok := cutLoose(rest, s.Sep); ok && strings.TrimSpace(s.Sep) != "" {
			rest = after
			continue
		}
		if after, ok := cutLoose(rest, s.Close); ok {
			return calls, after
		}
		return nil, in
	}
}

// wrapped reads one wrapped call at the start of in (after white space): the call and what
// follows it.
func (s ToolSyntax) wrapped(in string, valid func(ToolCall) bool) (ToolCall, string, bool) {
	rest, ok := cutLoose(in, s.Open)
	if !ok {
		return ToolCall{}, in, false
	}
	var call ToolCall
	if s.Key != "" {
		var n int
		if call, n, ok = s.callObject(strings.TrimLeftFunc(rest, unicode.IsSpace), valid); !ok {
			return ToolCall{}, in, false
		}
		rest = strings.TrimLeftFunc(rest, unicode.IsSpace)[n:]
	} else {
		// The name, up to the id's marker or the arguments'; an id, up to the arguments'.
		end := strings.Index(rest, strings.TrimSpace(s.ArgsMarker))
		if end < 0 {
			return ToolCall{}, in, false
		}
		name := rest[:end]
		if i := strings.Index(name, strings.TrimSpace(s.IDMarker)); s.IDMarker != "" && i >= 0 {
			name = name[:i]
		}
		name = strings.TrimSpace(name)
		if name == "" || strings.ContainsAny(name, " \n\t{}[]\"") {
			return ToolCall{}, in, false
		}
		rest = strings.TrimLeftFunc(rest[end+len(strings.TrimSpace(s.ArgsMarker)):], unicode.IsSpace)
		obj, n := firstObject(rest)
		if obj == nil {
			return ToolCall{}, in, false
		}
		call = ToolCall{Name: name, Arguments: json.RawMessage(rest[:n])}
		if !valid(call) {
			return ToolCall{}, in, false
		}
		rest = rest[n:]
	}
	if rest, ok = cutLoose(rest, s.Close); !ok {
		return ToolCall{}, in, false
	}
	return call, rest, true
}

// callObject reads the call object s begins with: a string "name" and an object under the
// syntax's key, which valid accepts; and its length.
func (s ToolSyntax) callObject(in string, valid func(ToolCall) bool) (ToolCall, int, bool) {
	obj, n := firstObject(in)
	var name string
	if obj == nil || json.Unmarshal(obj["name"], &name) != nil || !isObject(obj[s.Key]) {
		return ToolCall{}, 0, false
	}
	call := ToolCall{Name: name, Arguments: obj[s.Key]}
	if !valid(call) {
		return ToolCall{}, 0, false
	}
	return call, n, true
}

// cutLoose cuts marker from the start of s (after white space) and returns what follows. White
// space in the marker matches any white space in s, or none, and so may white space before a
// bracket that opens JSON ('[', '{': "[TOOL_CALLS] [" reads as "[TOOL_CALLS]["); the marker's
// other characters must be written as they are, so that a call is read only where the answer
// wrote the syntax's trigger (ToolSyntax.Trigger), which is where the constraint holds it.
func cutLoose(s, marker string) (string, bool) {
	s = strings.TrimLeftFunc(s, unicode.IsSpace)
	for _, r := range marker {
		if unicode.IsSpace(r) || r == '[' || r == '{' {
			s = strings.TrimLeftFunc(s, unicode.IsSpace)
			if unicode.IsSpace(r) {
				continue
			}
		}
		if !strings.HasPrefix(s, string(r)) {
			return "", false
		}
		s = s[len(string(r)):]
	}
	return s, true
}

// indexLoose returns where in s marker first begins as cutLoose reads it, or −1.
func indexLoose(s, marker string) int {
	lead := strings.TrimLeftFunc(marker, unicode.IsSpace)
	if lead == "" {
		return -1
	}
	c := lead[:1]
	for at := 0; ; {
		i := strings.Index(s[at:], c)
		if i < 0 {
			return -1
		}
		if _, ok := cutLoose(s[at+i:], lead); ok {
			return at + i
		}
		at += i + 1
	}
}

// firstWord is marker's first run of non-space text: what begins a call (or a list of them)
// in an answer.
func firstWord(marker string) string {
	if f := strings.Fields(marker); len(f) > 0 {
		return f[0]
	}
	return ""
}

// isObject reports whether raw is a JSON object.
func isObject(raw json.RawMessage) bool {
	var m map[string]json.RawMessage
	return json.Unmarshal(raw, &m) == nil && m != nil
}
