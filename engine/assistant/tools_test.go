package assistant

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/trochilus-llm/trochilus/tokenizer/chat"
)

// llama and mistral are the syntaxes the real templates render (TestToolSyntaxOfTemplates).
var (
	llama   = ToolSyntax{Key: "parameters", Single: true}
	mistral = ToolSyntax{Open: "[TOOL_CALLS][", Close: "]", List: true, Sep: ", ", Key: "arguments", IDLen: 9}
	// mistralArgs is the layout of Mistral's newer templates: [TOOL_CALLS]name[ARGS]{…} a call.
	mistralArgs = ToolSyntax{Open: "[TOOL_CALLS]", Key: "", ArgsMarker: "[ARGS]"}
)

// mistralArgsTemplate renders calls as Mistral's v11 templates (Small 3.2, Magistral, Devstral)
// do: [TOOL_CALLS]name[CALL_ID]id[ARGS]{…} per call. Not a published template (no real one is in
// testdata): the layout alone, to show the probe reads it.
const mistralArgsTemplate = `{{- bos_token }}
{%- for message in messages %}
    {%- if message['role'] == 'user' %}
        {%- if tools is not none and tools is defined %}
            {{- '[AVAILABLE_TOOLS]' + tools|tojson + '[/AVAILABLE_TOOLS]' }}
        {%- endif %}
        {{- '[INST]' + message['content'] + '[/INST]' }}
    {%- elif message['role'] == 'assistant' %}
        {%- if message.tool_calls is defined and message.tool_calls %}
            {%- for tool_call in message.tool_calls %}
                {%- if tool_call.id is not defined or tool_call.id|length != 9 %}
                    {{- raise_exception("Tool call IDs should be alphanumeric strings with length 9!") }}
                {%- endif %}
                {{- '[TOOL_CALLS]' + tool_call.function.name + '[CALL_ID]' + tool_call.id + '[ARGS]' + tool_call.function.arguments|tojson }}
            {%- endfor %}
            {{- eos_token }}
        {%- else %}
            {{- message['content'] + eos_token }}
        {%- endif %}
    {%- elif message['role'] == 'tool' %}
        {{- '[TOOL_RESULTS]' + message.tool_call_id + '[TOOL_CONTENT]' + message.content|string + '[/TOOL_RESULTS]' }}
    {%- endif %}
{%- endfor %}`

// TestToolSyntaxOfTemplates: every published template in testdata/chat-templates is probed;
// those that write calls in a syntax ParseToolCalls reads get it (Hermes, Qwen, Llama 3.x,
// Mistral Nemo and Small 3.1), the others none. The syntax comes from what the template
// renders, whatever the model's name.
func TestToolSyntaxOfTemplates(t *testing.T) {
	llamaEOM := llama
	llamaEOM.End = "<|eom_id|>"
	mistralSpace := mistral
	mistralSpace.Open = "[TOOL_CALLS] ["
	want := map[string]ToolSyntax{
		"NousResearch-Hermes-2-Pro-Llama-3-8B-tool_use.jinja": hermes,
		"NousResearch-Hermes-3-Llama-3.1-8B-tool_use.jinja":   hermes,
		"Qwen-Qwen2.5-7B-Instruct.jinja":                      hermes,
		"meta-llama-Llama-3.1-8B-Instruct.jinja":              llamaEOM,
		"meta-llama-Llama-3.2-3B-Instruct.jinja":              llama,
		"meta-llama-Llama-3.3-70B-Instruct.jinja":             llamaEOM,
		"mistralai-Mistral-Nemo-Instruct-2407.jinja":          mistral,
		"mistralai-Mistral-Small-3.1-24B-Instruct-2503.jinja": mistralSpace,
	}
	files, err := filepath.Glob("../../testdata/chat-templates/*.jinja")
	if err != nil || len(files) < len(want) {
		t.Fatalf("templates: %v, %v", files, err)
	}
	special := chat.SpecialTokens{BOS: "<s>", EOS: "</s>"}
	for _, f := range files {
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		tmpl, err := chat.Parse(string(src))
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		got, ok := toolSyntax(tmpl, string(src), special)
		w, known := want[filepath.Base(f)]
		if ok != known || got != w {
			t.Errorf("%s: %#v (%v), want %#v", filepath.Base(f), got, ok, w)
		}
	}
	wantArgs := mistralArgs
	wantArgs.IDMarker, wantArgs.IDLen = "[CALL_ID]", 9
	tmpl, err := chat.Parse(mistralArgsTemplate)
	if err != nil {
		t.Fatal(err)
	}
	if got, ok := toolSyntax(tmpl, mistralArgsTemplate, special); !ok || got != wantArgs {
		t.Errorf("Mistral's [ARGS] layout: %#v (%v), want %#v", got, ok, wantArgs)
	}
}

