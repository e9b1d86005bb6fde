package serve

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/trochilus-llm/trochilus/engine"
	"github.com/trochilus-llm/trochilus/engine/assistant"
	"github.com/trochilus-llm/trochilus/internal/modelgen/modelgentest"
	"github.com/trochilus-llm/trochilus/tokenizer/chat"
)

// do sends one request with the headers given (Content-Type JSON unless set) and returns
// the response and its body.
func do(t *testing.T, url, method, path, body string, header map[string]string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, url+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range header {
		if k == "Host" {
			req.Host = v
		} else {
			req.Header.Set(k, v)
		}
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, b
}

// wantError checks that a response is an error of status in OpenAI's shape, with the param
// and code given ("" for null) and a message holding says and no Go type names.
func wantError(t *testing.T, what string, resp *http.Response, body []byte, status int, param, code, says string) {
	t.Helper()
	var e struct {
		Error map[string]any `json:"error"`
	}
	if resp.StatusCode != status || resp.Header.Get("Content-Type") != "application/json" || json.Unmarshal(body, &e) != nil {
		t.Errorf("%s: status %d %s: %s; want %d in JSON", what, resp.StatusCode, resp.Header.Get("Content-Type"), body, status)
		return
	}
	msg, _ := e.Error["message"].(string)
	for k, want := range map[string]string{"param": param, "code": code} {
		v, present := e.Error[k]
		if got, _ := v.(string); !present || got != want || (want == "" && v != nil) {
			t.Errorf("%s: %s %v, want %q: %s", what, k, v, want, body)
		}
	}
	if typ := e.Error["type"]; typ == nil || !strings.Contains(msg, says) ||
		strings.Contains(msg, "Go ") || strings.Contains(msg, "int64") || strings.Contains(msg, "uint") {
		t.Errorf("%s: %s; want a message saying %q without Go's types", what, body, says)
	}
}

const hi = `"messages":[{"role":"user","content":"hi"}],"max_tokens":4`

// TestNothingIgnored checks that every field serve cannot honour is refused naming it, that
// the values asking for nothing and the harmless fields are accepted, and that an unknown
// field is refused as OpenAI refuses one.
func TestNothingIgnored(t *testing.T) {
	f := newFixture(t)
	for field, value := range map[string]string{
		"functions":     `[{"name":"f"}]`,
		"function_call": `"auto"`, "n": `2`,
		"presence_penalty": `0.5`, "frequency_penalty": `-1`, "modalities": `["text","audio"]`, "audio": `{}`,
		"prediction": `{"type":"content"}`, "reasoning_effort": `"low"`,
	} {
		resp, body := f.post(t, "/v1/chat/completions", fmt.Sprintf(`{%s,%q:%s}`, hi, field, value))
		wantError(t, field, resp, body, 400, field, "unsupported_parameter", field+":")
	}
	resp, body := f.post(t, "/v1/completions", `{"prompt":"a","best_of":3}`)
	wantError(t, "best_of", resp, body, 400, "best_of", "unsupported_parameter", "best_of")
	resp, body = f.post(t, "/v1/chat/completions", `{`+hi+`,"min_p":0.1}`)
	wantError(t, "min_p", resp, body, 400, "min_p", "", "Unrecognized request argument supplied: min_p")
	resp, body = f.post(t, "/v1/chat/completions", `{`+hi+`,"zz":1,"echo":true}`)
	wantError(t, "two unknown", resp, body, 400, "", "", "Unrecognized request arguments supplied: echo, zz")

	want := f.reply(t, []chat.Message{{Role: "user", Content: "hi"}}, assistant.Options{MaxTokens: 4})
	resp, body = f.post(t, "/v1/chat/completions", `{`+hi+`,"response_format":{"type":"text"},"tool_choice":"none",
		"tools":[],"parallel_tool_calls":false,"logprobs":false,"top_logprobs":0,"logit_bias":{},"n":1,
		"presence_penalty":0,"frequency_penalty":0.0,"modalities":["text"],"audio":null,
		"user":"u","store":true,"metadata":{"a":"b"},"service_tier":"auto","model":"other"}`)
	var got chatResponse
	if err := json.Unmarshal(body, &got); err != nil || resp.StatusCode != 200 || got.Choices[0].Message.Content != want.Text {
		t.Fatalf("fields asking for nothing: %d %s, want %q", resp.StatusCode, body, want.Text)
	}
}

// TestErrorShapes checks that refusals other than a field's are in OpenAI's shape too, and
// that what used to fail as a server fault is the client's 400.
func TestErrorShapes(t *testing.T) {
	f := newFixture(t)
	u := f.srv.URL
	for _, c := range []struct {
		what, method, path, body string
		status                   int
		param, code, says        string
	}{
		{"unknown route", "GET", "/v1/embeddings", "", 404, "", "unknown_url", "no such route"},
		{"wrong method", "GET", "/v1/chat/completions", "", 405, "", "", "want POST"},
		{"preflight without an origin", "OPTIONS", "/v1/completions", "", 405, "", "", "want POST"},
		{"negative seed as a float", "POST", "/v1/chat/completions", `{` + hi + `,"seed":-1.5}`, 400, "seed", "", "seed: want an integer"},
		{"seed past int64", "POST", "/v1/chat/completions", `{` + hi + `,"seed":18446744073709551615}`, 400, "seed", "", "seed: want an integer"},
		{"max_tokens as text", "POST", "/v1/chat/completions", `{` + hi[:len(hi)-1] + `"4"}`, 400, "max_tokens", "", "max_tokens: want an integer"},
		{"stream_options wrong", "POST", "/v1/chat/completions", `{` + hi + `,"stream_options":{"include_usage":1}}`, 400, "stream_options", "", "stream_options.include_usage: want true or false"},
		{"messages not objects", "POST", "/v1/chat/completions", `{"messages":[1]}`, 400, "messages", "", "messages: want an object"},
		{"body a list", "POST", "/v1/chat/completions", `[]`, 400, "", "", "want a JSON object"},
		{"body null", "POST", "/v1/chat/completions", `null`, 400, "", "", "want a JSON object"},
		{"user content null", "POST", "/v1/chat/completions", `{"messages":[{"role":"user","content":null}]}`, 400, "messages", "", "messages[0].content"},
		{"assistant content null", "POST", "/v1/chat/completions", `{"messages":[{"role":"user","content":"a"},{"role":"assistant","content":null},{"role":"user","content":"b"}]}`, 400, "messages", "", "messages[1].content"},
		{"content missing", "POST", "/v1/chat/completions", `{"messages":[{"role":"user"}]}`, 400, "messages", "", "messages[0].content"},
		{"part without text", "POST", "/v1/chat/completions", `{"messages":[{"role":"user","content":[{"type":"text"}]}]}`, 400, "messages", "", "part 0"},
		{"part not an object", "POST", "/v1/chat/completions", `{"messages":[{"role":"user","content":[7]}]}`, 400, "messages", "", "list of text parts"},
		{"empty prompt", "POST", "/v1/completions", `{"prompt":""}`, 400, "prompt", "", "non-empty"},
		{"token prompt", "POST", "/v1/completions", `{"prompt":[1,2]}`, 400, "prompt", "", "token lists"},
	} {
		resp, body := do(t, u, c.method, c.path, c.body, nil)
		wantError(t, c.what, resp, body, c.status, c.param, c.code, c.says)
		if c.status == 405 && resp.Header.Get("Allow") != "POST, OPTIONS" {
			t.Errorf("%s: Allow %q", c.what, resp.Header.Get("Allow"))
		}
	}
}

// TestSeedsInt64 checks that a negative seed samples as its two's complement and that the
// seed reported, the one sent, replays the answer.
func TestSeedsInt64(t *testing.T) {
	f := newFixture(t)
	turns := []chat.Message{{Role: "user", Content: "Tell me a story."}}
	want := f.reply(t, turns, assistant.Options{MaxTokens: 12, Sampling: &engine.Sampling{Temperature: 0.9, TopP: 1, Seed: math.MaxUint64}})
	body := `{"messages":[{"role":"user","content":"Tell me a story."}],"max_tokens":12,"temperature":0.9,"seed":%d}`
	seed := int64(-1)
	for range 2 {
		resp, b := f.post(t, "/v1/chat/completions", fmt.Sprintf(body, seed))
		var r struct {
			chatResponse
			Seed *int64
		}
		if err := json.Unmarshal(b, &r); err != nil || resp.StatusCode != 200 || r.Seed == nil || *r.Seed != -1 {
			t.Fatalf("seed -1: %d %s (%v)", resp.StatusCode, b, err)
		}
		if r.Choices[0].Message.Content != want.Text {
			t.Fatalf("seed %d answered %q, seed 2^64-1 %q", seed, r.Choices[0].Message.Content, want.Text)
		}
		seed = *r.Seed // sent back as reported
	}
}

// TestTopPZero checks that top_p 0 answers greedily, temperature or not, and reports no seed.
func TestTopPZero(t *testing.T) {
	f := newFixture(t)
	want := f.reply(t, []chat.Message{{Role: "user", Content: "Tell me a story."}}, assistant.Options{MaxTokens: 12})
	resp, b := f.post(t, "/v1/chat/completions", `{"messages":[{"role":"user","content":"Tell me a story."}],"max_tokens":12,"temperature":1.5,"top_p":0,"seed":7}`)
	var r map[string]any
	if err := json.Unmarshal(b, &r); err != nil || resp.StatusCode != 200 {
		t.Fatalf("%d %s", resp.StatusCode, b)
	}
	var got chatResponse
	json.Unmarshal(b, &got)
	if _, seeded := r["seed"]; seeded || got.Choices[0].Message.Content != want.Text {
		t.Fatalf("top_p 0: %s, want the greedy %q and no seed", b, want.Text)
	}
}

// TestRoles checks that developer is system and that a role the template cannot render is
// refused rather than dropped.
func TestRoles(t *testing.T) {
	f := newFixture(t)
	want := f.reply(t, []chat.Message{{Role: "system", Content: "Be brief."}, {Role: "user", Content: "hi"}}, assistant.Options{MaxTokens: 6})
	resp, b := f.post(t, "/v1/chat/completions", `{"max_tokens":6,"messages":[{"role":"developer","content":"Be brief."},{"role":"user","content":"hi"}]}`)
	var got chatResponse
	if err := json.Unmarshal(b, &got); err != nil || resp.StatusCode != 200 || got.Choices[0].Message.Content != want.Text {
		t.Fatalf("developer: %d %s, want system's %q", resp.StatusCode, b, want.Text)
	}
	for what, msgs := range map[string]string{
		"tool":       `[{"role":"user","content":"a"},{"role":"tool","content":"42","tool_call_id":"x"}]`,
		"function":   `[{"role":"function","content":"42","name":"f"}]`,
		"unknown":    `[{"role":"critic","content":"a"}]`,
		"tool_calls": `[{"role":"user","content":"a"},{"role":"assistant","content":"","tool_calls":[{"id":"x"}]}]`,
	} {
		resp, b := f.post(t, "/v1/chat/completions", `{"messages":`+msgs+`}`)
		wantError(t, what, resp, b, 400, "messages", "", "messages[")
	}
}

func TestModelByID(t *testing.T) {
	f := newFixture(t)
	resp, b := do(t, f.srv.URL, "GET", "/v1/models/tiny", "", nil)
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil || resp.StatusCode != 200 || m["id"] != "tiny" || m["object"] != "model" ||
		m["context_length"] != float64(testContext) {
		t.Fatalf("/v1/models/tiny: %d %s", resp.StatusCode, b)
	}
	resp, b = do(t, f.srv.URL, "GET", "/v1/models/gpt-4o", "", nil)
	wantError(t, "another model", resp, b, 404, "model", "model_not_found", `"gpt-4o" does not exist`)
}

// TestBounds checks that a body over maxBody is a 413 and that a prompt the context cannot
// hold by its length alone is refused before it is tokenized (the message counts bytes).
func TestBounds(t *testing.T) {
	f := newFixture(t)
	resp, b := f.post(t, "/v1/completions", `{"prompt":"`+strings.Repeat("a", maxBody)+`"}`)
	wantError(t, "huge body", resp, b, 413, "", "", "request body over")
	s := New(f.want, "tiny")
	long := strings.Repeat("x", 4*s.tokenBytes*testContext)
	if err := s.promptBound("prompt", len(long)-1); err != nil {
		t.Fatalf("a prompt just under the bound: %v", err)
	}
	resp, b = f.post(t, "/v1/completions", `{"prompt":"`+long+`"}`)
	wantError(t, "long prompt", resp, b, 400, "prompt", "context_length_exceeded", fmt.Sprintf("the prompt is %d bytes", len(long)))
	resp, b = f.post(t, "/v1/chat/completions", `{"messages":[{"role":"user","content":"`+long+`"}]}`)
	wantError(t, "long message", resp, b, 400, "messages", "context_length_exceeded", "bytes")
}

// TestGuards checks the Host, Origin, API key and Content-Type checks.
func TestGuards(t *testing.T) {
	path := modelgentest.TinyQ8(t)
	s := New(newChat(t, path), "tiny")
	s.APIKey, s.Origins = "sekrit", []string{"http://localhost:3000"}
	u := serveFixture(t, s, nil).srv.URL
	auth := map[string]string{"Authorization": "Bearer sekrit"}

	resp, b := do(t, u, "GET", "/v1/models", "", map[string]string{"Host": "rebound.example:8080", "Authorization": "Bearer sekrit"})
	wantError(t, "foreign Host", resp, b, 403, "", "host_not_allowed", "rebound.example")
	for _, h := range []string{"localhost:1", "app.localhost", "127.0.0.2:80", "[::1]:8080"} {
		if resp, b := do(t, u, "GET", "/v1/models", "", map[string]string{"Host": h, "Authorization": "Bearer sekrit"}); resp.StatusCode != 200 {
			t.Errorf("Host %s: %d %s", h, resp.StatusCode, b)
		}
	}
	resp, b = do(t, u, "GET", "/v1/models", "", nil)
	wantError(t, "no key", resp, b, 401, "", "invalid_api_key", "API key")
	resp, b = do(t, u, "GET", "/v1/models", "", map[string]string{"Authorization": "Bearer wrong"})
	wantError(t, "wrong key", resp, b, 401, "", "invalid_api_key", "API key")
	if resp, b := do(t, u, "GET", "/v1/models", "", auth); resp.StatusCode != 200 {
		t.Fatalf("with the key: %d %s", resp.StatusCode, b)
	}
	if resp, _ := do(t, u, "GET", "/health", "", nil); resp.StatusCode != 200 {
		t.Fatalf("/health without the key: %d", resp.StatusCode)
	}

	resp, b = do(t, u, "POST", "/v1/completions", `{"prompt":"a"}`, map[string]string{"Origin": "http://evil.example", "Authorization": "Bearer sekrit"})
	wantError(t, "foreign origin", resp, b, 403, "", "origin_not_allowed", "http://evil.example")
	resp, _ = do(t, u, "OPTIONS", "/v1/chat/completions", "", map[string]string{"Origin": "http://localhost:3000",
		"Access-Control-Request-Method": "POST", "Access-Control-Request-Headers": "authorization, content-type, x-stainless-os"})
	h := resp.Header
	if resp.StatusCode != 204 || h.Get("Access-Control-Allow-Origin") != "http://localhost:3000" ||
		!strings.Contains(h.Get("Access-Control-Allow-Methods"), "POST") || h.Get("Access-Control-Allow-Headers") != "authorization, content-type, x-stainless-os" {
		t.Fatalf("preflight: %d %v", resp.StatusCode, h)
	}
	resp, b = do(t, u, "POST", "/v1/completions", `{"prompt":"a","max_tokens":2}`, map[string]string{"Origin": "http://localhost:3000", "Authorization": "Bearer sekrit"})
	if resp.StatusCode != 200 || resp.Header.Get("Access-Control-Allow-Origin") != "http://localhost:3000" {
		t.Fatalf("allowed origin: %d %v %s", resp.StatusCode, resp.Header, b)
	}

	resp, b = do(t, u, "POST", "/v1/completions", `{"prompt":"a"}`, map[string]string{"Content-Type": "text/plain", "Authorization": "Bearer sekrit"})
	wantError(t, "text/plain", resp, b, 415, "", "", "want application/json")
	if resp, b := do(t, u, "POST", "/v1/completions", `{"prompt":"a","max_tokens":2}`, map[string]string{"Content-Type": "application/json; charset=utf-8", "Authorization": "Bearer sekrit"}); resp.StatusCode != 200 {
		t.Fatalf("JSON with a charset: %d %s", resp.StatusCode, b)
	}
}

// TestShuttingDown checks that a request whose server is stopping (its base context cancelled
// with ErrShuttingDown) is answered 503 saying so, not as a client gone away.
func TestShuttingDown(t *testing.T) {
	path := modelgentest.TinyQ8(t)
	srv := httptest.NewUnstartedServer(New(newChat(t, path), "tiny"))
	base, cancel := context.WithCancelCause(context.Background())
	cancel(ErrShuttingDown)
	srv.Config.BaseContext = func(net.Listener) context.Context { return base }
	srv.Start()
	t.Cleanup(srv.Close)
	resp, b := do(t, srv.URL, "POST", "/v1/chat/completions", `{`+hi+`}`, nil)
	wantError(t, "shutting down", resp, b, 503, "", "server_shutting_down", ErrShuttingDown.Error())
}
