//go:build unix

package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// heldStream is a ResponseWriter that, once its first event is flushed, holds every later
// write until the request ends: the answer's generation waits at its next token, in flight,
// until the server stops it, whatever the machine's speed.
type heldStream struct {
	http.ResponseWriter
	done    <-chan struct{}
	flushed bool
	began   chan<- struct{}
}

func (w *heldStream) Write(p []byte) (int, error) {
	if w.flushed {
		<-w.done
	}
	return w.ResponseWriter.Write(p)
}

func (w *heldStream) Flush() {
	http.NewResponseController(w.ResponseWriter).Flush()
	if !w.flushed {
		w.flushed = true
		close(w.began)
	}
}

func (w *heldStream) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// TestServeEndsStreamsOnSignals: SIGINT and SIGTERM each stop serve with a stream in flight
// (held after its first event): every token the answer made is sent (the stream's text is the
// answer's first N tokens, N as the log counts them), the stream ends with an error event
// saying the server is shutting down and then [DONE], the response ends cleanly, serve returns
// nil (status 0) and its log says it stopped and why.
func TestServeEndsStreamsOnSignals(t *testing.T) {
	path := tinyModel(t)
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		t.Run(sig.String(), func(t *testing.T) {
			began := make(chan struct{})
			wrapHandler = func(h http.Handler) http.Handler {
				return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					h.ServeHTTP(&heldStream{ResponseWriter: w, done: r.Context().Done(), began: began}, r)
				})
			}
			t.Cleanup(func() { wrapHandler = nil })
			url, errb, result := startServe(t, context.Background(), path, "-c", "256")
			resp, err := http.Post(url+"/v1/chat/completions", "application/json",
				strings.NewReader(`{"stream":true,"max_tokens":200,"messages":[{"role":"user","content":"Go on and on."}]}`))
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			<-began
			br := bufio.NewReader(resp.Body)
			first, err := br.ReadString('\n')
			if err != nil || !strings.HasPrefix(first, "data: {") {
				t.Fatalf("first event %q, %v", first, err)
			}
			if err := syscall.Kill(syscall.Getpid(), sig); err != nil {
				t.Fatal(err)
			}
			rest, err := io.ReadAll(br) // an abrupt end would be io.ErrUnexpectedEOF
			if err != nil {
				t.Fatalf("the stream after %v: %v (%q)", sig, err, rest)
			}
			var data []string
			for _, line := range strings.Split(first+string(rest), "\n") {
				if d, ok := strings.CutPrefix(line, "data: "); ok {
					data = append(data, d)
				}
			}
			if len(data) < 3 || data[len(data)-1] != "[DONE]" {
				t.Fatalf("after %v the stream sent %q; want its tokens, an error event, [DONE]", sig, rest)
			}
			var last struct {
				Error struct{ Message, Type, Code string }
			}
			if err := json.Unmarshal([]byte(data[len(data)-2]), &last); err != nil || last.Error.Code != "server_shutting_down" ||
				!strings.Contains(last.Error.Message, "shutting down") {
				t.Fatalf("the stream's last event %s (%v); want an error event with code server_shutting_down", data[len(data)-2], err)
			}
			var text strings.Builder
			for _, d := range data[:len(data)-2] {
				var token struct {
					Choices []struct{ Delta struct{ Content string } }
				}
				if err := json.Unmarshal([]byte(d), &token); err != nil || len(token.Choices) != 1 {
					t.Fatalf("a token's event %s (%v)", d, err)
				}
				text.WriteString(token.Choices[0].Delta.Content)
			}
			if err := <-result; err != nil {
				t.Fatalf("serve ended with %v after %v; want nil (status 0)", err, sig)
			}
			log := errb.String()
			m := regexp.MustCompile(`/v1/chat/completions: the server is shutting down \(after (\d+) tokens\)`).FindStringSubmatch(log)
			if !strings.Contains(log, "stopped ("+sig.String()+" signal received)") || m == nil {
				t.Fatalf("serve's log after %v:\n%s", sig, log)
			}
			n, _ := strconv.Atoi(m[1])
			if want := replies(t, path, []string{"Go on and on."}, n)[0]; n >= 200 || text.String() != want {
				t.Errorf("the stream stopped after %d tokens sent %q; its first %d tokens are %q", n, text.String(), n, want)
			}
		})
	}
}

// TestServeQueueFlag: -queue 0 lets no request wait: while the one session answers a stream
// (held after its first event), the next request is answered 429 with Retry-After; -queue -1
// is a usage error.
func TestServeQueueFlag(t *testing.T) {
	path := tinyModel(t)
	began := make(chan struct{})
	wrapHandler = func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Header.Get("X-Test-Hold") == "" {
				h.ServeHTTP(w, r)
				return
			}
			h.ServeHTTP(&heldStream{ResponseWriter: w, done: r.Context().Done(), began: began}, r)
		})
	}
	t.Cleanup(func() { wrapHandler = nil })
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	url, errb, result := startServe(t, ctx, path, "-c", "256", "-queue", "0")
	req, _ := http.NewRequest("POST", url+"/v1/chat/completions",
		strings.NewReader(`{"stream":true,"max_tokens":200,"messages":[{"role":"user","content":"Go on and on."}]}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Test-Hold", "1")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	<-began
	next, err := http.Post(url+"/v1/chat/completions", "application/json", strings.NewReader(`{"max_tokens":2,"messages":[{"role":"user","content":"hi"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(next.Body)
	next.Body.Close()
	var e struct{ Error struct{ Code string } }
	if next.StatusCode != 429 || next.Header.Get("Retry-After") == "" || json.Unmarshal(b, &e) != nil || e.Error.Code != "rate_limit_exceeded" {
		t.Errorf("with the session busy and -queue 0: %d Retry-After %q %s; want 429 rate_limit_exceeded", next.StatusCode, next.Header.Get("Retry-After"), b)
	}
	if !strings.Contains(errb.String(), "0 more waiting at most") {
		t.Errorf("serve's log does not say how many may wait:\n%s", errb.String())
	}
	cancel()
	if err := <-result; err != context.Canceled {
		t.Fatalf("serve ended with %v", err)
	}
	err = runServe(context.Background(), newCommandLine("serve", []string{"-m", path, "-queue", "-1"}, io.Discard), io.Discard, io.Discard)
	if !errors.Is(err, errUsage) || !strings.Contains(err.Error(), "-queue -1: want 0 or more") {
		t.Errorf("-queue -1: %v", err)
	}
}