type parseCase struct {
	answer, text string
	calls        []string // name and compact arguments
}

func checkParse(t *testing.T, s ToolSyntax, cases []parseCase) {
	t.Helper()
	for _, c := range cases {
		text, calls := ParseToolCalls(c.answer, s)
		var got []string
		for _, call := range calls {
			got = append(got, call.Name+" "+string(call.Arguments))
		}
		if text != c.text || strings.Join(got, "|") != strings.Join(c.calls, "|") {
			t.Errorf("%q: text %q, calls %q; want %q, %q", c.answer, text, got, c.text, c.calls)
		}
	}
}

// TestParseToolCalls reads calls in the Hermes syntax: the text before them, each call's name
// and arguments; what is not a call stays text.
func TestParseToolCalls(t *testing.T) {
	checkParse(t, hermes, []parseCase{
		{"Just text.", "Just text.", nil},
		{"<tool_call>\n{\"name\": \"f\", \"arguments\": {\"a\": 1}}\n</tool_call>", "", []string{`f {"a": 1}`}},
		{"Let me check.\n\n<tool_call>\n{\"name\": \"f\", \"arguments\": {}}\n</tool_call>\n<tool_call>\n{\"name\": \"g\", \"arguments\": {\"x\": [1]}}\n</tool_call>",
			"Let me check.", []string{"f {}", `g {"x": [1]}`}},
		{"<tool_call>\n{\"name\": \"f\", \"arguments\": {\"a\": 1}", "<tool_call>\n{\"name\": \"f\", \"arguments\": {\"a\": 1}", nil},
		{"<tool_call>\n{\"name\": \"f\", \"arguments\": [1]}\n</tool_call>", "<tool_call>\n{\"name\": \"f\", \"arguments\": [1]}\n</tool_call>", nil},
		{"<tool_call>\n{\"arguments\": {}}\n</tool_call>", "<tool_call>\n{\"arguments\": {}}\n</tool_call>", nil},
		{"<tool_call>\n{\"name\": \"f\", \"arguments\": {}}\n</tool_call> and then words", "and then words", []string{"f {}"}},
		{"A\n<tool_call>\n{\"name\": \"f\", \"arguments\": {}}\n</tool_call>\n<tool_call>\n{bad}\n</tool_call>", "A\n\n<tool_call>\n{bad}\n</tool_call>", []string{"f {}"}},
		{"<tool_call>", "<tool_call>", nil},
	})
}

// TestParseLlamaToolCalls: a Llama call is the whole message, {"name", "parameters"}; anything
// else (text around it, "arguments", bad or partial JSON, a list) is text.
func TestParseLlamaToolCalls(t *testing.T) {
	checkParse(t, llama, []parseCase{
		{`{"name": "get_weather", "parameters": {"city": "Paris"}}`, "", []string{`get_weather {"city": "Paris"}`}},
		{"\n {\"name\": \"f\", \"parameters\": {}} \n", "", []string{"f {}"}},
		{`{"name":"f","parameters":{"a":[1,{"b":null}]}}`, "", []string{`f {"a":[1,{"b":null}]}`}},
		{"It is sunny.", "It is sunny.", nil},
		{`{"name": "f", "arguments": {}}`, `{"name": "f", "arguments": {}}`, nil},
		{`{"name": "f", "parameters": [1]}`, `{"name": "f", "parameters": [1]}`, nil},
		{`{"name": 3, "parameters": {}}`, `{"name": 3, "parameters": {}}`, nil},
		{`{"name": "f", "parameters": {"a": 1}`, `{"name": "f", "parameters": {"a": 1}`, nil},
		{`{"name": "f", "parameters": {}} and more`, `{"name": "f", "parameters": {}} and more`, nil},
		{`Sure: {"name": "f", "parameters": {}}`, `Sure: {"name": "f", "parameters": {}}`, nil},
		{`{"name"`, `{"name"`, nil},
		{`{`, `{`, nil},
		{"", "", nil},
	})
}

