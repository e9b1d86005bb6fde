package assistant

import (
	"context"
	"encoding/json"
	"math"
	"math/rand/v2"
	"slices"
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

// The tool-call constraint and ParseToolCalls must agree: wherever the loose parser reads a
// call, the constraint held it to the tools (issue 18's review: an unspaced {"name":"x" began
// no constrained call, yet parsed as one, with any name and any arguments).

// temptingTokens are spellings of a call's beginning that the template does not write: unspaced,
// with a space after the marker, crossing from the marker into the call, an unknown tool's name.
var temptingTokens = []string{
	`{"name":"`, `{"name":"get_weather","parameters":{`, `{"name":"nope"`, `{ "name"`, `{"parameters": {}, "name": "ping"}`,
	"<tool_call>", "<tool_call>{", `<tool_call>{"name": "nope", "arguments": {}}`, "<tool_call>\n{\"name\":\"", "\n</tool_call>",
	"[TOOL_CALLS]", "[TOOL_CALLS] ", "[TOOL_CALLS]get_weather[ARGS]{", "[TOOL_CALLS]nope[ARGS]", "[TOOL_CALLS][{", `[TOOL_CALLS][{"name": "nope"`,
	`"get_weather"`, `"nope"`, `": "`, `", "`, `"arguments": `, `"parameters": `, `{"city": "`, `"unit": "C"}`, `}}`, `}]`, `}, {`, "get_weather", "[ARGS]",
	`{"name": "`, `"ping"`, `{}}`, `{}`, "all>{", "\n",
}

// exactTokens is toyTokens with the tempting spellings: every printable byte, the pieces, and the
// end token last.
func exactTokens() ([][]byte, int32) {
	tokens, end := toyTokens()
	tokens = tokens[:end]
	for _, t := range temptingTokens {
		if !slices.ContainsFunc(tokens, func(b []byte) bool { return string(b) == t }) {
			tokens = append(tokens, []byte(t))
		}
	}
	return append(tokens, nil), int32(len(tokens))
}

// walkAnswer draws an answer among the tokens c allows, preferring the tempting ones (and the
// end token, now and then, where it may come), until the end token or 300 tokens.
func walkAnswer(t *testing.T, c engine.Constraint, tokens [][]byte, end int32, r *rand.Rand) string {
	t.Helper()
	var out strings.Builder
	for range 300 {
		logits := make([]float32, len(tokens))
		if err := c.Mask(logits); err != nil {
			t.Fatalf("after %q: %v", out.String(), err)
		}
		var allowed, tempting []int32
		for id, l := range logits {
			if math.IsInf(float64(l), -1) {
				continue
			}
			allowed = append(allowed, int32(id))
			if int32(id) != end && slices.Contains(temptingTokens, string(tokens[id])) {
				tempting = append(tempting, int32(id))
			}
		}
		id := allowed[r.IntN(len(allowed))]
		switch k := r.IntN(10); {
		case k < 6 && len(tempting) > 0:
			id = tempting[r.IntN(len(tempting))]
		case k == 6 && slices.Contains(allowed, end):
			id = end
		}
		if err := c.Accept(id); err != nil {
			t.Fatalf("after %q: token %q: %v", out.String(), tokens[id], err)
		}
		if id == end {
			break
		}
		out.Write(tokens[id])
	}
	return out.String()
}

// TestLazyCallsAreAlwaysHeld draws answers in every syntax with the lazy constraint (the model
// chooses between text and calls), tempted by every other spelling of a call: whatever
// ParseToolCalls reads as a call, ToolFormat.Parse reads too (the call names one of the tools and
// its arguments follow that tool's schema), and calls are read often enough to mean something.
func TestLazyCallsAreAlwaysHeld(t *testing.T) {
	tokens, end := exactTokens()
	vocab := structured.NewVocabulary(tokens, []int32{end})
	tools := toyTools[:2] // ping's arguments, any object, might never end
	for _, s := range []ToolSyntax{llama, hermes, mistral, mistralArgs} {
		f, err := s.Format(tools)
		if err != nil {
			t.Fatal(err)
		}
		read := 0
		for seed := range uint64(600) {
			var c engine.Constraint
			if f.lazy != nil {
				c = f.lazy.StartAfter(vocab, s.Trigger())
			} else {
				c = &callConstraint{f: f, vocab: vocab, texts: tokens, ends: []int32{end}, start: true}
			}
			answer := walkAnswer(t, c, tokens, end, rand.New(rand.NewPCG(seed, 2)))
			text, loose := ParseToolCalls(answer, s)
			text2, held := f.Parse(answer)
			if text != text2 || len(loose) != len(held) {
				t.Fatalf("%#v: %q: ParseToolCalls reads %d calls (text %q), the format holds %d (text %q)", s, answer, len(loose), text, len(held), text2)
			}
			for _, call := range loose {
				if !slices.Contains(f.names, call.Name) {
					t.Fatalf("%q: a call of %q", answer, call.Name)
				}
			}
			read += len(loose)
		}
		if read < 10 {
			t.Errorf("%#v: only %d calls read in 600 answers", s, read)
		}
		t.Logf("%s: %d calls in 600 answers, all held", s.Trigger(), read)
	}
}

// TestLazyCallMasksOtherSpellings: at the start of a Llama answer (whose call is the whole
// message) the unspaced {"name":" is masked, as is any '{' the template's head does not begin
// with; the template's own spelling and plain text may come. After Mistral's marker the name
// must follow at once, and a token that would cross the Hermes trigger into what its call cannot
// hold is masked.
func TestLazyCallMasksOtherSpellings(t *testing.T) {
	tokens, end := exactTokens()
	vocab := structured.NewVocabulary(tokens, []int32{end})
	id := func(s string) int32 {
		i := slices.IndexFunc(tokens, func(b []byte) bool { return string(b) == s })
		if i < 0 {
			t.Fatalf("no token %q", s)
		}
		return int32(i)
	}
	mask := func(c engine.Constraint) []float32 {
		logits := make([]float32, len(tokens))
		if err := c.Mask(logits); err != nil {
			t.Fatal(err)
		}
		return logits
	}
	check := func(name string, logits []float32, allowed, masked []string) {
		t.Helper()
		for _, s := range allowed {
			if math.IsInf(float64(logits[id(s)]), -1) {
				t.Errorf("%s: %q is masked", name, s)
			}
		}
		for _, s := range masked {
			if !math.IsInf(float64(logits[id(s)]), -1) {
				t.Errorf("%s: %q may come", name, s)
			}
		}
	}
	f, err := llama.Format(toyTools)
	if err != nil {
		t.Fatal(err)
	}
	c := &callConstraint{f: f, vocab: vocab, texts: tokens, ends: []int32{end}, start: true}
	check("llama, the start", mask(c), []string{`{"name": "`, `{"`, "{", "I", " ", "\n"},
		[]string{`{"name":"`, `{"name":"nope"`, `{ "name"`, `{"parameters": {}, "name": "ping"}`, `{}`, `{"name":"get_weather","parameters":{`})
	// After white space, the same.
	if err := c.Accept(id(" ")); err != nil {
		t.Fatal(err)
	}
	check("llama, after a space", mask(c), []string{`{"name": "`, "I"}, []string{`{"name":"`, `{ "name"`})
	// Once text has begun, no call can: anything may come.
	c.Accept(id("I"))
	check("llama, after text", mask(c), []string{`{"name":"`, `{ "name"`, `{}`}, nil)
	// A token the mask refused is refused by Accept too.
	c = &callConstraint{f: f, vocab: vocab, texts: tokens, ends: []int32{end}, start: true}
	if err := c.Accept(id(`{"name":"`)); err == nil {
		t.Error(`Accept took {"name":" at the start of a Llama answer`)
	}

	f, err = mistralArgs.Format(toyTools)
	if err != nil {
		t.Fatal(err)
	}
	c = &callConstraint{f: f, vocab: vocab, texts: tokens, ends: []int32{end}, start: true}
	check("mistral [ARGS], free", mask(c), []string{"[TOOL_CALLS]", "I"}, []string{"[TOOL_CALLS] ", "[TOOL_CALLS]get_weather[ARGS]{", "[TOOL_CALLS]nope[ARGS]"})
	c.Accept(id("[TOOL_CALLS]"))
	check("mistral [ARGS], after the marker", mask(c), []string{"get_weather"}, []string{" ", "I", "[ARGS]"})

	f, err = hermes.Format(toyTools)
	if err != nil {
		t.Fatal(err)
	}
	hc := f.lazy.StartAfter(vocab, hermes.Trigger())
	check("hermes, free", mask(hc), []string{"<tool_call>", "<tool_call>\n{\"name\":\"", "I", "{"},
		[]string{"<tool_call>{", `<tool_call>{"name": "nope", "arguments": {}}`})
	// Half the trigger, then a token that completes it with a brace where the newline belongs.
	for _, b := range "<tool_c" {
		hc.Accept(id(string(b)))
	}
	check("hermes, half a trigger", mask(hc), []string{"a"}, []string{"all>{"})

	f, err = mistral.Format(toyTools)
	if err != nil {
		t.Fatal(err)
	}
	mc := f.lazy.StartAfter(vocab, mistral.Trigger())
	for _, tok := range []string{"[TOOL_CALLS][{", `"`, `name`, `": "`, `get_weather`, `"`, `,`, ` `, `"arguments": `, `{"city": "`, `Paris`, `"`, `,`, ` `, `"unit": "C"}`, `}, {`} {
		if err := mc.Accept(id(tok)); err != nil {
			t.Fatalf("%q: %v", tok, err)
		}
	}
	// The second call of the list is held to the tools as the first.
	check("mistral, the list's second call", mask(mc), []string{`"`}, []string{`"nope"`, "I", "]"})
}

// TestParseChecksTheTools: ToolFormat.Parse reads a call only when it names one of the tools and
// its arguments follow that tool's schema, in every syntax; any other is text, as a call that
// cannot be read is.
func TestParseChecksTheTools(t *testing.T) {
	wrap := map[string]func(name, args string) string{
		"hermes": func(name, args string) string {
			return "<tool_call>\n{\"name\": \"" + name + "\", \"arguments\": " + args + "}\n</tool_call>"
		},
		"llama": func(name, args string) string { return `{"name": "` + name + `", "parameters": ` + args + `}` },
		"mistral": func(name, args string) string {
			return `[TOOL_CALLS][{"name": "` + name + `", "arguments": ` + args + `}]`
		},
		"mistralArgs": func(name, args string) string {
			return "[TOOL_CALLS]" + name + "[ARGS]" + args
		},
	}
	syntaxes := map[string]ToolSyntax{"hermes": hermes, "llama": llama, "mistral": mistral, "mistralArgs": mistralArgs}
	for name, s := range syntaxes {
		f, err := s.Format(toyTools)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range []struct {
			name, args string
			ok         bool
		}{
			{"get_weather", `{"city": "Paris", "unit": "C"}`, true},
			{"get_weather", `{"city":"Paris","unit":"F"}`, true},
			{"get_time", `{"zone": 3}`, true},
			{"ping", `{"anything": [1, {"x": null}]}`, true},
			{"nope", `{}`, false},
			{"get_weather", `{"city": "Paris"}`, false},                          // unit is required
			{"get_weather", `{"city": "Paris", "unit": "K"}`, false},             // not in the enum
			{"get_weather", `{"city": "Paris, France", "unit": "C"}`, false},     // past maxLength
			{"get_weather", `{"city": "Paris", "unit": "C", "extra": 1}`, false}, // additionalProperties
			{"get_time", `{"zone": -3}`, false},                                  // minimum 0
			{"get_time", `{"zone": "UTC"}`, false},                               // not an integer
			{"get_weather", `{"unit": "C", "city": "Paris"}`, false},             // not the schema's order: no constraint writes it
		} {
			answer := wrap[name](c.name, c.args)
			_, loose := ParseToolCalls(answer, s)
			text, calls := f.Parse(answer)
			if len(loose) != 1 {
				t.Fatalf("%s: ParseToolCalls does not read %q", name, answer)
			}
			if c.ok && (len(calls) != 1 || calls[0].Name != c.name || text != "") {
				t.Errorf("%s: %q: %q, %v; want the call", name, answer, text, calls)
			}
			if !c.ok && (len(calls) != 0 || text != answer) {
				t.Errorf("%s: %q: %q, %v; want all of it text", name, answer, text, calls)
			}
		}
	}
	// Hermes: a good call, then one of an unknown tool: the first is read, the second stays text.
	f, _ := hermes.Format(toyTools)
	good, bad := wrap["hermes"]("get_time", `{"zone": 1}`), wrap["hermes"]("nope", `{}`)
	text, calls := f.Parse(good + "\n" + bad)
	if len(calls) != 1 || calls[0].Name != "get_time" || text != bad {
		t.Errorf("a good call and a bad one: %q, %v", text, calls)
	}
}

// TestLazyToolCallSameEverywhere: a Llama-syntax answer that the model chooses to make a call
// (its logits pushed toward the unspaced {"name":" that the template does not write) is held to
// the template's head and the tool's schema, and is the same bytes on every kernel tier and at 1
// and 3 threads.
func TestLazyToolCallSameEverywhere(t *testing.T) {
	path := modelgentest.TinyModel(t, modelgen.Uniform(gguf.TypeQ4_K))
	f, err := llama.Format(toyTools[:2])
	if err != nil {
		t.Fatal(err)
	}
	turns := []chat.Message{{Role: "user", Content: "Weather in Paris?"}}
	var want []string
	for _, tier := range kernels.Tiers() {
		for _, threads := range []int{1, 3} {
			c, err := New(enginetest.Open(t, path, engine.Options{Tier: tier, Threads: threads}, 512))
			if err != nil {
				t.Fatal(err)
			}
			bias := map[int32]float32{}
			for piece, b := range map[string]float32{`{"`: 30, `":"`: 20} {
				if ids := c.tok.Encode(piece, false); len(ids) == 1 {
					bias[ids[0]] = b
				}
			}
			if len(bias) == 0 {
				t.Fatal("the tokenizer has none of the unspaced pieces")
			}
			for i, opts := range []Options{
				{MaxTokens: 60, ToolCall: f, LogitBias: bias},
				{MaxTokens: 60, ToolCall: f, LogitBias: bias, Sampling: &engine.Sampling{Temperature: 1, Seed: 5}},
			} {
				r, err := c.Reply(context.Background(), turns, opts)
				if err != nil {
					t.Fatal(err)
				}
				if len(want) <= i {
					want = append(want, r.Text)
					_, loose := ParseToolCalls(r.Text, llama)
					text, calls := f.Parse(r.Text)
					if !r.Ended || len(calls) != 1 || text != "" || len(loose) != 1 {
						t.Fatalf("case %d: %q (ended %v): %d calls held, %d read", i, r.Text, r.Ended, len(calls), len(loose))
					}
					if !strings.HasPrefix(r.Text, `{"name": "get_`) {
						t.Fatalf("case %d: %q does not begin the template's head", i, r.Text)
					}
					if len(calls) == 1 {
						var args map[string]any
						if json.Unmarshal(calls[0].Arguments, &args) != nil {
							t.Fatalf("case %d: arguments %s", i, calls[0].Arguments)
						}
					}
					continue
				}
				if r.Text != want[i] {
					t.Fatalf("tier %s, %d threads, case %d: %q, want %q", tier.Name, threads, i, r.Text, want[i])
				}
			}
		}
	}
	t.Logf("%d tiers × 2 thread counts agree: %q, %q", len(kernels.Tiers()), want[0], want[1])
}
