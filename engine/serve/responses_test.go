package serve

import (
	"bufio"
	"encoding/json"
	"strings"
	"testing"

	"github.com/trochilus-llm/trochilus/engine"
	"github.com/trochilus-llm/trochilus/engine/assistant"
	"github.com/trochilus-llm/trochilus/tokenizer/chat"
)

type responseBody struct {
	ID, Object, Status, Model string
	Output                    []struct {
		Type, ID, Status, Role string
		Content                []struct{ Type, Text string }
	}
	Usage *struct {
		InputTokens  int `json:"input_tokens"`
		OutputTokens int `json:"output_tokens"`
		TotalTokens  int `json:"total_tokens"`
	}
	IncompleteDetails *struct{ Reason string } `json:"incomplete_details"`
	Seed              *int64
}

func (r *responseBody) text() string {
	var b strings.Builder
	for _, o := range r.Output {
		for _, c := range o.Content {
			b.WriteString(c.Text)
		}
	}
	return b.String()
}

func TestResponses(t *testing.T) {
	f := newFixture(t)
	turns := []chat.Message{{Role: "system", Content: "Be brief."}, {Role: "user", Content: "Name three colours."}}
	want := f.reply(t, turns, assistant.Options{MaxTokens: 12})

	for _, input := range []string{
		`"input":"Name three colours.","instructions":"Be brief."`,
		`"input":[{"role":"developer","content":"Be brief."},{"type":"message","role":"user","content":[{"type":"input_text","text":"Name three "},{"type":"input_text","text":"colours."}]}]`,
	} {
		resp, body := f.post(t, "/v1/responses", `{"model":"tiny","max_output_tokens":12,"store":true,`+input+`}`)
		var got responseBody
		if resp.StatusCode != 200 || json.Unmarshal(body, &got) != nil {
			t.Fatalf("%s: %d %s", input, resp.StatusCode, body)
		}
		wantStatus := "completed"
		if !want.Finished() {
			wantStatus = "incomplete"
		}
		if got.Object != "response" || !strings.HasPrefix(got.ID, "resp_") || got.Status != wantStatus || got.text() != want.Text ||
			len(got.Output) != 1 || got.Output[0].Role != "assistant" || got.Output[0].Content[0].Type != "output_text" {
			t.Fatalf("%s: %s, want %q (%s)", input, body, want.Text, wantStatus)
		}
		if u := got.Usage; u == nil || u.InputTokens != want.Prompt || u.OutputTokens != want.Tokens || u.TotalTokens != want.Prompt+want.Tokens {
			t.Fatalf("usage %+v, want %d and %d", got.Usage, want.Prompt, want.Tokens)
		}
		if got.Output[0].Status != wantStatus {
			t.Fatalf("output message %s, want %s", got.Output[0].Status, wantStatus)
		}
		if wantStatus == "incomplete" && (got.IncompleteDetails == nil || got.IncompleteDetails.Reason != "max_output_tokens") {
			t.Fatalf("incomplete without the reason: %s", body)
		}
	}

	// Sampled with a seed, streamed: the events in order, the deltas adding up to the answer.
	seeded := f.reply(t, turns[1:], assistant.Options{MaxTokens: 16, Sampling: &engine.Sampling{Temperature: 0.7, TopP: 1, Seed: 9}})
	resp, body := f.post(t, "/v1/responses", `{"input":"Name three colours.","max_output_tokens":16,"temperature":0.7,"seed":9,"stream":true}`)
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("stream: %d %s", resp.StatusCode, body)
	}
	var names []string
	var deltas strings.Builder
	var last responseBody
	sc := bufio.NewScanner(strings.NewReader(string(body)))
	for sc.Scan() {
		line := sc.Text()
		if name, ok := strings.CutPrefix(line, "event: "); ok {
			names = append(names, name)
			continue
		}
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok {
			continue
		}
		var ev struct {
			Type     string
			Sequence int `json:"sequence_number"`
			Delta    string
			Response json.RawMessage
		}
		if err := json.Unmarshal([]byte(data), &ev); err != nil || ev.Type != names[len(names)-1] || ev.Sequence != len(names)-1 {
			t.Fatalf("event %d %q: %s (%v)", len(names)-1, names[len(names)-1], data, err)
		}
		deltas.WriteString(ev.Delta)
		if ev.Response != nil {
			last = responseBody{}
			json.Unmarshal(ev.Response, &last)
		}
	}
	head := []string{"response.created", "response.in_progress", "response.output_item.added", "response.content_part.added"}
	tail := []string{"response.output_text.done", "response.content_part.done", "response.output_item.done"}
	if len(names) < len(head)+len(tail)+2 || strings.Join(names[:4], " ") != strings.Join(head, " ") ||
		strings.Join(names[len(names)-4:len(names)-1], " ") != strings.Join(tail, " ") {
		t.Fatalf("events %q", names)
	}
	if end := names[len(names)-1]; end != "response.completed" && end != "response.incomplete" {
		t.Fatalf("last event %q", end)
	}
	if deltas.String() != seeded.Text || last.text() != seeded.Text || last.Seed == nil || *last.Seed != 9 {
		t.Fatalf("streamed %q (final %q, seed %v), want %q", deltas.String(), last.text(), last.Seed, seeded.Text)
	}
}

