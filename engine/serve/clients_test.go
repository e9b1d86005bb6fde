package serve

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"testing"

	"github.com/trochilus-llm/trochilus/engine"
	"github.com/trochilus-llm/trochilus/engine/assistant"
	"github.com/trochilus-llm/trochilus/engine/structured"
	"github.com/trochilus-llm/trochilus/gguf"
	"github.com/trochilus-llm/trochilus/internal/modelgen"
	"github.com/trochilus-llm/trochilus/internal/modelgen/modelgentest"
	"github.com/trochilus-llm/trochilus/internal/oracle"
	"github.com/trochilus-llm/trochilus/tokenizer/chat"
)

// clientReport is what tools/clients/check.js prints: what OpenAI's and Ollama's own client
// libraries got from the server.
type clientReport struct {
	Models                       []string
	Chat, ChatFinish, ChatStream string
	ChatUsage                    usage
	ChatSeeded, Completion       string
	Responses, ResponsesStream   string
	ChatLogprobs                 []float32
	ChatTopLogprobs              [][]struct {
		Token   string
		Logprob float32
	}
	ChatRefused, OllamaRefused   clientError
	Tags                         []string
	ShowFamily                   string
	OllamaChat, OllamaStream     string
	OllamaEval                   int
	OllamaSeeded, OllamaGenerate string

	StructuredSchema, Structured string
	StructuredParsed             map[string]any
	ToolsSent, ToolFinish        string
	ToolName, ToolArguments      string
	ToolParsed                   map[string]any
	ToolRoundTrip                *string
	ParallelFalseCalls           []clientCall
	AfterAbort                   string

	LangchainInvoke, LangchainStream string
	LangchainStructured, AIObject    map[string]any
	AIText, AIStream                 string
	LangchainToolCalls, AIToolCalls  []clientCall
}

type clientError struct {
	OK      bool
	Status  int
	Message string
	Param   *string
}

