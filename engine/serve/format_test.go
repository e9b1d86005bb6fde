package serve

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/trochilus-llm/trochilus/engine/assistant"
	"github.com/trochilus-llm/trochilus/engine/structured"
	"github.com/trochilus-llm/trochilus/tokenizer/chat"
)

// personSchema bounds its one string, so that even a random-weight model's answer ends.
const personSchema = `{"type":"object","properties":{"name":{"type":"string","maxLength":6},"age":{"type":"integer"},"member":{"type":"boolean"}},"required":["name","age","member"],"additionalProperties":false}`

// TestStructuredOutput asks every API for the same schema's document: each answer is the one
// the engine gives with that format (greedy), a whole JSON document of the schema, streamed
// or not; the Responses API repeats the format it was given.
func TestStructuredOutput(t *testing.T) {
	f := newFixture(t)
	format, err := structured.CompileSchema([]byte(personSchema))
	if err != nil {
		t.Fatal(err)
	}
	turns := []chat.Message{{Role: "user", Content: "Describe a person as JSON."}}
	want := f.reply(t, turns, assistant.Options{MaxTokens: 60, Format: format})
	var person struct {
		Name   *string
		Age    *int64
		Member *bool
	}
	if err := json.Unmarshal([]byte(want.Text), &person); err != nil || !want.Ended || person.Name == nil || person.Age == nil || person.Member == nil {
		t.Fatalf("the engine's answer %q (ended %v): %v", want.Text, want.Ended, err)
	}
	msgs := `"messages":[{"role":"user","content":"Describe a person as JSON."}],"max_tokens":60,"temperature":0`
	rf := `"response_format":{"type":"json_schema","json_schema":{"name":"person","strict":true,"schema":` + personSchema + `}}`

	resp, body := f.post(t, "/v1/chat/completions", `{`+msgs+`,`+rf+`}`)
	var got chatResponse
	if err := json.Unmarshal(body, &got); err != nil || resp.StatusCode != 200 || got.Choices[0].Message.Content != want.Text ||
		*got.Choices[0].FinishReason != "stop" {
		t.Fatalf("chat completion: %d %s, want %q", resp.StatusCode, body, want.Text)
	}

	resp, body = f.post(t, "/v1/chat/completions", `{`+msgs+`,`+rf+`,"stream":true}`)
	data, done := readEvents(t, strings.NewReader(string(body)))
	var streamed strings.Builder
	for _, d := range data {
		var chunk struct {
			Choices []struct{ Delta struct{ Content string } }
		}
		if err := json.Unmarshal([]byte(d), &chunk); err != nil {
			t.Fatal(err)
		}
		for _, c := range chunk.Choices {
			streamed.WriteString(c.Delta.Content)
		}
	}
	if resp.StatusCode != 200 || !done || streamed.String() != want.Text {
		t.Fatalf("streamed %q (done %v), want %q", streamed.String(), done, want.Text)
	}

	resp, body = f.post(t, "/api/chat", `{`+msgs[:strings.Index(msgs, `,"max_tokens"`)]+`,"stream":false,"format":`+personSchema+`,"options":{"temperature":0,"num_predict":60}}`)
	var ollama struct{ Message struct{ Content string } }
	if err := json.Unmarshal(body, &ollama); err != nil || resp.StatusCode != 200 || ollama.Message.Content != want.Text {
		t.Fatalf("/api/chat: %d %s, want %q", resp.StatusCode, body, want.Text)
	}

	textFormat := `{"format":{"type":"json_schema","name":"person","strict":true,"schema":` + personSchema + `}}`
	resp, body = f.post(t, "/v1/responses", `{"input":"Describe a person as JSON.","max_output_tokens":60,"temperature":0,"text":`+textFormat+`}`)
	var r struct {
		Output []struct{ Content []struct{ Text string } }
		Text   json.RawMessage
	}
	if err := json.Unmarshal(body, &r); err != nil || resp.StatusCode != 200 || len(r.Output) != 1 || r.Output[0].Content[0].Text != want.Text {
		t.Fatalf("/v1/responses: %d %s, want %q", resp.StatusCode, body, want.Text)
	}
	var echoed, sent any
	json.Unmarshal(r.Text, &echoed)
	json.Unmarshal([]byte(textFormat), &sent)
	if b1, _ := json.Marshal(echoed); string(b1) != mustJSON(sent) {
		t.Errorf("/v1/responses repeats text %s, want %s", r.Text, textFormat)
	}

	// json_object: the answer opens an object (a random model's keys may run to the limit).
	resp, body = f.post(t, "/v1/chat/completions", `{`+msgs+`,"response_format":{"type":"json_object"}}`)
	if err := json.Unmarshal(body, &got); err != nil || resp.StatusCode != 200 || !strings.HasPrefix(got.Choices[0].Message.Content, "{") {
		t.Fatalf("json_object: %d %s", resp.StatusCode, body)
	}
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// TestStructuredOutputErrors: what a format cannot be is a 400 naming the field and the
// schema keyword, never a 500 or an answer in prose.
func TestStructuredOutputErrors(t *testing.T) {
	f := newFixture(t)
	for _, c := range []struct{ format, param, code, says string }{
		{`{"type":"json_schema","json_schema":{"name":"x","schema":{"type":"string","pattern":"^a"}}}`, "response_format", "unsupported_parameter",
			`response_format: schema at /: keyword "pattern" is not supported`},
		{`{"type":"json_schema","json_schema":{}}`, "response_format", "", "json_schema needs a schema"},
		{`{"type":"json_schema"}`, "response_format", "", `json_schema needs "json_schema"`},
		{`{"type":"json_schema","json_schema":{"name":"x","schema":{},"zz":1}}`, "response_format.json_schema.zz", "",
			"Unrecognized request argument supplied: response_format.json_schema.zz"},
		{`{"type":"xml"}`, "response_format", "", `type "xml": want "text", "json_object" or "json_schema"`},
		{`{"type":1}`, "response_format.type", "", "response_format.type: want a string"},
		{`"json"`, "response_format", "", "response_format: want an object"},
		{`{"type":"json_schema","json_schema":{"schema":{"anyOf":[{"type":"object"},{"type":"object"}]}}}`, "response_format", "unsupported_parameter",
			"alternatives must differ in type"},
	} {
		resp, body := f.post(t, "/v1/chat/completions", `{`+hi+`,"response_format":`+c.format+`}`)
		wantError(t, c.format, resp, body, http.StatusBadRequest, c.param, c.code, c.says)
	}
}
