package serve

import (
	"bufio"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/trochilus-llm/trochilus/engine"
	"github.com/trochilus-llm/trochilus/engine/assistant"
	"github.com/trochilus-llm/trochilus/tokenizer/chat"
)

// ollamaLine is one line of an Ollama answer: a piece of text, or the last line's totals.
type ollamaLine struct {
	Model     string `json:"model"`
	CreatedAt string `json:"created_at"`
	Message   *struct {
		Role, Content string
	} `json:"message"`
	Response   *string `json:"response"`
	Done       bool    `json:"done"`
	DoneReason string  `json:"done_reason"`
	PromptEval int     `json:"prompt_eval_count"`
	Eval       int     `json:"eval_count"`
	EvalNanos  int64   `json:"eval_duration"`
	Error      string  `json:"error"`
}

func (l *ollamaLine) text() string {
	if l.Message != nil {
		return l.Message.Content
	}
	if l.Response != nil {
		return *l.Response
	}
	return ""
}

// readOllama reads an answer of newline-delimited JSON: the text of its lines joined, and the
// last line, which must say done (and be the only one that does).
func readOllama(t *testing.T, resp *http.Response, body []byte) (string, ollamaLine) {
	t.Helper()
	if resp.StatusCode != 200 {
		t.Fatalf("status %d: %s", resp.StatusCode, body)
	}
	var text strings.Builder
	var last ollamaLine
	sc := bufio.NewScanner(strings.NewReader(string(body)))
	n := 0
	for sc.Scan() {
		if last.Done {
			t.Fatalf("a line after the last: %q", sc.Text())
		}
		last = ollamaLine{}
		if err := json.Unmarshal(sc.Bytes(), &last); err != nil {
			t.Fatalf("line %d %q: %v", n, sc.Text(), err)
		}
		if last.Error != "" {
			t.Fatalf("error line: %s", last.Error)
		}
		text.WriteString(last.text())
		n++
	}
	if !last.Done || n < 1 {
		t.Fatalf("%d lines, the last not done: %s", n, body)
	}
	return text.String(), last
}

// ollama posts body to an Ollama route and reads the answer.
func (f *fixture) ollama(t *testing.T, path, body string) (string, ollamaLine) {
	t.Helper()
	resp, b := f.post(t, path, body)
	return readOllama(t, resp, b)
}

func TestOllamaChat(t *testing.T) {
	f := newFixture(t)
	turns := []chat.Message{{Role: "system", Content: "You are terse."}, {Role: "user", Content: "Name three colours."}}
	want := f.reply(t, turns, assistant.Options{MaxTokens: 12})
	req := `{"model":"tiny","messages":[{"role":"system","content":"You are terse."},{"role":"user","content":"Name three colours.","images":[]}],
		"options":{"temperature":0,"num_predict":12,"num_ctx":4096,"num_thread":3},"keep_alive":"5m"}`

	// Streamed by default, as Ollama does: lines of JSON.
	resp, body := f.post(t, "/api/chat", req)
	if ct := resp.Header.Get("Content-Type"); ct != "application/x-ndjson" {
		t.Fatalf("Content-Type %q", ct)
	}
	text, last := readOllama(t, resp, body)
	if text != want.Text || last.DoneReason != finishReason(&want) || last.Eval != want.Tokens || last.Model != "tiny" {
		t.Fatalf("streamed %q, last %+v; want %q (%s, %d tokens)", text, last, want.Text, finishReason(&want), want.Tokens)
	}
	if last.Message == nil || last.Message.Role != "assistant" || last.CreatedAt == "" {
		t.Fatalf("last line %s", body)
	}

	// Whole with "stream": false: one object, the whole text, the same answer (the prompt's
	// cache is reused, the tokens are the same).
	resp, body = f.post(t, "/api/chat", strings.Replace(req, `"model":"tiny"`, `"model":"tiny","stream":false`, 1))
	if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
		t.Fatalf("Content-Type %q", ct)
	}
	text, last = readOllama(t, resp, body)
	if text != want.Text || last.Eval != want.Tokens || last.PromptEval > want.Prompt {
		t.Fatalf("whole %q %+v, want %q", text, last, want.Text)
	}

	// No messages: Ollama's way to load a model.
	_, body = f.post(t, "/api/chat", `{"model":"tiny","messages":[]}`)
	if _, last = readOllama(t, &http.Response{StatusCode: 200}, body); last.DoneReason != "load" {
		t.Fatalf("load: %s", body)
	}
}

