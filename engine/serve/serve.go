// Package serve answers HTTP requests with a model in the shape of OpenAI's API
// (POST /v1/chat/completions, POST /v1/completions, POST /v1/responses: see responses.go,
// GET /v1/models, GET /v1/models/{id}) and of
// Ollama's (/api/chat, /api/generate, /api/tags, /api/show, /api/ps, /api/version: see
// ollama.go), so that existing clients work unchanged, streaming with server-sent events (or
// Ollama's lines of JSON) when asked. Without a
// temperature (or at 0, or with top_p 0) the answer is greedy; above 0 it is sampled with the
// request's seed, or a random one that the response reports ("seed"): the same seed gives the
// same answer. Log probabilities (logprobs, top_logprobs, streamed or not) are
// engine.Logprobs': the same bits on every machine. Structured output (response_format
// json_object and json_schema) and forced tool calls are decoded under a mask of the tokens that
// keep the document valid (format.go, tools.go); tools are rendered by the model's own template
// and its calls read back as OpenAI's tool_calls. A request asking for what the engine cannot
// honour (several choices, penalties, a field serve does not know) is refused with a 400 naming
// the field rather than answered differently; every error has OpenAI's shape,
// {"error":{"message","type","param","code"}} (Ollama's under /api).
//
// The server is meant for someone's own computer: ServeHTTP checks the Host header against
// loopback names (DNS rebinding), refuses browser origins not listed in Origins, asks for the
// APIKey when one is set and refuses POST bodies that are not JSON (see guard.go).
//
// Each chat (a model session) answers one request at a time; a server of several chats (Also)
// answers as many at once, their tokens sharing forward passes, each answer the one it would
// be alone. Requests beyond the chats wait in arrival order, at most Queue of them: past it a
// request is answered 429 with a Retry-After header. A request whose client goes away, or that
// a client stops reading for WriteStall, stops its generation at the next token.
package serve

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"runtime/debug"
	"strconv"
	"sync"
	"time"

	"github.com/trochilus-llm/trochilus/engine"
	"github.com/trochilus-llm/trochilus/engine/assistant"
	"github.com/trochilus-llm/trochilus/engine/structured"
	"github.com/trochilus-llm/trochilus/tokenizer/chat"
)

// maxBody is the most bytes a request body may have: far more than any context holds as text.
const maxBody = 8 << 20

// ErrShuttingDown is the cause (context.Cause) a server's owner cancels the requests' base
// context with when it stops: answers in flight then end with a 503 or a last error event
// saying so, rather than as if their clients had gone away.
var ErrShuttingDown = errors.New("the server is shutting down")

// Server answers requests with its chats: one request at a time per chat, as many at once as
// it has chats (New, Also), their tokens sharing forward passes. Create it with New; set the
// exported fields and add chats before it serves.
type Server struct {
	chat *assistant.Chat // the first chat: what the model and its template are
	// turns holds a token per request answering (cap: the chats); free are the chats not
	// answering, the one released last on top.
	turns chan struct{}
	mu    sync.Mutex
	free  []*assistant.Chat
	// waiting counts the requests waiting for a turn (at most Queue; guarded by mu).
	waiting int
	// waited, when a test sets it, is called as each request begins to wait.
	waited func()
	// answering, when a test sets it, is called as each request has its chat, before it
	// answers: a test holding it there holds the chat.
	answering func()
	// stopGrace is how long a streamed answer the server stops may take to finish the token
	// it is making (generating): a token of a large model on a slow CPU takes a second or so;
	// a long prompt being read when the server stops is not waited for.
	stopGrace time.Duration
	// stopSeen, when a test sets it, is called once generating has seen a request end.
	stopSeen func()
	// graceSet, when a test sets it, is given each grace timer generating sets (so that the
	// test can see it stopped when the answer is released).
	graceSet func(*time.Timer)
	batch    *engine.Batcher // with several chats: their tokens' shared passes
	name     string
	mux      *http.ServeMux
	now      func() time.Time
	// tokenBytes is the longest token text of the vocabulary in bytes: a prompt of n bytes
	// is at least n / (4·tokenBytes) tokens (see promptBound).
	tokenBytes int

	// Draft, when above 0, drafts up to that many tokens at a time from each conversation
	// (assistant.Options.Draft): faster answers where they repeat the conversation, the same
	// tokens.
	Draft int
	// Log, when set, receives one line per answered request.
	Log func(format string, args ...any)
	// APIKey, when set, must come with every /v1 request as "Authorization: Bearer KEY".
	APIKey string
	// Origins lists the browser origins ("http://localhost:3000", or "*" for any) whose
	// pages may call the server (CORS); a request from any other origin is refused.
	Origins []string
	// Hosts lists the names the Host header may carry besides loopback ones (localhost,
	// *.localhost, 127.0.0.0/8, ::1): the address the server is bound to, or "*" for any.
	Hosts []string
	// Queue is the most requests that wait for a chat while every chat answers (DefaultQueue
	// from New; 0: none waits). A request past it is answered 429 at once, with Retry-After,
	// rather than holding a connection and its body for as long as the answers before it
	// take: every SDK retries a 429 after the time it says.
	Queue int
	// WriteStall is how long one streamed event may take to reach its client (DefaultWriteStall
	// from New): a client that stops reading would otherwise hold its chat from every other
	// request. (http.Server's WriteTimeout cannot do this: it bounds the whole response, and so
	// would cut off long streams.) A write that fails cancels the request, which stops the
	// answer at its next token and frees the chat.
	WriteStall time.Duration
	// Build names the build answering, for system_fingerprint (default: the binary's module
	// version or VCS revision, see buildName).
	Build string
}

