package structured_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/trochilus-llm/trochilus/engine"
	"github.com/trochilus-llm/trochilus/engine/assistant"
	"github.com/trochilus-llm/trochilus/engine/structured"
	"github.com/trochilus-llm/trochilus/internal/modelgen/modelgentest"
	"github.com/trochilus-llm/trochilus/internal/modelgen/modelgentest/enginetest"
	"github.com/trochilus-llm/trochilus/kernels"
	"github.com/trochilus-llm/trochilus/tokenizer/chat"
)

// suiteSchemas are the JSON Schema features structured output supports, one schema each, every
// string and array bounded so that each document ends within the answer's tokens; with what the
// answers must show beyond validating (check, on the decoded document).
var suiteSchemas = []struct {
	name, prompt, schema string
	check                func(v any) error
}{
	{"types", "Give a record with a word, a count, a ratio, a flag and nothing.",
		`{"type":"object","properties":{"s":{"type":"string","maxLength":12},"i":{"type":"integer"},"n":{"type":"number"},"b":{"type":"boolean"},"z":{"type":"null"}},"required":["s","i","n","b","z"],"additionalProperties":false}`,
		func(v any) error { return keys(v, "s", "i", "n", "b", "z") }},
	{"enum-const", "Pick a colour.",
		`{"type":"object","properties":{"color":{"enum":["red","green","blue"]},"version":{"const":2},"mixed":{"enum":[1,"one",null,true,{"k":[1,2]}]}},"required":["color","version","mixed"],"additionalProperties":false}`,
		func(v any) error { return keys(v, "color", "version", "mixed") }},
	{"required-optional", "Describe a user.",
		`{"type":"object","properties":{"nick":{"type":"string","maxLength":8},"id":{"type":"integer","minimum":0},"age":{"type":"integer","minimum":1},"admin":{"type":"boolean"}},"required":["id"],"additionalProperties":false}`,
		func(v any) error { return keys(v, "id") }},
	{"nested", "Where does the user live?",
		`{"type":"object","properties":{"user":{"type":"object","properties":{"name":{"type":"string","maxLength":10},"address":{"type":"object","properties":{"city":{"type":"string","maxLength":10},"zip":{"type":"string","minLength":5,"maxLength":5}},"required":["city","zip"],"additionalProperties":false}},"required":["name","address"],"additionalProperties":false}},"required":["user"],"additionalProperties":false}`,
		func(v any) error { return keys(v, "user") }},
	{"arrays", "Tag this text.",
		`{"type":"object","properties":{"tags":{"type":"array","items":{"type":"string","maxLength":6},"minItems":1,"maxItems":3},"scores":{"type":"array","items":{"type":"integer"},"maxItems":4},"grid":{"type":"array","items":{"type":"array","items":{"type":"boolean"},"minItems":2,"maxItems":2},"minItems":2,"maxItems":2}},"required":["tags","scores","grid"],"additionalProperties":false}`,
		func(v any) error { return keys(v, "tags", "scores", "grid") }},
	{"array-root", "List some letters.",
		`{"type":"array","items":{"enum":["a","b","c"]},"minItems":2,"maxItems":4}`,
		func(v any) error {
			if _, ok := v.([]any); !ok {
				return fmt.Errorf("not an array")
			}
			return nil
		}},
	{"ref-defs", "A line from one point to another.",
		`{"$defs":{"point":{"type":"object","properties":{"x":{"type":"integer"},"y":{"type":"integer"}},"required":["x","y"],"additionalProperties":false}},"type":"object","properties":{"from":{"$ref":"#/$defs/point"},"to":{"$ref":"#/$defs/point"}},"required":["from","to"],"additionalProperties":false}`,
		func(v any) error { return keys(v, "from", "to") }},
	{"anyof-nullable", "A value, maybe.",
		`{"type":"object","properties":{"v":{"anyOf":[{"type":"string","maxLength":5},{"type":"integer"},{"type":"null"}]},"w":{"type":["string","null"],"maxLength":4},"u":{"type":"integer","nullable":true}},"required":["v","w","u"],"additionalProperties":false}`,
		func(v any) error { return keys(v, "v", "w", "u") }},
	{"no-properties", "Nothing at all.",
		`{"type":"object","additionalProperties":false}`,
		func(v any) error { return keys(v) }},
}

// keys checks that v is an object holding the required keys, and none beyond the schema's
// (additionalProperties false is Validate's to check; this names what is missing).
func keys(v any, required ...string) error {
	m, ok := v.(map[string]any)
	if !ok {
		return fmt.Errorf("not an object")
	}
	for _, k := range required {
		if _, ok := m[k]; !ok {
			return fmt.Errorf("no %q", k)
		}
	}
	return nil
}

// suiteConfig is a kernel tier and a thread count the suite runs on.
type suiteConfig struct {
	tier    *kernels.Tier
	threads int
}

