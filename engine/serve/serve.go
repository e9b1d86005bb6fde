// Package serve answers HTTP requests with a model in the shape of OpenAI's API
// (POST /v1/chat/completions, POST /v1/completions, GET /v1/models), so that existing clients
// work unchanged, streaming with server-sent events when asked. Without a temperature (or at
// 0) the answer is greedy; above 0 it is sampled with the request's seed, or a random one that
// the response reports ("seed"): the same seed gives the same answer. A request asking for what
// the engine cannot honour (several choices, penalties, log probabilities, tools) is refused
// with a clear error rather than answered differently.
//
// One model session holds one sequence, so requests are answered one at a time, in arrival
// order; a request whose client goes away stops its generation at the next token.
package serve

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/trochilus-llm/trochilus/engine"
	"github.com/trochilus-llm/trochilus/engine/assistant"
)

// maxBody is the most bytes a request body may have: far more than any context holds as text.
const maxBody = 8 << 20

// Server answers requests with one chat. Create it with New.
type Server struct {
	chat *assistant.Chat
	name string
	turn chan struct{} // holds a token while a request uses the chat
	mux  *http.ServeMux
	now  func() time.Time

	// Log, when set, receives one line per answered request.
	Log func(format string, args ...any)
}

// New returns a Server answering with c under the model id name.
func New(c *assistant.Chat, name string) *Server {
	s := &Server{chat: c, name: name, turn: make(chan struct{}, 1), mux: http.NewServeMux(), now: time.Now}
	s.mux.HandleFunc("POST /v1/chat/completions", s.chatCompletions)
	s.mux.HandleFunc("POST /v1/completions", s.completions)
	s.mux.HandleFunc("GET /v1/models", s.models)
	s.mux.HandleFunc("GET /health", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	})
	return s
}

func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.mux.ServeHTTP(w, r) }

// apiError is an error with the HTTP status and OpenAI error type it is answered with.
type apiError struct {
	status int
	typ    string
	code   string
	msg    string
}

func (e *apiError) Error() string { return e.msg }

func badRequest(format string, args ...any) *apiError {
	return &apiError{status: http.StatusBadRequest, typ: "invalid_request_error", msg: fmt.Sprintf(format, args...)}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

type errorBody struct {
	Error errorDetail `json:"error"`
}

type errorDetail struct {
	Message string  `json:"message"`
	Type    string  `json:"type"`
	Code    *string `json:"code"`
}

func (e *apiError) body() errorBody {
	b := errorBody{Error: errorDetail{Message: e.msg, Type: e.typ}}
	if e.code != "" {
		b.Error.Code = &e.code
	}
	return b
}

func writeError(w http.ResponseWriter, err error) {
	writeJSON(w, asAPIError(err).status, asAPIError(err).body())
}

// asAPIError classifies an error from a request's handling.
func asAPIError(err error) *apiError {
	var e *apiError
	switch {
	case errors.As(err, &e):
		return e
	case errors.Is(err, engine.ErrContextFull):
		return &apiError{status: http.StatusBadRequest, typ: "invalid_request_error", code: "context_length_exceeded", msg: err.Error()}
	case errors.Is(err, assistant.ErrNoTemplate):
		return &apiError{status: http.StatusBadRequest, typ: "invalid_request_error", msg: err.Error() + "; use /v1/completions"}
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return &apiError{status: 499, typ: "cancelled", msg: err.Error()}
	}
	return &apiError{status: http.StatusInternalServerError, typ: "server_error", msg: err.Error()}
}

// decode reads a JSON request body into v, refusing unknown shapes with a clear message.
func decode(r *http.Request, v any) error {
	body, err := io.ReadAll(http.MaxBytesReader(nil, r.Body, maxBody))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return &apiError{status: http.StatusRequestEntityTooLarge, typ: "invalid_request_error",
				msg: fmt.Sprintf("request body over %d bytes", maxBody)}
		}
		return badRequest("reading the request body: %v", err)
	}
	if err := json.Unmarshal(body, v); err != nil {
		return badRequest("request body: %v", err)
	}
	return nil
}

// acquire waits for the chat, giving up when the request's client does.
func (s *Server) acquire(ctx context.Context) error {
	select {
	case s.turn <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (s *Server) release() { <-s.turn }

// Close waits for the answer in progress, if any, and keeps the chat from every later request
// (they wait until their clients give up): after it returns the model may be closed.
func (s *Server) Close() { s.turn <- struct{}{} }

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

func (s *Server) models(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{
		"object": "list",
		"data": []map[string]any{{
			"id": s.name, "object": "model", "owned_by": "trochilus",
			"created": s.now().Unix(), "context_length": s.chat.Context(),
		}},
	})
}
