package serve

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/trochilus-llm/trochilus/gguf"
	"github.com/trochilus-llm/trochilus/internal/modelgen"
	"github.com/trochilus-llm/trochilus/internal/modelgen/modelgentest"
)

// newQwen3Fixture is a server on a tiny Qwen3-MoE model with Qwen3's tokenizer and chat
// template, whose tools are written in <tool_call> blocks.
func newQwen3Fixture(t *testing.T) *fixture {
	// Qwen3's tool prompt alone is about 230 tokens.
	return modelFixture(t, modelgentest.TinyQwen3Model(t, modelgen.Uniform(gguf.TypeQ8_0)), "qwen3-tiny", 1024)
}

const weatherTool = `[{"type":"function","function":{"name":"get_weather","description":"The weather in a city.",
	"parameters":{"type":"object","properties":{"city":{"type":"string","maxLength":12},"unit":{"enum":["C","F"]}},
	"required":["city","unit"],"additionalProperties":false}}},
	{"type":"function","function":{"name":"get_time","parameters":{"type":"object","properties":{"zone":{"type":"string","maxLength":5}},"required":["zone"]}}}]`

type toolCallJSON struct {
	Index    int
	ID       string
	Type     string
	Function struct{ Name, Arguments string }
}

// forcedCall asks for a chat completion of msgs (the request's "messages" and settings) with
// weatherTool and tool_choice choice, and checks that the answer is one call and nothing
// else, of the function a named choice names; it returns the call and the prompt's tokens.
func forcedCall(t *testing.T, f *fixture, msgs, choice string) (toolCallJSON, int) {
	t.Helper()
	resp, body := f.post(t, "/v1/chat/completions", `{`+msgs+`,"tools":`+weatherTool+`,"tool_choice":`+choice+`}`)
	var got struct {
		Choices []struct {
			Message struct {
				Content   *string
				ToolCalls []toolCallJSON `json:"tool_calls"`
			}
			FinishReason string `json:"finish_reason"`
		}
		Usage usage
	}
	if err := json.Unmarshal(body, &got); err != nil || resp.StatusCode != 200 || len(got.Choices) != 1 {
		t.Fatalf("tool_choice %s: %d %s", choice, resp.StatusCode, body)
	}
	c := got.Choices[0]
	if c.FinishReason != "tool_calls" || c.Message.Content != nil || len(c.Message.ToolCalls) != 1 {
		t.Fatalf("tool_choice %s: %s", choice, body)
	}
	call := c.Message.ToolCalls[0]
	var named struct{ Function struct{ Name string } }
	if json.Unmarshal([]byte(choice), &named) == nil && named.Function.Name != "" && call.Function.Name != named.Function.Name {
		t.Fatalf("tool_choice %s called %s", choice, call.Function.Name)
	}
	return call, got.Usage.PromptTokens
}

// streamedCall asks for forcedCall's request as server-sent events and checks that they are one
// tool_calls delta, no content and the finish; it returns the call.
func streamedCall(t *testing.T, f *fixture, msgs, choice string) toolCallJSON {
	t.Helper()
	_, body := f.post(t, "/v1/chat/completions", `{`+msgs+`,"stream":true,"tools":`+weatherTool+`,"tool_choice":`+choice+`}`)
	data, done := readEvents(t, strings.NewReader(string(body)))
	var streamed []toolCallJSON
	var content strings.Builder
	finish := ""
	for _, d := range data {
		var chunk struct {
			Choices []struct {
				Delta struct {
					Content   *string
					ToolCalls []toolCallJSON `json:"tool_calls"`
				}
				FinishReason *string `json:"finish_reason"`
			}
		}
		if err := json.Unmarshal([]byte(d), &chunk); err != nil {
			t.Fatal(err)
		}
		for _, ch := range chunk.Choices {
			streamed = append(streamed, ch.Delta.ToolCalls...)
			if ch.Delta.Content != nil {
				content.WriteString(*ch.Delta.Content)
			}
			if ch.FinishReason != nil {
				finish = *ch.FinishReason
			}
		}
	}
	if !done || finish != "tool_calls" || content.Len() != 0 || len(streamed) != 1 {
		t.Fatalf("tool_choice %s streamed %+v (content %q, finish %q), want one call", choice, streamed, content.String(), finish)
	}
	return streamed[0]
}