// DefaultQueue is New's Queue: requests beyond the chats' that wait their turn. A person's
// own tools rarely send more at once; a runaway loop or a page flooding the server gets 429s
// instead of a growing pile of connections, each holding up to 8 MiB of body.
const DefaultQueue = 16

// DefaultWriteStall is New's WriteStall.
const DefaultWriteStall = time.Minute

// retryAfter is the Retry-After of a 429, in seconds: about one answer's time on a small
// model, short enough that a client retrying finds a place once the queue moves.
const retryAfter = 2

// New returns a Server answering with c under the model id name.
func New(c *assistant.Chat, name string) *Server {
	s := &Server{chat: c, turns: make(chan struct{}, 1), free: []*assistant.Chat{c}, name: name, mux: http.NewServeMux(), now: time.Now,
		tokenBytes: longestToken(c), Queue: DefaultQueue, WriteStall: DefaultWriteStall, stopGrace: 2 * time.Second}
	s.mux.HandleFunc("POST /v1/chat/completions", s.chatCompletions)
	s.mux.HandleFunc("POST /v1/completions", s.completions)
	s.mux.HandleFunc("POST /v1/responses", s.responses)
	s.mux.HandleFunc("GET /v1/models", s.models)
	s.mux.HandleFunc("GET /v1/models/{id...}", s.model)
	s.mux.HandleFunc("GET /health", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	})
	s.ollamaRoutes()
	// The mux's own 404 and 405 are plain text, which OpenAI's clients cannot read: these
	// patterns, less specific than the ones above, answer everything else in OpenAI's shape.
	for path, allow := range map[string]string{"/v1/chat/completions": "POST", "/v1/completions": "POST", "/v1/responses": "POST",
		"/v1/models": "GET", "/v1/models/{id...}": "GET", "/health": "GET"} {
		s.mux.HandleFunc(path, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Allow", allow+", OPTIONS")
			writeError(w, &apiError{status: http.StatusMethodNotAllowed, typ: "invalid_request_error",
				msg: fmt.Sprintf("%s %s: want %s", r.Method, r.URL.Path, allow)})
		})
	}
	s.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, &apiError{status: http.StatusNotFound, typ: "invalid_request_error", code: "unknown_url",
			msg: fmt.Sprintf("%s %s: no such route (there are /v1/chat/completions, /v1/completions, /v1/responses, /v1/models, /health, and Ollama's /api/chat, /api/generate, /api/tags, /api/show, /api/ps, /api/version)", r.Method, r.URL.Path)})
	})
	return s
}

// Also adds a chat over another session of the first chat's model, so that the server answers
// one more request at once. The requests answered together share forward passes
// (engine.Batcher): each gets the tokens it would get alone. Call it before the server serves.
func (s *Server) Also(c *assistant.Chat) error {
	if c.Model() != s.chat.Model() || c.Context() != s.chat.Context() {
		return errors.New("serve: another chat must be a session of the same model, with the same context")
	}
	s.turns = make(chan struct{}, cap(s.turns)+1)
	s.free = append(s.free, c)
	if s.batch == nil {
		s.batch = engine.NewBatcher(c.Model())
	}
	return nil
}

