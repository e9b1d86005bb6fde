//go:build unix

package main

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
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
	errb := &syncBuffer{}
	err := runServe(context.Background(), newCommandLine("serve", []string{"-m", "unused.gguf", "-addr", "0.0.0.0:0"}, errb), io.Discard, errb)
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

// TestServeParallel: serve -parallel 3 answers three requests at once, each as it would alone,
// plans the three sessions, and refuses a -parallel out of range.
func TestServeParallel(t *testing.T) {
	path := tinyModel(t)
	questions := []string{"Hello!", "Name a colour.", "Count to three."}
	var want []string
	for _, q := range questions {
		want = append(want, replies(t, path, []string{q}, 8)[0])
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	url, errb, result := startServe(t, ctx, path, "-c", "512", "-parallel", "3")
	got := make([]string, len(questions))
	errs := make([]error, len(questions))
	var wg sync.WaitGroup
	for i, q := range questions {
		wg.Go(func() {
			resp, err := http.Post(url+"/v1/chat/completions", "application/json",
				strings.NewReader(`{"max_tokens":8,"messages":[{"role":"user","content":"`+q+`"}]}`))
			if err != nil {
				errs[i] = err
				return
			}
			defer resp.Body.Close()
			var r struct {
				Choices []struct{ Message struct{ Content string } }
			}
			if errs[i] = json.NewDecoder(resp.Body).Decode(&r); errs[i] == nil && len(r.Choices) == 1 {
				got[i] = r.Choices[0].Message.Content
			}
		})
	}
	wg.Wait()
	for i := range questions {
		if errs[i] != nil || got[i] != want[i] {
			t.Errorf("request %d: %q (%v), alone %q", i, got[i], errs[i], want[i])
		}
	}
	if !strings.Contains(errb.String(), "3 sessions of ") || !strings.Contains(errb.String(), "3 requests at once") {
		t.Errorf("serve's log does not plan or say 3 sessions:\n%s", errb.String())
	}
	cancel()
	if err := <-result; err != context.Canceled {
		t.Fatalf("serve ended with %v", err)
	}
	err := runServe(context.Background(), newCommandLine("serve", []string{"-m", path, "-parallel", "0"}, io.Discard), io.Discard, io.Discard)
	if !errors.Is(err, errUsage) || !strings.Contains(err.Error(), "-parallel 0: want 1 to 64") {
		t.Errorf("-parallel 0: %v", err)
	}
}