// TestForcedToolCalls: tool_choice "required" and a named function make the answer one call
// of a tool the request gives, its arguments that tool's schema; streamed, the same call comes
// as one tool_calls delta; the call sent back as the assistant's turn, with the tool's result,
// renders (its arguments the object the model wrote).
func TestForcedToolCalls(t *testing.T) {
	f := newQwen3Fixture(t)
	msgs := `"messages":[{"role":"user","content":"Weather in Paris?"}],"max_tokens":400,"temperature":0`
	for _, choice := range []string{`"required"`, `{"type":"function","function":{"name":"get_time"}}`} {
		call, promptTokens := forcedCall(t, f, msgs, choice)
		var args map[string]any
		if err := json.Unmarshal([]byte(call.Function.Arguments), &args); err != nil || call.Type != "function" ||
			!strings.HasPrefix(call.ID, "call_") {
			t.Fatalf("tool_choice %s: call %+v: %v", choice, call, err)
		}
		switch call.Function.Name {
		case "get_weather":
			if _, ok := args["city"].(string); !ok || len(args) != 2 || args["unit"] != "C" && args["unit"] != "F" {
				t.Fatalf("get_weather's arguments %s", call.Function.Arguments)
			}
		case "get_time":
			if _, ok := args["zone"].(string); !ok || len(args) != 1 {
				t.Fatalf("get_time's arguments %s", call.Function.Arguments)
			}
		default:
			t.Fatalf("called %q", call.Function.Name)
		}

		// Streamed: the same call, as one delta, then the finish.
		if streamed := streamedCall(t, f, msgs, choice); streamed.Function != call.Function {
			t.Fatalf("streamed %+v, want %+v", streamed, call)
		}

		// The round trip: the call and its result sent back render as the template writes
		// them, arguments as a string or as the object alike.
		prompt := func(args string) int {
			body := `{"max_tokens":1,"tools":` + weatherTool + `,"messages":[{"role":"user","content":"Weather in Paris?"},
				{"role":"assistant","content":null,"tool_calls":[{"id":"` + call.ID + `","type":"function","function":{"name":"` +
				call.Function.Name + `","arguments":` + args + `}}]},{"role":"tool","tool_call_id":"` + call.ID + `","content":"sunny"}]}`
			resp, b := f.post(t, "/v1/chat/completions", body)
			var r struct{ Usage usage }
			if json.Unmarshal(b, &r) != nil || resp.StatusCode != 200 {
				t.Fatalf("round trip: %d %s", resp.StatusCode, b)
			}
			return r.Usage.PromptTokens
		}
		quoted, _ := json.Marshal(call.Function.Arguments)
		if a, b := prompt(string(quoted)), prompt(call.Function.Arguments); a != b || a <= promptTokens {
			t.Fatalf("round trip prompts: %d tokens with arguments as a string, %d as an object (the first request's %d)", a, b, promptTokens)
		}
	}
}

