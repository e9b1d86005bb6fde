package structured

import (
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"
)

var weatherTools = []Tool{
	{Name: "get_weather", Parameters: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"},"unit":{"enum":["C","F"]}},"required":["city","unit"],"additionalProperties":false}`)},
	{Name: "get_time", Parameters: json.RawMessage(`{"type":"object","properties":{"zone":{"type":"string","maxLength":3}},"required":["zone"],"additionalProperties":false}`)},
	{Name: "ping"},
}

// TestToolCallDocuments: a call names one of the tools and gives that tool's arguments,
// between the opening and closing texts.
func TestToolCallDocuments(t *testing.T) {
	f, err := ToolCall(weatherTools, "<tool_call>\n", "\n</tool_call>")
	if err != nil {
		t.Fatal(err)
	}
	wrap := func(s string) string { return "<tool_call>\n" + s + "\n</tool_call>" }
	for _, doc := range []string{
		`{"name": "get_weather", "arguments": {"city": "Paris", "unit": "C"}}`,
		`{"name":"get_time","arguments":{"zone":"UTC"}}`,
		`{"name": "ping", "arguments": {}}`,
		`{"name": "ping", "arguments": {"anything": [1, {"x": null}]}}`,
	} {
		if !accepts(f, wrap(doc)) {
			t.Errorf("refused %s", wrap(doc))
		}
	}
	for _, doc := range []string{
		wrap(`{"name": "get_weather", "arguments": {"zone": "UTC"}}`),
		wrap(`{"name": "get_time", "arguments": {"city": "Paris", "unit": "C"}}`),
		wrap(`{"name": "get_time", "arguments": {"zone": "Europe/Paris"}}`),
		wrap(`{"name": "other", "arguments": {}}`),
		wrap(`{"arguments": {}, "name": "ping"}`),
		wrap(`{"name": "ping"}`),
		`{"name": "ping", "arguments": {}}`,
		"<tool_call>\n" + `{"name": "ping", "arguments": {}}`,
		"<tool_call>" + `{"name": "ping", "arguments": {}}` + "\n</tool_call>",
	} {
		if accepts(f, doc) {
			t.Errorf("accepted %q", doc)
		}
	}
	// Random calls parse, and follow the schema of the tool they name.
	r := rand.New(rand.NewPCG(7, 8))
	schemas := map[string]any{}
	for _, tool := range weatherTools {
		var s any = true
		if tool.Parameters != nil {
			json.Unmarshal(tool.Parameters, &s)
		}
		schemas[tool.Name] = s
	}
	made := 0
	for range 100 {
		doc := walk(f, r)
		if doc == "" {
			continue
		}
		made++
		inner, ok := strings.CutPrefix(doc, "<tool_call>\n")
		inner, ok2 := strings.CutSuffix(inner, "\n</tool_call>")
		var call struct {
			Name      string
			Arguments any
		}
		if !ok || !ok2 || json.Unmarshal([]byte(inner), &call) != nil {
			t.Fatalf("generated %q", doc)
		}
		s := schemas[call.Name]
		if err := validate(s, s, call.Arguments); err != nil {
			t.Fatalf("generated %q: %v", doc, err)
		}
	}
	if made < 50 {
		t.Errorf("only %d of 100 walks ended", made)
	}
	if _, err := ToolCall([]Tool{{Name: "a"}, {Name: "a"}}, "", ""); err == nil {
		t.Error("two tools of one name were accepted")
	}
	if _, err := ToolCall([]Tool{{Name: "a", Parameters: json.RawMessage(`{"type":"string","pattern":"x"}`)}}, "", ""); err == nil ||
		!strings.Contains(err.Error(), `tool "a": parameters: schema at /: keyword "pattern"`) {
		t.Errorf("a refused keyword in parameters: %v", err)
	}
}
