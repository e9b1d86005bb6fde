package serve

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/trochilus-llm/trochilus/engine"
	"github.com/trochilus-llm/trochilus/engine/assistant"
	"github.com/trochilus-llm/trochilus/tokenizer/chat"
)

// options are the request fields shared by both endpoints that serve honours; decodeRequest
// refuses the others (see request.go).
type options struct {
	Model               string          `json:"model"`
	MaxTokens           *int            `json:"max_tokens"`
	MaxCompletionTokens *int            `json:"max_completion_tokens"`
	Stream              bool            `json:"stream"`
	StreamOptions       *streamOptions  `json:"stream_options"`
	Stop                json.RawMessage `json:"stop"`
	Temperature         *float64        `json:"temperature"`
	TopP                *float64        `json:"top_p"`
	TopK                *int            `json:"top_k"` // llama.cpp's extension
	// Seed is any int64, as OpenAI's clients type it; the engine's seed is its 64 bits read
	// as unsigned (two's complement: -1 is 2^64-1), and the response reports it back as the
	// int64 sent. Drawn seeds are below 2^53 (engine.NewSeed), the same number either way.
	Seed *int64 `json:"seed"`
	// ResponseFormat asks for plain text, a JSON object or a document of a JSON Schema
	// (parseResponseFormat).
	ResponseFormat json.RawMessage `json:"response_format"`
	// LogitBias maps token ids (as strings) to a bias from -100 to 100 added to their logits.
	LogitBias map[string]float64 `json:"logit_bias"`
}

type streamOptions struct {
	IncludeUsage bool `json:"include_usage"`
}

// check refuses settings out of range and returns the answer's options. A temperature above
// 0 samples (with the request's seed, or a random one the response reports); none or 0
// decodes greedily, and so does top_p 0: the fewest most likely tokens whose probabilities
// reach 0 are the single most likely one (as llama.cpp, which keeps at least one, reads it),
// whereas the engine's TopP 0 would mean "all tokens", the opposite of what was asked.
func (o *options) check() (assistant.Options, error) {
	var a assistant.Options
	switch {
	case o.Temperature != nil && (*o.Temperature < 0 || *o.Temperature > 100):
		return a, badParam("temperature", "temperature %g: want 0 (greedy) to 100", *o.Temperature)
	case o.TopP != nil && (*o.TopP < 0 || *o.TopP > 1):
		return a, badParam("top_p", "top_p %g: want 0 to 1", *o.TopP)
	case o.TopK != nil && *o.TopK < 0:
		return a, badParam("top_k", "top_k %d: want 0 (all) or more", *o.TopK)
	}
	// A temperature or top_p too small for a float32 is the greedy limit it tends to.
	greedyTopP := o.TopP != nil && float32(*o.TopP) == 0
	if o.Temperature != nil && float32(*o.Temperature) > 0 && !greedyTopP {
		sp := &engine.Sampling{Temperature: float32(*o.Temperature), TopP: 1}
		if o.TopP != nil {
			sp.TopP = float32(*o.TopP)
		}
		if o.TopK != nil {
			sp.TopK = *o.TopK
		}
		if o.Seed != nil {
			sp.Seed = uint64(*o.Seed)
		} else {
			sp.Seed = engine.NewSeed()
		}
		a.Sampling = sp
	}
	for _, n := range []*int{o.MaxTokens, o.MaxCompletionTokens} {
		if n != nil && *n < 1 {
			return a, badParam("max_tokens", "max_tokens %d: want at least 1", *n)
		}
		if n != nil {
			a.MaxTokens = *n
		}
	}
	stops, err := parseStop(o.Stop)
	if err != nil {
		return a, err
	}
	a.Stop = stops
	if a.Format, err = parseResponseFormat(o.ResponseFormat); err != nil {
		return a, err
	}
	for k, v := range o.LogitBias {
		id, err := strconv.ParseInt(k, 10, 32)
		if err != nil || id < 0 {
			return a, badParam("logit_bias", "logit_bias: key %q: want a token id", k)
		}
		if !(v >= -100 && v <= 100) {
			return a, badParam("logit_bias", "logit_bias[%q] %g: want -100 to 100", k, v)
		}
		if a.LogitBias == nil {
			a.LogitBias = map[int32]float32{}
		}
		a.LogitBias[int32(id)] = float32(v)
	}
	return a, nil
}

