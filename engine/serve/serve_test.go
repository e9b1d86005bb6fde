package serve

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/trochilus-llm/trochilus/engine"
	"github.com/trochilus-llm/trochilus/engine/assistant"
	"github.com/trochilus-llm/trochilus/internal/modelgen/modelgentest"
	"github.com/trochilus-llm/trochilus/internal/modelgen/modelgentest/enginetest"
	"github.com/trochilus-llm/trochilus/tokenizer/chat"
)

func TestMain(m *testing.M) { os.Exit(modelgentest.RunTests(m)) }

const testContext = 256

// openChat loads the model at path with a chat of the given positions.
func openChat(t *testing.T, path string, positions int) *assistant.Chat {
	t.Helper()
	c, err := assistant.New(enginetest.Open(t, path, engine.Options{}, positions))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// newChat loads the model at path with a chat of testContext positions.
func newChat(t *testing.T, path string) *assistant.Chat {
	t.Helper()
	return openChat(t, path, testContext)
}

// fixture is a server on the tiny model and a second, independent chat on the same file that
// computes what the answers must be.
type fixture struct {
	srv  *httptest.Server
	want *assistant.Chat
}

// serveFixture serves s, logging to the test, until the test ends; want is the fixture's
// independent chat (nil where a test needs none).
func serveFixture(t *testing.T, s *Server, want *assistant.Chat) *fixture {
	s.Log = t.Logf
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	return &fixture{srv: srv, want: want}
}

// modelFixture is a server called name on a chat of the given positions over the model at
// path, with a second chat of as many positions beside it.
func modelFixture(t *testing.T, path, name string, positions int) *fixture {
	return serveFixture(t, New(openChat(t, path, positions), name), openChat(t, path, positions))
}

func newFixture(t *testing.T) *fixture {
	return modelFixture(t, modelgentest.TinyQ8(t), "tiny", testContext)
}

// newTrainedFixture serves tools/train's trained tiny model (testdata/trained), whose answers
// are text a client can parse, not the noise of random weights.
func newTrainedFixture(t *testing.T) *fixture {
	return modelFixture(t, modelgentest.TrainedModel(t, "q8_0"), "tiny", testContext)
}

func (f *fixture) post(t *testing.T, path, body string) (*http.Response, []byte) {
	t.Helper()
	return do(t, f.srv.URL, http.MethodPost, path, body, nil)
}

func (f *fixture) reply(t *testing.T, turns []chat.Message, opts assistant.Options) assistant.Reply {
	t.Helper()
	r, err := f.want.Reply(context.Background(), turns, opts)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// story is the question the sampling tests ask.
var story = []chat.Message{{Role: "user", Content: "Tell me a story."}}

// sampledStory is the independent chat's answer to story in 16 tokens, sampled with seed at
// temperature 0.8, top-k 40 and top-p 0.9 (Ollama's defaults); a seed whose sample is the
// greedy answer fails the test, which could not tell sampling from greedy decoding with it.
func (f *fixture) sampledStory(t *testing.T, seed uint64) assistant.Reply {
	t.Helper()
	sp := &engine.Sampling{Temperature: 0.8, TopK: 40, TopP: 0.9, Seed: seed}
	want := f.reply(t, story, assistant.Options{MaxTokens: 16, Sampling: sp})
	if greedy := f.reply(t, story, assistant.Options{MaxTokens: 16}); want.Text == greedy.Text {
		t.Fatalf("seed %d samples the greedy answer %q: pick another seed", seed, want.Text)
	}
	return want
}

type chatResponse struct {
	ID, Object, Model string
	Choices           []struct {
		Index        int
		Message      struct{ Role, Content string }
		Text         string
		FinishReason *string `json:"finish_reason"`
	}
	Usage *usage
}

func TestChatCompletion(t *testing.T) {
	f := newFixture(t)
	turns := []chat.Message{{Role: "system", Content: "You are terse."}, {Role: "user", Content: "Name three colours."}}
	want := f.reply(t, turns, assistant.Options{MaxTokens: 12})

	resp, body := f.post(t, "/v1/chat/completions", `{"model":"anything","max_tokens":12,"temperature":0,
		"messages":[{"role":"system","content":"You are terse."},{"role":"user","content":[{"type":"text","text":"Name three "},{"type":"text","text":"colours."}]}]}`)
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("status %d %s: %s", resp.StatusCode, resp.Header.Get("Content-Type"), body)
	}
	var got chatResponse
	if err := json.Unmarshal(body, &got); err != nil {
		t.Fatal(err)
	}
	if got.Object != "chat.completion" || got.Model != "tiny" || !strings.HasPrefix(got.ID, "chatcmpl-") || len(got.Choices) != 1 {
		t.Fatalf("response %s", body)
	}
	c := got.Choices[0]
	if c.Message.Role != "assistant" || c.Message.Content != want.Text || *c.FinishReason != finishReason(&want) {
		t.Fatalf("choice %+v, want %q (%s)", c, want.Text, finishReason(&want))
	}
	if u := got.Usage; u == nil || u.PromptTokens != want.Prompt || u.CompletionTokens != want.Tokens || u.TotalTokens != want.Prompt+want.Tokens {
		t.Fatalf("usage %+v, want prompt %d completion %d", got.Usage, want.Prompt, want.Tokens)
	}
}

// readEvents reads a server-sent event stream: the data of each event, up to [DONE].
func readEvents(t *testing.T, r io.Reader) (data []string, done bool) {
	t.Helper()
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		line := sc.Text()
		if line == "" {
			continue
		}
		d, ok := strings.CutPrefix(line, "data: ")
		if !ok {
			t.Fatalf("not an event line: %q", line)
		}
		if d == "[DONE]" {
			return data, true
		}
		data = append(data, d)
	}
	return data, false
}