// TestParseMistralToolCalls: Mistral's list of calls ([TOOL_CALLS] then a JSON list), with
// or without the space Small 3.1 writes and an id in the objects; and the newer
// [TOOL_CALLS]name[ARGS]{…} calls, with or without [CALL_ID].
func TestParseMistralToolCalls(t *testing.T) {
	checkParse(t, mistral, []parseCase{
		{`[TOOL_CALLS][{"name": "f", "arguments": {"a": 1}}]`, "", []string{`f {"a": 1}`}},
		{`[TOOL_CALLS] [{"name": "f", "arguments": {}, "id": "abcdefghi"}, {"name": "g", "arguments": {"x": "]"}}]`, "", []string{"f {}", `g {"x": "]"}`}},
		{"Checking.\n[TOOL_CALLS][{\"name\": \"f\", \"arguments\": {}}]</s>", "Checking.\n\n</s>", []string{"f {}"}},
		{`[TOOL_CALLS][{"name": "f", "arguments": {}}`, `[TOOL_CALLS][{"name": "f", "arguments": {}}`, nil},
		{`[TOOL_CALLS][{"name": "f", "arguments": {}}, {"name": "g"`, `[TOOL_CALLS][{"name": "f", "arguments": {}}, {"name": "g"`, nil},
		{`[TOOL_CALLS][{"name": "f", "parameters": {}}]`, `[TOOL_CALLS][{"name": "f", "parameters": {}}]`, nil},
		{`[TOOL_CALLS]{"name": "f", "arguments": {}}`, `[TOOL_CALLS]{"name": "f", "arguments": {}}`, nil},
		{`[TOOL_CALLS]`, `[TOOL_CALLS]`, nil},
		{`no calls`, `no calls`, nil},
	})
	withID := mistralArgs
	withID.IDMarker = "[CALL_ID]"
	for _, s := range []ToolSyntax{mistralArgs, withID} {
		checkParse(t, s, []parseCase{
			{`[TOOL_CALLS]get_weather[ARGS]{"city": "Paris"}`, "", []string{`get_weather {"city": "Paris"}`}},
			{`[TOOL_CALLS]f[ARGS]{}[TOOL_CALLS]g[ARGS]{"a": [1]}`, "", []string{"f {}", `g {"a": [1]}`}},
			{`Let me see.[TOOL_CALLS]f[ARGS]{} done`, "Let me see.\n\ndone", []string{"f {}"}},
			{`[TOOL_CALLS]f[ARGS]{"a": `, `[TOOL_CALLS]f[ARGS]{"a": `, nil},
			{`[TOOL_CALLS]f[ARGS][1]`, `[TOOL_CALLS]f[ARGS][1]`, nil},
			{`[TOOL_CALLS][ARGS]{}`, `[TOOL_CALLS][ARGS]{}`, nil},
			{`[TOOL_CALLS]f g[ARGS]{}`, `[TOOL_CALLS]f g[ARGS]{}`, nil},
			{`[TOOL_CALLS]f`, `[TOOL_CALLS]f`, nil},
		})
	}
	checkParse(t, withID, []parseCase{
		{`[TOOL_CALLS]f[CALL_ID]abcdefghi[ARGS]{"a": 1}`, "", []string{`f {"a": 1}`}},
	})
}