func TestResponsesRefusals(t *testing.T) {
	f := newFixture(t)
	for _, c := range []struct{ body, param, want string }{
		{`{"input":"Hi","previous_response_id":"resp_1"}`, "previous_response_id", "previous responses are not kept"},
		{`{"input":"Hi","tools":[{"type":"web_search"}]}`, "tools", `only "function" tools are supported`},
		{`{"input":"Hi","text":{"format":{"type":"json_schema"}}}`, "text.format", "json_schema needs a schema"},
		{`{"input":"Hi","text":{"format":{"type":"yaml"}}}`, "text.format", `type "yaml"`},
		{`{"input":"Hi","text":{"verbosity":"low"}}`, "text", "verbosity is not supported"},
		{`{"input":"Hi","reasoning":{"effort":"high"}}`, "reasoning", "reasoning settings"},
		{`{"input":[{"type":"function_call_output","call_id":"c","output":"4"}]}`, "input", "function_call_output"},
		{`{"input":[{"role":"user","content":[{"type":"input_image","image_url":"x"}]}]}`, "input", "input_image"},
		{`{"input":""}`, "input", "non-empty"},
		{`{"input":"Hi","max_output_tokens":0}`, "max_output_tokens", "max_output_tokens 0"},
		{`{"input":"Hi","frobnicate":1}`, "frobnicate", "Unrecognized request argument"},
	} {
		resp, body := f.post(t, "/v1/responses", c.body)
		var e errorBody
		if resp.StatusCode != 400 || json.Unmarshal(body, &e) != nil || e.Error.Param == nil || *e.Error.Param != c.param ||
			!strings.Contains(e.Error.Message, c.want) {
			t.Errorf("%s: %d %s, want a 400 on %s saying %q", c.body, resp.StatusCode, body, c.param, c.want)
		}
	}
	// What asks for nothing is accepted.
	resp, body := f.post(t, "/v1/responses", `{"input":"Hi","max_output_tokens":2,"tools":[],"tool_choice":"auto","text":{"format":{"type":"text"}},"truncation":"disabled","store":false,"metadata":{"a":"b"}}`)
	if resp.StatusCode != 200 {
		t.Errorf("defaults refused: %d %s", resp.StatusCode, body)
	}
}

// TestResponsesStreamedTooLong checks that a streamed request whose prompt the context cannot
// hold gets the 400 a whole one gets, not an event stream that fails.
func TestResponsesStreamedTooLong(t *testing.T) {
	f := newFixture(t)
	long := strings.Repeat("tell me more ", 300)
	resp, body := f.post(t, "/v1/responses", `{"input":"`+long+`","stream":true}`)
	var e errorBody
	if resp.StatusCode != 400 || json.Unmarshal(body, &e) != nil || e.Error.Code == nil || *e.Error.Code != "context_length_exceeded" {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
}
