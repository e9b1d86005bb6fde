package serve

import (
	"bytes"
	"cmp"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/trochilus-llm/trochilus/engine"
	"github.com/trochilus-llm/trochilus/engine/assistant"
	"github.com/trochilus-llm/trochilus/internal/modelgen/modelgentest/enginetest"
)

// callHeader names a client-suite request (tools/clients/check.js sets it) whose body the
// capture keeps: what a client library sent is what the engine's answer is computed for.
const callHeader = "X-Test-Call"

type capture struct {
	h      http.Handler
	mu     sync.Mutex
	bodies map[string][]byte
}

func (c *capture) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if name := r.Header.Get(callHeader); name != "" {
		b, err := io.ReadAll(r.Body)
		r.Body.Close()
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		c.mu.Lock()
		c.bodies[name] = b
		c.mu.Unlock()
		r.Body = io.NopCloser(bytes.NewReader(b))
	}
	c.h.ServeHTTP(w, r)
}

// body returns the body of the request named name.
func (c *capture) body(t *testing.T, name string) []byte {
	t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	b, ok := c.bodies[name]
	if !ok {
		t.Fatalf("no request %s %q came", callHeader, name)
	}
	return b
}

// clientServer serves a chat of positions over the model at path as name, behind a holder
// (holdHeader) and a capture (callHeader), its log kept; the fixture's want is a second chat
// over the same file.
func clientServer(t *testing.T, path, name string, positions int) (*fixture, *capture, *slotLog) {
	open := func() *assistant.Chat {
		c, err := assistant.New(enginetest.Open(t, path, engine.Options{}, positions))
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	s := New(open(), name)
	log := &slotLog{t: t}
	s.Log = log.logf
	hd := newHolder(s)
	t.Cleanup(hd.Release)
	c := &capture{h: hd, bodies: map[string][]byte{}}
	srv := httptest.NewServer(c)
	t.Cleanup(srv.Close)
	return &fixture{srv: srv, want: open()}, c, log
}

// chatAnswer is the engine's answer to a captured chat completions request read as the server
// reads it (messages, tools, tool_choice, parallel_tool_calls, the token limit; greedy): the
// text besides the calls, and the calls.
func chatAnswer(t *testing.T, f *fixture, body []byte) (string, []assistant.ToolCall) {
	t.Helper()
	var req struct {
		Messages            []map[string]json.RawMessage
		Tools               json.RawMessage
		ToolChoice          json.RawMessage `json:"tool_choice"`
		ParallelToolCalls   *bool           `json:"parallel_tool_calls"`
		MaxTokens           *int            `json:"max_tokens"`
		MaxCompletionTokens *int            `json:"max_completion_tokens"`
		Temperature         *float64
	}
	if err := json.Unmarshal(body, &req); err != nil || req.Temperature != nil && *req.Temperature != 0 {
		t.Fatalf("a greedy chat request: %s (%v)", body, err)
	}
	syntax, ok := f.want.ToolSyntax()
	plan, err := parseTools(req.Tools, req.ToolChoice, req.ParallelToolCalls, syntax, ok, functionName)
	if err != nil {
		t.Fatal(err)
	}
	turns, err := parseMessages(req.Messages, ok)
	if err != nil {
		t.Fatal(err)
	}
	opts := assistant.Options{MaxTokens: *cmp.Or(req.MaxCompletionTokens, req.MaxTokens, new(int))}
	plan.apply(&opts)
	reply := f.reply(t, turns, opts)
	return plan.parse(&reply)
}

// responsesAnswer is chatAnswer for a captured /v1/responses request.
func responsesAnswer(t *testing.T, f *fixture, body []byte) (string, []assistant.ToolCall) {
	t.Helper()
	var req struct {
		Input             json.RawMessage
		Instructions      *string
		Tools             json.RawMessage
		ToolChoice        json.RawMessage `json:"tool_choice"`
		ParallelToolCalls *bool           `json:"parallel_tool_calls"`
		MaxOutputTokens   *int            `json:"max_output_tokens"`
		Temperature       *float64
	}
	if err := json.Unmarshal(body, &req); err != nil || req.Temperature != nil && *req.Temperature != 0 || req.Instructions != nil {
		t.Fatalf("a greedy responses request without instructions: %s (%v)", body, err)
	}
	syntax, ok := f.want.ToolSyntax()
	tools, choice, err := responsesTools(req.Tools, req.ToolChoice)
	if err != nil {
		t.Fatal(err)
	}
	plan, err := parseTools(tools, choice, req.ParallelToolCalls, syntax, ok, functionName)
	if err != nil {
		t.Fatal(err)
	}
	turns, err := parseResponsesInput(req.Input, ok && plan.tools != nil)
	if err != nil {
		t.Fatal(err)
	}
	opts := assistant.Options{MaxTokens: *cmp.Or(req.MaxOutputTokens, new(int))}
	plan.apply(&opts)
	reply := f.reply(t, turns, opts)
	return plan.parse(&reply)
}

// clientCall is a tool call as check.js reports it: the name and the parsed arguments.
type clientCall struct {
	Name string
	Args map[string]any
}

// callsOf returns the engine's calls as check.js reports them.
func callsOf(t *testing.T, calls []assistant.ToolCall) []clientCall {
	t.Helper()
	out := []clientCall{}
	for _, c := range calls {
		var args map[string]any
		if err := json.Unmarshal(c.Arguments, &args); err != nil {
			t.Fatalf("the engine's call %s(%s): %v", c.Name, c.Arguments, err)
		}
		out = append(out, clientCall{c.Name, args})
	}
	return out
}