// parseStop reads stop: a string or a list of strings.
func parseStop(raw json.RawMessage) ([]string, error) {
	if len(raw) == 0 || isOneOf("[]")(raw) {
		return nil, nil
	}
	var one string
	if json.Unmarshal(raw, &one) == nil {
		return []string{one}, nil
	}
	var list []string
	if err := json.Unmarshal(raw, &list); err != nil {
		return nil, badParam("stop", "stop: want a string or a list of strings")
	}
	if len(list) > 16 {
		return nil, badParam("stop", "stop: %d texts, at most 16", len(list))
	}
	return list, nil
}

// roles maps the roles a message may have to those the templates know: developer is
// OpenAI's newer name for system. A tool (or function) result cannot be rendered without tool
// support, and dropping it would answer another conversation than the one asked: it is refused.
var roles = map[string]string{"system": "system", "developer": "system", "user": "user", "assistant": "assistant"}

// toolFields are message fields that belong to tool calls, refused with them.
var toolFields = map[string]bool{"tool_calls": true, "function_call": true, "tool_call_id": true}

// parseMessages reads the messages of a chat request: a role, content as a string or a list of
// text parts, and any other field (name, ...) passed to the template; a null field asks for
// nothing and is left out.
func parseMessages(raw []map[string]json.RawMessage, tools bool) ([]chat.Message, error) {
	if len(raw) == 0 {
		return nil, badParam("messages", "messages: want at least one")
	}
	msgs := make([]chat.Message, len(raw))
	for i, fields := range raw {
		m := &msgs[i]
		var role string
		if err := json.Unmarshal(fields["role"], &role); err != nil || role == "" {
			return nil, badParam("messages", "messages[%d].role: want a non-empty string", i)
		}
		switch r, ok := roles[role]; {
		case ok:
			m.Role = r
		case role == "tool" && tools:
			m.Role = "tool"
		case role == "tool" || role == "function":
			return nil, badParam("messages", "messages[%d].role %q: tool results need a model whose template renders tools: %v", i, role, assistant.ErrNoTools)
		default:
			return nil, badParam("messages", "messages[%d].role %q: want system, developer, user, assistant or tool", i, role)
		}
		calls := m.Role == "assistant" && tools && !isOneOf()(fields["tool_calls"]) && len(fields["tool_calls"]) > 0
		content, err := parseContent(fields["content"])
		if err != nil && calls && (isOneOf()(fields["content"]) || len(bytes.TrimSpace(fields["content"])) == 0) {
			content, err = "", nil // the content beside tool calls may be null
		}
		if err != nil {
			return nil, badParam("messages", "messages[%d].content: %v", i, err)
		}
		m.Content = content
		for _, k := range slices.Sorted(maps.Keys(fields)) {
			v := fields[k]
			if k == "role" || k == "content" || isOneOf()(v) {
				continue
			}
			if toolFields[k] && !(tools && (k == "tool_calls" && m.Role == "assistant" || k == "tool_call_id" && m.Role == "tool")) {
				return nil, badParam("messages", "messages[%d].%s: tool calls need a model whose template renders tools, in an assistant message (tool_call_id in a tool message)", i, k)
			}
			if k == "tool_calls" {
				tc, err := templateToolCalls(v)
				if err != nil {
					return nil, badParam("messages", "messages[%d].tool_calls: %v", i, err)
				}
				if m.Extra == nil {
					m.Extra = map[string]any{}
				}
				m.Extra[k] = tc
				continue
			}
			var x any
			if err := json.Unmarshal(v, &x); err != nil {
				return nil, badParam("messages", "messages[%d].%s: %v", i, k, err)
			}
			if m.Extra == nil {
				m.Extra = map[string]any{}
			}
			m.Extra[k] = x
		}
	}
	return msgs, nil
}

