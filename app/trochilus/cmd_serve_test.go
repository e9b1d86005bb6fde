//go:build unix

package main

import (
	"context"
	"errors"
	"io"
	"slices"
	"strings"
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

// TestServeStopsOnSIGTERM checks that SIGTERM ends serve as a normal stop: nil (status 0).
func TestServeStopsOnSIGTERM(t *testing.T) {
	path := tinyModel(t)
	// The signal handler is in place before serve says where it listens.
	_, errb, result := startServe(t, context.Background(), path, "-c", "256")
	if err := syscall.Kill(syscall.Getpid(), syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := <-result; err != nil || !strings.Contains(errb.String(), "stopped") {
		t.Fatalf("after SIGTERM: %v\n%s", err, errb.String())
	}
}