func TestChatCompletionStreamed(t *testing.T) {
	f := newFixture(t)
	turns := []chat.Message{{Role: "user", Content: "Tell me a story."}}
	want := f.reply(t, turns, assistant.Options{MaxTokens: 20})

	resp, body := f.post(t, "/v1/chat/completions", `{"stream":true,"stream_options":{"include_usage":true},
		"max_completion_tokens":20,"messages":[{"role":"user","content":"Tell me a story."}]}`)
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("status %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	events, done := readEvents(t, strings.NewReader(string(body)))
	if !done || len(events) < 3 {
		t.Fatalf("events %q (done %v)", events, done)
	}
	var text strings.Builder
	var finish string
	for i, e := range events {
		var chunk struct {
			Object  string
			Choices []struct {
				Delta        map[string]string
				FinishReason *string `json:"finish_reason"`
			}
			Usage *usage
		}
		if err := json.Unmarshal([]byte(e), &chunk); err != nil {
			t.Fatal(err)
		}
		if chunk.Object != "chat.completion.chunk" {
			t.Fatalf("event %d: %s", i, e)
		}
		if i == len(events)-1 { // the usage
			if len(chunk.Choices) != 0 || chunk.Usage == nil || chunk.Usage.CompletionTokens != want.Tokens {
				t.Fatalf("usage event %s", e)
			}
			break
		}
		if i == 0 && chunk.Choices[0].Delta["role"] != "assistant" {
			t.Fatalf("first event %s", e)
		}
		text.WriteString(chunk.Choices[0].Delta["content"])
		if fr := chunk.Choices[0].FinishReason; fr != nil {
			if i != len(events)-2 {
				t.Fatalf("finish reason before the end: %s", e)
			}
			finish = *fr
		}
	}
	if text.String() != want.Text || finish != finishReason(&want) {
		t.Fatalf("streamed %q (%s), want %q (%s)", text.String(), finish, want.Text, finishReason(&want))
	}
}

func TestCompletion(t *testing.T) {
	f := newFixture(t)
	r, err := f.want.Complete(context.Background(), "Once upon a time", assistant.Options{MaxTokens: 9, Stop: []string{"\n\n"}})
	if err != nil {
		t.Fatal(err)
	}
	resp, body := f.post(t, "/v1/completions", `{"prompt":"Once upon a time","max_tokens":9,"stop":"\n\n"}`)
	var got chatResponse
	if err := json.Unmarshal(body, &got); err != nil || resp.StatusCode != 200 {
		t.Fatalf("status %d: %s (%v)", resp.StatusCode, body, err)
	}
	if got.Object != "text_completion" || got.Choices[0].Text != r.Text || got.Usage.CompletionTokens != r.Tokens {
		t.Fatalf("completion %s, want %q", body, r.Text)
	}
	// Streamed, the pieces add up to the same text.
	_, body = f.post(t, "/v1/completions", `{"prompt":["Once upon a time"],"max_tokens":9,"stop":["\n\n"],"stream":true}`)
	events, done := readEvents(t, strings.NewReader(string(body)))
	var text strings.Builder
	for _, e := range events {
		var chunk chatResponse
		if err := json.Unmarshal([]byte(e), &chunk); err != nil {
			t.Fatal(err)
		}
		text.WriteString(chunk.Choices[0].Text)
	}
	if !done || text.String() != r.Text {
		t.Fatalf("streamed %q, want %q", text.String(), r.Text)
	}
}

func TestRefusals(t *testing.T) {
	f := newFixture(t)
	long := strings.Repeat("word ", testContext)
	for _, c := range []struct {
		path, body string
		status     int
		says       string
	}{
		{"/v1/chat/completions", `{"messages":[{"role":"user","content":"hi"}],"temperature":-0.5}`, 400, "temperature"},
		{"/v1/chat/completions", `{"messages":[{"role":"user","content":"hi"}],"temperature":1,"top_p":1.5}`, 400, "top_p"},
		{"/v1/chat/completions", `{"messages":[{"role":"user","content":"hi"}],"temperature":1,"top_k":-2}`, 400, "top_k"},
		{"/v1/chat/completions", `{"messages":[{"role":"user","content":"hi"}],"presence_penalty":0.5}`, 400, "penalties"},
		{"/v1/chat/completions", `{"messages":[{"role":"user","content":"hi"}],"n":2}`, 400, "one choice"},
		{"/v1/chat/completions", `{"messages":[{"role":"user","content":"hi"}],"logprobs":true,"top_logprobs":21}`, 400, "top_logprobs 21"},
		{"/v1/chat/completions", `{"messages":[{"role":"user","content":"hi"}],"top_logprobs":2}`, 400, "needs"},
		{"/v1/completions", `{"prompt":"hi","logprobs":6}`, 400, "logprobs 6"},
		{"/v1/chat/completions", `{"messages":[{"role":"user","content":"hi"}],"tools":[{"type":"function"}]}`, 400, "tools"},
		{"/v1/chat/completions", `{"messages":[{"role":"user","content":"hi"}],"max_tokens":0}`, 400, "max_tokens"},
		{"/v1/chat/completions", `{"messages":[{"role":"user","content":"hi"}],"stop":3}`, 400, "stop"},
		{"/v1/chat/completions", `{"messages":[]}`, 400, "at least one"},
		{"/v1/chat/completions", `{"messages":[{"content":"hi"}]}`, 400, "role"},
		{"/v1/chat/completions", `{"messages":[{"role":"user","content":[{"type":"image_url"}]}]}`, 400, "only text"},
		{"/v1/chat/completions", `{"messages":[{"role":"user","content":"hi"}`, 400, "request body"},
		{"/v1/chat/completions", `{"messages":[{"role":"user","content":"` + long + `"}]}`, 400, "context"},
		{"/v1/completions", `{"prompt":"` + long + `"}`, 400, "context"},
		{"/v1/completions", `{"prompt":["a","b"]}`, 400, "prompt"},
		{"/v1/completions", `{"prompt":"a","echo":true}`, 400, "echo"},
	} {
		resp, body := f.post(t, c.path, c.body)
		var e errorBody
		if resp.StatusCode != c.status || json.Unmarshal(body, &e) != nil || !strings.Contains(e.Error.Message, c.says) {
			t.Errorf("%s %.80s: status %d, %s; want %d saying %q", c.path, c.body, resp.StatusCode, body, c.status, c.says)
		}
	}
	resp, err := http.Get(f.srv.URL + "/v1/chat/completions")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Fatalf("GET a POST endpoint: %d", resp.StatusCode)
	}
	// After all that, an answer is still what it must be.
	want := f.reply(t, []chat.Message{{Role: "user", Content: "hi"}}, assistant.Options{MaxTokens: 5})
	_, body := f.post(t, "/v1/chat/completions", `{"max_tokens":5,"messages":[{"role":"user","content":"hi"}]}`)
	var got chatResponse
	if err := json.Unmarshal(body, &got); err != nil || got.Choices[0].Message.Content != want.Text {
		t.Fatalf("after refusals: %s, want %q", body, want.Text)
	}
}