// TestParseToolCallsNeverPanics: every prefix of well-formed calls, in every syntax, is read
// without a panic, and a prefix that is not a whole call is all text.
func TestParseToolCallsNeverPanics(t *testing.T) {
	for _, c := range []struct {
		s      ToolSyntax
		answer string
	}{
		{hermes, "<tool_call>\n{\"name\": \"f\", \"arguments\": {\"a\": \"\\u00e9\"}}\n</tool_call>"},
		{llama, `{"name": "f", "parameters": {"a": "é"}}`},
		{mistral, `[TOOL_CALLS][{"name": "f", "arguments": {"a": 1}}, {"name": "g", "arguments": {}}]`},
		{mistralArgs, `[TOOL_CALLS]f[ARGS]{"a": {"b": []}}`},
	} {
		for i := range len(c.answer) {
			if text, calls := ParseToolCalls(c.answer[:i], c.s); len(calls) != 0 || text != c.answer[:i] {
				t.Errorf("%q: %q, %d calls", c.answer[:i], text, len(calls))
			}
		}
		if _, calls := ParseToolCalls(c.answer, c.s); len(calls) == 0 {
			t.Errorf("%q: no calls", c.answer)
		}
	}
}

// TestToolTurnsIDs: for a template that requires nine-character ids, every call and result
// gets one: kept when it is one, the last nine alphanumerics of a longer one, a hash of a short
// one (the same for its call and result), and for Ollama's (none) the call's place, the
// results taking the calls' ids in order.
func TestToolTurnsIDs(t *testing.T) {
	call := func(ids ...string) chat.Message {
		var list []string
		for _, id := range ids {
			f := `"type":"function","function":{"name":"f","arguments":{}}`
			if id != "" {
				f = `"id":"` + id + `",` + f
			}
			list = append(list, "{"+f+"}")
		}
		return chat.Message{Role: "assistant", Extra: map[string]any{"tool_calls": json.RawMessage("[" + strings.Join(list, ",") + "]")}}
	}
	result := func(id string) chat.Message {
		m := chat.Message{Role: "tool", Content: "ok"}
		if id != "" {
			m.Extra = map[string]any{"tool_call_id": id}
		}
		return m
	}
	turns := []chat.Message{{Role: "user", Content: "hi"}, call("abcdefghi", "call_0123456789abcdef", "c1"),
		result("abcdefghi"), result("call_0123456789abcdef"), result("c1"), call("", ""), result(""), result("")}
	out, err := mistral.toolTurns(turns)
	if err != nil {
		t.Fatal(err)
	}
	ids := func(m chat.Message) []string {
		var calls []struct{ ID string }
		json.Unmarshal(m.Extra["tool_calls"].(json.RawMessage), &calls)
		var got []string
		for _, c := range calls {
			got = append(got, c.ID)
		}
		return got
	}
	first, second := ids(out[1]), ids(out[5])
	if first[0] != "abcdefghi" || first[1] != "789abcdef" || len(first[2]) != 9 || len(second) != 2 || second[0] == second[1] {
		t.Fatalf("call ids %q, %q", first, second)
	}
	results := []string{first[0], first[1], first[2], second[0], second[1]}
	for i, m := range []chat.Message{out[2], out[3], out[4], out[6], out[7]} {
		if m.Extra["tool_call_id"] != results[i] {
			t.Errorf("result %d: id %v, want %s", i, m.Extra["tool_call_id"], results[i])
		}
	}
	if _, ok := turns[6].Extra["tool_call_id"]; ok || strings.Contains(string(turns[5].Extra["tool_calls"].(json.RawMessage)), `"id"`) {
		t.Fatal("the caller's turns changed")
	}
	// The order of a call's members is kept (templates print them): the id added first.
	if got := string(out[5].Extra["tool_calls"].(json.RawMessage)); !strings.HasPrefix(got, `[{"id":"`+second[0]+`","type":"function","function":{"name":"f","arguments":{}}}`) {
		t.Fatalf("calls %s", got)
	}
	again, _ := mistral.toolTurns(turns)
	if ids(again[5])[0] != second[0] {
		t.Fatal("the ids made differ between renderings")
	}
}
