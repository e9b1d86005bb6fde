package assistant

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/trochilus-llm/trochilus/engine"
	"github.com/trochilus-llm/trochilus/engine/structured"
	"github.com/trochilus-llm/trochilus/gguf"
	"github.com/trochilus-llm/trochilus/internal/modelgen/modelgentest"
	"github.com/trochilus-llm/trochilus/internal/modelgen/modelgentest/enginetest"
	"github.com/trochilus-llm/trochilus/kernels"
	"github.com/trochilus-llm/trochilus/tokenizer/chat"
)

// olmoeHermesTemplate is OLMoE's chat template (assets/olmoe/tokenizer_config.json) with tools
// added the Hermes way: listed in a system turn, a call written <tool_call>\n{"name", "arguments"}
// \n</tool_call>, a result in a user turn between <tool_response> tags. OLMoE's own template
// renders no tools, so the trained model (whose weights are OLMoE's shape and tokenizer) is given
// this one in a copy of its file; not a published template.
const olmoeHermesTemplate = `{{ bos_token }}{% if tools %}{{ '<|system|>
You can call these tools. To call one, write <tool_call>, a newline, {"name": the name, "arguments": the arguments}, a newline and </tool_call>.
<tools>
' }}{% for tool in tools %}{{ (tool | tojson) + '
' }}{% endfor %}{{ '</tools>
' }}{% endif %}{% for message in messages %}{% if message['role'] == 'system' %}{{ '<|system|>
' + message['content'] + '
' }}{% elif message['role'] == 'user' %}{{ '<|user|>
' + message['content'] + '
' }}{% elif message['role'] == 'assistant' %}{{ '<|assistant|>
' }}{% if message['content'] %}{{ message['content'] }}{% endif %}{% if message.tool_calls %}{% for tc in message.tool_calls %}{% if not loop.first %}{{ '
' }}{% endif %}{{ '<tool_call>
{"name": "' + tc.function.name + '", "arguments": ' + (tc.function.arguments | tojson) + '}
</tool_call>' }}{% endfor %}{% endif %}{{ eos_token }}{% if not loop.last %}{{ '
' }}{% endif %}{% elif message['role'] == 'tool' %}{{ '<|user|>
<tool_response>
' + message['content'] + '
</tool_response>
' }}{% endif %}{% if loop.last and add_generation_prompt %}{{ '<|assistant|>
' }}{% endif %}{% endfor %}`

// withTemplate writes a copy of the GGUF at src whose chat template is tmpl, and returns its path.
func withTemplate(t *testing.T, src, tmpl string) string {
	t.Helper()
	f, err := gguf.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := gguf.NewWriter()
	set := false
	for _, kv := range f.KVs {
		v := kv.Value
		if kv.Key == "tokenizer.chat_template" {
			v, set = gguf.String(tmpl), true
		}
		if err := out.Set(kv.Key, v); err != nil {
			t.Fatal(err)
		}
	}
	if !set {
		if err := out.Set("tokenizer.chat_template", gguf.String(tmpl)); err != nil {
			t.Fatal(err)
		}
	}
	for i := range f.Tensors {
		ti := &f.Tensors[i]
		raw := make([]byte, ti.Size)
		if err := f.ReadTensor(ti, raw); err != nil {
			t.Fatal(err)
		}
		if err := out.AddTensor(ti.Name, ti.Type, ti.Dims, raw); err != nil {
			t.Fatal(err)
		}
	}
	path := filepath.Join(t.TempDir(), "trained-hermes.gguf")
	if err := out.WriteFile(path); err != nil {
		t.Fatal(err)
	}
	return path
}

const trainedWeatherTools = `[{"type":"function","function":{"name":"get_weather","description":"The weather in a city.","parameters":{"type":"object","properties":{"city":{"type":"string","maxLength":12},"unit":{"enum":["C","F"]}},"required":["city","unit"],"additionalProperties":false}}},
{"type":"function","function":{"name":"get_time","description":"The time in a zone.","parameters":{"type":"object","properties":{"zone":{"type":"string","maxLength":5}},"required":["zone"],"additionalProperties":false}}}]`