// TestOllamaSampling checks that a request without sampling options samples with Ollama's
// defaults, and that a seed in the options reproduces the answer the engine gives for it.
func TestOllamaSampling(t *testing.T) {
	f := newFixture(t)
	want := f.sampledStory(t, 42)
	for range 2 {
		text, _ := f.ollama(t, "/api/chat", `{"stream":false,"model":"x","options":{"seed":42,"num_predict":16},
			"messages":[{"role":"user","content":"Tell me a story."}]}`)
		if text != want.Text {
			t.Fatalf("seed 42: %q, want %q", text, want.Text)
		}
	}
	tuned := f.reply(t, story, assistant.Options{MaxTokens: 16, Sampling: &engine.Sampling{Temperature: 1.3, TopK: 5, TopP: 0.5, Seed: 7}})
	text, _ := f.ollama(t, "/api/chat", `{"stream":false,"options":{"seed":7,"num_predict":16,"temperature":1.3,"top_k":5,"top_p":0.5},
		"messages":[{"role":"user","content":"Tell me a story."}]}`)
	if text != tuned.Text {
		t.Fatalf("tuned: %q, want %q", text, tuned.Text)
	}
}

func TestOllamaGenerate(t *testing.T) {
	f := newFixture(t)
	turns := []chat.Message{{Role: "system", Content: "Answer in French."}, {Role: "user", Content: "Why is the sky blue?"}}
	want := f.reply(t, turns, assistant.Options{MaxTokens: 10})
	text, last := f.ollama(t, "/api/generate", `{"model":"tiny","prompt":"Why is the sky blue?","system":"Answer in French.",
		"options":{"temperature":0,"num_predict":10}}`)
	if text != want.Text || last.Response == nil || last.Eval != want.Tokens {
		t.Fatalf("generate %q %+v, want %q", text, last, want.Text)
	}

	// raw: the prompt as written, its control tokens read as tokens.
	prompt, err := f.want.Render([]chat.Message{{Role: "user", Content: "Hi"}})
	if err != nil {
		t.Fatal(err)
	}
	raw, err := f.want.Complete(t.Context(), prompt, assistant.Options{MaxTokens: 8, SpecialText: true})
	if err != nil {
		t.Fatal(err)
	}
	body, _ := json.Marshal(map[string]any{"prompt": prompt, "raw": true, "stream": false, "options": map[string]any{"temperature": 0, "num_predict": 8}})
	if text, _ := f.ollama(t, "/api/generate", string(body)); text != raw.Text {
		t.Fatalf("raw %q, want %q", text, raw.Text)
	}

	_, body = f.post(t, "/api/generate", `{"model":"tiny"}`)
	if _, last = readOllama(t, &http.Response{StatusCode: 200}, body); last.DoneReason != "load" {
		t.Fatalf("load: %s", body)
	}
}

