package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"time"

	"github.com/trochilus-llm/trochilus/engine/serve"
)

// runServe answers OpenAI-style HTTP requests with the model until interrupted.
func runServe(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("serve", stderr)
	mf := addModelFlags(fs)
	addr := fs.String("addr", "127.0.0.1:8080", "the address to listen on, host:port (port 0: any free port)")
	name := fs.String("name", "", "the model id clients see (default: the file name without .gguf)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: trochilus serve -m MODEL [-addr HOST:PORT] [-name ID] [-t T] [-b B] [-c C]\n\n"+
			"Answer HTTP requests in the shape of OpenAI's API: POST /v1/chat/completions,\n"+
			"POST /v1/completions (\"stream\": true for server-sent events), GET /v1/models, GET /health.\n"+
			"Greedy unless a request sets a temperature (then sampled with its seed, or a fresh one\n"+
			"the response reports); requests are answered one at a time.")
		fs.PrintDefaults()
	}
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 0 {
		return fmt.Errorf("%w: unexpected argument %q", errUsage, fs.Arg(0))
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return err
	}
	defer ln.Close()
	c, done, err := mf.openChat(ctx, stderr)
	if err != nil {
		return err
	}
	defer done()
	id := *name
	if id == "" {
		id = strings.TrimSuffix(filepath.Base(*mf.path), ".gguf")
	}
	srv := serve.New(c, id)
	srv.Log = func(format string, args ...any) {
		fmt.Fprintf(stderr, time.Now().Format("15:04:05 ")+format+"\n", args...)
	}
	chatNote := "/v1/chat/completions and /v1/completions"
	if !c.CanChat() {
		chatNote = "/v1/completions (the file has no chat template)"
	}
	fmt.Fprintf(stderr, "serving %s at http://%s: %s, /v1/models, /health\n", id, ln.Addr(), chatNote)

	// Requests live in the command's context: an interrupt cancels the answers in flight
	// (each stops at its next token) as well as the listening.
	hs := &http.Server{Handler: srv, ReadHeaderTimeout: 30 * time.Second,
		BaseContext: func(net.Listener) context.Context { return ctx }}
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		<-ctx.Done()
		shut, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		hs.Shutdown(shut)
	}()
	err = hs.Serve(ln)
	if errors.Is(err, http.ErrServerClosed) {
		<-stopped
		err = ctx.Err()
	}
	// No answer may still be running when done closes the model.
	srv.Close()
	return err
}
