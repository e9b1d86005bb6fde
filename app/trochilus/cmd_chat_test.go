package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/trochilus-llm/trochilus/engine"
	"github.com/trochilus-llm/trochilus/engine/assistant"
	"github.com/trochilus-llm/trochilus/tokenizer/chat"
)

// newChat loads path on one thread with a session of 512 positions, for package assistant's
// answers to compare the commands with.
func newChat(t *testing.T, path string) *assistant.Chat {
	t.Helper()
	c, err := assistant.New(loadModel(t, path, engine.SessionOptions{Context: 512}))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// replies answers turns one after another with package assistant directly, each user turn
// followed by the answer, as the chat command must.
func replies(t *testing.T, path string, users []string, n int) []string {
	t.Helper()
	c := newChat(t, path)
	var turns []chat.Message
	var out []string
	for _, u := range users {
		turns = append(turns, chat.Message{Role: "user", Content: u})
		r, err := c.Reply(context.Background(), turns, assistant.Options{MaxTokens: n})
		if err != nil {
			t.Fatal(err)
		}
		turns = append(turns, chat.Message{Role: "assistant", Content: r.Text})
		out = append(out, r.Text)
	}
	return out
}

func TestChatCommand(t *testing.T) {
	path := tinyModel(t)
	want := replies(t, path, []string{"Hello!", "And then?"}, 10)
	var out, errb bytes.Buffer
	in := strings.NewReader("Hello!\n\nAnd then?\n/reset\nHello!\n")
	err := chatLoop(context.Background(), newCommandLine("chat", []string{"-m", path, "-n", "10", "-c", "512"}, &errb),
		chatIO{in: in, out: &out, err: &errb})
	if err != nil {
		t.Fatalf("%v\n%s", err, errb.String())
	}
	// Each answer on its own line; after /reset the first answer again.
	if got, exp := out.String(), want[0]+"\n"+want[1]+"\n"+want[0]+"\n"; got != exp {
		t.Fatalf("stdout %q, want %q\nstderr %s", got, exp, errb.String())
	}
	if !strings.Contains(errb.String(), "(new conversation)") || !regexp.MustCompile(`\(10 tokens, cut at the token limit; prompt \d+, [1-9]\d* reused`).MatchString(errb.String()) {
		t.Fatalf("stderr %s", errb.String())
	}
}

// interruptingWriter sends an interrupt on the first write and waits until the chat has
// cancelled the answer (the tiny model would otherwise finish its answer first).
type interruptingWriter struct {
	bytes.Buffer
	once      sync.Once
	sig       chan os.Signal
	cancelled chan struct{}
}

func (w *interruptingWriter) Write(p []byte) (int, error) {
	w.once.Do(func() {
		w.sig <- os.Interrupt
		<-w.cancelled
	})
	return w.Buffer.Write(p)
}

func TestChatInterruptStopsTheAnswer(t *testing.T) {
	path := tinyModel(t)
	want := replies(t, path, []string{"Hello!"}, 12)
	sig := make(chan os.Signal, 1)
	out := &interruptingWriter{sig: sig, cancelled: make(chan struct{})}
	var once sync.Once
	var errb bytes.Buffer
	// The first answer is interrupted; the chat goes on with the stopped answer in the
	// conversation, and a /reset brings the whole first answer back.
	err := chatLoop(context.Background(), newCommandLine("chat", []string{"-m", path, "-n", "12", "-c", "512"}, &errb),
		chatIO{in: strings.NewReader("Hello!\n/reset\nHello!\n"), out: out, err: &errb, interrupts: sig,
			cancelled: func() { once.Do(func() { close(out.cancelled) }) }})
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(out.String(), "\n")
	if len(lines) != 3 || lines[1] != want[0] || !strings.HasPrefix(want[0], lines[0]) || lines[0] == want[0] {
		t.Fatalf("stdout %q, want a stopped start of %q then all of it", out.String(), want[0])
	}
	if !strings.Contains(errb.String(), "(stopped after") {
		t.Fatalf("stderr %s", errb.String())
	}
}

func TestChatRefusesAModelWithoutTemplate(t *testing.T) {
	var errb bytes.Buffer
	err := chatLoop(context.Background(), newCommandLine("chat", []string{"-m", "/nonexistent.gguf"}, &errb), chatIO{in: strings.NewReader(""), out: io.Discard, err: &errb})
	if err == nil {
		t.Fatal("chat with a missing file")
	}
	if code, _, _ := runCLI("chat", "-n", "-1", "-m", "x"); code != 2 {
		t.Fatalf("-n -1: exit %d", code)
	}
}

// syncBuffer is a bytes.Buffer safe for a writer and a reader in two goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// lineWatch is a writer that closes seen once what it was written holds want.
type lineWatch struct {
	syncBuffer
	want string
	once sync.Once
	seen chan struct{}
}

func (w *lineWatch) Write(p []byte) (int, error) {
	n, err := w.syncBuffer.Write(p)
	if strings.Contains(w.String(), w.want) {
		w.once.Do(func() { close(w.seen) })
	}
	return n, err
}

// startServe runs serve on path, with extra flags, at a free loopback port until ctx ends. It
// returns once serve says where it listens (failing the test if serve ends first), with the
// server's address, serve's stderr and the channel its result comes on. There is no deadline:
// the test binary's -timeout is the only limit, so a slow machine is never mistaken for a
// broken server.
func startServe(t *testing.T, ctx context.Context, path string, extra ...string) (url string, errb *lineWatch, result <-chan error) {
	t.Helper()
	errb = &lineWatch{want: "serving ", seen: make(chan struct{})}
	res := make(chan error, 1)
	go func() {
		res <- runServe(ctx, newCommandLine("serve", append([]string{"-m", path, "-addr", "127.0.0.1:0"}, extra...), errb), io.Discard, errb)
	}()
	select {
	case <-errb.seen:
	case err := <-res:
		t.Fatalf("serve ended: %v\n%s", err, errb.String())
	}
	m := regexp.MustCompile(`at http://(\S+):`).FindStringSubmatch(errb.String())
	if m == nil {
		t.Fatalf("serve does not say where it listens:\n%s", errb.String())
	}
	return "http://" + m[1], errb, res
}

func TestServeCommand(t *testing.T) {
	path := tinyModel(t)
	want := replies(t, path, []string{"Hello!"}, 8)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	url, errb, result := startServe(t, ctx, path, "-c", "512")
	resp, err := http.Post(url+"/v1/chat/completions", "application/json",
		strings.NewReader(`{"max_tokens":8,"messages":[{"role":"user","content":"Hello!"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	var r struct {
		Model   string
		Choices []struct{ Message struct{ Content string } }
	}
	err = json.NewDecoder(resp.Body).Decode(&r)
	resp.Body.Close()
	if err != nil || r.Model != "tiny-q8_0" || len(r.Choices) != 1 || r.Choices[0].Message.Content != want[0] {
		t.Fatalf("answer %+v (%v), want %q", r, err, want[0])
	}
	cancel()
	if err := <-result; err != context.Canceled { // a serve that never stops hangs to -timeout
		t.Fatalf("serve ended with %v", err)
	}
	if !strings.Contains(errb.String(), "POST /v1/chat/completions: prompt") {
		t.Fatalf("no request log:\n%s", errb.String())
	}
}

// TestChatSampling checks that -temp samples with -seed: two chats give the same answers, the
// first the one package assistant draws with that seed, the second with seed+1.
func TestChatSampling(t *testing.T) {
	path := tinyModel(t)
	c := newChat(t, path)
	turns := []chat.Message{{Role: "user", Content: "Hello!"}}
	r, err := c.Reply(context.Background(), turns, assistant.Options{MaxTokens: 10,
		Sampling: &engine.Sampling{Temperature: 0.7, TopK: 20, TopP: 0.9, Seed: 5}})
	if err != nil {
		t.Fatal(err)
	}
	var outs []string
	for range 2 {
		var out, errb bytes.Buffer
		err := chatLoop(context.Background(), newCommandLine("chat", []string{"-m", path, "-n", "10", "-c", "512", "-temp", "0.7", "-top-k", "20", "-top-p", "0.9", "-seed", "5"}, &errb),
			chatIO{in: strings.NewReader("Hello!\nAgain?\n"), out: &out, err: &errb})
		if err != nil || !strings.Contains(errb.String(), "seed 5") {
			t.Fatalf("%v: %s", err, errb.String())
		}
		outs = append(outs, out.String())
	}
	if outs[0] != outs[1] || !strings.HasPrefix(outs[0], r.Text+"\n") {
		t.Fatalf("chats %q and %q; the first answer with seed 5 is %q", outs[0], outs[1], r.Text)
	}
	if code, _, errs := runCLI("chat", "-m", path, "-temp", "-1"); code != 2 || !strings.Contains(errs, "temperature") {
		t.Fatalf("-temp -1: exit %d %s", code, errs)
	}
}
