package structured

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"slices"
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
	walks(t, f, r, 100, "", func(doc string) {
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
	})
	if _, err := ToolCall([]Tool{{Name: "a"}, {Name: "a"}}, "", ""); err == nil {
		t.Error("two tools of one name were accepted")
	}
	if _, err := ToolCall([]Tool{{Name: "a", Parameters: json.RawMessage(`{"type":"string","pattern":"x"}`)}}, "", ""); err == nil ||
		!strings.Contains(err.Error(), `tool "a": parameters: schema at /: keyword "pattern"`) {
		t.Errorf("a refused keyword in parameters: %v", err)
	}
}

// TestStartAfter: the text is free until the trigger, a call from it, free again after the
// call; end tokens only outside a call.
func TestStartAfter(t *testing.T) {
	f, err := ToolCall(weatherTools, "<tool_call>\n", "\n</tool_call>")
	if err != nil {
		t.Fatal(err)
	}
	tokens := [][]byte{[]byte("Hi "), []byte("<tool_call>"), []byte("\n"), []byte(`{"name": "ping", "arguments": {}}`), []byte("\n</tool_call>"),
		[]byte("x"), []byte("<tool_"), []byte("call>"), []byte("<end>"), []byte(`{"name": "nope"`)}
	v := NewVocabulary(tokens, []int32{8})
	allowed := func(c *Constraint) []int32 {
		logits := make([]float32, len(tokens))
		if err := c.Mask(logits); err != nil {
			t.Fatal(err)
		}
		var ids []int32
		for id, l := range logits {
			if !math.IsInf(float64(l), -1) {
				ids = append(ids, int32(id))
			}
		}
		return ids
	}
	c := f.StartAfter(v, "<tool_call>")
	all := []int32{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}
	steps := []struct {
		tok  int32
		want []int32 // allowed after it
	}{
		{0, all},           // free text
		{1, []int32{2}},    // the trigger: the call's newline next
		{2, []int32{3}},    // the call
		{3, []int32{2, 4}}, // its close ("\n" begins it too)
		{4, all},           // free again
		{6, all},           // half a trigger, free
		{7, []int32{2}},    // its other half: a call
	}
	for i, s := range steps {
		if err := c.Accept(s.tok); err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		if got := allowed(c); !slices.Equal(got, s.want) {
			t.Fatalf("step %d (after %q): allowed %v, want %v", i, tokens[s.tok], got, s.want)
		}
	}
	// An answer that writes no call ends as any answer does.
	c = f.StartAfter(v, "<tool_call>")
	if err := c.Accept(0); err != nil {
		t.Fatal(err)
	}
	if err := c.Accept(8); err != nil || !c.Complete() {
		t.Fatalf("ending free text: %v (complete %v)", err, c.Complete())
	}
	// Inside a call it cannot end.
	c = f.StartAfter(v, "<tool_call>")
	c.Accept(1)
	if err := c.Accept(8); err == nil {
		t.Fatal("an answer ended inside its call")
	}
}

// TestToolCallArgumentsAreObjects: a tool's parameters must describe an object (its arguments
// are read as one); none, {} or true mean any object.
func TestToolCallArgumentsAreObjects(t *testing.T) {
	for _, p := range []string{``, `null`, `{}`, `true`, `{"type":"object"}`, `{"properties":{"a":{}}}`} {
		f, err := ToolCall([]Tool{{Name: "f", Parameters: json.RawMessage(p)}}, "", "")
		if err != nil {
			t.Errorf("parameters %q: %v", p, err)
			continue
		}
		if accepts(f, `{"name":"f","arguments":[]}`) || accepts(f, `{"name":"f","arguments":1}`) || !accepts(f, `{"name":"f","arguments":{}}`) {
			t.Errorf("parameters %q: arguments not held to an object", p)
		}
	}
	for _, p := range []string{`{"type":"boolean"}`, `{"type":["object","null"]}`, `{"anyOf":[{"type":"object"},{"type":"string"}]}`, `{"enum":[1]}`} {
		if _, err := ToolCall([]Tool{{Name: "f", Parameters: json.RawMessage(p)}}, "", ""); err == nil || !strings.Contains(err.Error(), "an object") {
			t.Errorf("parameters %s: %v, want a refusal saying they must be an object", p, err)
		}
	}
}
