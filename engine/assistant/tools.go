package assistant

import (
	"encoding/json"
	"strings"

	"github.com/trochilus-llm/trochilus/tokenizer/chat"
)

// ToolSyntax is how a model's chat template writes a tool call: the texts around the call's
// JSON object {"name": …, "arguments": …}.
type ToolSyntax struct {
	Open, Close string
}

// hermes is the syntax of the Hermes family of templates (Qwen2.5, Qwen3, Hermes 2 and 3):
// <tool_call>, a newline, the JSON object, a newline, </tool_call>.
var hermes = ToolSyntax{Open: "<tool_call>\n", Close: "\n</tool_call>"}

// probeTool is a tool with a name no template writes by itself, to see whether it renders tools.
const probeTool = `[{"type":"function","function":{"name":"trochilus_probe_tool","description":"","parameters":{"type":"object","properties":{}}}}]`

// toolSyntax finds how the template writes tool calls: it must render the tools it is given
// (a template that ignores them would let the model call tools it was never shown) and write
// calls in a syntax this package reads.
func toolSyntax(tmpl *chat.Template, src string, special chat.SpecialTokens) (ToolSyntax, bool) {
	if tmpl == nil || !strings.Contains(src, "<tool_call>") {
		return ToolSyntax{}, false
	}
	out, err := tmpl.Render([]chat.Message{{Role: "user", Content: "hi"}},
		chat.Options{AddGenerationPrompt: true, SpecialTokens: special, Tools: json.RawMessage(probeTool)})
	if err != nil || !strings.Contains(out, "trochilus_probe_tool") {
		return ToolSyntax{}, false
	}
	return hermes, true
}

// ToolSyntax returns how the model writes a tool call, and false when its template does not
// render tools or writes calls in a syntax this package cannot read.
func (c *Chat) ToolSyntax() (ToolSyntax, bool) { return c.tools, c.tools != ToolSyntax{} }

// A ToolCall is a call the model wrote: the function's name and its arguments (a JSON object).
type ToolCall struct {
	Name      string
	Arguments json.RawMessage
}

// ParseToolCalls splits an answer into its text and the tool calls it wrote in syntax s: each
// call's JSON between s.Open and s.Close, an object with a string "name" and an object
// "arguments". The text is what comes before the first call, without the blank lines that
// separate it, and then what follows the calls that is not one (a call that is not such JSON,
// an answer cut short, say). An answer whose first call cannot be read has no calls: all of it
// is text.
func ParseToolCalls(answer string, s ToolSyntax) (text string, calls []ToolCall) {
	open := strings.TrimRight(s.Open, "\n")
	close := strings.TrimLeft(s.Close, "\n")
	rest := answer
	first := strings.Index(answer, open)
	if first < 0 {
		return answer, nil
	}
	text = strings.TrimRight(answer[:first], " \n")
	rest = answer[first:]
	for {
		rest = strings.TrimLeft(rest, " \n")
		if rest == "" {
			return text, calls
		}
		body, ok := strings.CutPrefix(rest, open)
		end := strings.Index(body, close)
		if !ok || end < 0 {
			break
		}
		var call struct {
			Name      *string         `json:"name"`
			Arguments json.RawMessage `json:"arguments"`
		}
		raw := strings.TrimSpace(body[:end])
		if json.Unmarshal([]byte(raw), &call) != nil || call.Name == nil || !isObject(call.Arguments) {
			break
		}
		calls = append(calls, ToolCall{Name: *call.Name, Arguments: call.Arguments})
		rest = body[end+len(close):]
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

// isObject reports whether raw is a JSON object.
func isObject(raw json.RawMessage) bool {
	var m map[string]json.RawMessage
	return json.Unmarshal(raw, &m) == nil && m != nil
}
