package assistant

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/trochilus-llm/trochilus/engine"
	"github.com/trochilus-llm/trochilus/engine/structured"
	"github.com/trochilus-llm/trochilus/gguf"
	"github.com/trochilus-llm/trochilus/internal/modelgen"
	"github.com/trochilus-llm/trochilus/internal/modelgen/modelgentest"
	"github.com/trochilus-llm/trochilus/internal/modelgen/modelgentest/enginetest"
	"github.com/trochilus-llm/trochilus/kernels"
	"github.com/trochilus-llm/trochilus/tokenizer/chat"
)

// TestStructuredReplies asks a random-weight model for JSON, greedy and drawn: every answer
// that ends is a JSON document of the format, and one that does not is a prefix of one (it
// ran out of tokens); the same request gives the same bytes again.
func TestStructuredReplies(t *testing.T) {
	c := open(t, modelgentest.TinyQ8(t))
	schema := `{"type":"object","properties":{"name":{"type":"string","maxLength":8},"n":{"type":"integer"},"ok":{"type":"boolean"}},"required":["name","n","ok"],"additionalProperties":false}`
	formats := map[string]*structured.Format{"json_object": structured.JSONObject()}
	var err error
	if formats["schema"], err = structured.CompileSchema([]byte(schema)); err != nil {
		t.Fatal(err)
	}
	turns := []chat.Message{{Role: "user", Content: "Answer in JSON."}}
	ended := 0
	for name, f := range formats {
		for _, sp := range []*engine.Sampling{nil, {Temperature: 1, Seed: 1}, {Temperature: 1, Seed: 2}, {Temperature: 0.7, TopP: 0.9, Seed: 3}} {
			opts := Options{MaxTokens: 200, Format: f, Sampling: sp}
			r, err := c.Reply(context.Background(), turns, opts)
			if err != nil {
				t.Fatal(err)
			}
			again, err := c.Reply(context.Background(), turns, opts)
			if err != nil || again.Text != r.Text {
				t.Fatalf("%s, sampling %v: %q, then %q (%v)", name, sp, r.Text, again.Text, err)
			}
			if !strings.HasPrefix(r.Text, "{") {
				t.Fatalf("%s, sampling %v: the answer %q does not open an object", name, sp, r.Text)
			}
			if !r.Ended {
				continue
			}
			ended++
			var v map[string]any
			if err := json.Unmarshal([]byte(r.Text), &v); err != nil {
				t.Fatalf("%s, sampling %v: ended with %q, not a JSON object: %v", name, sp, r.Text, err)
			}
			if name == "schema" {
				if _, ok := v["name"].(string); !ok || len(v) != 3 || v["n"] != float64(int64(v["n"].(float64))) {
					t.Fatalf("schema answer %q", r.Text)
				}
			}
		}
	}
	// The schema bounds the one string, so its answers end; the free object's may run on.
	if ended < 4 {
		t.Errorf("%d answers ended, want at least the schema's 4", ended)
	}
}

// BenchmarkStructuredMask is one mask over a real vocabulary (OLMoE's 50,304 tokens, Qwen3's
// 151,936) in the states a JSON answer spends its tokens in: inside a string, where a key may
// begin, after a colon, inside a number. Each mask is of fresh logits: Mask writes −Inf into
// the ones it bans and counts a −Inf as banned already, so masks of one buffer in several
// states would ban the union of their bans: by the number state, run after the other three,
// no token was left (ErrNoToken).
func BenchmarkStructuredMask(b *testing.B) {
	for _, m := range []struct {
		name string
		path string
	}{
		{"olmoe", modelgentest.TinyQ8(b)},
		{"qwen3", modelgentest.TinyQwen3Model(b, modelgen.Uniform(gguf.TypeQ8_0))},
	} {
		c := open(b, m.path)
		v := c.vocabulary()
		logits := make([]float32, c.m.Config().Vocab)
		for _, state := range []struct{ name, text string }{
			{"string", `{"name": "Ada Lov`}, {"key", `{"name": "Ada", `}, {"value", `{"name":`}, {"number", `{"n": 12`},
		} {
			b.Run(m.name+"/"+state.name, func(b *testing.B) {
				for b.Loop() {
					b.StopTimer()
					clear(logits)
					con := structured.JSONObject().Start(v)
					ids := c.tok.Encode(state.text, false)
					for _, id := range ids {
						if err := con.Accept(id); err != nil {
							b.Fatal(err)
						}
					}
					b.StartTimer()
					if err := con.Mask(logits); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// TestStructuredSameEverywhere: a structured answer, greedy and drawn, and a forced tool call
// are the same bytes on every kernel tier this CPU has and at 1 and 3 threads (the mask reads
// only the text; the logits are the same bits everywhere).
func TestStructuredSameEverywhere(t *testing.T) {
	path := modelgentest.TinyModel(t, modelgen.Uniform(gguf.TypeQ4_K))
	schema, err := structured.CompileSchema([]byte(`{"type":"object","properties":{"name":{"type":"string","maxLength":8},"tags":{"type":"array","items":{"enum":["a","b"]},"maxItems":3}},"required":["name","tags"]}`))
	if err != nil {
		t.Fatal(err)
	}
	call, err := structured.ToolCall([]structured.Tool{{Name: "f", Parameters: []byte(`{"type":"object","properties":{"x":{"type":"integer"}},"required":["x"]}`)}}, "<call>", "</call>")
	if err != nil {
		t.Fatal(err)
	}
	turns := []chat.Message{{Role: "user", Content: "JSON, please."}}
	cases := []Options{
		{MaxTokens: 80, Format: schema},
		{MaxTokens: 80, Format: schema, Sampling: &engine.Sampling{Temperature: 1, Seed: 11}},
		{MaxTokens: 40, Format: structured.JSONObject(), Sampling: &engine.Sampling{Temperature: 0.8, TopK: 50, Seed: 12}},
		{MaxTokens: 80, Format: call},
	}
	var want []string
	for _, tier := range kernels.Tiers() {
		for _, threads := range []int{1, 3} {
			c, err := New(enginetest.Open(t, path, engine.Options{Tier: tier, Threads: threads}, 512))
			if err != nil {
				t.Fatal(err)
			}
			for i, opts := range cases {
				r, err := c.Reply(context.Background(), turns, opts)
				if err != nil {
					t.Fatal(err)
				}
				if want == nil || len(want) <= i {
					want = append(want, r.Text)
					continue
				}
				if r.Text != want[i] {
					t.Fatalf("tier %s, %d threads, case %d: %q, want %q", tier.Name, threads, i, r.Text, want[i])
				}
			}
		}
	}
	if !strings.HasPrefix(want[3], `<call>{"name":`) {
		t.Errorf("the forced call %q", want[3])
	}
	t.Logf("%d tiers × 2 thread counts agree: %q", len(kernels.Tiers()), want[0])
}