// TestToolErrors: tools a request cannot have are a 400 naming the field.
func TestToolErrors(t *testing.T) {
	f := newFixture(t) // OLMoE's template does not render tools
	resp, body := f.post(t, "/v1/chat/completions", `{`+hi+`,"tools":`+weatherTool+`}`)
	wantError(t, "tools on OLMoE", resp, body, http.StatusBadRequest, "tools", "unsupported_parameter", "does not render tools")
	q := newQwen3Fixture(t)
	for _, c := range []struct{ extra, param, code, says string }{
		{`"tools":[{"type":"function"}]`, "tools[0].function", "", "tools[0].function: want an object"},
		{`"tools":[{"type":"code_interpreter"}]`, "tools", "", `only "function" tools are supported`},
		{`"tools":[{"type":"function","function":{"name":"a b"}}]`, "tools", "", `name "a b": want a name of the form ^[a-zA-Z0-9_-]{1,64}$`},
		{`"tools":[{"type":"function","function":{"name":"f","parameters":{"type":"string","pattern":"x"}}}],"tool_choice":"required"`, "tools", "unsupported_parameter", `keyword "pattern"`},
		// Chosen by the model or forced, a call is held to the tools: a schema the constraint
		// cannot hold is refused either way.
		{`"tools":[{"type":"function","function":{"name":"f","parameters":{"type":"string","pattern":"x"}}}]`, "tools", "unsupported_parameter", `keyword "pattern"`},
		{`"tools":[{"type":"function","function":{"name":"f","parameters":[]}}]`, "tools", "", "parameters: want a JSON Schema object"},
		{`"tool_choice":"required"`, "tool_choice", "", "there are no tools"},
		{`"tools":` + weatherTool + `,"tool_choice":{"type":"function","function":{"name":"nope"}}`, "tool_choice", "", `"nope", which is not among the tools`},
		{`"tools":` + weatherTool + `,"tool_choice":"sometimes"`, "tool_choice", "", `tool_choice "sometimes"`},
		{`"tools":` + weatherTool + `,"tool_choice":"required","response_format":{"type":"json_object"}`, "response_format", "", "forced tool call"},
	} {
		resp, body := q.post(t, "/v1/chat/completions", `{`+hi+`,`+c.extra+`}`)
		wantError(t, c.extra, resp, body, http.StatusBadRequest, c.param, c.code, c.says)
	}
	resp, body = q.post(t, "/v1/chat/completions", `{"tools":`+weatherTool+`,"messages":[{"role":"assistant","content":null,"tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":"[1]"}}]}]}`)
	wantError(t, "list arguments", resp, body, http.StatusBadRequest, "messages", "", `arguments "[1]": want a JSON object`)
}

// TestHoldBack: a streamed answer passes on its text but for what may begin a call, and the
// blanks before it; what it kept comes whole at the end.
func TestHoldBack(t *testing.T) {
	for _, c := range []struct {
		pieces      []string
		shown, kept string
	}{
		{[]string{"Hello", " world"}, "Hello world", ""},
		{[]string{"Hi <", "tool"}, "Hi", " <tool"},
		{[]string{"Hi\n\n", "<tool_call>\n{", "}"}, "Hi", "\n\n<tool_call>\n{}"},
		{[]string{"a <b> c", "\n"}, "a <b> c", "\n"},
		{[]string{"<tool_call>x"}, "", "<tool_call>x"},
		{[]string{"x <tool_cal", "l_y"}, "x <tool_call_y", ""},
	} {
		var shown strings.Builder
		h := &holdBack{marker: "<tool_call>", out: func(s string) { shown.WriteString(s) }}
		for _, p := range c.pieces {
			h.write(p)
		}
		if kept := h.rest(); shown.String() != c.shown || kept != c.kept {
			t.Errorf("%q: shown %q kept %q, want %q and %q", c.pieces, shown.String(), kept, c.shown, c.kept)
		}
	}
}

