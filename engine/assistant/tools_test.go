package assistant

import (
	"testing"
)

// TestParseToolCalls reads calls in the Hermes syntax: the text before them, each call's name
// and arguments; what is not a call stays text.
func TestParseToolCalls(t *testing.T) {
	for _, c := range []struct {
		answer, text string
		calls        []string // name and compact arguments
	}{
		{"Just text.", "Just text.", nil},
		{"<tool_call>\n{\"name\": \"f\", \"arguments\": {\"a\": 1}}\n</tool_call>", "", []string{`f {"a": 1}`}},
		{"Let me check.\n\n<tool_call>\n{\"name\": \"f\", \"arguments\": {}}\n</tool_call>\n<tool_call>\n{\"name\": \"g\", \"arguments\": {\"x\": [1]}}\n</tool_call>",
			"Let me check.", []string{"f {}", `g {"x": [1]}`}},
		{"<tool_call>\n{\"name\": \"f\", \"arguments\": {\"a\": 1}", "<tool_call>\n{\"name\": \"f\", \"arguments\": {\"a\": 1}", nil},
		{"<tool_call>\n{\"name\": \"f\", \"arguments\": [1]}\n</tool_call>", "<tool_call>\n{\"name\": \"f\", \"arguments\": [1]}\n</tool_call>", nil},
		{"<tool_call>\n{\"arguments\": {}}\n</tool_call>", "<tool_call>\n{\"arguments\": {}}\n</tool_call>", nil},
		{"<tool_call>\n{\"name\": \"f\", \"arguments\": {}}\n</tool_call> and then words", "and then words", []string{"f {}"}},
		{"A\n<tool_call>\n{\"name\": \"f\", \"arguments\": {}}\n</tool_call>\n<tool_call>\n{bad}\n</tool_call>", "A\n\n<tool_call>\n{bad}\n</tool_call>", []string{"f {}"}},
	} {
		text, calls := ParseToolCalls(c.answer, hermes)
		var got []string
		for _, call := range calls {
			got = append(got, call.Name+" "+string(call.Arguments))
		}
		if text != c.text || len(got) != len(c.calls) {
			t.Errorf("%q: text %q, calls %q; want %q, %q", c.answer, text, got, c.text, c.calls)
			continue
		}
		for i := range got {
			if got[i] != c.calls[i] {
				t.Errorf("%q: call %d %q, want %q", c.answer, i, got[i], c.calls[i])
			}
		}
	}
}
