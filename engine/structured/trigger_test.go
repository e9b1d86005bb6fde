package structured

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

// TestStartAfterMasksCrossing: in free text, a token that would complete the trigger with text
// the document cannot hold is masked (and refused by Accept), so that no trigger the answer
// writes is left free: one that completes it with the document's beginning may come, and so may
// one that writes a whole call.
func TestStartAfterMasksCrossing(t *testing.T) {
	f, err := ToolCall(weatherTools, "<tool_call>\n", "\n</tool_call>")
	if err != nil {
		t.Fatal(err)
	}
	tokens := [][]byte{[]byte("Hi"), []byte("<tool_call>{"), []byte("<tool_call>\n{\"name\": \"nope\""), []byte("<tool_call>\n{\"name\":"),
		[]byte("<tool_"), []byte("call>x"), []byte("call>\n"), []byte("<end>"),
		[]byte("<tool_call>\n{\"name\": \"ping\", \"arguments\": {}}\n</tool_call>"), []byte(" more")}
	v := NewVocabulary(tokens, []int32{7})
	masked := func(c *Constraint) []int32 {
		logits := make([]float32, len(tokens))
		if err := c.Mask(logits); err != nil {
			t.Fatal(err)
		}
		var ids []int32
		for id, l := range logits {
			if math.IsInf(float64(l), -1) {
				ids = append(ids, int32(id))
			}
		}
		return ids
	}
	c := f.StartAfter(v, "<tool_call>")
	if got := masked(c); len(got) != 2 || got[0] != 1 || got[1] != 2 {
		t.Fatalf("free text: masked %v, want [1 2]", got)
	}
	if err := c.Accept(4); err != nil { // half the trigger
		t.Fatal(err)
	}
	if got := masked(c); len(got) != 3 || got[0] != 1 || got[1] != 2 || got[2] != 5 {
		t.Fatalf("after half the trigger: masked %v, want [1 2 5]", got)
	}
	if err := f.StartAfter(v, "<tool_call>").Accept(1); err == nil {
		t.Error("Accept took a token crossing the trigger into what the call cannot hold")
	}
	// A token that is a whole call leaves the text free after it.
	c = f.StartAfter(v, "<tool_call>")
	if err := c.Accept(8); err != nil {
		t.Fatal(err)
	}
	if got := masked(c); len(got) != 2 || !c.Complete() {
		t.Fatalf("after a whole call in one token: masked %v, complete %v", got, c.Complete())
	}
	if err := c.Accept(9); err != nil {
		t.Fatal(err)
	}
}

// TestToolCallList: Mistral's list of calls is a JSON array after its marker, every call in it
// one of the tools with its schema's arguments.
func TestToolCallList(t *testing.T) {
	f, err := ToolCallList(weatherTools, "[TOOL_CALLS]", "")
	if err != nil {
		t.Fatal(err)
	}
	for _, doc := range []string{
		`[TOOL_CALLS][{"name": "ping", "arguments": {}}]`,
		`[TOOL_CALLS][{"name": "ping", "arguments": {}}, {"name": "get_time", "arguments": {"zone": "UTC"}}]`,
	} {
		if !accepts(f, doc) || !f.Accepts([]byte(doc)) {
			t.Errorf("refused %s", doc)
		}
	}
	for _, doc := range []string{
		`[TOOL_CALLS][]`,
		`[TOOL_CALLS] [{"name": "ping", "arguments": {}}]`,
		`[TOOL_CALLS][{"name": "ping", "arguments": {}}, {"name": "nope", "arguments": {}}]`,
		`[TOOL_CALLS][{"name": "ping", "arguments": {}}, {"name": "get_time", "arguments": {"zone": "Europe/Paris"}}]`,
		`[TOOL_CALLS][{"name": "ping", "arguments": {}}`,
	} {
		if accepts(f, doc) || f.Accepts([]byte(doc)) {
			t.Errorf("accepted %s", doc)
		}
	}
	// Random lists: each call names a tool and its arguments follow that tool's schema.
	schemas := map[string]any{}
	for _, tool := range weatherTools {
		var s any = true
		if tool.Parameters != nil {
			json.Unmarshal(tool.Parameters, &s)
		}
		schemas[tool.Name] = s
	}
	r := rand.New(rand.NewPCG(9, 10))
	made := 0
	for range 100 {
		doc := walk(f, r)
		if doc == "" {
			continue
		}
		made++
		var calls []struct {
			Name      string
			Arguments any
		}
		if err := json.Unmarshal([]byte(strings.TrimPrefix(doc, "[TOOL_CALLS]")), &calls); err != nil || len(calls) == 0 {
			t.Fatalf("generated %q: %v", doc, err)
		}
		for _, call := range calls {
			s, ok := schemas[call.Name]
			if !ok {
				t.Fatalf("generated %q: a call of %q", doc, call.Name)
			}
			if err := validate(s, s, call.Arguments); err != nil {
				t.Fatalf("generated %q: %v", doc, err)
			}
		}
	}
	if made < 30 {
		t.Errorf("only %d of 100 walks ended", made)
	}
}