// TestTrainedToolRoundTrip runs a tool round trip on the trained tiny model, given a Hermes-style
// template in OLMoE's shape: the syntax is found from the template; a forced call is one call of
// a tool, its arguments that tool's schema; the call and its result sent back render and are
// answered, freely, with any call the answer writes held to the tools; and both answers are the
// same bytes on every kernel tier at 1 thread and on the fastest at 3.
func TestTrainedToolRoundTrip(t *testing.T) {
	path := withTemplate(t, modelgentest.TrainedModel(t, "q4_k_m"), olmoeHermesTemplate)
	var defs []structured.Tool
	var list []struct {
		Function struct {
			Name       string
			Parameters json.RawMessage
		}
	}
	if err := json.Unmarshal([]byte(trainedWeatherTools), &list); err != nil {
		t.Fatal(err)
	}
	for _, l := range list {
		defs = append(defs, structured.Tool{Name: l.Function.Name, Parameters: l.Function.Parameters})
	}
	tools := json.RawMessage(trainedWeatherTools)
	user := chat.Message{Role: "user", Content: "What is the weather in Paris?"}

	tiers := kernels.Tiers()
	type config struct {
		tier    *kernels.Tier
		threads int
	}
	var configs []config
	for _, tier := range tiers {
		configs = append(configs, config{tier, 1})
	}
	configs = append(configs, config{tiers[len(tiers)-1], 3})
	var want []string
	for _, cfg := range configs {
		c, err := New(enginetest.Open(t, path, engine.Options{Tier: cfg.tier, Threads: cfg.threads}, 1024))
		if err != nil {
			t.Fatal(err)
		}
		s, ok := c.ToolSyntax()
		if !ok || s != hermes {
			t.Fatalf("syntax %#v (%v), want Hermes's", s, ok)
		}
		f, err := s.Format(defs)
		if err != nil {
			t.Fatal(err)
		}
		// The forced call.
		r, err := c.Reply(context.Background(), []chat.Message{user}, Options{MaxTokens: 200, Tools: tools, ToolCall: f, ForceToolCall: true})
		if err != nil {
			t.Fatal(err)
		}
		text, calls := f.Parse(r.Text)
		if _, loose := ParseToolCalls(r.Text, s); len(calls) != 1 || text != "" || len(loose) != 1 || !r.Ended {
			t.Fatalf("tier %s: the forced call %q: text %q, %d calls", cfg.tier.Name, r.Text, text, len(calls))
		}
		var args map[string]any
		if err := json.Unmarshal(calls[0].Arguments, &args); err != nil {
			t.Fatal(err)
		}
		// Sent back with its result (the arguments an object, as serve passes them to templates).
		back := []chat.Message{user,
			{Role: "assistant", Extra: map[string]any{"tool_calls": json.RawMessage(`[{"id":"call_1","type":"function","function":{"name":"` +
				calls[0].Name + `","arguments":` + string(calls[0].Arguments) + `}}]`)}},
			{Role: "tool", Content: "sunny, 21 degrees", Extra: map[string]any{"tool_call_id": "call_1"}}}
		prompt, err := c.RenderTools(back, tools)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(prompt, "<|assistant|>\n<tool_call>\n{\"name\": \""+calls[0].Name+"\", \"arguments\": ") ||
			!strings.Contains(prompt, "<tool_response>\nsunny, 21 degrees\n</tool_response>") || !strings.HasSuffix(prompt, "<|assistant|>\n") {
			t.Fatalf("the round trip renders %q", prompt)
		}
		r2, err := c.Reply(context.Background(), back, Options{MaxTokens: 60, Tools: tools, ToolCall: f})
		if err != nil {
			t.Fatal(err)
		}
		text2, calls2 := f.Parse(r2.Text)
		if text2b, loose := ParseToolCalls(r2.Text, s); len(loose) != len(calls2) || text2b != text2 {
			t.Fatalf("the answer %q: the parser reads %d calls, the format holds %d", r2.Text, len(loose), len(calls2))
		}
		if want == nil {
			want = []string{r.Text, r2.Text}
			t.Logf("forced call %q (arguments %v); the answer to its result %q (%d calls)", r.Text, args, r2.Text, len(calls2))
			continue
		}
		if r.Text != want[0] || r2.Text != want[1] {
			t.Fatalf("tier %s, %d threads: %q, %q; want %q, %q", cfg.tier.Name, cfg.threads, r.Text, r2.Text, want[0], want[1])
		}
	}
}
