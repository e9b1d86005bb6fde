package serve

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/trochilus-llm/trochilus/engine/assistant"
	"github.com/trochilus-llm/trochilus/gguf"
	"github.com/trochilus-llm/trochilus/internal/modelgen"
	"github.com/trochilus-llm/trochilus/internal/modelgen/modelgentest"
	"github.com/trochilus-llm/trochilus/internal/modelgen/modelgentest/enginetest"
	"github.com/trochilus-llm/trochilus/internal/oracle"
	"github.com/trochilus-llm/trochilus/tokenizer/chat"
)

// newTemplateFixture is a server on the tiny Qwen3-MoE model whose file carries the published
// chat template testdata/chat-templates/name instead of Qwen3's own (the tokenizer is Qwen3's:
// the template's markers are text to it), and the file's path.
func newTemplateFixture(t *testing.T, name string) (*fixture, string) {
	src, err := os.ReadFile(filepath.Join("..", "..", "testdata", "chat-templates", name))
	if err != nil {
		t.Fatal(err)
	}
	cfg := modelgen.TinyQwen3(modelgen.Uniform(gguf.TypeQ8_0))
	tok, err := modelgen.FindQwen3Tokenizer("")
	if err != nil {
		t.Fatal(err)
	}
	var conf map[string]any
	if err := json.Unmarshal(tok.Config, &conf); err != nil {
		t.Fatal(err)
	}
	conf["chat_template"] = string(src)
	withTemplate, err := json.Marshal(conf)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Tokenizer = &modelgen.Tokenizer{JSON: tok.JSON, Config: withTemplate, Pre: tok.Pre}
	path := modelgentest.TestModel(t, cfg)
	return modelFixture(t, path, "tiny-"+strings.TrimSuffix(name, ".jinja"), 1024), path
}

// toolTemplates are the published templates whose syntaxes are not Hermes's, with what the
// model's forced call must look like.
var toolTemplates = []struct {
	file   string
	syntax assistant.ToolSyntax
	begins string // the answer of a forced call
}{
	{"meta-llama-Llama-3.1-8B-Instruct.jinja", assistant.ToolSyntax{Key: "parameters", Single: true, End: "<|eom_id|>"}, `{"name": "`},
	{"mistralai-Mistral-Nemo-Instruct-2407.jinja", assistant.ToolSyntax{Open: "[TOOL_CALLS][", Close: "]", List: true, Sep: ", ", Key: "arguments", IDLen: 9}, `[TOOL_CALLS][{"name": "`},
}