// parseContent reads a message's content: a string or a list of text parts (of partType, "text"
// on chat completions), which are joined (the templates of text models expect a string). Null or
// missing is refused: OpenAI allows it only beside tool calls, and a template rendering it would
// fail or write "None".
func parseContent(raw json.RawMessage, partTypes ...string) (string, error) {
	if len(partTypes) == 0 {
		partTypes = []string{"text"}
	}
	if isOneOf()(raw) || len(bytes.TrimSpace(raw)) == 0 {
		return "", fmt.Errorf("want a string or a list of text parts, got null")
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, nil
	}
	var parts []map[string]json.RawMessage
	if err := json.Unmarshal(raw, &parts); err != nil {
		return "", fmt.Errorf("want a string or a list of text parts")
	}
	var b strings.Builder
	for j, p := range parts {
		var typ, text string
		if json.Unmarshal(p["type"], &typ) != nil {
			return "", fmt.Errorf("part %d: want a \"type\" string", j)
		}
		if !slices.Contains(partTypes, typ) {
			return "", fmt.Errorf("part %d is of type %q: only %s parts are supported", j, typ, strings.Join(partTypes, " and "))
		}
		if json.Unmarshal(p["text"], &text) != nil || isOneOf()(p["text"]) {
			return "", fmt.Errorf("part %d: want a \"text\" string", j)
		}
		b.WriteString(text)
	}
	return b.String(), nil
}

// contentBytes is the length of the messages' text, which the rendered prompt holds at least.
func contentBytes(msgs []chat.Message) int {
	n := 0
	for _, m := range msgs {
		if s, ok := m.Content.(string); ok {
			n += len(s)
		}
	}
	return n
}

type usage struct {
	PromptTokens        int `json:"prompt_tokens"`
	CompletionTokens    int `json:"completion_tokens"`
	TotalTokens         int `json:"total_tokens"`
	PromptTokensDetails struct {
		// CachedTokens are the prompt's tokens whose KV cache the chat held already (the
		// prefix it repeats of the chat's last conversation): not evaluated again.
		CachedTokens int `json:"cached_tokens"`
	} `json:"prompt_tokens_details"`
}

func usageOf(r *assistant.Reply) *usage {
	u := &usage{PromptTokens: r.Prompt, CompletionTokens: r.Tokens, TotalTokens: r.Prompt + r.Tokens}
	u.PromptTokensDetails.CachedTokens = r.Reused
	return u
}

func finishReason(r *assistant.Reply) string {
	if r.Finished() {
		return "stop"
	}
	return "length"
}

// A completion is one endpoint's way of answering: the chat or the raw text.
type completion struct {
	object, chunkObject, idPrefix string
	answer                        func(r *http.Request, c *assistant.Chat, opts assistant.Options) (assistant.Reply, error)
	// choice and delta shape a choice of the whole response and of a streamed chunk (with
	// the log probabilities of the tokens its text holds, when logprobs).
	choice   func(reply *assistant.Reply, finish *string) map[string]any
	delta    func(text string, first bool, finish *string, lps streamedLogprobs) map[string]any
	logprobs bool
	// tools, on chat completions, are the request's tools: a streamed answer holds back its
	// text from where a call may begin, and ends with the calls read.
	tools *toolPlan
}

