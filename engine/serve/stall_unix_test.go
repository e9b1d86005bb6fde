//go:build unix

package serve

import (
	"fmt"
	"net"
	"net/http/httptest"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/trochilus-llm/trochilus/engine/assistant"
	"github.com/trochilus-llm/trochilus/internal/modelgen/modelgentest"
	"github.com/trochilus-llm/trochilus/tokenizer/chat"
)

// smallSendBuffers accepts connections whose kernel send buffer is a few KiB (and fixed: no
// autotuning), so that a client that stops reading stalls the server's writes after a few KiB.
type smallSendBuffers struct{ net.Listener }

func (l smallSendBuffers) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err == nil {
		err = c.(*net.TCPConn).SetWriteBuffer(4096)
	}
	return c, err
}

// TestWriteStallFreesTheChat: a client that sends a streamed request and never reads it stalls
// the answer's writes once the sockets' few KiB of buffers are full; past WriteStall the write
// fails, the answer stops at its next token and the only chat answers the next request.
func TestWriteStallFreesTheChat(t *testing.T) {
	path := modelgentest.TinyQ8(t)
	s := New(newChat(t, path), "tiny")
	if s.WriteStall != DefaultWriteStall {
		t.Fatalf("New's WriteStall %v, want %v", s.WriteStall, DefaultWriteStall)
	}
	// The default is a minute; a test that waited that long to see the chat freed could not
	// tell a working stall from an answer that ends by itself.
	s.WriteStall = time.Millisecond
	log := &slotLog{t: t}
	s.Log = log.logf
	hd := newHolder(s)
	srv := httptest.NewUnstartedServer(hd)
	srv.Listener = smallSendBuffers{srv.Listener}
	srv.Start()
	t.Cleanup(srv.Close)
	want := newChat(t, path)

	// Every event carries 20 alternatives of its token, over 1 KiB: an answer of 100 tokens or
	// more (checked) is over 100 KiB, far beyond what the two small buffers hold.
	body := `{"stream":true,"max_tokens":200,"logprobs":true,"top_logprobs":20,"messages":[{"role":"user","content":"Go on and on."}]}`
	alone, err := want.Reply(t.Context(), []chat.Message{{Role: "user", Content: "Go on and on."}},
		assistant.Options{MaxTokens: 200, Logprobs: true, TopLogprobs: 20})
	if err != nil || alone.Tokens < 100 {
		t.Fatalf("the answer alone: %d tokens, %v; want 100 or more", alone.Tokens, err)
	}
	d := net.Dialer{Control: func(_, _ string, rc syscall.RawConn) error {
		var serr error
		err := rc.Control(func(fd uintptr) { serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 2048) })
		if err != nil {
			return err
		}
		return serr
	}}
	conn, err := d.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "POST /v1/chat/completions HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\n%s: watch\r\nContent-Length: %d\r\n\r\n%s",
		srv.Listener.Addr(), holdHeader, len(body), body)
	<-hd.began // the stalled request has the chat; the next must wait for it

	resp, b := do(t, srv.URL, "POST", "/v1/chat/completions", `{"max_tokens":4,"messages":[{"role":"user","content":"hi"}]}`, nil)
	r, err := want.Reply(t.Context(), []chat.Message{{Role: "user", Content: "hi"}}, assistant.Options{MaxTokens: 4})
	if err != nil || resp.StatusCode != 200 || answerText(t, "/v1/chat/completions", string(b)) != r.Text {
		t.Fatalf("the request after the stalled one: %d %s, want %q", resp.StatusCode, b, r.Text)
	}
	stops := log.stoppedAfter()
	if len(stops) != 1 || stops[0] >= alone.Tokens {
		t.Errorf("stalled answers stopped after %v tokens; want one stopped before its %d", stops, alone.Tokens)
	}
	if !strings.Contains(log.text(), "context canceled") {
		t.Errorf("the stalled answer's log does not say it was cancelled: %q", log.text())
	}
}
