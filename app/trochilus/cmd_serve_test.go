//go:build unix

package main

import (
	"context"
	"errors"
	"io"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
)

// TestServedHosts checks that only loopback serves without an API key, and which Host names
// a server off loopback answers.
func TestServedHosts(t *testing.T) {
	for _, c := range []struct {
		addr, key string
		hosts     []string
		usage     bool
	}{
		{"127.0.0.1:8080", "", nil, false},
		{"localhost:0", "", nil, false},
		{"[::1]:8080", "", nil, false},
		{"0.0.0.0:8080", "", nil, true},
		{":8080", "", nil, true},
		{"192.168.1.5:8080", "", nil, true},
		{"0.0.0.0:8080", "k", []string{"*"}, false},
		{":8080", "k", []string{"*"}, false},
		{"192.168.1.5:8080", "k", []string{"192.168.1.5"}, false},
		{"nonsense", "k", nil, true},
	} {
		hosts, err := servedHosts(c.addr, c.key)
		if errors.Is(err, errUsage) != c.usage || !slices.Equal(hosts, c.hosts) {
			t.Errorf("servedHosts(%q, %q) = %q, %v; want %q (usage error %v)", c.addr, c.key, hosts, err, c.hosts, c.usage)
		}
	}
	err := runServe(context.Background(), []string{"-m", "unused.gguf", "-addr", "0.0.0.0:0"}, io.Discard, &syncBuffer{})
	if !errors.Is(err, errUsage) || !strings.Contains(err.Error(), "-api-key") {
		t.Fatalf("serve on every address without a key: %v", err)
	}
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

// TestServeStopsOnSIGTERM checks that SIGTERM ends serve as a normal stop: nil (status 0).
func TestServeStopsOnSIGTERM(t *testing.T) {
	path := tinyModel(t)
	errb := &lineWatch{want: "serving ", seen: make(chan struct{})}
	result := make(chan error, 1)
	go func() {
		result <- runServe(context.Background(), []string{"-m", path, "-addr", "127.0.0.1:0", "-c", "256"}, io.Discard, errb)
	}()
	select {
	case <-errb.seen: // the signal handler is in place before serve says where it listens
	case err := <-result:
		t.Fatalf("serve ended: %v\n%s", err, errb.String())
	}
	if err := syscall.Kill(syscall.Getpid(), syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := <-result; err != nil || !strings.Contains(errb.String(), "stopped") {
		t.Fatalf("after SIGTERM: %v\n%s", err, errb.String())
	}
}
