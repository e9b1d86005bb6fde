package serve

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/trochilus-llm/trochilus/engine/assistant"
	"github.com/trochilus-llm/trochilus/internal/modelgen/modelgentest"
	"github.com/trochilus-llm/trochilus/tokenizer/chat"
)

// holdHeader marks the requests a holder watches: "watch" only reports when the answer has
// written its first event; any other value also holds it there.
const holdHeader = "X-Test-Hold"

// A holder wraps a handler so that a streamed answer of a request carrying holdHeader writes
// its first event (then began receives), and, held, waits before every further write until
// release is closed or the request ends (its client gone, or the server stopping it). The
// answer's generation then waits at its next piece of text, its chat taken, for as long as
// the test needs: no timing decides what the test sees.
type holder struct {
	h       http.Handler
	began   chan string // the path of each watched request whose first event is written
	release chan struct{}
	once    sync.Once
}

func newHolder(h http.Handler) *holder {
	return &holder{h: h, began: make(chan string, 16), release: make(chan struct{})}
}

func (hd *holder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	mode := r.Header.Get(holdHeader)
	if mode == "" {
		hd.h.ServeHTTP(w, r)
		return
	}
	hd.h.ServeHTTP(&heldWriter{ResponseWriter: w, ctx: r.Context(), hd: hd, path: r.URL.Path, hold: mode != "watch"}, r)
}

// Release lets every held answer go on.
func (hd *holder) Release() { hd.once.Do(func() { close(hd.release) }) }

type heldWriter struct {
	http.ResponseWriter
	ctx     context.Context
	hd      *holder
	path    string
	hold    bool
	flushed bool
}

func (w *heldWriter) Write(p []byte) (int, error) {
	if w.flushed && w.hold {
		select {
		case <-w.hd.release:
		case <-w.ctx.Done():
		}
	}
	return w.ResponseWriter.Write(p)
}

func (w *heldWriter) Flush() {
	http.NewResponseController(w.ResponseWriter).Flush()
	if !w.flushed {
		w.flushed = true
		w.hd.began <- w.path
	}
}

// Unwrap lets http.ResponseController reach the connection (write deadlines).
func (w *heldWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// slotLog keeps a server's log lines (and passes them to the test's log).
type slotLog struct {
	t     *testing.T
	mu    sync.Mutex
	lines []string
}

func (l *slotLog) logf(format string, args ...any) {
	l.t.Logf(format, args...)
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, fmt.Sprintf(format, args...))
}

func (l *slotLog) text() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.lines, "\n")
}

// stoppedAfter returns the token counts of the logged answers that ended with an error
// ("... (after N tokens)").
func (l *slotLog) stoppedAfter() []int {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []int
	for _, line := range l.lines {
		if m := regexp.MustCompile(`\(after (\d+) tokens\)$`).FindStringSubmatch(line); m != nil {
			n, _ := strconv.Atoi(m[1])
			out = append(out, n)
		}
	}
	return out
}

// heldServer serves s behind a holder until the test ends, logging to the slotLog.
func heldServer(t *testing.T, s *Server) (*holder, *httptest.Server, *slotLog) {
	log := &slotLog{t: t}
	s.Log = log.logf
	hd := newHolder(s)
	srv := httptest.NewServer(hd)
	t.Cleanup(srv.Close)
	t.Cleanup(hd.Release) // before srv.Close (cleanups run last first): nothing stays held
	return hd, srv, log
}

// startHeld sends a streamed request held after its first event and returns its response,
// whose headers have come: the request has its chat.
func startHeld(t *testing.T, ctx context.Context, hd *holder, url, path, body, mode string) *http.Response {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, "POST", url+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(holdHeader, mode)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 200 {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("%s: %d %s", path, resp.StatusCode, b)
	}
	<-hd.began
	return resp
}

// long is a streamed request for a long answer, and alone what the engine answers it.
const long = `{"stream":true,"max_tokens":200,"messages":[{"role":"user","content":"Go on and on."}]}`

func longAlone(t *testing.T, want *assistant.Chat) assistant.Reply {
	t.Helper()
	r, err := want.Reply(t.Context(), []chat.Message{{Role: "user", Content: "Go on and on."}}, assistant.Options{MaxTokens: 200})
	if err != nil {
		t.Fatal(err)
	}
	// The tests below tell an answer stopped early from one that ended by itself by its
	// length: it must be long.
	if r.Tokens < 100 {
		t.Fatalf("the long answer alone is %d tokens: too short to tell an early stop", r.Tokens)
	}
	return r
}