// TestSampledAnswers checks that a temperature samples with the request's seed (the same seed,
// the same answer, the one package assistant gives) and that without a seed the response
// reports the one it drew, which reproduces the answer.
func TestSampledAnswers(t *testing.T) {
	f := newFixture(t)
	want := f.sampledStory(t, 1234)
	ask := func(body string) (string, uint64) {
		t.Helper()
		resp, b := f.post(t, "/v1/chat/completions", body)
		var r struct {
			chatResponse
			Seed *uint64
		}
		if err := json.Unmarshal(b, &r); err != nil || resp.StatusCode != 200 || r.Seed == nil {
			t.Fatalf("status %d: %s (%v)", resp.StatusCode, b, err)
		}
		return r.Choices[0].Message.Content, *r.Seed
	}
	msgs := `"messages":[{"role":"user","content":"Tell me a story."}],"max_tokens":16`
	for range 2 {
		if got, seed := ask(`{` + msgs + `,"temperature":0.8,"top_k":40,"top_p":0.9,"seed":1234}`); got != want.Text || seed != 1234 {
			t.Fatalf("seed 1234: %q (seed %d), want %q", got, seed, want.Text)
		}
	}
	first, seed := ask(`{` + msgs + `,"temperature":0.8}`)
	again, _ := ask(fmt.Sprintf(`{%s,"temperature":0.8,"seed":%d}`, msgs, seed))
	if first != again {
		t.Fatalf("the reported seed %d gave %q, the first answer %q", seed, again, first)
	}
}