// TestOllamaToolRoundTrip: Ollama's shape of a call sent back (arguments an object, no id) and
// the tool's result render as OpenAI's do: after the OpenAI request, the same conversation in
// Ollama's shape reuses the whole prompt but its last token (the prompt cache keeps the common
// prefix), so the two renderings are the same.
func TestOllamaToolRoundTrip(t *testing.T) {
	f := newQwen3Fixture(t)
	openai := `{"max_tokens":1,"tools":` + weatherTool + `,"messages":[{"role":"user","content":"Weather in Paris?"},
		{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"get_weather","arguments":"{\"city\": \"Paris\", \"unit\": \"C\"}"}}]},
		{"role":"tool","tool_call_id":"call_1","content":"sunny"}]}`
	resp, body := f.post(t, "/v1/chat/completions", openai)
	var o struct{ Usage usage }
	if json.Unmarshal(body, &o) != nil || resp.StatusCode != 200 {
		t.Fatalf("openai round trip: %d %s", resp.StatusCode, body)
	}
	ollama := `{"stream":false,"options":{"num_predict":1},"tools":` + weatherTool + `,"messages":[{"role":"user","content":"Weather in Paris?"},
		{"role":"assistant","content":"","tool_calls":[{"function":{"name":"get_weather","arguments":{"city":"Paris","unit":"C"}}}]},
		{"role":"tool","tool_name":"get_weather","content":"sunny"}]}`
	resp, body = f.post(t, "/api/chat", ollama)
	var l struct {
		PromptEvalCount int `json:"prompt_eval_count"`
	}
	if json.Unmarshal(body, &l) != nil || resp.StatusCode != 200 || l.PromptEvalCount != 1 {
		t.Fatalf("ollama round trip after openai's (%d prompt tokens): %d %s; want 1 token evaluated", o.Usage.PromptTokens, resp.StatusCode, body)
	}
}

// responsesWeather is weatherTool in the Responses API's shape.
const responsesWeather = `[{"type":"function","name":"get_weather","description":"The weather in a city.",
	"parameters":{"type":"object","properties":{"city":{"type":"string","maxLength":12},"unit":{"enum":["C","F"]}},
	"required":["city","unit"],"additionalProperties":false}},
	{"type":"function","name":"get_time","parameters":{"type":"object","properties":{"zone":{"type":"string","maxLength":5}},"required":["zone"]}}]`

// TestResponsesTools: on /v1/responses a forced call is a function_call output item (whole and
// streamed, the same call), and a conversation with function_call and function_call_output
// items renders as the same conversation on chat completions does.
func TestResponsesTools(t *testing.T) {
	f := newQwen3Fixture(t)
	body := `{"input":"Weather in Paris?","max_output_tokens":400,"temperature":0,"tools":` + responsesWeather +
		`,"tool_choice":{"type":"function","name":"get_time"}`
	resp, b := f.post(t, "/v1/responses", body+`}`)
	var r struct {
		Status string
		Output []struct {
			Type, ID, Name, Arguments, Status string
			CallID                            string `json:"call_id"`
		}
		ToolChoice json.RawMessage `json:"tool_choice"`
	}
	if err := json.Unmarshal(b, &r); err != nil || resp.StatusCode != 200 || len(r.Output) != 1 || r.Status != "completed" {
		t.Fatalf("forced call: %d %s", resp.StatusCode, b)
	}
	call := r.Output[0]
	var args map[string]any
	if call.Type != "function_call" || call.Name != "get_time" || !strings.HasPrefix(call.CallID, "call_") ||
		!strings.HasPrefix(call.ID, "fc_") || call.Status != "completed" || json.Unmarshal([]byte(call.Arguments), &args) != nil {
		t.Fatalf("forced call item %+v", call)
	}
	if _, ok := args["zone"].(string); !ok {
		t.Fatalf("get_time's arguments %s", call.Arguments)
	}
	// Streamed: the item added, its arguments, the item done; the same call.
	resp, b = f.post(t, "/v1/responses", body+`,"stream":true}`)
	var types []string
	var streamedArgs string
	for _, line := range strings.Split(string(b), "\n") {
		d, ok := strings.CutPrefix(line, "data: ")
		if !ok {
			continue
		}
		var ev struct {
			Type      string
			Arguments string
			Item      struct{ Type, Name, Arguments string }
		}
		json.Unmarshal([]byte(d), &ev)
		types = append(types, ev.Type)
		if ev.Type == "response.function_call_arguments.done" {
			streamedArgs = ev.Arguments
		}
	}
	want := []string{"response.created", "response.in_progress", "response.output_item.added", "response.function_call_arguments.delta",
		"response.function_call_arguments.done", "response.output_item.done", "response.completed"}
	if resp.StatusCode != 200 || strings.Join(types, " ") != strings.Join(want, " ") || streamedArgs != call.Arguments {
		t.Fatalf("streamed events %v (arguments %s), want %v (%s)", types, streamedArgs, want, call.Arguments)
	}
	// The round trip renders as on chat completions: after the chat request, the same
	// conversation as Responses items reuses the whole prompt but its last token.
	chatBody := `{"max_tokens":1,"tools":` + weatherTool + `,"messages":[{"role":"user","content":"Weather in Paris?"},
		{"role":"assistant","content":null,"tool_calls":[{"id":"call_9","type":"function","function":{"name":"get_weather","arguments":"{\"city\": \"Paris\", \"unit\": \"C\"}"}}]},
		{"role":"tool","tool_call_id":"call_9","content":"sunny"}]}`
	if resp, b := f.post(t, "/v1/chat/completions", chatBody); resp.StatusCode != 200 {
		t.Fatalf("chat round trip: %d %s", resp.StatusCode, b)
	}
	resp, b = f.post(t, "/v1/responses", `{"max_output_tokens":1,"tools":`+responsesWeather+`,"input":[{"role":"user","content":"Weather in Paris?"},
		{"type":"function_call","call_id":"call_9","name":"get_weather","arguments":"{\"city\": \"Paris\", \"unit\": \"C\"}"},
		{"type":"function_call_output","call_id":"call_9","output":[{"type":"input_text","text":"sunny"}]}]}`)
	var u struct {
		Usage struct {
			InputTokens        int `json:"input_tokens"`
			InputTokensDetails struct {
				CachedTokens int `json:"cached_tokens"`
			} `json:"input_tokens_details"`
		}
	}
	if json.Unmarshal(b, &u) != nil || resp.StatusCode != 200 || u.Usage.InputTokensDetails.CachedTokens != u.Usage.InputTokens-1 {
		t.Fatalf("responses round trip after chat's: %d %s; want all but the last input token cached", resp.StatusCode, b)
	}
	resp, b = f.post(t, "/v1/responses", `{"input":"hi","tools":`+responsesWeather+`,"tool_choice":{"type":"function"}}`)
	wantError(t, "a function tool_choice without a name", resp, b, http.StatusBadRequest, "tool_choice", "", `{"type": "function", "name": …}`)
}