// longestToken returns the longest token text of c's vocabulary in bytes (at least 1).
func longestToken(c *assistant.Chat) int {
	n := 1
	if toks, err := c.Model().File().Strings("tokenizer.ggml.tokens"); err == nil {
		for _, t := range toks {
			n = max(n, len(t))
		}
	}
	return n
}

// apiError is an error with the HTTP status and OpenAI error type, param and code it is
// answered with.
type apiError struct {
	status           int
	typ, param, code string
	msg              string
	retryAfter       int // seconds, for a Retry-After header; 0: none
}

// setHeaders sets the headers the error is answered with besides the body's.
func (e *apiError) setHeaders(w http.ResponseWriter) {
	if e.retryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(e.retryAfter))
	}
}

func (e *apiError) Error() string { return e.msg }

func badRequest(format string, args ...any) *apiError {
	return &apiError{status: http.StatusBadRequest, typ: "invalid_request_error", msg: fmt.Sprintf(format, args...)}
}

// badParam is a 400 about one request field, which it names as param.
func badParam(param, format string, args ...any) *apiError {
	e := badRequest(format, args...)
	e.param = param
	return e
}

// writeJSON answers with v as JSON, encoded before the status is written, so that a value JSON
// cannot hold is a 500 saying so rather than a 200 with no body.
func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		status = http.StatusInternalServerError
		b, _ = json.Marshal(errorBody{Error: errorDetail{Message: "encoding the answer: " + err.Error(), Type: "server_error"}})
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(append(b, '\n'))
}

type errorBody struct {
	Error errorDetail `json:"error"`
}

// errorDetail is OpenAI's error object: param and code are null when they do not apply.
type errorDetail struct {
	Message string  `json:"message"`
	Type    string  `json:"type"`
	Param   *string `json:"param"`
	Code    *string `json:"code"`
}

func (e *apiError) body() errorBody {
	b := errorBody{Error: errorDetail{Message: e.msg, Type: e.typ}}
	if e.param != "" {
		b.Error.Param = &e.param
	}
	if e.code != "" {
		b.Error.Code = &e.code
	}
	return b
}

func writeError(w http.ResponseWriter, err error) {
	e := asAPIError(err)
	e.setHeaders(w)
	writeJSON(w, e.status, e.body())
}

// asAPIError classifies an error from a request's handling.
func asAPIError(err error) *apiError {
	var e *apiError
	switch {
	case errors.As(err, &e):
		return e
	case errors.Is(err, engine.ErrContextFull):
		return &apiError{status: http.StatusBadRequest, typ: "invalid_request_error", param: "messages",
			code: "context_length_exceeded", msg: err.Error()}
	case errors.Is(err, assistant.ErrNoTemplate):
		return &apiError{status: http.StatusBadRequest, typ: "invalid_request_error", param: "messages",
			msg: err.Error() + "; use /v1/completions"}
	case chat.IsRefusal(err), errors.Is(err, assistant.ErrBadTurn):
		// The template refused the conversation (roles out of order, say) or its tool calls
		// cannot take the template's form: the request's messages, not the server.
		return &apiError{status: http.StatusBadRequest, typ: "invalid_request_error", param: "messages", msg: err.Error()}
	case errors.Is(err, structured.ErrNoToken):
		// The request's format and logit_bias leave the answer no way on.
		return &apiError{status: http.StatusBadRequest, typ: "invalid_request_error", param: "logit_bias",
			msg: err.Error() + ": the logit_bias bans every token the format allows here"}
	case errors.Is(err, ErrShuttingDown):
		return &apiError{status: http.StatusServiceUnavailable, typ: "server_error", code: "server_shutting_down", msg: err.Error()}
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return &apiError{status: 499, typ: "cancelled", msg: err.Error()}
	}
	return &apiError{status: http.StatusInternalServerError, typ: "server_error", msg: err.Error()}
}

// readBody reads a request body of at most maxBody bytes. Once it is read the connection's
// read deadline is lifted: http.Server's ReadTimeout bounds reading the request, but a read
// deadline left in place would, when it passes, cancel the request's context and so cut off a
// long answer (the server watches the connection for its client going away by reading it).
func readBody(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	tooBig := &apiError{status: http.StatusRequestEntityTooLarge, typ: "invalid_request_error",
		msg: fmt.Sprintf("request body over %d bytes", maxBody)}
	if r.ContentLength > maxBody {
		return nil, tooBig
	}
	body, err := io.ReadAll(http.MaxBytesReader(nil, r.Body, maxBody))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return nil, tooBig
		}
		return nil, badRequest("reading the request body: %v", err)
	}
	http.NewResponseController(w).SetReadDeadline(time.Time{})
	return body, nil
}

