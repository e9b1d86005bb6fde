package serve

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/trochilus-llm/trochilus/engine/assistant"
)

// TestParallelToolCallsFalse: with parallel_tool_calls false an answer's calls are at most one,
// the first the model wrote (with it unset, every one); a request asking so is answered with
// the engine's call.
func TestParallelToolCallsFalse(t *testing.T) {
	q := newQwen3Fixture(t)
	syntax, ok := q.want.ToolSyntax()
	if !ok || syntax.Single {
		t.Fatalf("the Qwen3 fixture's syntax %+v: want one that writes several calls", syntax)
	}
	call := func(name, args string) string {
		return syntax.Open + `{"name": "` + name + `", "arguments": ` + args + `}` + syntax.Close
	}
	two := &assistant.Reply{Text: call("get_weather", `{"city": "Paris", "unit": "C"}`) + syntax.Sep + call("get_time", `{"zone": "CET"}`)}
	no := false
	for _, c := range []struct {
		parallel *bool
		want     []string
	}{{nil, []string{"get_weather", "get_time"}}, {&no, []string{"get_weather"}}} {
		plan, err := parseTools([]byte(weatherTool), nil, c.parallel, syntax, ok, functionName)
		if err != nil {
			t.Fatal(err)
		}
		_, calls := plan.calls(two)
		var names []string
		for _, c := range calls {
			names = append(names, c["function"].(map[string]any)["name"].(string))
		}
		if strings.Join(names, ",") != strings.Join(c.want, ",") {
			t.Errorf("parallel_tool_calls %v: calls %q of %q, want %q", c.parallel, names, two.Text, c.want)
		}
	}

	body := `{"messages":[{"role":"user","content":"Weather in Paris?"}],"tools":` + weatherTool +
		`,"tool_choice":"required","parallel_tool_calls":false,"max_tokens":300}`
	resp, b := q.post(t, "/v1/chat/completions", body)
	var got struct {
		Choices []struct {
			Message struct {
				ToolCalls []toolCallJSON `json:"tool_calls"`
			}
		}
	}
	_, want := chatAnswer(t, q, []byte(body))
	if err := json.Unmarshal(b, &got); err != nil || resp.StatusCode != 200 || len(got.Choices) != 1 || len(want) != 1 {
		t.Fatalf("%d %s (engine: %+v)", resp.StatusCode, b, want)
	}
	calls := got.Choices[0].Message.ToolCalls
	var args, wantArgs any
	if len(calls) != 1 || calls[0].Function.Name != want[0].Name || json.Unmarshal([]byte(calls[0].Function.Arguments), &args) != nil ||
		json.Unmarshal(want[0].Arguments, &wantArgs) != nil || !jsonEqual(args, wantArgs) {
		t.Errorf("parallel_tool_calls false: %s, want the engine's one call %s(%s)", b, want[0].Name, want[0].Arguments)
	}
}

// jsonEqual reports whether two decoded JSON values are the same.
func jsonEqual(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}

// TestFunctionsPointToTools: the deprecated functions and function_call are refused naming
// what to send instead.
func TestFunctionsPointToTools(t *testing.T) {
	f := newFixture(t)
	resp, b := f.post(t, "/v1/chat/completions", `{`+hi+`,"functions":[{"name":"f"}]}`)
	wantError(t, "functions", resp, b, 400, "functions", "unsupported_parameter", "send tools instead")
	resp, b = f.post(t, "/v1/chat/completions", `{`+hi+`,"function_call":"auto"}`)
	wantError(t, "function_call", resp, b, 400, "function_call", "unsupported_parameter", "send tools and tool_choice instead")
}
