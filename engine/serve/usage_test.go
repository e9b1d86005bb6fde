package serve

import (
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/trochilus-llm/trochilus/engine/assistant"
	"github.com/trochilus-llm/trochilus/internal/modelgen/modelgentest"
	"github.com/trochilus-llm/trochilus/tokenizer/chat"
)

// TestFingerprintAndCachedTokens: chat completions and completions, whole and streamed (every
// chunk), carry system_fingerprint, the build and the kernel tier; their usage reports as
// cached_tokens the prompt's tokens the chat held already: none the first time, what the
// engine reuses when a request repeats.
func TestFingerprintAndCachedTokens(t *testing.T) {
	path := modelgentest.TinyQ8(t)
	s := New(newChat(t, path), "tiny")
	s.Build = "v1.2.3"
	s.Log = t.Logf
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	want := newChat(t, path)
	fp := "fp_v1.2.3_" + want.Model().Kernels()
	if want.Model().Kernels() == "" || New(want, "x").fingerprint() != "fp_"+buildName()+"_"+want.Model().Kernels() || buildName() == "" {
		t.Fatalf("fingerprint of the default build %q (build %q, tier %q)", New(want, "x").fingerprint(), buildName(), want.Model().Kernels())
	}

	type body struct {
		Fingerprint *string `json:"system_fingerprint"`
		Usage       *usage
	}
	turns := []chat.Message{{Role: "user", Content: "Name three colours."}}
	const prompt = "Once upon a time"
	for i, c := range []struct {
		path, body string
		alone      func() (assistant.Reply, error)
	}{
		{"/v1/chat/completions", `{"max_tokens":4,"messages":[{"role":"user","content":"Name three colours."}]}`,
			func() (assistant.Reply, error) {
				return want.Reply(t.Context(), turns, assistant.Options{MaxTokens: 4})
			}},
		{"/v1/chat/completions", `{"max_tokens":4,"stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"Name three colours."}]}`,
			func() (assistant.Reply, error) {
				return want.Reply(t.Context(), turns, assistant.Options{MaxTokens: 4})
			}},
		{"/v1/completions", `{"max_tokens":4,"prompt":"` + prompt + `"}`,
			func() (assistant.Reply, error) {
				return want.Complete(t.Context(), prompt, assistant.Options{MaxTokens: 4})
			}},
		{"/v1/completions", `{"max_tokens":4,"stream":true,"stream_options":{"include_usage":true},"prompt":"` + prompt + `"}`,
			func() (assistant.Reply, error) {
				return want.Complete(t.Context(), prompt, assistant.Options{MaxTokens: 4})
			}},
	} {
		// The server's chat and want answer the same requests in the same order: each holds
		// what the other does, and reuses as much.
		alone, err := c.alone()
		if err != nil {
			t.Fatal(err)
		}
		resp, b := do(t, srv.URL, "POST", c.path, c.body, nil)
		if resp.StatusCode != 200 {
			t.Fatalf("request %d: %d %s", i, resp.StatusCode, b)
		}
		var chunks []body
		if strings.HasPrefix(string(b), "data: ") {
			data, done := readEvents(t, strings.NewReader(string(b)))
			if !done {
				t.Fatalf("request %d: no [DONE]: %s", i, b)
			}
			for _, d := range data {
				var ch body
				if err := json.Unmarshal([]byte(d), &ch); err != nil {
					t.Fatal(err)
				}
				chunks = append(chunks, ch)
			}
		} else {
			var whole body
			if err := json.Unmarshal(b, &whole); err != nil {
				t.Fatal(err)
			}
			chunks = append(chunks, whole)
		}
		for j, ch := range chunks {
			if ch.Fingerprint == nil || *ch.Fingerprint != fp {
				t.Errorf("request %d chunk %d: system_fingerprint %v, want %q: %s", i, j, ch.Fingerprint, fp, b)
			}
		}
		u := chunks[len(chunks)-1].Usage
		if u == nil || u.PromptTokens != alone.Prompt || u.PromptTokensDetails.CachedTokens != alone.Reused {
			t.Fatalf("request %d: usage %+v, want %d prompt tokens, %d cached", i, u, alone.Prompt, alone.Reused)
		}
		// Each request repeats the one before it (the first of each endpoint repeats nothing of
		// the other's prompt but the template's or the BOS's first tokens).
		if i%2 == 1 && alone.Reused < alone.Prompt-1 {
			t.Errorf("request %d repeats the one before: %d of its %d prompt tokens reused, want all but the last", i, alone.Reused, alone.Prompt)
		}
	}
	if !strings.HasPrefix(fp, "fp_") || strings.ContainsAny(fp, " \n") {
		t.Errorf("fingerprint %q", fp)
	}
}
