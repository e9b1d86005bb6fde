package serve

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/trochilus-llm/trochilus/engine"
	"github.com/trochilus-llm/trochilus/engine/assistant"
	"github.com/trochilus-llm/trochilus/engine/structured"
	"github.com/trochilus-llm/trochilus/internal/modelgen/modelgentest"
	"github.com/trochilus-llm/trochilus/internal/modelgen/modelgentest/enginetest"
	"github.com/trochilus-llm/trochilus/tokenizer/chat"
)

// TestConcurrentRequests serves eight requests at once on four chats of one model (their
// tokens sharing passes), twice over: each answer — greedy, seeded, structured, raw text,
// streamed or not — is the one the engine gives that request alone. Each round's first four
// answers are held as they begin until all four have their chats, so that four chats answer
// at once whatever the timing, their tokens through the server's batcher.
func TestConcurrentRequests(t *testing.T) {
	path := modelgentest.TinyQ8(t)
	srv := serverOfChats(t, path, 4)
	const chats = 4
	var (
		mu       sync.Mutex
		begun    int
		waiting  int
		together chan struct{} // closed once the round's four answers have begun
		broken   bool
		held     int // the answers begun when broken was found
	)
	srv.answering = func() {
		mu.Lock()
		begun++
		if begun == chats && !broken {
			close(together)
		}
		ch := together
		mu.Unlock()
		<-ch
	}
	srv.waited = func() {
		mu.Lock()
		defer mu.Unlock()
		// While the first four are held no chat is released, so only the other four can be
		// waiting: a fifth means fewer than four chats answer at once. It fails the test, and
		// the held answers go on rather than wait forever.
		if waiting++; waiting > 8-chats && begun < chats && !broken {
			broken, held = true, begun
			close(together)
		}
	}
	if err := srv.Also(newChat(t, path)); err == nil {
		t.Fatal("Also took a chat of another model")
	}
	f := serveFixture(t, srv, newChat(t, path))

	type request struct {
		path, body string
		want       string
	}
	var reqs []request
	for i := range 8 {
		content := fmt.Sprintf("Question %d: name %d colours.", i, i+2)
		turns := []chat.Message{{Role: "user", Content: content}}
		msgs := `"messages":[{"role":"user","content":` + mustJSON(content) + `}]`
		switch i % 4 {
		case 0:
			reqs = append(reqs, request{"/v1/chat/completions", `{` + msgs + `,"max_tokens":12}`,
				f.reply(t, turns, assistant.Options{MaxTokens: 12}).Text})
		case 1:
			reqs = append(reqs, request{"/v1/chat/completions", `{` + msgs + `,"max_tokens":12,"temperature":0.9,"seed":` + fmt.Sprint(i) + `,"stream":true}`,
				f.reply(t, turns, assistant.Options{MaxTokens: 12, Sampling: &engine.Sampling{Temperature: 0.9, TopP: 1, Seed: uint64(i)}}).Text})
		case 2:
			format := structuredPerson(t)
			reqs = append(reqs, request{"/v1/chat/completions", `{` + msgs + `,"max_tokens":40,"response_format":{"type":"json_schema","json_schema":{"name":"p","schema":` + personSchema + `}}}`,
				f.reply(t, turns, assistant.Options{MaxTokens: 40, Format: format}).Text})
		case 3:
			raw, err := f.want.Complete(t.Context(), content, assistant.Options{MaxTokens: 10})
			if err != nil {
				t.Fatal(err)
			}
			reqs = append(reqs, request{"/v1/completions", `{"prompt":` + mustJSON(content) + `,"max_tokens":10}`, raw.Text})
		}
	}
	for round := range 2 {
		mu.Lock()
		begun, waiting, together = 0, 0, make(chan struct{})
		mu.Unlock()
		got := make([]string, len(reqs))
		var wg sync.WaitGroup
		for i, r := range reqs {
			wg.Go(func() {
				resp, body := f.post(t, r.path, r.body)
				if resp.StatusCode != 200 {
					got[i] = fmt.Sprintf("status %d: %s", resp.StatusCode, body)
					return
				}
				got[i] = answerText(t, r.path, string(body))
			})
		}
		wg.Wait()
		if broken {
			t.Fatalf("round %d: more than %d requests waited while %d answers were held: fewer than %d chats answer at once", round, 8-chats, held, chats)
		}
		for i, r := range reqs {
			if got[i] != r.want {
				t.Errorf("round %d request %d (%s): %q, alone %q", round, i, r.body, got[i], r.want)
			}
		}
	}
	// The answers' tokens went through the server's batcher. Which of them share a pass is
	// its timing, and not asserted here: TestBatcherSharesWaitingTokens (engine) holds its
	// first pass until four tokens wait, and fails unless they share it.
	passes, tokens := srv.batch.Stats()
	t.Logf("%d tokens in %d shared passes", tokens, passes)
	if passes == 0 || tokens < passes {
		t.Errorf("%d tokens in %d passes: the answers did not go through the batcher", tokens, passes)
	}
}

// answerText reads an answer's text from a whole or streamed response of either endpoint.
func answerText(t *testing.T, path, body string) string {
	t.Helper()
	type choice struct {
		Text    string
		Message struct{ Content string }
		Delta   struct{ Content string }
	}
	read := func(b string) string {
		var r struct{ Choices []choice }
		if err := json.Unmarshal([]byte(b), &r); err != nil {
			t.Fatalf("%s: %v: %s", path, err, b)
		}
		var out strings.Builder
		for _, c := range r.Choices {
			out.WriteString(c.Text + c.Message.Content + c.Delta.Content)
		}
		return out.String()
	}
	if !strings.HasPrefix(body, "data: ") {
		return read(body)
	}
	data, _ := readEvents(t, strings.NewReader(body))
	var out strings.Builder
	for _, d := range data {
		out.WriteString(read(d))
	}
	return out.String()
}

func structuredPerson(t *testing.T) *structured.Format {
	t.Helper()
	f, err := structured.CompileSchema([]byte(personSchema))
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// TestChatsReuseTheLastOne: with several chats, a client's next request takes the chat
// released last, which holds its conversation: the prompt is evaluated again only past what
// it repeats.
func TestChatsReuseTheLastOne(t *testing.T) {
	f := serveFixture(t, serverOfChats(t, modelgentest.TinyQ8(t), 3), nil)
	body := `{"stream":false,"messages":[{"role":"user","content":"Name three colours."}],"options":{"temperature":0,"num_predict":3}}`
	for i := range 3 {
		resp, b := f.post(t, "/api/chat", body)
		var r struct {
			PromptEvalCount int `json:"prompt_eval_count"`
		}
		if json.Unmarshal(b, &r) != nil || resp.StatusCode != 200 || i > 0 && r.PromptEvalCount != 1 {
			t.Fatalf("request %d: %d %s; want all but one prompt token reused after the first", i, resp.StatusCode, b)
		}
	}
}

// serverOfChats is a server with n chats over sessions of one load of the model at path.
func serverOfChats(t *testing.T, path string, n int) *Server {
	t.Helper()
	m, first := enginetest.Open(t, path, engine.Options{Threads: 2}, testContext)
	c, err := assistant.New(m, first)
	if err != nil {
		t.Fatal(err)
	}
	srv := New(c, "tiny")
	for range n - 1 {
		sess, err := m.NewSession(engine.SessionOptions{Context: testContext})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { sess.Close() })
		more, err := assistant.New(m, sess)
		if err == nil {
			err = srv.Also(more)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	return srv
}