// TestTemplateToolCalls: on a model whose template is Llama 3.1's or Mistral Nemo's, the syntax
// is found from the template, and tool_choice "required" or a named function makes the answer
// one structured call on chat completions (whole and streamed) and on /v1/responses, whose
// arguments follow the tool's schema (Mistral's call id nine alphanumerics, which its template
// takes back). Sent back, the call and its result render: in OpenAI's shape, and in Ollama's (no
// ids: they are made) the same prompt, its cache kept.
func TestTemplateToolCalls(t *testing.T) {
	for _, tt := range toolTemplates {
		t.Run(tt.file, func(t *testing.T) {
			f, _ := newTemplateFixture(t, tt.file)
			if s, ok := f.want.ToolSyntax(); !ok || s != tt.syntax {
				t.Fatalf("syntax %#v (%v), want %#v", s, ok, tt.syntax)
			}
			msgs := `"messages":[{"role":"user","content":"Weather in Paris?"}],"max_tokens":200,"temperature":0`
			for _, choice := range []string{`"required"`, `{"type":"function","function":{"name":"get_time"}}`} {
				call, _ := forcedCall(t, f, msgs, choice)
				checkWeatherCall(t, call.Function.Name, call.Function.Arguments)
				if n := tt.syntax.IDLen; n > 0 && (len(call.ID) != n || strings.Trim(call.ID, "0123456789abcdef") != "") {
					t.Fatalf("call id %q: want %d alphanumerics", call.ID, n)
				}
				// Streamed: the same call, as one delta.
				if streamed := streamedCall(t, f, msgs, choice); streamed.Function != call.Function {
					t.Fatalf("streamed %+v, want %+v", streamed, call)
				}

				// Sent back: OpenAI's shape renders; Ollama's, without ids, renders the same.
				openai := `{"max_tokens":1,"tools":` + weatherTool + `,"messages":[{"role":"user","content":"Weather in Paris?"},
					{"role":"assistant","content":null,"tool_calls":[{"id":"` + call.ID + `","type":"function","function":{"name":"` +
					call.Function.Name + `","arguments":` + quote(call.Function.Arguments) + `}}]},{"role":"tool","tool_call_id":"` + call.ID + `","content":"sunny"}]}`
				if resp, b := f.post(t, "/v1/chat/completions", openai); resp.StatusCode != 200 {
					t.Fatalf("round trip: %d %s", resp.StatusCode, b)
				}
				if tt.syntax.IDLen == 0 { // Ollama's calls carry no id: only a template that needs none renders them alike
					ollama := `{"stream":false,"options":{"num_predict":1},"tools":` + weatherTool + `,"messages":[{"role":"user","content":"Weather in Paris?"},
						{"role":"assistant","content":"","tool_calls":[{"function":{"name":"` + call.Function.Name + `","arguments":` + call.Function.Arguments + `}}]},
						{"role":"tool","tool_name":"` + call.Function.Name + `","content":"sunny"}]}`
					resp, b := f.post(t, "/api/chat", ollama)
					var l struct {
						PromptEvalCount int `json:"prompt_eval_count"`
					}
					if json.Unmarshal(b, &l) != nil || resp.StatusCode != 200 || l.PromptEvalCount != 1 {
						t.Fatalf("ollama round trip: %d %s; want 1 token evaluated", resp.StatusCode, b)
					}
				}
			}
			// Ollama's calls without ids render on a template that requires them (Mistral's:
			// the ids are made), and their answer comes back.
			ollama := `{"stream":false,"options":{"num_predict":2},"tools":` + weatherTool + `,"messages":[{"role":"user","content":"Weather in Paris?"},
				{"role":"assistant","content":"","tool_calls":[{"function":{"name":"get_time","arguments":{"zone":"CET"}}}]},
				{"role":"tool","tool_name":"get_time","content":"noon"}]}`
			if resp, b := f.post(t, "/api/chat", ollama); resp.StatusCode != 200 {
				t.Fatalf("ollama calls without ids: %d %s", resp.StatusCode, b)
			}
			// /v1/responses: a forced call is a function_call item.
			resp, b := f.post(t, "/v1/responses", `{"input":"Weather in Paris?","max_output_tokens":200,"temperature":0,"tools":`+responsesWeather+
				`,"tool_choice":{"type":"function","name":"get_weather"}}`)
			var r struct {
				Output []struct{ Type, Name, Arguments string }
			}
			if err := json.Unmarshal(b, &r); err != nil || resp.StatusCode != 200 || len(r.Output) != 1 || r.Output[0].Type != "function_call" || r.Output[0].Name != "get_weather" {
				t.Fatalf("responses: %d %s", resp.StatusCode, b)
			}
			checkWeatherCall(t, r.Output[0].Name, r.Output[0].Arguments)
		})
	}
}

// quote is s as a JSON string.
func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// checkWeatherCall checks a call of weatherTool's tools against their schemas.
func checkWeatherCall(t *testing.T, name, arguments string) {
	t.Helper()
	var args map[string]any
	if err := json.Unmarshal([]byte(arguments), &args); err != nil {
		t.Fatalf("%s's arguments %q: %v", name, arguments, err)
	}
	switch name {
	case "get_weather":
		if city, ok := args["city"].(string); !ok || len([]rune(city)) > 12 || len(args) != 2 || args["unit"] != "C" && args["unit"] != "F" {
			t.Fatalf("get_weather's arguments %s", arguments)
		}
	case "get_time":
		if zone, ok := args["zone"].(string); !ok || len([]rune(zone)) > 5 {
			t.Fatalf("get_time's arguments %s", arguments)
		}
	default:
		t.Fatalf("called %q", name)
	}
}

