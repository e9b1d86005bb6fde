package assistant

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/trochilus-llm/trochilus/engine/structured"
)

// toyTokens is a vocabulary for the constraints' tests: every printable ASCII byte, some longer
// pieces (some cross a head's end: `": {`, `}}`), a control token for Mistral's marker, and the
// end token last.
func toyTokens() ([][]byte, int32) {
	var tokens [][]byte
	for b := byte(' '); b < 127; b++ {
		tokens = append(tokens, []byte{b})
	}
	for _, t := range []string{`{"`, `name`, `": "`, `": {`, `}}`, `"}`, `get_weather`, `parameters`, `[TOOL_CALLS]`, `[ARGS]`, "Paris", " sunny"} {
		tokens = append(tokens, []byte(t))
	}
	return append(tokens, nil), int32(len(tokens))
}

var toyTools = []structured.Tool{
	{Name: "get_weather", Parameters: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string","maxLength":6},"unit":{"enum":["C","F"]}},"required":["city","unit"],"additionalProperties":false}`)},
	{Name: "get_time", Parameters: json.RawMessage(`{"type":"object","properties":{"zone":{"type":"integer","minimum":0}},"required":["zone"]}`)},
	{Name: "ping"},
}

// generate draws tokens at random among those the constraint allows (prefix, when given, is
// offered first while the constraint allows it) until the end token.
func generate(t *testing.T, c *callConstraint, tokens [][]byte, end int32, seed uint64, prefix string) string {
	t.Helper()
	r := rand.New(rand.NewPCG(seed, 1))
	var out strings.Builder
	for range 400 {
		logits := make([]float32, len(tokens))
		if err := c.Mask(logits); err != nil {
			t.Fatalf("after %q: %v", out.String(), err)
		}
		var allowed []int32
		for id, l := range logits {
			if !math.IsInf(float64(l), -1) {
				allowed = append(allowed, int32(id))
			}
		}
		id := allowed[r.IntN(len(allowed))]
		if rest, ok := strings.CutPrefix(prefix, out.String()); ok && rest != "" {
			for _, a := range allowed {
				if tokens[a] != nil && strings.HasPrefix(rest, string(tokens[a])) {
					id = a
					break
				}
			}
		}
		if err := c.Accept(id); err != nil {
			t.Fatalf("after %q: token %q: %v", out.String(), tokens[id], err)
		}
		if id == end {
			return out.String()
		}
		out.Write(tokens[id])
	}
	t.Fatalf("no end after %q", out.String())
	return ""
}

// TestToolFormatConstrains: a forced call in Llama's and Mistral's [ARGS] syntax, drawn at random
// among the tokens the constraint allows, is always one call ParseToolCalls reads, of a tool
// given, its arguments valid; a Llama answer that begins {"name" is held the same way, one that
// begins otherwise stays free.
func TestToolFormatConstrains(t *testing.T) {
	tokens, end := toyTokens()
	vocab := structured.NewVocabulary(tokens, []int32{end})
	check := func(s ToolSyntax, answer string) {
		t.Helper()
		text, calls := ParseToolCalls(answer, s)
		if len(calls) != 1 || strings.TrimSpace(text) != "" {
			t.Fatalf("%q: text %q, %d calls", answer, text, len(calls))
		}
		var args map[string]any
		json.Unmarshal(calls[0].Arguments, &args)
		switch calls[0].Name {
		case "get_weather":
			if city, _ := args["city"].(string); len([]rune(city)) > 6 || args["unit"] != "C" && args["unit"] != "F" || len(args) != 2 {
				t.Fatalf("%q: arguments %v", answer, args)
			}
		case "get_time":
			if z, ok := args["zone"].(float64); !ok || z < 0 || z != math.Trunc(z) {
				t.Fatalf("%q: arguments %v", answer, args)
			}
		case "ping":
		default:
			t.Fatalf("%q: called %q", answer, calls[0].Name)
		}
	}
	for _, s := range []ToolSyntax{llama, mistralArgs} {
		f, err := s.Format(toyTools[:2]) // ping's arguments, any object, might never end
		if err != nil {
			t.Fatal(err)
		}
		for seed := range uint64(30) {
			c := &callConstraint{f: f, vocab: vocab, texts: tokens, ends: []int32{end}, forced: true, stage: stageHead, start: true}
			check(s, generate(t, c, tokens, end, seed, ""))
		}
	}
	// Lazily: an answer that begins with the trigger is a call; the text is free otherwise.
	f, _ := llama.Format(toyTools)
	for seed := range uint64(10) {
		c := &callConstraint{f: f, vocab: vocab, texts: tokens, ends: []int32{end}, start: true}
		check(llama, generate(t, c, tokens, end, seed, `{"name": "ping", "parameters": {}}`))
	}
	c := &callConstraint{f: f, vocab: vocab, texts: tokens, ends: []int32{end}, start: true}
	for _, tok := range []string{"It", " is", " sunny", `{"`} {
		for id, b := range tokens {
			if string(b) == tok {
				c.Accept(int32(id))
			}
		}
	}
	if c.stage != stageFree {
		t.Fatalf("a call began after text: stage %d", c.stage)
	}
	// The end token ends an unfinished forced call nowhere.
	c = &callConstraint{f: f, vocab: vocab, texts: tokens, ends: []int32{end}, forced: true, stage: stageHead}
	if err := c.Accept(end); err == nil {
		t.Fatal("the end token ended an empty forced call")
	}
	// Parameters the matcher cannot enforce are refused, as structured.ToolCall refuses them.
	if _, err := llama.Format([]structured.Tool{{Name: "f", Parameters: json.RawMessage(`{"type":"string","pattern":"x"}`)}}); err == nil || !strings.Contains(err.Error(), "pattern") {
		t.Fatalf("a pattern: %v", err)
	}
}