// TestSchemaSuiteTrained asks the trained tiny model (real text, peaked logits: tools/train)
// for a document of each schema of the suite, greedily and drawn: every answer ends, parses as
// JSON and validates against its schema by the independent checker of validate_test.go
// (Validate), and the same requests give the same bytes on every SIMD tier this CPU has at 1
// thread and on the fastest at 3. The scalar tier, ten times slower, is left to
// TestSchemaSuiteTrainedLong, which runs every tier at 1 and 3 threads, and one more seed.
func TestSchemaSuiteTrained(t *testing.T) {
	tiers := kernels.Tiers()
	var configs []suiteConfig
	for _, tier := range tiers[min(1, len(tiers)-1):] {
		configs = append(configs, suiteConfig{tier, 1})
	}
	configs = append(configs, suiteConfig{tiers[len(tiers)-1], 3})
	runSchemaSuite(t, configs, []*engine.Sampling{nil, {Temperature: 1, Seed: 1}})
}

// TestSchemaSuiteTrainedLong is the suite on every kernel tier this CPU has, at 1 and 3
// threads each, greedy and with two seeds (make check-long).
func TestSchemaSuiteTrainedLong(t *testing.T) {
	if os.Getenv("TROCHILUS_LONG") != "1" {
		t.Skip("the whole tier × thread matrix of the schema suite runs with TROCHILUS_LONG=1")
	}
	var configs []suiteConfig
	for _, tier := range kernels.Tiers() {
		configs = append(configs, suiteConfig{tier, 1}, suiteConfig{tier, 3})
	}
	runSchemaSuite(t, configs, []*engine.Sampling{nil, {Temperature: 1, Seed: 1}, {Temperature: 0.8, TopP: 0.95, Seed: 2}})
}

// runSchemaSuite asks for every schema of the suite with every sampling on every config: the
// first config's answers are checked (checkSuiteAnswer), the others' must be the same bytes.
func runSchemaSuite(t *testing.T, configs []suiteConfig, samplings []*engine.Sampling) {
	path := modelgentest.TrainedModel(t, "q4_k_m")
	formats := make([]*structured.Format, len(suiteSchemas))
	schemas := make([]any, len(suiteSchemas))
	for i, s := range suiteSchemas {
		var err error
		if formats[i], err = structured.CompileSchema([]byte(s.schema)); err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		if err := json.Unmarshal([]byte(s.schema), &schemas[i]); err != nil {
			t.Fatal(err)
		}
	}
	var want []string // by schema and sampling, from the first config
	for _, cfg := range configs {
		start := time.Now()
		c, err := assistant.New(enginetest.Open(t, path, engine.Options{Tier: cfg.tier, Threads: cfg.threads}, 1024))
		if err != nil {
			t.Fatal(err)
		}
		k := 0
		for i, s := range suiteSchemas {
			for _, sp := range samplings {
				turns := []chat.Message{{Role: "user", Content: s.prompt + " Answer in JSON."}}
				r, err := c.Reply(context.Background(), turns, assistant.Options{MaxTokens: 400, Format: formats[i], Sampling: sp})
				if err != nil {
					t.Fatalf("%s, sampling %v: %v", s.name, sp, err)
				}
				if len(want) <= k {
					checkSuiteAnswer(t, s.name, sp, r, formats[i], schemas[i], s.check)
					want = append(want, r.Text)
				} else if r.Text != want[k] {
					t.Fatalf("tier %s, %d threads, %s, sampling %v: %q, want %q", cfg.tier.Name, cfg.threads, s.name, sp, r.Text, want[k])
				}
				k++
			}
		}
		t.Logf("tier %s, %d threads: %v", cfg.tier.Name, cfg.threads, time.Since(start).Round(time.Millisecond))
	}
	for i, s := range suiteSchemas {
		t.Logf("%s: %q", s.name, want[i*len(samplings):(i+1)*len(samplings)])
	}
	t.Logf("%d schemas × %d samplings agree on %d configs (tier, threads)", len(suiteSchemas), len(samplings), len(configs))
}

// checkSuiteAnswer holds one answer to its schema: ended, the whole text one document of the
// format, JSON, valid by Validate, and what the schema's check asks.
func checkSuiteAnswer(t *testing.T, name string, sp *engine.Sampling, r assistant.Reply, f *structured.Format, schema any, check func(any) error) {
	t.Helper()
	if !r.Ended {
		t.Fatalf("%s, sampling %v: the answer did not end in %d tokens: %q", name, sp, r.Tokens, r.Text)
	}
	if !f.Accepts([]byte(r.Text)) {
		t.Fatalf("%s, sampling %v: %q is not a document of the format", name, sp, r.Text)
	}
	var v any
	if err := json.Unmarshal([]byte(r.Text), &v); err != nil {
		t.Fatalf("%s, sampling %v: %q is not JSON: %v", name, sp, r.Text, err)
	}
	if err := structured.Validate(schema, schema, v); err != nil {
		t.Fatalf("%s, sampling %v: %q does not validate: %v", name, sp, r.Text, err)
	}
	if err := check(v); err != nil {
		t.Fatalf("%s, sampling %v: %q: %v", name, sp, r.Text, err)
	}
}