// nullIfEmpty is JSON null for "", as OpenAI writes a message's content beside tool calls.
func nullIfEmpty(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// isTextFormat reports whether a response_format asks for plain text.
func isTextFormat(raw json.RawMessage) bool {
	var f struct {
		Type string `json:"type"`
	}
	return json.Unmarshal(raw, &f) == nil && f.Type == "text"
}

func (s *Server) chatCompletions(w http.ResponseWriter, r *http.Request) {
	var req struct {
		options
		Messages    []map[string]json.RawMessage `json:"messages"`
		Logprobs    *bool                        `json:"logprobs"`
		TopLogprobs *int                         `json:"top_logprobs"`
		// Tools (tools.go).
		Tools             json.RawMessage `json:"tools"`
		ToolChoice        json.RawMessage `json:"tool_choice"`
		ParallelToolCalls *bool           `json:"parallel_tool_calls"`
	}
	if err := decodeRequest(w, r, &req, nil); err != nil {
		writeError(w, err)
		return
	}
	withLogprobs := req.Logprobs != nil && *req.Logprobs
	top := 0
	if req.TopLogprobs != nil {
		top = *req.TopLogprobs
	}
	if err := checkLogprobs(&req.options, "top_logprobs", withLogprobs, top, 20); err != nil {
		writeError(w, err)
		return
	}
	if top > 0 && !withLogprobs {
		writeError(w, badParam("top_logprobs", "top_logprobs: needs \"logprobs\": true"))
		return
	}
	syntax, canCall := s.chat.ToolSyntax()
	plan, err := parseTools(req.Tools, req.ToolChoice, req.ParallelToolCalls, syntax, canCall, functionName)
	if err == nil && plan.forced != nil && !isNull(req.ResponseFormat) && !isTextFormat(req.ResponseFormat) {
		err = badParam("response_format", "response_format: a forced tool call (tool_choice) is the answer's format already")
	}
	var turns []chat.Message
	if err == nil {
		turns, err = parseMessages(req.Messages, canCall)
	}
	if err == nil {
		err = s.promptBound("messages", contentBytes(turns))
	}
	if err == nil {
		err = s.countPrompt("messages", turns, &plan)
	}
	if err != nil {
		writeError(w, err)
		return
	}
	s.complete(w, r, &req.options, completion{
		object: "chat.completion", chunkObject: "chat.completion.chunk", idPrefix: "chatcmpl-",
		tools: &plan,
		answer: func(r *http.Request, c *assistant.Chat, opts assistant.Options) (assistant.Reply, error) {
			opts.Logprobs, opts.TopLogprobs = withLogprobs, top
			plan.apply(&opts)
			return c.Reply(r.Context(), turns, opts)
		},
		choice: func(reply *assistant.Reply, finish *string) map[string]any {
			var lp any
			if withLogprobs {
				lp = map[string]any{"content": chatLogprobs(reply.Logprobs), "refusal": nil}
			}
			msg := map[string]any{"role": "assistant", "content": reply.Text}
			if text, calls := plan.calls(reply); len(calls) > 0 {
				msg["content"], msg["tool_calls"] = nullIfEmpty(text), calls
				if reply.Finished() { // an answer cut short stays "length"
					*finish = "tool_calls"
				}
			}
			return map[string]any{"index": 0, "message": msg, "finish_reason": finish, "logprobs": lp}
		},
		logprobs: withLogprobs,
		delta: func(text string, first bool, finish *string, lps streamedLogprobs) map[string]any {
			d := map[string]any{}
			if first {
				d["role"] = "assistant"
			}
			if text != "" || first {
				d["content"] = text
			}
			var lp any
			if len(lps.list) > 0 {
				lp = map[string]any{"content": chatLogprobs(lps.list), "refusal": nil}
			}
			return map[string]any{"index": 0, "delta": d, "finish_reason": finish, "logprobs": lp}
		},
	})
}

func (s *Server) completions(w http.ResponseWriter, r *http.Request) {
	var req struct {
		options
		Prompt   json.RawMessage `json:"prompt"`
		Logprobs *int            `json:"logprobs"`
	}
	if err := decodeRequest(w, r, &req, refusedText); err != nil {
		writeError(w, err)
		return
	}
	withLogprobs := req.Logprobs != nil
	top := 0
	if withLogprobs {
		top = *req.Logprobs
	}
	if err := checkLogprobs(&req.options, "logprobs", withLogprobs, top, 5); err != nil {
		writeError(w, err)
		return
	}
	var prompt string
	if err := json.Unmarshal(req.Prompt, &prompt); err != nil {
		var list []string
		if json.Unmarshal(req.Prompt, &list) != nil || len(list) != 1 {
			writeError(w, badParam("prompt", "prompt: want a string (or a list of one string); token lists are not supported"))
			return
		}
		prompt = list[0]
	}
	if prompt == "" {
		writeError(w, badParam("prompt", "prompt: want a non-empty text"))
		return
	}
	err := s.promptBound("prompt", len(prompt))
	if err == nil {
		err = s.promptFits("prompt", s.chat.CountText(prompt, assistant.Options{}))
	}
	if err != nil {
		writeError(w, err)
		return
	}
	s.complete(w, r, &req.options, completion{
		object: "text_completion", chunkObject: "text_completion", idPrefix: "cmpl-",
		answer: func(r *http.Request, c *assistant.Chat, opts assistant.Options) (assistant.Reply, error) {
			opts.Logprobs, opts.TopLogprobs = withLogprobs, top
			return c.Complete(r.Context(), prompt, opts)
		},
		choice: func(reply *assistant.Reply, finish *string) map[string]any {
			var lp any
			if withLogprobs {
				lp = textLogprobs(reply.Logprobs, top > 0, nil)
			}
			return map[string]any{"index": 0, "text": reply.Text, "finish_reason": finish, "logprobs": lp}
		},
		logprobs: withLogprobs,
		delta: func(text string, first bool, finish *string, lps streamedLogprobs) map[string]any {
			var lp any
			if len(lps.list) > 0 {
				lp = textLogprobs(lps.list, top > 0, lps.at)
			}
			return map[string]any{"index": 0, "text": text, "finish_reason": finish, "logprobs": lp}
		},
	})
}

// checkLogprobs refuses a number of alternatives out of [0, most].
func checkLogprobs(o *options, param string, with bool, top, most int) error {
	if top < 0 || top > most {
		return badParam(param, "%s %d: want 0 to %d", param, top, most)
	}
	return nil
}

// streamedLogprobs are the log probabilities of the tokens a streamed chunk's text holds (the
// text of each begins in the chunk or before it), with where each token's text begins in the
// answer.
type streamedLogprobs struct {
	list []assistant.TokenLogprob
	at   []int
}

// jsonLogprob is a log probability as JSON can carry it: OpenAI's floor of -9999 for a token
// that cannot be drawn (−Inf, or NaN), which JSON has no number for.
func jsonLogprob(v float32) float32 {
	if !(v >= -9999) {
		return -9999
	}
	return v
}

// chatLogprobs writes an answer's log probabilities as chat completions do: per token its text,
// log probability, bytes and alternatives.
func chatLogprobs(lps []assistant.TokenLogprob) []any {
	entry := func(t *assistant.TokenLogprob) map[string]any {
		b := make([]int, len(t.Bytes))
		for i, c := range t.Bytes {
			b[i] = int(c)
		}
		return map[string]any{"token": string(t.Bytes), "logprob": jsonLogprob(t.Logprob), "bytes": b}
	}
	out := make([]any, len(lps))
	for i := range lps {
		e := entry(&lps[i])
		top := make([]any, len(lps[i].Top))
		for j := range lps[i].Top {
			top[j] = entry(&lps[i].Top[j])
		}
		e["top_logprobs"] = top
		out[i] = e
	}
	return out
}

// textLogprobs writes them as completions do: parallel lists of tokens, log probabilities,
// alternatives (a map of token text to log probability; null without) and text offsets.
// Each token's text offset is at[i], or (at nil) the bytes of the tokens before it.
func textLogprobs(lps []assistant.TokenLogprob, withTop bool, at []int) map[string]any {
	tokens, values, offsets := make([]string, len(lps)), make([]float32, len(lps)), make([]int, len(lps))
	var tops []any
	next := 0
	for i, t := range lps {
		tokens[i], values[i], offsets[i] = string(t.Bytes), jsonLogprob(t.Logprob), next
		if at != nil {
			offsets[i] = at[i]
		}
		next += len(t.Bytes)
		if withTop {
			m := map[string]float32{}
			for _, a := range t.Top {
				if _, seen := m[string(a.Bytes)]; !seen {
					m[string(a.Bytes)] = jsonLogprob(a.Logprob)
				}
			}
			tops = append(tops, m)
		}
	}
	out := map[string]any{"tokens": tokens, "token_logprobs": values, "top_logprobs": nil, "text_offset": offsets}
	if withTop {
		out["top_logprobs"] = tops
	}
	return out
}

// begin readies an answer once its options are read (err says whether they were): it adds the
// server's drafts and shared passes and waits for a free chat. When the request cannot go on
// it answers the error with fail, in the endpoint's shape, and reports false; else the caller
// releases the chat it returns when done.
func (s *Server) begin(w http.ResponseWriter, r *http.Request, opts *assistant.Options, err error, fail func(http.ResponseWriter, error)) (*assistant.Chat, bool) {
	var c *assistant.Chat
	if err == nil {
		c, err = s.acquire(r.Context())
	}
	if err != nil {
		fail(w, err)
		return nil, false
	}
	if s.answering != nil {
		s.answering()
	}
	opts.Draft, opts.Batch = s.Draft, s.batch
	return c, true
}

// complete answers one request of either endpoint, whole or streamed.
func (s *Server) complete(w http.ResponseWriter, r *http.Request, o *options, c completion) {
	opts, err := o.check()
	if vocab := s.chat.Model().Config().Vocab; err == nil {
		for id := range opts.LogitBias {
			if int(id) >= vocab {
				err = badParam("logit_bias", "logit_bias: token %d: the vocabulary has %d tokens", id, vocab)
				break
			}
		}
	}
	chat, ok := s.begin(w, r, &opts, err, writeError)
	if !ok {
		return
	}
	defer s.release(chat)
	id, created := newID(c.idPrefix), s.now().Unix()
	head := func(object string) map[string]any {
		h := map[string]any{"id": id, "object": object, "created": created, "model": s.name, "system_fingerprint": s.fingerprint()}
		if opts.Sampling != nil { // the seed that reproduces this answer, as the request's int64
			h["seed"] = int64(opts.Sampling.Seed)
		}
		return h
	}

	if !o.Stream {
		reply, err := c.answer(r, chat, opts)
		err = s.why(r, err)
		s.logReply(r, &reply, err)
		if err != nil {
			writeError(w, err)
			return
		}
		finish := finishReason(&reply)
		body := head(c.object)
		body["choices"] = []any{c.choice(&reply, &finish)}
		body["usage"] = usageOf(&reply)
		writeJSON(w, http.StatusOK, body)
		return
	}

	ev := newEvents(w, s.WriteStall)
	first := true
	// The log probabilities received and not sent yet; a chunk carries those of the tokens
	// whose text begins in what has been sent, so that the chunks' lists together are the
	// whole answer's.
	var pending streamedLogprobs
	shown, sent := 0, 0
	if c.logprobs {
		opts.OnLogprob = func(lp assistant.TokenLogprob, at int) {
			pending.list, pending.at = append(pending.list, lp), append(pending.at, at)
		}
	}
	send := func(text string, finish *string) {
		shown += len(text)
		n := 0
		for n < len(pending.at) && pending.at[n] < shown {
			n++
		}
		chunk := head(c.chunkObject)
		chunk["choices"] = []any{c.delta(text, first, finish, streamedLogprobs{pending.list[:n], pending.at[:n]})}
		pending.list, pending.at, sent = pending.list[n:], pending.at[n:], sent+n
		first = false
		ev.send(chunk)
	}
	opts.OnText = func(text string) { send(text, nil) }
	hold := c.tools.holdBack(opts.OnText)
	if hold != nil {
		opts.OnText = hold.write
	}
	gen, stop := s.generating(r, &opts)
	defer stop()
	reply, err := c.answer(r.WithContext(gen), chat, opts)
	err = s.why(r, err)
	s.logReply(r, &reply, err)
	if err != nil {
		if !ev.started {
			writeError(w, err)
			return
		}
		// The status line is gone: the error goes as an event of its own (which the SDKs raise
		// as the error it holds), and the stream ends as every stream does.
		ev.send(asAPIError(err).body())
		ev.done()
		return
	}
	finish := finishReason(&reply)
	if hold != nil {
		if text, calls := c.tools.calls(&reply); len(calls) > 0 {
			hold.tail(text) // text after the calls, as the whole answer's content has it
			for i, call := range calls {
				call["index"] = i // a streamed call says which it is
			}
			d := map[string]any{"tool_calls": calls}
			if first {
				d["role"], d["content"] = "assistant", nil
			}
			chunk := head(c.chunkObject)
			chunk["choices"] = []any{map[string]any{"index": 0, "delta": d, "finish_reason": nil, "logprobs": nil}}
			first = false
			ev.send(chunk)
			if reply.Finished() {
				finish = "tool_calls"
			}
		} else if rest := hold.rest(); rest != "" {
			send(rest, nil)
		}
	}
	if c.logprobs {
		// The last chunk carries what the answer keeps of the rest (none past a stop text).
		keep := min(max(len(reply.Logprobs)-sent, 0), len(pending.list))
		pending.list, pending.at = pending.list[:keep], pending.at[:keep]
		shown = math.MaxInt
	}
	send("", &finish)
	if o.StreamOptions != nil && o.StreamOptions.IncludeUsage {
		chunk := head(c.chunkObject)
		chunk["choices"] = []any{}
		chunk["usage"] = usageOf(&reply)
		ev.send(chunk)
	}
	ev.done()
}

// generating returns the context a streamed answer of r generates under (opts.OnText set), and
// the function that releases it once the answer is done. A client going away stops the answer
// at once, as r's context would. The server stopping (ErrShuttingDown) lets it finish the
// token it is making: OnText sends that token's text, then the answer ends, so that the
// client gets every token made and then the error event saying why, not a stream cut short.
func (s *Server) generating(r *http.Request, opts *assistant.Options) (context.Context, func()) {
	gen, stop := context.WithCancelCause(context.WithoutCancel(r.Context()))
	// The grace timer, stopped with the answer: else each stream the server stops leaves a
	// timer behind it, firing a no-op stopGrace later. released (under mu) keeps the watcher,
	// which runs on its own goroutine and may still be running when the answer is released,
	// from setting a timer after.
	var mu sync.Mutex
	var grace *time.Timer
	released := false
	unwatch := context.AfterFunc(r.Context(), func() {
		if s.stopSeen != nil {
			defer s.stopSeen()
		}
		why := context.Cause(r.Context())
		if !errors.Is(why, ErrShuttingDown) {
			stop(r.Context().Err())
			return
		}
		mu.Lock()
		defer mu.Unlock()
		if !released {
			grace = time.AfterFunc(s.stopGrace, func() { stop(why) }) // no token came: stop all the same
			if s.graceSet != nil {
				s.graceSet(grace)
			}
		}
	})
	if text := opts.OnText; text != nil {
		opts.OnText = func(piece string) {
			text(piece)
			if why := context.Cause(r.Context()); errors.Is(why, ErrShuttingDown) {
				stop(why)
			}
		}
	}
	return gen, func() {
		unwatch()
		mu.Lock()
		released = true
		if grace != nil {
			grace.Stop()
		}
		mu.Unlock()
		stop(nil)
	}
}

// why replaces the cancellation an answer ended with by its cause when the server stopped it
// (ErrShuttingDown) rather than the client.
func (s *Server) why(r *http.Request, err error) error {
	if err != nil && errors.Is(err, context.Canceled) {
		if c := cause(r.Context()); errors.Is(c, ErrShuttingDown) {
			return c
		}
	}
	return err
}

func (s *Server) logReply(r *http.Request, reply *assistant.Reply, err error) {
	if err != nil {
		s.logf("%s %s: %v (after %d tokens)", r.Method, r.URL.Path, err, reply.Tokens)
		return
	}
	s.logf("%s %s: prompt %d tokens (%d reused) at %.1f tok/s, %d new at %.1f tok/s, %s",
		r.Method, r.URL.Path, reply.Prompt, reply.Reused, reply.PPRate, reply.Tokens, reply.Rate, finishReason(reply))
}

// events writes a streamed answer, a piece at a time, each flushed within stall (the
// Server's WriteStall): server-sent events ("data: JSON" blocks), or with lines
// newline-delimited JSON (Ollama's).
type events struct {
	w       http.ResponseWriter
	rc      *http.ResponseController
	stall   time.Duration
	started bool
	lines   bool
}

func newEvents(w http.ResponseWriter, stall time.Duration) *events {
	return &events{w: w, rc: http.NewResponseController(w), stall: stall}
}

// newLines returns events that write one line of JSON each (application/x-ndjson).
func newLines(w http.ResponseWriter, stall time.Duration) *events {
	e := newEvents(w, stall)
	e.lines = true
	return e
}

func (e *events) start() {
	if e.started {
		return
	}
	e.started = true
	h := e.w.Header()
	if e.lines {
		h.Set("Content-Type", "application/x-ndjson")
		e.w.WriteHeader(http.StatusOK)
		return
	}
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	e.w.WriteHeader(http.StatusOK)
}

func (e *events) send(v any) { e.sendNamed("", v) }

// sendNamed writes an event with a name ("event: NAME"), as the Responses API streams; a line
// of JSON has none.
func (e *events) sendNamed(name string, v any) {
	e.start()
	e.rc.SetWriteDeadline(time.Now().Add(e.stall))
	b, _ := json.Marshal(v)
	switch {
	case e.lines:
		e.w.Write(append(b, '\n'))
	case name != "":
		fmt.Fprintf(e.w, "event: %s\ndata: %s\n\n", name, b)
	default:
		fmt.Fprintf(e.w, "data: %s\n\n", b)
	}
	e.rc.Flush()
}

func (e *events) done() {
	e.start()
	e.rc.SetWriteDeadline(time.Now().Add(e.stall))
	fmt.Fprint(e.w, "data: [DONE]\n\n")
	e.rc.Flush()
}