func TestOllamaModelInfo(t *testing.T) {
	f := newFixture(t)
	get := func(path string) map[string]any {
		t.Helper()
		resp, body := do(t, f.srv.URL, http.MethodGet, path, "", nil)
		var v map[string]any
		if resp.StatusCode != 200 || json.Unmarshal(body, &v) != nil {
			t.Fatalf("GET %s: %d %s", path, resp.StatusCode, body)
		}
		return v
	}
	if v := get("/api/version"); v["version"] != ollamaVersion {
		t.Fatalf("version %v", v)
	}
	for _, path := range []string{"/api/tags", "/api/ps"} {
		models, _ := get(path)["models"].([]any)
		if len(models) != 1 {
			t.Fatalf("%s: %v", path, models)
		}
		m := models[0].(map[string]any)
		d, _ := m["details"].(map[string]any)
		if m["name"] != "tiny:latest" || m["model"] != "tiny:latest" || m["size"].(float64) <= 0 ||
			d["format"] != "gguf" || d["family"] != "olmoe" || d["quantization_level"] != "Q8_0" || d["parameter_size"] == "" {
			t.Fatalf("%s: %v", path, m)
		}
	}
	for _, name := range []string{"tiny", "tiny:latest"} {
		resp, body := f.post(t, "/api/show", `{"model":"`+name+`"}`)
		var v map[string]any
		if resp.StatusCode != 200 || json.Unmarshal(body, &v) != nil {
			t.Fatalf("show %s: %d %s", name, resp.StatusCode, body)
		}
		info, _ := v["model_info"].(map[string]any)
		if info["general.architecture"] != "olmoe" || info["olmoe.block_count"].(float64) < 1 || v["template"] == "" {
			t.Fatalf("show: %s", body)
		}
	}
	resp, body := f.post(t, "/api/show", `{"model":"llama3:8b"}`)
	if resp.StatusCode != 404 || !strings.Contains(string(body), `"error":"model 'llama3:8b' not found`) {
		t.Fatalf("show of another model: %d %s", resp.StatusCode, body)
	}
	resp, body = do(t, f.srv.URL, http.MethodGet, "/", "", nil)
	if resp.StatusCode != 200 || !strings.HasPrefix(string(body), "Ollama is running") {
		t.Fatalf("GET /: %d %s", resp.StatusCode, body)
	}
}

// TestOllamaRefusals checks that what serve cannot honour is a 400 naming it, in Ollama's error
// shape, and that every other failure is answered in that shape too.
func TestOllamaRefusals(t *testing.T) {
	f := newFixture(t)
	msgs := `"messages":[{"role":"user","content":"Hi"}]`
	for _, c := range []struct {
		path, body string
		status     int
		want       string
	}{
		{"/api/chat", `{` + msgs + `,"options":{"repeat_penalty":1.1}}`, 400, "options.repeat_penalty: repetition penalties"},
		{"/api/chat", `{` + msgs + `,"options":{"temprature":0.5}}`, 400, "Unrecognized request argument supplied: options.temprature"},
		{"/api/chat", `{` + msgs + `,"options":{"temperature":"hot"}}`, 400, "options.temperature: want a number"},
		{"/api/chat", `{` + msgs + `,"options":{"temperature":-1}}`, 400, "temperature -1"},
		{"/api/chat", `{` + msgs + `,"options":{"num_predict":0}}`, 400, "num_predict 0: want at least 1"},
		{"/api/chat", `{` + msgs + `,"format":"yaml"}`, 400, `format "yaml": want "json" or a JSON Schema object`},
		{"/api/chat", `{` + msgs + `,"format":{"type":"string","pattern":"a+"}}`, 400, `format: schema at /: keyword "pattern" is not supported`},
		{"/api/chat", `{` + msgs + `,"tools":[{"type":"function","function":{"name":"f"}}]}`, 400, "tools: the model's chat template does not render tools"},
		{"/api/generate", `{"prompt":"Hi","tools":[{"type":"function","function":{"name":"f"}}]}`, 400, "tools: tools are for /api/chat"},
		{"/api/chat", `{` + msgs + `,"think":true}`, 400, "think: separated thinking"},
		{"/api/chat", `{"messages":[{"role":"user","content":"Hi","images":["aGk="]}]}`, 400, "messages[0].images: images are not supported"},
		{"/api/chat", `{"messages":[{"role":"tool","content":"42"}]}`, 400, "tool results need a model whose template renders tools"},
		{"/api/chat", `{"messages":"Hi"}`, 400, "messages: want a list"},
		{"/api/chat", `[1]`, 400, "want a JSON object"},
		{"/api/generate", `{"prompt":"Hi","context":[1,2,3]}`, 400, "context: the context of an earlier answer"},
		{"/api/generate", `{"prompt":"Hi","raw":true,"system":"S"}`, 400, "system: a raw prompt has no template"},
		{"/api/generate", `{"prompt":"Hi","template":"{{ .Prompt }}"}`, 400, "template: a request's own template"},
		{"/api/pull", `{"model":"llama3"}`, 501, "/api/pull is not supported"},
		{"/api/embed", `{"model":"x","input":"Hi"}`, 501, "/api/embed is not supported"},
		{"/api/nothing", `{}`, 404, "no such route"},
	} {
		resp, body := f.post(t, c.path, c.body)
		var e struct{ Error string }
		if resp.StatusCode != c.status || json.Unmarshal(body, &e) != nil || !strings.Contains(e.Error, c.want) {
			t.Errorf("%s %s: %d %s, want %d with %q", c.path, c.body, resp.StatusCode, body, c.status, c.want)
		}
	}
	resp, body := do(t, f.srv.URL, http.MethodGet, "/api/chat", "", nil)
	if resp.StatusCode != 405 || !strings.Contains(string(body), `{"error":"GET /api/chat: want POST"}`) {
		t.Errorf("GET /api/chat: %d %s", resp.StatusCode, body)
	}

	// The guard's refusals take Ollama's shape under /api/ too.
	s := New(f.want, "tiny")
	s.APIKey = "k"
	srv := serveFixture(t, s, nil).srv
	resp, body = do(t, srv.URL, http.MethodGet, "/api/tags", "", nil)
	if resp.StatusCode != 401 || !strings.HasPrefix(string(body), `{"error":"missing or incorrect API key`) {
		t.Errorf("without the key: %d %s", resp.StatusCode, body)
	}
	if resp, _ = do(t, srv.URL, http.MethodGet, "/api/tags", "", map[string]string{"Authorization": "Bearer k"}); resp.StatusCode != 200 {
		t.Errorf("with the key: %d", resp.StatusCode)
	}
}

