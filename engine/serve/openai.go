package serve

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/trochilus-llm/trochilus/engine"
	"github.com/trochilus-llm/trochilus/engine/assistant"
	"github.com/trochilus-llm/trochilus/tokenizer/chat"
)

// options are the request fields shared by both completion endpoints.
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
	N                   *int            `json:"n"`
	Logprobs            json.RawMessage `json:"logprobs"`
	PresencePenalty     *float64        `json:"presence_penalty"`
	FrequencyPenalty    *float64        `json:"frequency_penalty"`
	Tools               json.RawMessage `json:"tools"`
	Seed                *uint64         `json:"seed"`
}

type streamOptions struct {
	IncludeUsage bool `json:"include_usage"`
}

// check refuses what the engine cannot honour and returns the answer's options. A temperature
// above 0 samples (with the request's seed, or a random one the response reports); none or 0
// decodes greedily.
func (o *options) check() (assistant.Options, error) {
	var a assistant.Options
	switch {
	case o.N != nil && *o.N != 1:
		return a, badRequest("n %d: one choice per request", *o.N)
	case o.PresencePenalty != nil && *o.PresencePenalty != 0, o.FrequencyPenalty != nil && *o.FrequencyPenalty != 0:
		return a, badRequest("presence and frequency penalties are not supported")
	case isSet(o.Logprobs):
		return a, badRequest("logprobs are not supported")
	case isSet(o.Tools):
		return a, badRequest("tools are not supported")
	case o.Temperature != nil && (*o.Temperature < 0 || *o.Temperature > 100):
		return a, badRequest("temperature %g: want 0 (greedy) to 100", *o.Temperature)
	case o.TopP != nil && (*o.TopP < 0 || *o.TopP > 1):
		return a, badRequest("top_p %g: want 0 to 1", *o.TopP)
	case o.TopK != nil && *o.TopK < 0:
		return a, badRequest("top_k %d: want 0 (all) or more", *o.TopK)
	}
	// A temperature too small for a float32 is the greedy limit it tends to.
	if o.Temperature != nil && float32(*o.Temperature) > 0 {
		sp := &engine.Sampling{Temperature: float32(*o.Temperature), TopP: 1}
		if o.TopP != nil {
			sp.TopP = float32(*o.TopP)
		}
		if o.TopK != nil {
			sp.TopK = *o.TopK
		}
		if o.Seed != nil {
			sp.Seed = *o.Seed
		} else {
			sp.Seed = engine.NewSeed()
		}
		a.Sampling = sp
	}
	for _, n := range []*int{o.MaxTokens, o.MaxCompletionTokens} {
		if n != nil && *n < 1 {
			return a, badRequest("max_tokens %d: want at least 1", *n)
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
	return a, nil
}

// isSet reports whether a JSON field asks for something: present and not null, false, 0 or
// an empty list.
func isSet(raw json.RawMessage) bool {
	switch string(bytes.TrimSpace(raw)) {
	case "", "null", "false", "0", "[]":
		return false
	}
	return true
}

// parseStop reads stop: a string or a list of strings.
func parseStop(raw json.RawMessage) ([]string, error) {
	if !isSet(raw) {
		return nil, nil
	}
	var one string
	if json.Unmarshal(raw, &one) == nil {
		return []string{one}, nil
	}
	var list []string
	if err := json.Unmarshal(raw, &list); err != nil {
		return nil, badRequest("stop: want a string or a list of strings")
	}
	if len(list) > 16 {
		return nil, badRequest("stop: %d texts, at most 16", len(list))
	}
	return list, nil
}

// parseMessages reads the messages of a chat request: a role, content as a string, null or a
// list of text parts, and any other field (name, tool_call_id, ...) passed to the template.
func parseMessages(raw []map[string]json.RawMessage) ([]chat.Message, error) {
	if len(raw) == 0 {
		return nil, badRequest("messages: want at least one")
	}
	msgs := make([]chat.Message, len(raw))
	for i, fields := range raw {
		m := &msgs[i]
		if err := json.Unmarshal(fields["role"], &m.Role); err != nil || m.Role == "" {
			return nil, badRequest("messages[%d].role: want a non-empty string", i)
		}
		content, err := parseContent(fields["content"])
		if err != nil {
			return nil, badRequest("messages[%d].content: %v", i, err)
		}
		m.Content = content
		for k, v := range fields {
			if k == "role" || k == "content" {
				continue
			}
			var x any
			if err := json.Unmarshal(v, &x); err != nil {
				return nil, badRequest("messages[%d].%s: %v", i, k, err)
			}
			if m.Extra == nil {
				m.Extra = map[string]any{}
			}
			m.Extra[k] = x
		}
	}
	return msgs, nil
}

// parseContent reads a message's content: a string, null, or a list of text parts, which
// are joined (the templates of text models expect a string).
func parseContent(raw json.RawMessage) (any, error) {
	if len(bytes.TrimSpace(raw)) == 0 || string(bytes.TrimSpace(raw)) == "null" {
		return nil, nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, nil
	}
	var parts []struct {
		Type string  `json:"type"`
		Text *string `json:"text"`
	}
	if err := json.Unmarshal(raw, &parts); err != nil {
		return nil, fmt.Errorf("want a string, null or a list of text parts")
	}
	var b strings.Builder
	for j, p := range parts {
		if p.Type != "text" || p.Text == nil {
			return nil, fmt.Errorf("part %d is of type %q: only text is supported", j, p.Type)
		}
		b.WriteString(*p.Text)
	}
	return b.String(), nil
}

type usage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	TotalTokens      int `json:"total_tokens"`
}

func usageOf(r *assistant.Reply) *usage {
	return &usage{PromptTokens: r.Prompt, CompletionTokens: r.Tokens, TotalTokens: r.Prompt + r.Tokens}
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
	answer                        func(r *http.Request, opts assistant.Options) (assistant.Reply, error)
	// choice and delta shape a choice of the whole response and of a streamed chunk.
	choice func(text string, finish *string) map[string]any
	delta  func(text string, first bool, finish *string) map[string]any
}

func (s *Server) chatCompletions(w http.ResponseWriter, r *http.Request) {
	var req struct {
		options
		Messages []map[string]json.RawMessage `json:"messages"`
	}
	if err := decode(r, &req); err != nil {
		writeError(w, err)
		return
	}
	turns, err := parseMessages(req.Messages)
	if err != nil {
		writeError(w, err)
		return
	}
	s.complete(w, r, &req.options, completion{
		object: "chat.completion", chunkObject: "chat.completion.chunk", idPrefix: "chatcmpl-",
		answer: func(r *http.Request, opts assistant.Options) (assistant.Reply, error) {
			return s.chat.Reply(r.Context(), turns, opts)
		},
		choice: func(text string, finish *string) map[string]any {
			return map[string]any{"index": 0, "message": map[string]any{"role": "assistant", "content": text},
				"finish_reason": finish, "logprobs": nil}
		},
		delta: func(text string, first bool, finish *string) map[string]any {
			d := map[string]any{}
			if first {
				d["role"] = "assistant"
			}
			if text != "" || first {
				d["content"] = text
			}
			return map[string]any{"index": 0, "delta": d, "finish_reason": finish, "logprobs": nil}
		},
	})
}

func (s *Server) completions(w http.ResponseWriter, r *http.Request) {
	var req struct {
		options
		Prompt json.RawMessage `json:"prompt"`
		Echo   bool            `json:"echo"`
		Suffix *string         `json:"suffix"`
	}
	if err := decode(r, &req); err != nil {
		writeError(w, err)
		return
	}
	var prompt string
	if err := json.Unmarshal(req.Prompt, &prompt); err != nil {
		var list []string
		if json.Unmarshal(req.Prompt, &list) != nil || len(list) != 1 {
			writeError(w, badRequest("prompt: want a string (or a list of one)"))
			return
		}
		prompt = list[0]
	}
	if req.Echo || (req.Suffix != nil && *req.Suffix != "") {
		writeError(w, badRequest("echo and suffix are not supported"))
		return
	}
	s.complete(w, r, &req.options, completion{
		object: "text_completion", chunkObject: "text_completion", idPrefix: "cmpl-",
		answer: func(r *http.Request, opts assistant.Options) (assistant.Reply, error) {
			return s.chat.Complete(r.Context(), prompt, opts)
		},
		choice: func(text string, finish *string) map[string]any {
			return map[string]any{"index": 0, "text": text, "finish_reason": finish, "logprobs": nil}
		},
		delta: func(text string, first bool, finish *string) map[string]any {
			return map[string]any{"index": 0, "text": text, "finish_reason": finish, "logprobs": nil}
		},
	})
}

// complete answers one request of either endpoint, whole or streamed.
func (s *Server) complete(w http.ResponseWriter, r *http.Request, o *options, c completion) {
	opts, err := o.check()
	if err != nil {
		writeError(w, err)
		return
	}
	if err := s.acquire(r.Context()); err != nil {
		writeError(w, err)
		return
	}
	defer s.release()
	id, created := newID(c.idPrefix), s.now().Unix()
	head := func(object string) map[string]any {
		h := map[string]any{"id": id, "object": object, "created": created, "model": s.name}
		if opts.Sampling != nil { // the seed that reproduces this answer
			h["seed"] = opts.Sampling.Seed
		}
		return h
	}

	if !o.Stream {
		reply, err := c.answer(r, opts)
		s.logReply(r, &reply, err)
		if err != nil {
			writeError(w, err)
			return
		}
		finish := finishReason(&reply)
		body := head(c.object)
		body["choices"] = []any{c.choice(reply.Text, &finish)}
		body["usage"] = usageOf(&reply)
		writeJSON(w, http.StatusOK, body)
		return
	}

	ev := newEvents(w)
	first := true
	send := func(text string, finish *string) {
		chunk := head(c.chunkObject)
		chunk["choices"] = []any{c.delta(text, first, finish)}
		first = false
		ev.send(chunk)
	}
	opts.OnText = func(text string) { send(text, nil) }
	reply, err := c.answer(r, opts)
	s.logReply(r, &reply, err)
	if err != nil {
		if !ev.started {
			writeError(w, err)
			return
		}
		// The status line is gone: the error goes as an event of its own.
		ev.send(asAPIError(err).body())
		return
	}
	finish := finishReason(&reply)
	send("", &finish)
	if o.StreamOptions != nil && o.StreamOptions.IncludeUsage {
		chunk := head(c.chunkObject)
		chunk["choices"] = []any{}
		chunk["usage"] = usageOf(&reply)
		ev.send(chunk)
	}
	ev.done()
}

func (s *Server) logReply(r *http.Request, reply *assistant.Reply, err error) {
	if err != nil {
		s.logf("%s %s: %v (after %d tokens)", r.Method, r.URL.Path, err, reply.Tokens)
		return
	}
	s.logf("%s %s: prompt %d tokens (%d reused) at %.1f tok/s, %d new at %.1f tok/s, %s",
		r.Method, r.URL.Path, reply.Prompt, reply.Reused, reply.PPRate, reply.Tokens, reply.Rate, finishReason(reply))
}

// events writes server-sent events: "data: JSON" blocks, flushed one by one.
type events struct {
	w       http.ResponseWriter
	rc      *http.ResponseController
	started bool
}

func newEvents(w http.ResponseWriter) *events {
	return &events{w: w, rc: http.NewResponseController(w)}
}

func (e *events) start() {
	if e.started {
		return
	}
	e.started = true
	h := e.w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	e.w.WriteHeader(http.StatusOK)
}

func (e *events) send(v any) {
	e.start()
	b, _ := json.Marshal(v)
	fmt.Fprintf(e.w, "data: %s\n\n", b)
	e.rc.Flush()
}

func (e *events) done() {
	e.start()
	fmt.Fprint(e.w, "data: [DONE]\n\n")
	e.rc.Flush()
}
