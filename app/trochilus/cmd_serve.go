package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/trochilus-llm/trochilus/engine"
	"github.com/trochilus-llm/trochilus/engine/assistant"
	"github.com/trochilus-llm/trochilus/engine/serve"
)

// runServe answers OpenAI- and Ollama-style HTTP requests with the model until interrupted.
func runServe(ctx context.Context, cl *commandLine, stdout, stderr io.Writer) error {
	mf := addModelFlags(cl.FlagSet)
	addr := cl.String("addr", "127.0.0.1:8080", "the address to listen on, host:port (port 0: any free port)")
	name := cl.String("name", "", "the model id clients see (default: the file name without .gguf)")
	apiKey := cl.String("api-key", "", "the key every /v1 and /api request must send as \"Authorization: Bearer KEY\" (default: $TROCHILUS_API_KEY); required off loopback")
	parallel := cl.Int("parallel", 1, "requests answered at once, each with a session of its own (the memory plan counts them all)")
	cors := cl.String("cors", "", "browser origins allowed to call the server, comma-separated (\"http://localhost:3000\"; \"*\": any); none by default")
	queue := cl.Int("queue", serve.DefaultQueue, "requests that may wait while every session answers; past it a request gets 429 with Retry-After (0: none waits)")
	if err := cl.parse(); err != nil {
		return err
	}
	if *queue < 0 {
		return fmt.Errorf("%w: -queue %d: want 0 or more", errUsage, *queue)
	}
	if *apiKey == "" {
		*apiKey = os.Getenv("TROCHILUS_API_KEY")
	}
	if *parallel < 1 || *parallel > 64 {
		return fmt.Errorf("%w: -parallel %d: want 1 to 64", errUsage, *parallel)
	}
	mf.sessions = *parallel
	hosts, err := servedHosts(*addr, *apiKey)
	if err != nil {
		return err
	}
	// SIGTERM (a service manager's stop) and SIGINT (Ctrl-C) both stop the server gracefully,
	// as its normal end (status 0: stopping is how a server ends). main catches SIGINT too; it
	// is caught here as well so that serve stops the same way however it is started.
	ctx, stopSignals := signal.NotifyContext(ctx, syscall.SIGTERM, os.Interrupt)
	defer stopSignals()
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
	m := c.Model()
	for range *parallel - 1 {
		s, err := m.NewSession(engine.SessionOptions{Context: c.Context(), PassSize: *mf.pass})
		if err != nil {
			return err
		}
		defer s.Close()
		more, err := assistant.New(m, s)
		if err == nil {
			err = srv.Also(more)
		}
		if err != nil {
			return err
		}
	}
	srv.APIKey, srv.Hosts, srv.Draft, srv.Queue = *apiKey, hosts, *mf.draft, *queue
	for _, o := range strings.Split(*cors, ",") {
		if o = strings.TrimSpace(o); o != "" {
			srv.Origins = append(srv.Origins, o)
		}
	}
	srv.Log = func(format string, args ...any) {
		fmt.Fprintf(stderr, time.Now().Format("15:04:05 ")+format+"\n", args...)
	}
	chatNote := "OpenAI's /v1/chat/completions, /v1/completions, /v1/responses and Ollama's /api/chat, /api/generate"
	switch _, tools := c.ToolSyntax(); {
	case !c.CanChat():
		chatNote = "/v1/completions and Ollama's /api/generate with raw prompts (the file has no chat template)"
	case tools:
		chatNote += " (with tools)"
	}
	at := "one request at a time"
	if *parallel > 1 {
		at = fmt.Sprintf("%d requests at once", *parallel)
	}
	at += fmt.Sprintf(", %d more waiting at most (-queue)", *queue)
	fmt.Fprintf(stderr, "serving %s at http://%s: %s, /v1/models, /health; %s\n", id, ln.Addr(), chatNote, at)
	if *apiKey != "" {
		fmt.Fprintln(stderr, "every /v1 request needs the API key (Authorization: Bearer KEY)")
	}
	if len(srv.Origins) > 0 {
		fmt.Fprintf(stderr, "pages of %s may call the server\n", strings.Join(srv.Origins, ", "))
	}

	// Requests live in a context that a signal cancels with serve.ErrShuttingDown: a streamed
	// answer in flight finishes the token it is making, then ends with an error event saying why
	// and the stream's end; a whole answer stops at once with a 503. Then the server closes and
	// the command ends with status 0.
	//
	// The timeouts bound what a client can hold without asking anything: the header, the body
	// (8 MiB at most) and an idle keep-alive connection. There is no WriteTimeout: it counts
	// from the request's end to the response's, so it would cut off every long stream.
	base, cancelBase := context.WithCancelCause(context.Background())
	defer cancelBase(nil)
	var handler http.Handler = srv
	if wrapHandler != nil {
		handler = wrapHandler(handler)
	}
	hs := &http.Server{Handler: handler, ReadHeaderTimeout: 30 * time.Second, ReadTimeout: 2 * time.Minute,
		IdleTimeout: 2 * time.Minute, BaseContext: func(net.Listener) context.Context { return base }}
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		<-ctx.Done()
		cancelBase(serve.ErrShuttingDown)
		shut, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		hs.Shutdown(shut)
	}()
	err = hs.Serve(ln)
	if errors.Is(err, http.ErrServerClosed) {
		<-stopped
		// A signal's context ends with the signal as its cause (signal.NotifyContext): that is
		// the server's normal stop. A caller's plain cancellation (a test's, another program's),
		// whose cause is the context error itself, stays the error it is. (A signal's cause
		// also reads as context.Canceled to errors.Is: only identity tells them apart.)
		why := context.Cause(ctx)
		fmt.Fprintf(stderr, "stopped (%v)\n", why)
		err = nil
		if why == context.Canceled || why == context.DeadlineExceeded {
			err = ctx.Err()
		}
	}
	// No answer may still be running when done closes the model.
	srv.Close()
	return err
}

// wrapHandler, when a test sets it, wraps the server's handler: to see or hold what it writes.
var wrapHandler func(http.Handler) http.Handler

// servedHosts checks that a server on addr is safe to start and returns the Host names it
// answers besides loopback ones. On loopback (the default) nothing else; anywhere else other
// machines can reach it, so an API key is required, and then any Host is answered when it
// listens on every address (its names are not known; the key is the guard) or the one
// address it is bound to.
func servedHosts(addr, apiKey string) ([]string, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("%w: -addr %q: %v", errUsage, addr, err)
	}
	ip := net.ParseIP(host)
	if host == "localhost" || (ip != nil && ip.IsLoopback()) {
		return nil, nil
	}
	if apiKey == "" {
		return nil, fmt.Errorf("%w: -addr %s is reachable from other machines: set -api-key KEY (or $TROCHILUS_API_KEY)", errUsage, addr)
	}
	if host == "" || (ip != nil && ip.IsUnspecified()) {
		return []string{"*"}, nil
	}
	return []string{host}, nil
}