// TestOllamaAsItsDocsCall checks what Ollama's own documentation does: curl -d posts JSON as a
// form (accepted under /api/ when no page sent it; still refused from a page and under /v1),
// and seed -1 asks for a fresh seed each time.
func TestOllamaAsItsDocsCall(t *testing.T) {
	f := newFixture(t)
	form := map[string]string{"Content-Type": "application/x-www-form-urlencoded"}
	resp, body := do(t, f.srv.URL, http.MethodPost, "/api/generate", `{"prompt":"Hi","stream":false,"options":{"num_predict":2}}`, form)
	if resp.StatusCode != 200 {
		t.Fatalf("curl -d to /api/generate: %d %s", resp.StatusCode, body)
	}
	if resp, _ := do(t, f.srv.URL, http.MethodPost, "/v1/completions", `{"prompt":"Hi","max_tokens":2}`, form); resp.StatusCode != 415 {
		t.Fatalf("a form to /v1: %d, want 415", resp.StatusCode)
	}
	fromPage := map[string]string{"Content-Type": "text/plain", "Origin": "http://evil.example"}
	if resp, _ := do(t, f.srv.URL, http.MethodPost, "/api/generate", `{"prompt":"Hi"}`, fromPage); resp.StatusCode != 403 {
		t.Fatalf("a page's text/plain POST to /api: %d, want 403", resp.StatusCode)
	}
	seen := map[string]bool{}
	for range 3 {
		text, _ := f.ollama(t, "/api/chat", `{"stream":false,"options":{"seed":-1,"num_predict":12},"messages":[{"role":"user","content":"Tell me a story."}]}`)
		seen[text] = true
	}
	if len(seen) < 2 {
		t.Fatalf("seed -1 gave the same answer three times: %v", seen)
	}
}