// TestToolsLetAnswersEnd: with tools (the model choosing) an answer that writes no call ends as
// any does; an end forced by logit_bias is a 200 with finish_reason "stop".
func TestToolsLetAnswersEnd(t *testing.T) {
	f := newQwen3Fixture(t)
	eos, ok := f.want.Model().EOS()
	if !ok {
		t.Fatal("the model has no end-of-sequence token")
	}
	body := `{"messages":[{"role":"user","content":"hi"}],"max_tokens":5,"temperature":0,"logit_bias":{"` + fmt.Sprint(eos) + `":100},"tools":` + weatherTool
	resp, b := f.post(t, "/v1/chat/completions", body+`}`)
	var got chatResponse
	if err := json.Unmarshal(b, &got); err != nil || resp.StatusCode != 200 || *got.Choices[0].FinishReason != "stop" {
		t.Fatalf("an answer ended with tools: %d %s", resp.StatusCode, b)
	}
	resp, b = f.post(t, "/v1/chat/completions", body+`,"stream":true}`)
	if data, done := readEvents(t, strings.NewReader(string(b))); resp.StatusCode != 200 || !done || strings.Contains(strings.Join(data, ""), `"error"`) {
		t.Fatalf("streamed: %d %s", resp.StatusCode, b)
	}
	resp, b = f.post(t, "/api/chat", `{"stream":false,"messages":[{"role":"user","content":"hi"}],"tools":[{"type":"function","function":{"name":"mcp.fs:read","parameters":{"type":"object"}}}],"options":{"num_predict":2}}`)
	if resp.StatusCode != 200 {
		t.Fatalf("ollama with an MCP tool name: %d %s", resp.StatusCode, b)
	}
}
