package serve

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/trochilus-llm/trochilus/engine/assistant"
	"github.com/trochilus-llm/trochilus/internal/modelgen/modelgentest"
)

// TestGenerating: the context a streamed answer generates under outlives its request's when
// the server stops (ErrShuttingDown) until the token being made has been sent (OnText), then
// ends with that cause; when the client goes away it ends at once. The grace timer the stop
// sets is stopped when the answer is released.
func TestGenerating(t *testing.T) {
	seen := make(chan struct{}, 1)
	var graces []*time.Timer
	s := &Server{stopGrace: 1000 * time.Hour, stopSeen: func() { seen <- struct{}{} }, // the grace must not be what ends it here
		graceSet: func(g *time.Timer) { graces = append(graces, g) }}
	for _, shutdown := range []bool{true, false} {
		base, cancel := context.WithCancelCause(context.Background())
		r := httptest.NewRequestWithContext(base, "POST", "/v1/chat/completions", nil)
		var sent []string
		opts := assistant.Options{OnText: func(s string) { sent = append(sent, s) }}
		gen, release := s.generating(r, &opts)
		if !shutdown {
			cancel(context.Canceled) // the client went away
			<-seen
			<-gen.Done()
			if context.Cause(gen) != context.Canceled {
				t.Errorf("client gone: cause %v", context.Cause(gen))
			}
			release()
			continue
		}
		opts.OnText("a")
		if gen.Err() != nil {
			t.Fatalf("ended before the server stopped: %v", context.Cause(gen))
		}
		cancel(ErrShuttingDown)
		<-seen // generating has seen the request end, and not ended the answer for it
		if gen.Err() != nil {
			t.Fatalf("the server's stop ended the answer before its token was sent: %v", context.Cause(gen))
		}
		opts.OnText("b")
		if !errors.Is(context.Cause(gen), ErrShuttingDown) || strings.Join(sent, "") != "ab" {
			t.Errorf("after the token: cause %v, sent %q; want ErrShuttingDown after \"ab\"", context.Cause(gen), sent)
		}
		release()
		// Set before stopSeen ran (seen), 1000 hours long: Stop reports true only if release
		// left it pending.
		if len(graces) != 1 {
			t.Fatalf("%d grace timers set by one stop, want 1", len(graces))
		}
		if graces[0].Stop() {
			t.Error("the grace timer of a released answer was still pending")
		}
	}
}

// deadlines records the write deadlines a handler sets (http.ResponseController finds
// SetWriteDeadline on the writer).
type deadlines struct {
	*httptest.ResponseRecorder
	at []time.Time
}

func (d *deadlines) SetWriteDeadline(t time.Time) error {
	d.at = append(d.at, t)
	return nil
}

// TestWriteStallSetsDeadlines: every streamed event of every API is written under a deadline
// WriteStall ahead.
func TestWriteStallSetsDeadlines(t *testing.T) {
	s := New(newChat(t, modelgentest.TinyQ8(t)), "tiny")
	s.Log = t.Logf
	s.WriteStall = 7 * time.Hour // far from any other deadline
	for _, c := range []struct{ path, body string }{
		{"/v1/chat/completions", `{"stream":true,"max_tokens":3,"messages":[{"role":"user","content":"hi"}]}`},
		{"/v1/completions", `{"stream":true,"max_tokens":3,"prompt":"hi"}`},
		{"/v1/responses", `{"stream":true,"max_output_tokens":3,"input":"hi"}`},
		{"/api/chat", `{"model":"tiny","options":{"num_predict":3},"messages":[{"role":"user","content":"hi"}]}`},
	} {
		d := &deadlines{ResponseRecorder: httptest.NewRecorder()}
		req := httptest.NewRequest("POST", c.path, strings.NewReader(c.body))
		req.Header.Set("Content-Type", "application/json")
		req.Host = "localhost"
		before := time.Now()
		s.ServeHTTP(d, req)
		after := time.Now()
		if d.Code != http.StatusOK || len(d.at) < 3 {
			t.Fatalf("%s: %d, %d deadlines: %s", c.path, d.Code, len(d.at), d.Body)
		}
		for _, at := range d.at {
			if !at.IsZero() && (at.Before(before.Add(s.WriteStall)) || at.After(after.Add(s.WriteStall))) {
				t.Errorf("%s: a write deadline %v after the request, want WriteStall (%v)", c.path, at.Sub(before), s.WriteStall)
			}
		}
	}
}