// postAsync sends a request in a goroutine of its own and delivers its status and body.
func postAsync(url, path, body string) <-chan string {
	out := make(chan string, 1)
	go func() {
		resp, err := http.Post(url+path, "application/json", strings.NewReader(body))
		if err != nil {
			out <- err.Error()
			return
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		out <- fmt.Sprintf("%d %s", resp.StatusCode, b)
	}()
	return out
}

// TestQueueBound: while the only chat answers a stream (held after its first event), Queue
// requests wait, and the next is answered 429 at once with Retry-After, in OpenAI's shape and
// Ollama's; once the stream goes on every request waiting is answered as if alone.
func TestQueueBound(t *testing.T) {
	path := modelgentest.TinyQ8(t)
	s := New(newChat(t, path), "tiny")
	if s.Queue != DefaultQueue || DefaultQueue < 1 {
		t.Fatalf("New's Queue %d, DefaultQueue %d", s.Queue, DefaultQueue)
	}
	s.Queue = 2
	queued := make(chan struct{}, 4)
	s.waited = func() { queued <- struct{}{} }
	hd, srv, _ := heldServer(t, s)
	want := newChat(t, path)
	alone := longAlone(t, want)
	short := `{"max_tokens":4,"messages":[{"role":"user","content":"hi"}]}`
	shortWant, err := want.Reply(t.Context(), []chat.Message{{Role: "user", Content: "hi"}}, assistant.Options{MaxTokens: 4})
	if err != nil {
		t.Fatal(err)
	}

	stream := startHeld(t, t.Context(), hd, srv.URL, "/v1/chat/completions", long, "hold")
	defer stream.Body.Close()
	var waiting []<-chan string
	for range s.Queue {
		waiting = append(waiting, postAsync(srv.URL, "/v1/chat/completions", short))
		<-queued
	}
	resp, b := do(t, srv.URL, "POST", "/v1/chat/completions", short, nil)
	wantError(t, "past the queue", resp, b, 429, "", "rate_limit_exceeded", "2 requests wait")
	if got := resp.Header.Get("Retry-After"); got != strconv.Itoa(retryAfter) {
		t.Errorf("Retry-After %q, want %d", got, retryAfter)
	}
	resp, b = do(t, srv.URL, "POST", "/api/chat", `{"model":"tiny","stream":false,"messages":[{"role":"user","content":"hi"}]}`, nil)
	var oe map[string]any
	if resp.StatusCode != 429 || resp.Header.Get("Retry-After") != strconv.Itoa(retryAfter) || json.Unmarshal(b, &oe) != nil ||
		len(oe) != 1 || !strings.Contains(fmt.Sprint(oe["error"]), "busy") {
		t.Errorf("ollama past the queue: %d Retry-After %q: %s; want 429 {\"error\": …}", resp.StatusCode, resp.Header.Get("Retry-After"), b)
	}

	hd.Release()
	rest, err := io.ReadAll(stream.Body)
	if err != nil {
		t.Fatal(err)
	}
	if got := answerText(t, "/v1/chat/completions", string(rest)); got != alone.Text {
		t.Errorf("the held stream went on with %q, alone %q", got, alone.Text)
	}
	for i, w := range waiting {
		got := <-w
		status, body, _ := strings.Cut(got, " ")
		if status != "200" || answerText(t, "/v1/chat/completions", body) != shortWant.Text {
			t.Errorf("queued request %d: %s, want %q", i, got, shortWant.Text)
		}
	}
}

// TestCountBeforeTheChat: a prompt under the byte bound whose tokens the context cannot hold
// is refused while the only chat answers another request, with no place in the queue (Queue
// 0): it is counted without waiting for a chat, on every endpoint, with the count the chat's
// own check gives.
func TestCountBeforeTheChat(t *testing.T) {
	path := modelgentest.TinyQ8(t)
	s := New(newChat(t, path), "tiny")
	s.Queue = 0
	hd, srv, _ := heldServer(t, s)
	want := newChat(t, path)
	text := strings.Repeat("hello ", testContext+10)
	if err := s.promptBound("messages", len(text)); err != nil {
		t.Fatalf("the prompt must pass the byte bound: %v", err)
	}
	_, chatErr := want.Reply(t.Context(), []chat.Message{{Role: "user", Content: text}}, assistant.Options{MaxTokens: 1})
	_, rawErr := want.Complete(t.Context(), text, assistant.Options{MaxTokens: 1})
	if chatErr == nil || rawErr == nil {
		t.Fatalf("the chat takes a prompt of %d bytes: %v, %v", len(text), chatErr, rawErr)
	}
	// The chat's own message, less the engine's sentinel: "the prompt takes N tokens and the context holds C".
	says := func(err error) string { m, _, _ := strings.Cut(err.Error(), ": "); return m }

	stream := startHeld(t, t.Context(), hd, srv.URL, "/v1/chat/completions", long, "hold")
	defer stream.Body.Close()
	q := mustJSON(text)
	resp, b := do(t, srv.URL, "POST", "/v1/chat/completions", `{"messages":[{"role":"user","content":`+q+`}]}`, nil)
	wantError(t, "chat", resp, b, 400, "messages", "context_length_exceeded", says(chatErr))
	resp, b = do(t, srv.URL, "POST", "/v1/completions", `{"prompt":`+q+`}`, nil)
	wantError(t, "completion", resp, b, 400, "prompt", "context_length_exceeded", says(rawErr))
	resp, b = do(t, srv.URL, "POST", "/v1/responses", `{"input":`+q+`}`, nil)
	wantError(t, "responses", resp, b, 400, "input", "context_length_exceeded", says(chatErr))
	for _, c := range []struct{ path, body, says string }{
		{"/api/chat", `{"model":"tiny","messages":[{"role":"user","content":` + q + `}]}`, says(chatErr)},
		{"/api/generate", `{"model":"tiny","prompt":` + q + `}`, says(chatErr)},
		{"/api/generate", `{"model":"tiny","raw":true,"prompt":` + q + `}`, says(rawErr)},
	} {
		resp, b = do(t, srv.URL, "POST", c.path, c.body, nil)
		if resp.StatusCode != 400 || !strings.Contains(string(b), c.says) {
			t.Errorf("ollama %s: %d %s, want 400 saying %q", c.body[:30], resp.StatusCode, b, c.says)
		}
	}
	// The chat was held all along: a request that fits waits for it, and Queue 0 refuses it.
	resp, b = do(t, srv.URL, "POST", "/v1/chat/completions", `{"max_tokens":2,"messages":[{"role":"user","content":"hi"}]}`, nil)
	wantError(t, "a prompt that fits", resp, b, 429, "", "rate_limit_exceeded", "busy")
}

// TestAbortStopsTheAnswer: a client that gives up on a stream after its first event (the
// answer held there until it does) stops the answer at its next token, on OpenAI's and Ollama's
// endpoints: the log counts a few tokens of an answer that alone is long, and the next request
// gets the chat and the answer it gets alone.
func TestAbortStopsTheAnswer(t *testing.T) {
	path := modelgentest.TinyQ8(t)
	hd, srv, log := heldServer(t, New(newChat(t, path), "tiny"))
	want := newChat(t, path)
	alone := longAlone(t, want)
	for _, c := range []struct{ path, body string }{
		{"/v1/chat/completions", long},
		{"/api/chat", `{"model":"tiny","options":{"temperature":0,"num_predict":200},"messages":[{"role":"user","content":"Go on and on."}]}`},
	} {
		ctx, cancel := context.WithCancel(t.Context())
		resp := startHeld(t, ctx, hd, srv.URL, c.path, c.body, "hold")
		cancel()
		resp.Body.Close()
		got := answerText(t, "/v1/chat/completions", string(must(do(t, srv.URL, "POST", "/v1/chat/completions", `{"max_tokens":4,"messages":[{"role":"user","content":"hi"}]}`, nil))))
		if r, _ := want.Reply(t.Context(), []chat.Message{{Role: "user", Content: "hi"}}, assistant.Options{MaxTokens: 4}); got != r.Text {
			t.Errorf("%s: after the abort %q, want %q", c.path, got, r.Text)
		}
		// The aborted answer was logged before its chat was free for the next.
		stops := log.stoppedAfter()
		if len(stops) == 0 || stops[len(stops)-1] > 8 {
			t.Errorf("%s: the aborted answers stopped after %v tokens; want a few of the %d it has alone", c.path, stops, alone.Tokens)
		}
	}
	if n := len(log.stoppedAfter()); n != 2 {
		t.Errorf("%d answers stopped early, want 2", n)
	}
}

// must returns a response's body.
func must(_ *http.Response, b []byte) []byte { return b }

// TestShutdownEndsStreams: when the server stops (its requests' base context cancelled with
// ErrShuttingDown) with a stream in flight on each API, held after its first event, the stream
// gets every token the answer made (its text is the answer's first N tokens, N as the log
// counts them), then the error saying why in that API's shape, then its end.
func TestShutdownEndsStreams(t *testing.T) {
	path := modelgentest.TinyQ8(t)
	want := newChat(t, path)
	turns := []chat.Message{{Role: "user", Content: "Go on and on."}}
	for _, c := range []struct{ path, body, last string }{
		{"/v1/chat/completions", long, `"code":"server_shutting_down"`},
		{"/v1/completions", `{"stream":true,"max_tokens":200,"prompt":"Go on and on."}`, `"code":"server_shutting_down"`},
		{"/v1/responses", `{"stream":true,"max_output_tokens":200,"input":"Go on and on."}`, `"type":"response.failed"`},
		{"/api/chat", `{"model":"tiny","options":{"temperature":0,"num_predict":200},"messages":[{"role":"user","content":"Go on and on."}]}`,
			`{"error":"the server is shutting down"}`},
	} {
		s := New(newChat(t, path), "tiny")
		log := &slotLog{t: t}
		s.Log = log.logf
		hd := newHolder(s)
		srv := httptest.NewUnstartedServer(hd)
		base, stop := context.WithCancelCause(context.Background())
		srv.Config.BaseContext = func(net.Listener) context.Context { return base }
		srv.Start()
		t.Cleanup(srv.Close)
		resp := startHeld(t, t.Context(), hd, srv.URL, c.path, c.body, "hold")
		stop(ErrShuttingDown)
		b, err := io.ReadAll(resp.Body) // a stream cut off would end in io.ErrUnexpectedEOF
		resp.Body.Close()
		if err != nil {
			t.Fatalf("%s: %v", c.path, err)
		}
		var events []string
		for _, line := range strings.Split(string(b), "\n") {
			if line = strings.TrimPrefix(line, "data: "); line != "" && !strings.HasPrefix(line, "event: ") {
				events = append(events, line)
			}
		}
		if c.path != "/api/chat" && c.path != "/v1/responses" {
			if len(events) < 3 || events[len(events)-1] != "[DONE]" {
				t.Fatalf("%s: %q; want its tokens, the error, [DONE]", c.path, b)
			}
			events = events[:len(events)-1]
		}
		if len(events) < 2 || !strings.Contains(events[len(events)-1], c.last) {
			t.Fatalf("%s: %q; want events ending in one holding %s", c.path, b, c.last)
		}
		var text strings.Builder
		for _, e := range events[:len(events)-1] {
			var piece struct {
				Type, Delta string
				Choices     []struct {
					Text  string
					Delta struct{ Content string }
				}
				Message struct{ Content string }
			}
			if err := json.Unmarshal([]byte(e), &piece); err != nil {
				t.Fatalf("%s: event %s: %v", c.path, e, err)
			}
			if piece.Type == "response.output_text.delta" {
				text.WriteString(piece.Delta)
			}
			for _, ch := range piece.Choices {
				text.WriteString(ch.Text + ch.Delta.Content)
			}
			text.WriteString(piece.Message.Content)
		}
		stops := log.stoppedAfter()
		if len(stops) != 1 || stops[0] < 1 || stops[0] >= 200 {
			t.Fatalf("%s: stopped after %v tokens; want one answer stopped early", c.path, stops)
		}
		opts := assistant.Options{MaxTokens: stops[0]}
		alone, err := want.Reply(t.Context(), turns, opts)
		if c.path == "/v1/completions" {
			alone, err = want.Complete(t.Context(), "Go on and on.", opts)
		}
		if err != nil || text.String() != alone.Text {
			t.Errorf("%s: the stream sent %q after %d tokens, which are %q (%v)", c.path, text.String(), stops[0], alone.Text, err)
		}
	}
}