func TestModelsAndHealth(t *testing.T) {
	f := newFixture(t)
	for path, want := range map[string]string{"/v1/models": `"id":"tiny"`, "/health": `"status":"ok"`} {
		resp, err := http.Get(f.srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || !strings.Contains(string(b), want) {
			t.Fatalf("%s: %d %s", path, resp.StatusCode, b)
		}
	}
}

// Requests at once are answered one after another, each as if alone; a client that goes away
// mid-stream stops its answer and leaves the server answering correctly.
func TestConcurrentAndAbandoned(t *testing.T) {
	f := newFixture(t)
	prompts := []string{"First question?", "Second question?", "Third question?"}
	wants := make([]string, len(prompts))
	for i, p := range prompts {
		wants[i] = f.reply(t, []chat.Message{{Role: "user", Content: p}}, assistant.Options{MaxTokens: 8}).Text
	}
	var wg sync.WaitGroup
	got := make([]string, len(prompts))
	for i, p := range prompts {
		wg.Go(func() {
			body, _ := json.Marshal(map[string]any{"max_tokens": 8, "messages": []map[string]string{{"role": "user", "content": p}}})
			resp, err := http.Post(f.srv.URL+"/v1/chat/completions", "application/json", strings.NewReader(string(body)))
			if err != nil {
				t.Error(err)
				return
			}
			defer resp.Body.Close()
			var r chatResponse
			if err := json.NewDecoder(resp.Body).Decode(&r); err != nil || len(r.Choices) != 1 {
				t.Errorf("request %d: %v", i, err)
				return
			}
			got[i] = r.Choices[0].Message.Content
		})
	}
	wg.Wait()
	for i := range prompts {
		if got[i] != wants[i] {
			t.Errorf("request %d answered %q, alone %q", i, got[i], wants[i])
		}
	}

	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "POST", f.srv.URL+"/v1/chat/completions",
		strings.NewReader(`{"stream":true,"max_tokens":200,"messages":[{"role":"user","content":"Go on and on."}]}`))
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(resp.Body).ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "data: ") {
		t.Fatalf("first event %q, %v", line, err)
	}
	cancel()
	resp.Body.Close()
	want := f.reply(t, []chat.Message{{Role: "user", Content: "Again?"}}, assistant.Options{MaxTokens: 6})
	_, body := f.post(t, "/v1/chat/completions", `{"max_tokens":6,"messages":[{"role":"user","content":"Again?"}]}`)
	var r chatResponse
	if err := json.Unmarshal(body, &r); err != nil || r.Choices[0].Message.Content != want.Text {
		t.Fatalf("after an abandoned stream: %s, want %q", body, want.Text)
	}
}