// TestToolTurnsMatchTransformers: a conversation with a tool call and its result, as OpenAI's
// clients send it, renders through each published template (Llama 3.x, Mistral Nemo and Small
// 3.1, Qwen 2.5) byte for byte as transformers' apply_chat_template renders the same turns
// (Debian's python3-jinja2 in transformers' environment, tools/oracle/render_chat.py): directly,
// and through the tiny models' chats (RenderTools, the path answers take).
func TestToolTurnsMatchTransformers(t *testing.T) {
	py := oracle.Python(t, "jinja2")
	const request = `[{"role":"user","content":"Weather in Paris?"},
		{"role":"assistant","content":null,"tool_calls":[{"id":"abcdefghi","type":"function","function":{"name":"get_weather","arguments":"{\"city\": \"Paris\", \"unit\": \"C\"}"}}]},
		{"role":"tool","tool_call_id":"abcdefghi","content":"sunny"}]`
	const transformers = `[{"role":"user","content":"Weather in Paris?"},
		{"role":"assistant","content":"","tool_calls":[{"id":"abcdefghi","type":"function","function":{"name":"get_weather","arguments":{"city":"Paris","unit":"C"}}}]},
		{"role":"tool","tool_call_id":"abcdefghi","content":"sunny"}]`
	var raw []map[string]json.RawMessage
	if err := json.Unmarshal([]byte(request), &raw); err != nil {
		t.Fatal(err)
	}
	turns, err := parseMessages(raw, true)
	if err != nil {
		t.Fatal(err)
	}
	type oracleCase struct {
		Template            string            `json:"template"`
		Messages            json.RawMessage   `json:"messages"`
		Tools               json.RawMessage   `json:"tools"`
		AddGenerationPrompt bool              `json:"add_generation_prompt"`
		SpecialTokens       map[string]string `json:"special_tokens"`
	}
	var cases []oracleCase
	var ours []string
	var names []string
	add := func(name, src string, special chat.SpecialTokens, render func() (string, error)) {
		got, err := render()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		names, ours = append(names, name), append(ours, got)
		cases = append(cases, oracleCase{Template: src, Messages: json.RawMessage(transformers), Tools: json.RawMessage(weatherTool),
			AddGenerationPrompt: true, SpecialTokens: map[string]string{"bos_token": special.BOS, "eos_token": special.EOS}})
	}
	for _, name := range []string{"meta-llama-Llama-3.1-8B-Instruct.jinja", "meta-llama-Llama-3.2-3B-Instruct.jinja",
		"meta-llama-Llama-3.3-70B-Instruct.jinja", "mistralai-Mistral-Nemo-Instruct-2407.jinja",
		"mistralai-Mistral-Small-3.1-24B-Instruct-2503.jinja", "Qwen-Qwen2.5-7B-Instruct.jinja"} {
		src, err := os.ReadFile(filepath.Join("..", "..", "testdata", "chat-templates", name))
		if err != nil {
			t.Fatal(err)
		}
		tmpl, err := chat.Parse(string(src))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		special := chat.SpecialTokens{BOS: "<s>", EOS: "</s>"}
		if strings.HasPrefix(name, "meta-llama") {
			special = chat.SpecialTokens{BOS: "<|begin_of_text|>", EOS: "<|eot_id|>"}
		}
		add(name, string(src), special, func() (string, error) {
			return tmpl.Render(turns, chat.Options{AddGenerationPrompt: true, SpecialTokens: special, Tools: json.RawMessage(weatherTool)})
		})
	}
	for _, tt := range toolTemplates {
		f, path := newTemplateFixture(t, tt.file)
		tok := enginetest.Tokenizer(t, path)
		special := chat.SpecialTokens{EOS: tok.Token(tok.EOS())}
		if tok.BOS() >= 0 {
			special.BOS = tok.Token(tok.BOS())
		}
		src, _ := os.ReadFile(filepath.Join("..", "..", "testdata", "chat-templates", tt.file))
		add("the chat of "+tt.file, string(src), special, func() (string, error) {
			return f.want.RenderTools(turns, json.RawMessage(weatherTool))
		})
	}
	dir := t.TempDir()
	in, out := filepath.Join(dir, "cases.json"), filepath.Join(dir, "out.json")
	// strftime_now (Llama 3.2's and Mistral's dates) is the clock for both renderers.
	now := time.Now()
	spec, _ := json.Marshal(map[string]any{"now": []int{now.Year(), int(now.Month()), now.Day(), now.Hour(), now.Minute(), now.Second(), 0}, "cases": cases})
	if err := os.WriteFile(in, spec, 0o644); err != nil {
		t.Fatal(err)
	}
	if b, err := exec.Command(py, filepath.Join(oracle.Root(t), "tools/oracle/render_chat.py"), in, out).CombinedOutput(); err != nil {
		t.Fatalf("python oracle: %v\n%s", err, b)
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var results []struct {
		Out     *string
		Error   string
		Message string
	}
	if err := json.Unmarshal(data, &results); err != nil || len(results) != len(cases) {
		t.Fatalf("oracle results: %v (%d for %d cases)", err, len(results), len(cases))
	}
	for i, r := range results {
		if r.Out == nil {
			t.Errorf("%s: transformers raised %s: %s", names[i], r.Error, r.Message)
		} else if *r.Out != ours[i] {
			t.Errorf("%s:\nours         %q\ntransformers %q", names[i], ours[i], *r.Out)
		} else if !strings.Contains(ours[i], "sunny") || !strings.Contains(ours[i], "Paris") {
			t.Errorf("%s: the call or its result is missing: %q", names[i], ours[i])
		}
	}
}

// TestHoldBackWholeMessage: for a syntax whose call is the whole message (Llama's), a streamed
// answer is kept while it may still begin a call and streams whole once it cannot; Mistral's
// marker is held back wherever it comes, as Hermes's is.
func TestHoldBackWholeMessage(t *testing.T) {
	for _, c := range []struct {
		syntax      assistant.ToolSyntax
		pieces      []string
		shown, kept string
	}{
		{toolTemplates[0].syntax, []string{"It is", " sunny {\"name\""}, "It is sunny {\"name\"", ""},
		{toolTemplates[0].syntax, []string{"{", "\"na", "me\": \"f\"", ", \"parameters\": {}}"}, "", "{\"name\": \"f\", \"parameters\": {}}"},
		{toolTemplates[0].syntax, []string{" {\"", "x\": 1}"}, " {\"x\": 1}", ""},
		{toolTemplates[0].syntax, []string{"\n"}, "", "\n"},
		{toolTemplates[1].syntax, []string{"Let me check.", "[TOOL", "_CALLS][{"}, "Let me check.", "[TOOL_CALLS][{"},
	} {
		var shown strings.Builder
		p := &toolPlan{read: true, syntax: c.syntax}
		h := p.holdBack(func(s string) { shown.WriteString(s) })
		for _, piece := range c.pieces {
			h.write(piece)
		}
		if kept := h.rest(); shown.String() != c.shown || kept != c.kept {
			t.Errorf("%q: shown %q kept %q, want %q and %q", c.pieces, shown.String(), kept, c.shown, c.kept)
		}
	}
}

// TestToolCallShapes: calls in Llama's and Mistral's syntaxes come out in OpenAI's shape (an
// id, the arguments a string) and Ollama's (the arguments an object); a call that cannot be read
// stays the answer's text.
func TestToolCallShapes(t *testing.T) {
	for _, c := range []struct {
		syntax assistant.ToolSyntax
		answer string
	}{
		{toolTemplates[0].syntax, `{"name": "get_time", "parameters": {"zone": "CET"}}`},
		{toolTemplates[1].syntax, `[TOOL_CALLS][{"name": "get_time", "arguments": {"zone": "CET"}}]`},
	} {
		p := &toolPlan{read: true, syntax: c.syntax}
		text, calls := p.calls(&assistant.Reply{Text: c.answer})
		if text != "" || len(calls) != 1 {
			t.Fatalf("%q: %q, %v", c.answer, text, calls)
		}
		fn := calls[0]["function"].(map[string]any)
		if fn["name"] != "get_time" || fn["arguments"] != `{"zone":"CET"}` {
			t.Fatalf("%q: %v", c.answer, calls)
		}
		if n := c.syntax.IDLen; n > 0 && len(calls[0]["id"].(string)) != n {
			t.Fatalf("%q: id %v", c.answer, calls[0]["id"])
		}
		text, ocalls := p.ollamaCalls(&assistant.Reply{Text: c.answer})
		if text != "" || len(ocalls) != 1 || string(ocalls[0]["function"].(map[string]any)["arguments"].(json.RawMessage)) != `{"zone": "CET"}` {
			t.Fatalf("%q: ollama %q, %v", c.answer, text, ocalls)
		}
		broken := c.answer[:len(c.answer)-3]
		if text, calls := p.calls(&assistant.Reply{Text: broken}); text != broken || len(calls) != 0 {
			t.Fatalf("%q: %q, %v", broken, text, calls)
		}
	}
}