// TestClientLibraries serves the trained tiny model to the client libraries people use, unchanged (npm
// openai and ollama, pinned by tools/deps.sh), and checks every answer against what the engine
// computes for the same request: greedy, seeded, streamed and whole, chat and raw completion,
// the model lists, and that a refusal reaches the client as the error it reads.
func TestClientLibraries(t *testing.T) {
	node := oracle.Node(t)
	oracle.NPM(t, "openai")
	oracle.NPM(t, "ollama")
	for _, pkg := range []string{"zod", "@langchain/openai", "ai", "@ai-sdk/openai"} {
		oracle.NPM(t, pkg)
	}
	f, _, flog := clientServer(t, modelgentest.TrainedModel(t, "q8_0"), "tiny", testContext)
	// Qwen3's tool prompt alone is about 230 tokens.
	q, sent, _ := clientServer(t, modelgentest.TinyQwen3Model(t, modelgen.Uniform(gguf.TypeQ8_0)), "qwen3-tiny", 1024)
	cmd := exec.Command(node, filepath.Join(oracle.Root(t), "tools", "clients", "check.js"))
	cmd.Env = append(os.Environ(), "TROCHILUS_URL="+f.srv.URL, "TROCHILUS_TOOLS_URL="+q.srv.URL, "NODE_PATH="+oracle.NodeModules(t))
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("check.js: %v", err)
	}
	var got clientReport
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("check.js printed %q: %v", out, err)
	}

	turns := []chat.Message{{Role: "user", Content: "Name three colours."}}
	greedy := f.reply(t, turns, assistant.Options{MaxTokens: 12, Logprobs: true, TopLogprobs: 2})
	seeded := f.reply(t, turns, assistant.Options{MaxTokens: 12, Sampling: &engine.Sampling{Temperature: 0.8, TopP: 1, Seed: 42}})
	ollamaSeeded := f.reply(t, turns, assistant.Options{MaxTokens: 12,
		Sampling: &engine.Sampling{Temperature: ollamaTemperature, TopK: ollamaTopK, TopP: ollamaTopP, Seed: 42}})
	raw, err := f.want.Complete(t.Context(), "Once upon a time", assistant.Options{MaxTokens: 8})
	if err != nil {
		t.Fatal(err)
	}
	generated := f.reply(t, []chat.Message{{Role: "user", Content: "Once upon a time"}}, assistant.Options{MaxTokens: 8})

	for _, c := range []struct {
		what, got, want string
	}{
		{"openai chat", got.Chat, greedy.Text},
		{"openai chat finish_reason", got.ChatFinish, finishReason(&greedy)},
		{"openai chat streamed", got.ChatStream, greedy.Text},
		{"openai chat seed 42", got.ChatSeeded, seeded.Text},
		{"openai completion", got.Completion, raw.Text},
		{"openai responses", got.Responses, greedy.Text},
		{"openai responses streamed", got.ResponsesStream, greedy.Text},
		{"ollama chat", got.OllamaChat, greedy.Text},
		{"ollama chat streamed", got.OllamaStream, greedy.Text},
		{"ollama chat seed 42", got.OllamaSeeded, ollamaSeeded.Text},
		{"ollama generate", got.OllamaGenerate, generated.Text},
		{"ollama show family", got.ShowFamily, "olmoe"},
		{"openai after an aborted stream", got.AfterAbort, greedy.Text},
		{"langchain invoke", got.LangchainInvoke, greedy.Text},
		{"langchain stream", got.LangchainStream, greedy.Text},
		{"ai sdk generateText", got.AIText, greedy.Text},
		{"ai sdk streamText", got.AIStream, greedy.Text},
	} {
		if c.got != c.want {
			t.Errorf("%s: %q, want %q", c.what, c.got, c.want)
		}
	}
	if u := got.ChatUsage; u.PromptTokens != greedy.Prompt || u.CompletionTokens != greedy.Tokens {
		t.Errorf("openai usage %+v, want %d prompt and %d completion tokens", u, greedy.Prompt, greedy.Tokens)
	}
	var lps []float32
	for _, lp := range greedy.Logprobs {
		lps = append(lps, lp.Logprob)
	}
	if !slices.Equal(got.ChatLogprobs, lps) || len(lps) == 0 {
		t.Errorf("openai logprobs %v, want %v", got.ChatLogprobs, lps)
	}
	if len(got.ChatTopLogprobs) != len(greedy.Logprobs) {
		t.Errorf("openai top_logprobs of %d tokens, want %d", len(got.ChatTopLogprobs), len(greedy.Logprobs))
	}
	for i, top := range got.ChatTopLogprobs {
		if i >= len(greedy.Logprobs) {
			break
		}
		want := greedy.Logprobs[i].Top
		ok := len(top) == 2 && len(want) == 2
		for j := 0; ok && j < 2; j++ {
			ok = top[j].Token == string(want[j].Bytes) && top[j].Logprob == want[j].Logprob
		}
		if !ok {
			t.Errorf("openai top_logprobs of token %d: %+v, want %+v", i, top, want)
		}
	}
	// The aborted stream (held after its first event until the client left) stopped at once:
	// the log counts a few tokens of the 200 it may have.
	aborted := f.reply(t, turns, assistant.Options{MaxTokens: 200})
	if stops := flog.stoppedAfter(); len(stops) != 1 || stops[0] > 4 || stops[0] >= aborted.Tokens {
		t.Errorf("the aborted answers stopped after %v tokens; want one after a few of the %d it has alone", stops, aborted.Tokens)
	}
	if got.OllamaEval != greedy.Tokens {
		t.Errorf("ollama eval_count %d, want %d", got.OllamaEval, greedy.Tokens)
	}
	if !slices.Equal(got.Models, []string{"tiny"}) || !slices.Equal(got.Tags, []string{"tiny:latest"}) {
		t.Errorf("models %q, tags %q", got.Models, got.Tags)
	}
	if e := got.ChatRefused; e.OK || e.Status != 400 || e.Param == nil || *e.Param != "n" {
		t.Errorf("openai n 2: %+v, want a 400 naming n", e)
	}
	if e := got.OllamaRefused; e.OK || e.Status != 400 || e.Message == "" {
		t.Errorf("ollama repeat_penalty 1.1: %+v, want a 400", e)
	}

	// Structured output: the SDK's parse of the answer the engine gives for the schema zod wrote.
	format, err := structured.CompileSchema([]byte(got.StructuredSchema))
	if err != nil {
		t.Fatalf("the schema zod wrote: %v", err)
	}
	person := f.reply(t, []chat.Message{{Role: "user", Content: "A person as JSON."}}, assistant.Options{MaxTokens: 256, Format: format})
	var want map[string]any
	if err := json.Unmarshal([]byte(person.Text), &want); err != nil || got.Structured != person.Text || !reflect.DeepEqual(got.StructuredParsed, want) {
		t.Errorf("openai parse with zodResponseFormat: %q parsed as %v, want %q (%v)", got.Structured, got.StructuredParsed, person.Text, err)
	}
	if !reflect.DeepEqual(got.LangchainStructured, want) || !reflect.DeepEqual(got.AIObject, want) {
		t.Errorf("langchain withStructuredOutput %v, ai sdk generateObject %v; want %v", got.LangchainStructured, got.AIObject, want)
	}

	// Tools: a forced call is the engine's, parsed by the SDK against zod's schema; the round
	// trip (the call and the tool's result sent back), parallel_tool_calls false and LangChain's
	// and the AI SDK's forced calls are the engine's answers to what each client sent.
	tf, err := structured.ToolCall([]structured.Tool{{Name: "get_weather", Parameters: toolParameters(t, got.ToolsSent)}}, "<tool_call>\n", "\n</tool_call>")
	if err != nil {
		t.Fatal(err)
	}
	var tools json.RawMessage = []byte(got.ToolsSent)
	call := q.reply(t, []chat.Message{{Role: "user", Content: "Weather in Paris?"}}, assistant.Options{MaxTokens: 300, Format: tf, Tools: tools})
	syntax, ok := q.want.ToolSyntax()
	if !ok {
		t.Fatal("the Qwen3 fixture's template writes no tool calls")
	}
	_, calls := assistant.ParseToolCalls(call.Text, syntax)
	if len(calls) != 1 || got.ToolName != calls[0].Name || got.ToolFinish != "tool_calls" {
		t.Fatalf("openai tool call %q (%s), want %q", got.ToolName, got.ToolFinish, call.Text)
	}
	var args map[string]any
	if err := json.Unmarshal(calls[0].Arguments, &args); err != nil || !reflect.DeepEqual(got.ToolParsed, args) ||
		!json.Valid([]byte(got.ToolArguments)) {
		t.Errorf("openai tool arguments %s parsed as %v, want %s", got.ToolArguments, got.ToolParsed, calls[0].Arguments)
	}
	// The round trip's answer is the engine's to the messages the SDK sent back (the call and
	// the tool's result): its text, or null beside calls of its own that leave none.
	text, roundCalls := chatAnswer(t, q, sent.body(t, "round-trip"))
	if got.ToolRoundTrip == nil && (text != "" || len(roundCalls) == 0) || got.ToolRoundTrip != nil && *got.ToolRoundTrip != text {
		t.Errorf("the tool round trip answered %v, the engine %q (and %d calls)", got.ToolRoundTrip, text, len(roundCalls))
	}
	_, one := chatAnswer(t, q, sent.body(t, "parallel-false"))
	if len(one) != 1 || !reflect.DeepEqual(got.ParallelFalseCalls, callsOf(t, one)) {
		t.Errorf("parallel_tool_calls false: %+v, the engine %+v; want one call", got.ParallelFalseCalls, one)
	}
	_, lcCalls := chatAnswer(t, q, sent.body(t, "langchain-tools"))
	if lc := got.LangchainToolCalls; len(lc) != 1 || lc[0].Name != "get_weather" || !reflect.DeepEqual(lc, callsOf(t, lcCalls)) {
		t.Errorf("langchain bindTools: %+v, the engine %+v; want one get_weather call", lc, lcCalls)
	}
	_, aiCalls := responsesAnswer(t, q, sent.body(t, "ai-tools"))
	if ai := got.AIToolCalls; len(ai) != 1 || ai[0].Name != "get_weather" || !reflect.DeepEqual(ai, callsOf(t, aiCalls)) {
		t.Errorf("ai sdk generateText with a required tool: %+v, the engine %+v; want one get_weather call", ai, aiCalls)
	}
	t.Logf("openai@6.49.0, @langchain/openai@1.5.8, ai@6.0.326 and ollama@0.6.4 got the engine's answers: %q; structured %s; tool call %s(%s)", got.Chat, got.Structured, got.ToolName, got.ToolArguments)
}

// toolParameters returns the parameters schema of the one tool in a JSON list of tools.
func toolParameters(t *testing.T, sent string) json.RawMessage {
	t.Helper()
	var list []struct {
		Function struct{ Parameters json.RawMessage }
	}
	if err := json.Unmarshal([]byte(sent), &list); err != nil || len(list) != 1 {
		t.Fatalf("tools sent %s: %v", sent, err)
	}
	return list[0].Function.Parameters
}
