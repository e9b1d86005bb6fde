package serve

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/trochilus-llm/trochilus/engine/assistant"
	"github.com/trochilus-llm/trochilus/tokenizer/chat"
)

// TestLogprobs asks both endpoints for log probabilities and compares them with what the
// engine reports for the same answer, value for value, in each endpoint's shape.
func TestLogprobs(t *testing.T) {
	f := newFixture(t)
	turns := []chat.Message{{Role: "user", Content: "Name three colours."}}
	want := f.reply(t, turns, assistant.Options{MaxTokens: 8, Logprobs: true, TopLogprobs: 2})

	_, body := f.post(t, "/v1/chat/completions", `{"max_tokens":8,"logprobs":true,"top_logprobs":2,"messages":[{"role":"user","content":"Name three colours."}]}`)
	var got struct {
		Choices []struct {
			Message  struct{ Content string }
			Logprobs struct {
				Content []struct {
					Token       string
					Logprob     float32
					Bytes       []int
					TopLogprobs []struct {
						Token   string
						Logprob float32
					} `json:"top_logprobs"`
				}
			}
		}
	}
	if err := json.Unmarshal(body, &got); err != nil || len(got.Choices) != 1 {
		t.Fatalf("%s: %v", body, err)
	}
	lps := got.Choices[0].Logprobs.Content
	if got.Choices[0].Message.Content != want.Text || len(lps) != len(want.Logprobs) || len(lps) == 0 {
		t.Fatalf("%d logprobs for %q, want %d for %q", len(lps), got.Choices[0].Message.Content, len(want.Logprobs), want.Text)
	}
	for i, lp := range lps {
		w := want.Logprobs[i]
		if lp.Logprob != w.Logprob || len(lp.Bytes) != len(w.Bytes) || len(lp.TopLogprobs) != 2 || lp.TopLogprobs[0].Logprob != w.Top[0].Logprob {
			t.Fatalf("token %d: %+v, want %+v", i, lp, w)
		}
	}

	raw, err := f.want.Complete(t.Context(), "Once upon a time", assistant.Options{MaxTokens: 6, Logprobs: true, TopLogprobs: 3})
	if err != nil {
		t.Fatal(err)
	}
	_, body = f.post(t, "/v1/completions", `{"prompt":"Once upon a time","max_tokens":6,"logprobs":3}`)
	var text struct {
		Choices []struct {
			Text     string
			Logprobs struct {
				Tokens        []string
				TokenLogprobs []float32            `json:"token_logprobs"`
				TopLogprobs   []map[string]float32 `json:"top_logprobs"`
				TextOffset    []int                `json:"text_offset"`
			}
		}
	}
	if err := json.Unmarshal(body, &text); err != nil || len(text.Choices) != 1 {
		t.Fatalf("%s: %v", body, err)
	}
	c := text.Choices[0]
	if c.Text != raw.Text || len(c.Logprobs.TokenLogprobs) != len(raw.Logprobs) || len(c.Logprobs.TopLogprobs) != len(raw.Logprobs) {
		t.Fatalf("completion %s, want %q with %d logprobs", body, raw.Text, len(raw.Logprobs))
	}
	at := 0
	for i, lp := range raw.Logprobs {
		if c.Logprobs.TokenLogprobs[i] != lp.Logprob || c.Logprobs.TextOffset[i] != at || len(c.Logprobs.TopLogprobs[i]) == 0 {
			t.Fatalf("token %d: %v at %d, want %v at %d", i, c.Logprobs.TokenLogprobs[i], c.Logprobs.TextOffset[i], lp.Logprob, at)
		}
		at += len(lp.Bytes)
	}
}

