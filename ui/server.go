package ui

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/trochilus-llm/trochilus/engine"
	"github.com/trochilus-llm/trochilus/engine/assistant"
	"github.com/trochilus-llm/trochilus/engine/serve"
)

// The local server's defaults: trochilus serve's -addr.
const (
	defaultServerHost = "127.0.0.1"
	defaultServerPort = 8080
)

// The preferences the server's address is remembered under (the key is not kept: preferences
// are a plain file).
const (
	prefServerHost = "server.host"
	prefServerPort = "server.port"
)

// servable is what a loaded model offers the local server: a chat of its own over the same
// loaded weights, so that serving costs a KV cache rather than a second copy of the model, and
// the Chat screen and the server can answer at once (sessions of one engine.Model may run on
// different goroutines). done releases the session.
type servable interface {
	serverChat() (c *assistant.Chat, done func() error, err error)
}

// serverChat opens a second session on the loaded model, with the chat's context.
func (c *engineChat) serverChat() (*assistant.Chat, func() error, error) {
	m := c.c.Model()
	s, err := m.NewSession(engine.SessionOptions{Context: c.c.Context()})
	if err != nil {
		return nil, nil, err
	}
	ch, err := assistant.New(m, s)
	if err != nil {
		s.Close()
		return nil, nil, err
	}
	return ch, s.Close, nil
}

// localServer is engine/serve's server answering on a listener, as trochilus serve runs it.
type localServer struct {
	addr   string // the address it listens on, the port resolved
	id     string // the model id clients see
	key    string
	hs     *http.Server
	srv    *serve.Server
	chat   *assistant.Chat         // the server's own session over the loaded model
	cancel context.CancelCauseFunc // the requests' base context
	served chan struct{}           // closed when hs.Serve has returned
	done   func() error            // releases the server's session

	once    sync.Once
	stopErr error
}

// startServer listens on host:port and serves m there with key; nothing is left running on an
// error.
func startServer(m ChatModel, host string, port int, key string) (*localServer, error) {
	if m == nil {
		return nil, errors.New("no model is loaded: load one on the Models screen first")
	}
	sv, ok := m.(servable)
	if !ok {
		return nil, fmt.Errorf("%s cannot be served by this backend", filepath.Base(m.Path()))
	}
	addr := net.JoinHostPort(host, strconv.Itoa(port))
	hosts, err := servedHosts(host, key)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	c, done, err := sv.serverChat()
	if err != nil {
		ln.Close()
		return nil, fmt.Errorf("a session for the server: %w", err)
	}
	id := strings.TrimSuffix(filepath.Base(m.Path()), ".gguf")
	srv := serve.New(c, id)
	srv.APIKey, srv.Hosts = key, hosts
	l := &localServer{addr: ln.Addr().String(), id: id, key: key, srv: srv, chat: c, served: make(chan struct{}), done: done}
	// As trochilus serve: the timeouts bound what a client holds without asking anything, no
	// WriteTimeout (it would cut long streams), and a base context whose cancellation with
	// serve.ErrShuttingDown ends the answers in flight saying why.
	base, cancel := context.WithCancelCause(context.Background())
	l.cancel = cancel
	l.hs = &http.Server{Handler: srv, ReadHeaderTimeout: 30 * time.Second, ReadTimeout: 2 * time.Minute,
		IdleTimeout: 2 * time.Minute, BaseContext: func(net.Listener) context.Context { return base }}
	go func() {
		defer close(l.served)
		l.hs.Serve(ln) // http.ErrServerClosed after stop; any other error also ends it, and stop cleans up
	}()
	return l, nil
}

// stop shuts the server down gracefully: streamed answers finish the token they are making and
// end saying why, whole ones stop with a 503; then the session is released. Every caller
// returns only once it is done (the model may then be closed).
func (l *localServer) stop() error {
	l.once.Do(func() {
		l.cancel(serve.ErrShuttingDown)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := l.hs.Shutdown(ctx); err != nil {
			l.hs.Close() // connections that outlived the grace
		}
		<-l.served
		l.srv.Close() // waits for answers still running on the session
		l.stopErr = l.done()
	})
	return l.stopErr
}

// url is the server's base address as a client on this machine reaches it.
func (l *localServer) url() string {
	host, port, _ := net.SplitHostPort(l.addr)
	if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
		host = "127.0.0.1" // every address: loopback is one of them
	}
	return "http://" + net.JoinHostPort(host, port)
}

// curl is a command line that asks the server something, the key included.
func (l *localServer) curl() string {
	line := "curl " + l.url() + "/v1/chat/completions -H 'Content-Type: application/json'"
	if l.key != "" {
		line += " -H 'Authorization: Bearer " + l.key + "'"
	}
	return line + ` -d '{"model": "` + l.id + `", "messages": [{"role": "user", "content": "Hello!"}]}'`
}

// servedHosts is trochilus serve's rule for an address (app/trochilus's servedHosts, which
// package main keeps to itself): on loopback nothing else is answered; anywhere else other
// machines can reach the server, so a key is required, and then the Host names answered are
// any (every address) or the one bound to.
func servedHosts(host, key string) ([]string, error) {
	ip := net.ParseIP(host)
	if host == "localhost" || (ip != nil && ip.IsLoopback()) {
		return nil, nil
	}
	if key == "" {
		return nil, fmt.Errorf("%q is reachable from other machines: set an API key", host)
	}
	if host == "" || (ip != nil && ip.IsUnspecified()) {
		return []string{"*"}, nil
	}
	return []string{host}, nil
}

// parsePort reads the port field: 0 (any free port) to 65535.
func parsePort(text string) (int, error) {
	p, err := strconv.Atoi(strings.TrimSpace(text))
	if err != nil || p < 0 || p > 65535 {
		return 0, fmt.Errorf("port %q: want a number from 0 (any free port) to 65535", text)
	}
	return p, nil
}
