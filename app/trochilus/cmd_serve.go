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
func runServe(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	cl := commandLine{
		name:     "serve",
		synopsis: "trochilus serve -m MODEL [-addr HOST:PORT] [-api-key KEY] [-cors ORIGINS] [-name ID] [-parallel N] [-t T] [-b B] [-c C]",
		about: "Answer HTTP requests in the shape of OpenAI's API: POST /v1/chat/completions,\n" +
			"POST /v1/completions, POST /v1/responses (\"stream\": true for server-sent events),\n" +
			"GET /v1/models[/ID], GET /health;\n" +
			"greedy unless a request sets a temperature (then sampled with its seed, or a fresh one the\n" +
			"response reports). And in the shape of Ollama's: POST /api/chat, /api/generate (lines of JSON\n" +
			"unless \"stream\": false; Ollama's sampling defaults, a seed in the options reproduces),\n" +
			"/api/show, GET /api/tags, /api/ps, /api/version. -parallel N answers N requests at once\n" +
			"(each with its own session and KV cache, their tokens sharing forward passes: the same answers).\n" +
			"Listens on loopback unless -addr says otherwise, which then needs -api-key. SIGINT or\n" +
			"SIGTERM stops it.",
	}
	fs := cl.flags(stderr)
	mf := addModelFlags(fs)
	addr := fs.String("addr", "127.0.0.1:8080", "the address to listen on, host:port (port 0: any free port)")
	name := fs.String("name", "", "the model id clients see (default: the file name without .gguf)")
	apiKey := fs.String("api-key", "", "the key every /v1 and /api request must send as \"Authorization: Bearer KEY\" (default: $TROCHILUS_API_KEY); required off loopback")
	parallel := fs.Int("parallel", 1, "requests answered at once, each with a session of its own (the memory plan counts them all)")
	cors := fs.String("cors", "", "browser origins allowed to call the server, comma-separated (\"http://localhost:3000\"; \"*\": any); none by default")
	if err := cl.parse(fs, args); err != nil {
		return err
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
	// SIGTERM (a service manager's stop) ends the server as gracefully as an interrupt, and as
	// a normal end (status 0); an interrupt stays "interrupted" (130), as for every command.
	interrupted := ctx
	ctx, stopSignals := signal.NotifyContext(ctx, syscall.SIGTERM)
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
	srv.APIKey, srv.Hosts, srv.Draft = *apiKey, hosts, *mf.draft
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
	fmt.Fprintf(stderr, "serving %s at http://%s: %s, /v1/models, /health; %s\n", id, ln.Addr(), chatNote, at)
	if *apiKey != "" {
		fmt.Fprintln(stderr, "every /v1 request needs the API key (Authorization: Bearer KEY)")
	}
	if len(srv.Origins) > 0 {
		fmt.Fprintf(stderr, "pages of %s may call the server\n", strings.Join(srv.Origins, ", "))
	}

	// Requests live in a context that a signal cancels with serve.ErrShuttingDown: the answers
	// in flight stop at their next token and say why (a 503, or a last error event of a stream),
	// then the server closes and the command ends with status 0.
	//
	// The timeouts bound what a client can hold without asking anything: the header, the body
	// (8 MiB at most) and an idle keep-alive connection. There is no WriteTimeout: it counts
	// from the request's end to the response's, so it would cut off every long stream.
	base, cancelBase := context.WithCancelCause(context.Background())
	defer cancelBase(nil)
	hs := &http.Server{Handler: srv, ReadHeaderTimeout: 30 * time.Second, ReadTimeout: 2 * time.Minute,
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
		fmt.Fprintln(stderr, "stopped")
		err = interrupted.Err()
	}
	// No answer may still be running when done closes the model.
	srv.Close()
	return err
}

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