// TestStreamedLogprobs: a streamed answer's chunks carry the log probabilities of the tokens
// their text holds; together they are the whole answer's, in order, with and without a stop
// text, on chat completions and completions (whose text offsets are the answer's).
func TestStreamedLogprobs(t *testing.T) {
	f := newFixture(t)
	whole := func(path, body string) []byte {
		resp, b := f.post(t, path, body)
		if resp.StatusCode != 200 {
			t.Fatalf("%s %s: %d %s", path, body, resp.StatusCode, b)
		}
		return b
	}
	chatBody := `"max_tokens":16,"logprobs":true,"top_logprobs":2,"messages":[{"role":"user","content":"Name three colours."}]`
	var plain struct {
		Choices []struct {
			Message  struct{ Content string }
			Logprobs struct{ Content []json.RawMessage }
		}
	}
	json.Unmarshal(whole("/v1/chat/completions", `{`+chatBody+`}`), &plain)
	text := plain.Choices[0].Message.Content
	stop := text[len(text)/2:][:2]
	for _, extra := range []string{``, `,"stop":` + mustJSON(stop)} {
		json.Unmarshal(whole("/v1/chat/completions", `{`+chatBody+extra+`}`), &plain)
		data, _ := readEvents(t, strings.NewReader(string(whole("/v1/chat/completions", `{`+chatBody+extra+`,"stream":true}`))))
		var streamed []json.RawMessage
		var content strings.Builder
		for _, d := range data {
			var chunk struct {
				Choices []struct {
					Delta    struct{ Content string }
					Logprobs *struct{ Content []json.RawMessage }
				}
			}
			json.Unmarshal([]byte(d), &chunk)
			for _, c := range chunk.Choices {
				content.WriteString(c.Delta.Content)
				if c.Logprobs != nil {
					streamed = append(streamed, c.Logprobs.Content...)
				}
			}
		}
		want := plain.Choices[0].Logprobs.Content
		if content.String() != plain.Choices[0].Message.Content || len(streamed) != len(want) || len(want) == 0 {
			t.Fatalf("chat%s: streamed %q with %d logprobs, whole %q with %d", extra, content.String(), len(streamed), plain.Choices[0].Message.Content, len(want))
		}
		for i := range want {
			if string(streamed[i]) != string(want[i]) {
				t.Fatalf("chat%s: token %d streamed %s, whole %s", extra, i, streamed[i], want[i])
			}
		}
	}

	type textLP struct {
		Tokens        []string
		TokenLogprobs []float32 `json:"token_logprobs"`
		TextOffset    []int     `json:"text_offset"`
	}
	var comp struct {
		Choices []struct{ Logprobs textLP }
	}
	compBody := `"prompt":"Once upon a time","max_tokens":10,"logprobs":2`
	json.Unmarshal(whole("/v1/completions", `{`+compBody+`}`), &comp)
	data, _ := readEvents(t, strings.NewReader(string(whole("/v1/completions", `{`+compBody+`,"stream":true}`))))
	var got textLP
	for _, d := range data {
		var chunk struct {
			Choices []struct{ Logprobs *textLP }
		}
		json.Unmarshal([]byte(d), &chunk)
		for _, c := range chunk.Choices {
			if c.Logprobs != nil {
				got.Tokens = append(got.Tokens, c.Logprobs.Tokens...)
				got.TokenLogprobs = append(got.TokenLogprobs, c.Logprobs.TokenLogprobs...)
				got.TextOffset = append(got.TextOffset, c.Logprobs.TextOffset...)
			}
		}
	}
	w := comp.Choices[0].Logprobs
	if !slices.Equal(got.Tokens, w.Tokens) || !slices.Equal(got.TokenLogprobs, w.TokenLogprobs) || !slices.Equal(got.TextOffset, w.TextOffset) || len(w.Tokens) == 0 {
		t.Fatalf("completions streamed %+v, whole %+v", got, w)
	}
}

// TestLogitBias: a bias moves the answer as the engine's own option does; -100 bans a token;
// bad keys, values and ids are a 400 naming logit_bias.
func TestLogitBias(t *testing.T) {
	f := newFixture(t)
	turns := []chat.Message{{Role: "user", Content: "hi"}}
	plain := f.reply(t, turns, assistant.Options{MaxTokens: 4, Logprobs: true})
	ids := []int32{plain.Logprobs[0].ID}
	for _, bias := range []map[int32]float32{{ids[0]: -100}, {ids[0]: -100, 7: 100}, {123: 2.5, ids[0]: -3.25}} {
		want := f.reply(t, turns, assistant.Options{MaxTokens: 4, LogitBias: bias})
		var parts []string
		for id, v := range bias {
			parts = append(parts, fmt.Sprintf("%q:%g", fmt.Sprint(id), v))
		}
		resp, body := f.post(t, "/v1/chat/completions", `{`+hi+`,"logit_bias":{`+strings.Join(parts, ",")+`}}`)
		var got chatResponse
		if err := json.Unmarshal(body, &got); err != nil || resp.StatusCode != 200 || got.Choices[0].Message.Content != want.Text {
			t.Fatalf("logit_bias %v: %d %s, want %q", bias, resp.StatusCode, body, want.Text)
		}
		if b, ok := bias[ids[0]]; ok && b == -100 && want.Text == plain.Text {
			t.Fatalf("logit_bias %v: the answer %q did not change", bias, want.Text)
		}
	}
	for _, c := range []struct{ bias, says string }{
		{`{"x":1}`, `key "x": want a token id`},
		{`{"5":101}`, `101: want -100 to 100`},
		{`{"999999":1}`, `token 999999: the vocabulary has 50304 tokens`},
		{`{"5":"a"}`, `logit_bias`},
	} {
		resp, body := f.post(t, "/v1/chat/completions", `{`+hi+`,"logit_bias":`+c.bias+`}`)
		wantError(t, c.bias, resp, body, 400, "logit_bias", "", c.says)
	}
}