// acquire waits for a free chat, giving up when the request's client does, or at once with a
// 429 when Queue requests wait already. The chat released last comes first, so that a
// client's next request finds its conversation's KV cache where it left it (while no other
// request took that chat meanwhile).
func (s *Server) acquire(ctx context.Context) (*assistant.Chat, error) {
	select {
	case s.turns <- struct{}{}:
	default:
		if err := s.wait(ctx); err != nil {
			return nil, err
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.free[len(s.free)-1]
	s.free = s.free[:len(s.free)-1]
	return c, nil
}

// wait takes a turn once one is free, as one of at most Queue requests waiting.
func (s *Server) wait(ctx context.Context) error {
	s.mu.Lock()
	if s.waiting >= s.Queue {
		n := s.waiting
		s.mu.Unlock()
		return &apiError{status: http.StatusTooManyRequests, typ: "requests", code: "rate_limit_exceeded", retryAfter: retryAfter,
			msg: fmt.Sprintf("the server is busy: every chat is answering and %d requests wait (trochilus serve -queue); retry after %d seconds", n, retryAfter)}
	}
	s.waiting++
	s.mu.Unlock()
	if s.waited != nil {
		s.waited()
	}
	defer func() {
		s.mu.Lock()
		s.waiting--
		s.mu.Unlock()
	}()
	select {
	case s.turns <- struct{}{}:
		return nil
	case <-ctx.Done():
		return cause(ctx)
	}
}

func (s *Server) release(c *assistant.Chat) {
	s.mu.Lock()
	s.free = append(s.free, c)
	s.mu.Unlock()
	<-s.turns
}

// cause is why ctx ended: ErrShuttingDown when the server stops, else ctx.Err().
func cause(ctx context.Context) error {
	if c := context.Cause(ctx); errors.Is(c, ErrShuttingDown) {
		return c
	}
	return ctx.Err()
}

// Close waits for the answers in progress, if any, and keeps the chats from every later
// request (they wait until their clients give up): after it returns the model may be closed.
func (s *Server) Close() {
	for range cap(s.turns) {
		s.turns <- struct{}{}
	}
}

// fingerprint is system_fingerprint: what besides the request and the model decides an answer's
// bits, as OpenAI's names its backend configuration. Here that is the build and the kernel
// tier (whose answers are the same bits by design: a client comparing fingerprints sees it).
func (s *Server) fingerprint() string {
	return "fp_" + cmp.Or(s.Build, buildName()) + "_" + s.chat.Model().Kernels()
}

// buildName names the running binary's build: its module version when it has one (go install
// of a release), else its VCS revision (12 hex digits, "-dirty" when built from changed files),
// else "dev" (go run, tests).
var buildName = sync.OnceValue(func() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "dev"
	}
	if v := info.Main.Version; v != "" && v != "(devel)" {
		return v
	}
	rev, dirty := "", ""
	for _, kv := range info.Settings {
		switch {
		case kv.Key == "vcs.revision":
			rev = kv.Value[:min(12, len(kv.Value))]
		case kv.Key == "vcs.modified" && kv.Value == "true":
			dirty = "-dirty"
		}
	}
	if rev == "" {
		return "dev"
	}
	return rev + dirty
})

func (s *Server) logf(format string, args ...any) {
	if s.Log != nil {
		s.Log(format, args...)
	}
}

func newID(prefix string) string {
	var b [12]byte
	rand.Read(b[:])
	return prefix + hex.EncodeToString(b[:])
}

func (s *Server) modelObject() map[string]any {
	return map[string]any{"id": s.name, "object": "model", "owned_by": "trochilus",
		"created": s.now().Unix(), "context_length": s.chat.Context()}
}

func (s *Server) models(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{"object": "list", "data": []map[string]any{s.modelObject()}})
}

// model answers GET /v1/models/{id}: the served model, or a 404 as OpenAI answers one it does
// not have.
func (s *Server) model(w http.ResponseWriter, r *http.Request) {
	if id := r.PathValue("id"); id != s.name {
		writeError(w, &apiError{status: http.StatusNotFound, typ: "invalid_request_error", param: "model",
			code: "model_not_found", msg: fmt.Sprintf("The model %q does not exist: this server serves %q", id, s.name)})
		return
	}
	writeJSON(w, http.StatusOK, s.modelObject())
}
