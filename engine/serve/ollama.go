package serve

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/trochilus-llm/trochilus/engine"
	"github.com/trochilus-llm/trochilus/engine/assistant"
	"github.com/trochilus-llm/trochilus/gguf"
	"github.com/trochilus-llm/trochilus/tokenizer/chat"
)

// The Ollama API (github.com/ollama/ollama, docs/api.md), as its clients (ollama-python,
// ollama-js, Open WebUI, editors' plugins) use it: /api/chat and /api/generate answering in
// newline-delimited JSON, streamed unless "stream": false; /api/tags, /api/show, /api/ps and
// /api/version describing the one model served; errors as {"error": "..."}. Requests go to
// the same chat, one at a time, as the OpenAI routes'.
//
// Sampling follows Ollama's defaults where the request's options say nothing (temperature 0.8,
// top_k 40, top_p 0.9, a fresh seed, as for seed -1; temperature 0 is greedy), so that its
// clients get what they are used to; a seed of 0 or more in the options reproduces an answer. An option that changes what Ollama
// would compute and that serve cannot honour (penalties, min_p, mirostat, structured output,
// images, tools) is refused with a 400 naming it; options about speed and placement (num_ctx,
// num_thread, num_gpu, ...) change nothing here and are accepted.

// ollamaVersion is the Ollama release whose API this one answers as: clients check it before
// using newer fields.
const ollamaVersion = "0.12.0"

// Ollama's sampling defaults (its api.DefaultOptions).
const (
	ollamaTemperature = 0.8
	ollamaTopK        = 40
	ollamaTopP        = 0.9
)

func (s *Server) ollamaRoutes() {
	s.mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		fmt.Fprint(w, "Ollama is running (trochilus serve: the Ollama API under /api, OpenAI's under /v1)")
	})
	s.mux.HandleFunc("HEAD /{$}", func(w http.ResponseWriter, r *http.Request) {})
	s.mux.HandleFunc("GET /api/version", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, map[string]string{"version": ollamaVersion})
	})
	s.mux.HandleFunc("GET /api/tags", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, map[string]any{"models": []any{s.ollamaModel()}})
	})
	s.mux.HandleFunc("GET /api/ps", func(w http.ResponseWriter, r *http.Request) {
		m := s.ollamaModel()
		m["size_vram"] = 0
		m["expires_at"] = s.now().Add(100 * 365 * 24 * time.Hour).UTC().Format(time.RFC3339) // loaded while serving
		m["context_length"] = s.chat.Context()
		writeJSON(w, http.StatusOK, map[string]any{"models": []any{m}})
	})
	s.mux.HandleFunc("POST /api/show", s.ollamaShow)
	s.mux.HandleFunc("POST /api/chat", s.ollamaChat)
	s.mux.HandleFunc("POST /api/generate", s.ollamaGenerate)
	for _, path := range []string{"/api/pull", "/api/push", "/api/create", "/api/copy", "/api/delete",
		"/api/embed", "/api/embeddings", "/api/blobs/{digest}"} {
		s.mux.HandleFunc(path, func(w http.ResponseWriter, r *http.Request) {
			writeOllamaError(w, &apiError{status: http.StatusNotImplemented,
				msg: fmt.Sprintf("%s is not supported: this server runs one model (trochilus pull and trochilus rm manage the models folder)", r.URL.Path)})
		})
	}
	for path, allow := range map[string]string{"/api/version": "GET", "/api/tags": "GET", "/api/ps": "GET",
		"/api/show": "POST", "/api/chat": "POST", "/api/generate": "POST"} {
		s.mux.HandleFunc(path, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Allow", allow+", OPTIONS")
			writeOllamaError(w, &apiError{status: http.StatusMethodNotAllowed, msg: fmt.Sprintf("%s %s: want %s", r.Method, r.URL.Path, allow)})
		})
	}
	s.mux.HandleFunc("/api/", func(w http.ResponseWriter, r *http.Request) {
		writeOllamaError(w, &apiError{status: http.StatusNotFound, msg: fmt.Sprintf("%s %s: no such route", r.Method, r.URL.Path)})
	})
}

// writeOllamaError answers with an error in Ollama's shape, {"error": "..."}.
func writeOllamaError(w http.ResponseWriter, err error) {
	e := asAPIError(err)
	e.setHeaders(w)
	writeJSON(w, e.status, map[string]string{"error": e.msg})
}

// ollamaName is the served model's name as Ollama writes names, with a tag.
func (s *Server) ollamaName() string {
	if strings.Contains(s.name, ":") {
		return s.name
	}
	return s.name + ":latest"
}

// namesServed reports whether an Ollama model name names the served model: its name with or
// without the tag ":latest".
func (s *Server) namesServed(name string) bool {
	return name == s.name || name == s.ollamaName()
}

// ollamaDetails describes the model as Ollama's "details" object does.
func (s *Server) ollamaDetails() map[string]any {
	m := s.chat.Model()
	f := m.File()
	level := ""
	if v, err := f.Uint64("general.file_type"); err == nil {
		level = strings.TrimPrefix(strings.TrimPrefix(gguf.FileTypeName(v), "MOSTLY_"), "ALL_")
	}
	_, all := engine.TensorTotals(f)
	arch := m.Config().Arch
	return map[string]any{"parent_model": "", "format": "gguf", "family": arch, "families": []string{arch},
		"parameter_size": parameterSize(all.Elems), "quantization_level": level}
}

// parameterSize writes a parameter count as Ollama does: "6.9B", "30.5B", "410M".
func parameterSize(n uint64) string {
	switch {
	case n >= 1e9:
		return fmt.Sprintf("%.1fB", float64(n)/1e9)
	case n >= 1e6:
		return fmt.Sprintf("%.0fM", float64(n)/1e6)
	}
	return fmt.Sprintf("%d", n)
}

// ollamaModel is the served model as an entry of /api/tags.
func (s *Server) ollamaModel() map[string]any {
	f := s.chat.Model().File()
	return map[string]any{"name": s.ollamaName(), "model": s.ollamaName(),
		"modified_at": s.now().UTC().Format(time.RFC3339), "size": f.Size(),
		"digest": "", "details": s.ollamaDetails()}
}

func (s *Server) ollamaShow(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Model   string `json:"model"`
		Name    string `json:"name"` // the older name of model
		Verbose bool   `json:"verbose"`
	}
	obj, err := readObject(w, r)
	if err == nil {
		err = decodeFields(obj, &req, fieldRules{})
	}
	if err != nil {
		writeOllamaError(w, err)
		return
	}
	name := cmp.Or(req.Model, req.Name)
	if !s.namesServed(name) {
		writeOllamaError(w, &apiError{status: http.StatusNotFound, msg: fmt.Sprintf("model '%s' not found: this server serves %s", name, s.ollamaName())})
		return
	}
	c := s.chat.Model().Config()
	arch := c.Arch
	info := map[string]any{"general.architecture": arch,
		arch + ".context_length": c.Context, arch + ".embedding_length": c.Hidden, arch + ".block_count": c.Layers,
		arch + ".expert_count": c.Experts, arch + ".expert_used_count": c.ExpertsUsed,
		arch + ".attention.head_count": c.Heads, arch + ".attention.head_count_kv": c.KVHeads}
	template, _ := s.chat.Model().File().Str("tokenizer.chat_template")
	params := fmt.Sprintf("temperature %g\ntop_k %d\ntop_p %g", ollamaTemperature, ollamaTopK, ollamaTopP)
	writeJSON(w, http.StatusOK, map[string]any{
		"modelfile": fmt.Sprintf("# served by trochilus\nFROM %s\n", s.chat.Model().Path()), "parameters": params,
		"template": template, "details": s.ollamaDetails(), "model_info": info,
		"capabilities": []string{"completion"}, "modified_at": s.now().UTC().Format(time.RFC3339),
	})
}

// ollamaOptions are the request's options that serve honours; those refused or accepted
// without effect are in ollamaRefusedOptions and ollamaNoOpOptions.
type ollamaOptions struct {
	Temperature *float64        `json:"temperature"`
	TopK        *int            `json:"top_k"`
	TopP        *float64        `json:"top_p"`
	Seed        *int64          `json:"seed"`
	NumPredict  *int            `json:"num_predict"`
	Stop        json.RawMessage `json:"stop"`
}

var ollamaRefusedOptions = map[string]refusal{
	"repeat_penalty":    {"repetition penalties are not supported: want 1", isNumber(1)},
	"presence_penalty":  {"presence and frequency penalties are not supported: want 0", isNumber(0)},
	"frequency_penalty": {"presence and frequency penalties are not supported: want 0", isNumber(0)},
	"min_p":             {"min_p is not supported: want 0", isNumber(0)},
	"typical_p":         {"typical sampling is not supported: want 1", isNumber(1)},
	"tfs_z":             {"tail-free sampling is not supported: want 1", isNumber(1)},
	"mirostat":          {"mirostat sampling is not supported: want 0", isNumber(0)},
}

// ollamaNoOpOptions change how fast or where Ollama runs a model, or tune options refused
// above at their default (a penalty's window when there is no penalty): nothing they say
// changes an answer here. num_ctx included: the server's context is set when it starts.
var ollamaNoOpOptions = map[string]bool{"num_ctx": true, "num_batch": true, "num_gpu": true, "main_gpu": true,
	"num_thread": true, "use_mmap": true, "use_mlock": true, "numa": true, "low_vram": true, "vocab_only": true,
	"num_keep": true, "repeat_last_n": true, "penalize_newline": true, "mirostat_tau": true, "mirostat_eta": true,
	"f16_kv": true, "logits_all": true, "embedding_only": true}

// ollamaRefused are the request fields of /api/chat and /api/generate that serve cannot honour.
var ollamaRefused = map[string]refusal{
	"tools":    {"tools are for /api/chat", isOneOf("[]")},
	"images":   {"images are not supported: this is a text model", isOneOf("[]")},
	"think":    {"separated thinking output is not supported yet: want false", isOneOf("false")},
	"suffix":   {"suffix (insertion) is not supported", isOneOf(`""`)},
	"template": {"a request's own template is not supported: the model's is used (or raw: true)", isOneOf(`""`)},
	"context":  {"the context of an earlier answer is not supported: send the conversation to /api/chat", isOneOf("[]")},
	"logprobs": {"log probabilities are not supported", isOneOf("false")},
}

// keep_alive says how long Ollama keeps the model loaded after the request: here it stays
// loaded while the server runs.
var ollamaAccepted = map[string]bool{"keep_alive": true}

// ollamaRequest are the fields of /api/chat and /api/generate serve honours.
type ollamaRequest struct {
	Model   string                     `json:"model"`
	Stream  *bool                      `json:"stream"`
	Options map[string]json.RawMessage `json:"options"`
	Format  json.RawMessage            `json:"format"` // "", "json" or a JSON Schema (parseOllamaFormat)
}

// options reads the request's options into the answer's, with Ollama's defaults for what they
// leave out.
func (q *ollamaRequest) options() (assistant.Options, error) {
	var o ollamaOptions
	if err := decodeFields(q.Options, &o, fieldRules{refused: []map[string]refusal{ollamaRefusedOptions},
		accepted: ollamaNoOpOptions, in: "options."}); err != nil {
		return assistant.Options{}, err
	}
	temp, topP, topK := ollamaTemperature, float64(ollamaTopP), ollamaTopK
	if o.Temperature != nil {
		temp = *o.Temperature
	}
	if o.TopP != nil {
		topP = *o.TopP
	}
	if o.TopK != nil {
		topK = *o.TopK
	}
	// The OpenAI check, field names aside: the same ranges, temperature 0 greedy.
	if o.Seed != nil && *o.Seed < 0 {
		o.Seed = nil // Ollama's -1 (its default): a fresh seed
	}
	common := options{Temperature: &temp, TopP: &topP, TopK: &topK, Seed: o.Seed, MaxTokens: o.NumPredict, Stop: o.Stop}
	if o.NumPredict != nil && *o.NumPredict < 0 {
		common.MaxTokens = nil // Ollama's -1: as many as fit
	}
	a, err := common.check()
	if e, ok := err.(*apiError); ok && e.param != "" {
		e.param = "options." + strings.Replace(e.param, "max_tokens", "num_predict", 1)
		e.msg = strings.Replace(e.msg, "max_tokens", "num_predict", 1)
	}
	if err == nil {
		a.Format, err = parseOllamaFormat(q.Format)
	}
	return a, err
}

func (s *Server) ollamaChat(w http.ResponseWriter, r *http.Request) {
	var req struct {
		ollamaRequest
		Messages []map[string]json.RawMessage `json:"messages"`
		Tools    json.RawMessage              `json:"tools"` // as OpenAI's; the model chooses (tools.go)
	}
	obj, err := readObject(w, r)
	if err == nil {
		err = decodeFields(obj, &req, fieldRules{refused: []map[string]refusal{ollamaRefused}, accepted: ollamaAccepted})
	}
	syntax, canCall := s.chat.ToolSyntax()
	var plan toolPlan
	if err == nil {
		plan, err = parseTools(req.Tools, nil, nil, syntax, canCall, ollamaFunctionName)
	}
	var turns []chat.Message
	if err == nil {
		turns, err = parseOllamaMessages(req.Messages, canCall)
	}
	if err == nil {
		err = s.promptBound("messages", contentBytes(turns))
	}
	if err == nil && len(turns) > 0 {
		err = s.countPrompt("messages", turns, &plan)
	}
	if err != nil {
		writeOllamaError(w, err)
		return
	}
	if len(turns) == 0 { // Ollama loads the model and answers at once
		writeJSON(w, http.StatusOK, map[string]any{"model": req.Model, "created_at": s.stamp(),
			"message": map[string]string{"role": "assistant", "content": ""}, "done": true, "done_reason": "load"})
		return
	}
	s.ollamaAnswer(w, r, &req.ollamaRequest, func(ctx context.Context, c *assistant.Chat, opts assistant.Options) (assistant.Reply, error) {
		plan.apply(&opts)
		return c.Reply(ctx, turns, opts)
	}, func(text string) map[string]any {
		return map[string]any{"message": map[string]any{"role": "assistant", "content": text}}
	}, &plan)
}

// parseOllamaMessages reads /api/chat's messages: OpenAI's shape, images and tool calls
// refused. None at all is allowed: Ollama then only loads the model.
func parseOllamaMessages(raw []map[string]json.RawMessage, tools bool) ([]chat.Message, error) {
	for i, m := range raw {
		if v, ok := m["images"]; ok && !isOneOf("[]")(v) {
			return nil, badParam("messages", "messages[%d].images: images are not supported: this is a text model", i)
		}
		delete(m, "images")
		if v, ok := m["tool_name"]; ok && !isOneOf(`""`)(v) && !tools {
			return nil, badParam("messages", "messages[%d].tool_name: tool results need a model whose template renders tools", i)
		}
		delete(m, "tool_name") // the call a result answers: the templates go by order
		if v, ok := m["thinking"]; ok && isOneOf(`""`)(v) {
			delete(m, "thinking")
		}
	}
	if len(raw) == 0 {
		return nil, nil
	}
	return parseMessages(raw, tools)
}

func (s *Server) ollamaGenerate(w http.ResponseWriter, r *http.Request) {
	var req struct {
		ollamaRequest
		Prompt string `json:"prompt"`
		System string `json:"system"`
		Raw    bool   `json:"raw"`
	}
	obj, err := readObject(w, r)
	if err == nil {
		err = decodeFields(obj, &req, fieldRules{refused: []map[string]refusal{ollamaRefused}, accepted: ollamaAccepted})
	}
	if err == nil {
		err = s.promptBound("prompt", len(req.Prompt)+len(req.System))
	}
	if err == nil && req.Raw && req.System != "" {
		err = badParam("system", "system: a raw prompt has no template to put a system message in")
	}
	if err != nil {
		writeOllamaError(w, err)
		return
	}
	if req.Prompt == "" && req.System == "" { // Ollama loads the model and answers at once
		writeJSON(w, http.StatusOK, map[string]any{"model": req.Model, "created_at": s.stamp(),
			"response": "", "done": true, "done_reason": "load"})
		return
	}
	var turns []chat.Message
	if req.System != "" {
		turns = append(turns, chat.Message{Role: "system", Content: req.System})
	}
	turns = append(turns, chat.Message{Role: "user", Content: req.Prompt})
	if req.Raw { // the client wrote the template: its control tokens are tokens
		err = s.promptFits("prompt", s.chat.CountText(req.Prompt, assistant.Options{SpecialText: true}))
	} else {
		err = s.countPrompt("prompt", turns, nil)
	}
	if err != nil {
		writeOllamaError(w, err)
		return
	}
	answer := func(ctx context.Context, c *assistant.Chat, opts assistant.Options) (assistant.Reply, error) {
		if req.Raw {
			opts.SpecialText = true
			return c.Complete(ctx, req.Prompt, opts)
		}
		return c.Reply(ctx, turns, opts)
	}
	s.ollamaAnswer(w, r, &req.ollamaRequest, answer, func(text string) map[string]any {
		return map[string]any{"response": text}
	}, nil)
}

// stamp is the time of an answer as Ollama writes it.
func (s *Server) stamp() string { return s.now().UTC().Format(time.RFC3339Nano) }

// ollamaAnswer answers /api/chat or /api/generate: the whole answer in one object with
// "stream": false, else one line of JSON per piece of text and a last one with "done": true
// and the timings (nanoseconds), as Ollama streams (application/x-ndjson).
func (s *Server) ollamaAnswer(w http.ResponseWriter, r *http.Request, q *ollamaRequest,
	answer func(context.Context, *assistant.Chat, assistant.Options) (assistant.Reply, error), piece func(text string) map[string]any, tools *toolPlan) {
	opts, err := q.options()
	c, ok := s.begin(w, r, &opts, err, writeOllamaError)
	if !ok {
		return
	}
	defer s.release(c)
	model := cmp.Or(q.Model, s.ollamaName())
	line := func(text string) map[string]any {
		m := piece(text)
		m["model"], m["created_at"], m["done"] = model, s.stamp(), false
		return m
	}
	last := func(reply *assistant.Reply, text string) map[string]any {
		m := line(text)
		m["done"] = true
		m["done_reason"] = finishReason(reply)
		m["total_duration"] = (reply.PromptTime + reply.DecodeTime).Nanoseconds()
		m["load_duration"] = 0
		m["prompt_eval_count"] = reply.Prompt - reply.Reused
		m["prompt_eval_duration"] = reply.PromptTime.Nanoseconds()
		m["eval_count"] = reply.Tokens
		m["eval_duration"] = reply.DecodeTime.Nanoseconds()
		return m
	}
	if q.Stream != nil && !*q.Stream {
		reply, err := answer(r.Context(), c, opts)
		err = s.why(r, err)
		s.logReply(r, &reply, err)
		if err != nil {
			writeOllamaError(w, err)
			return
		}
		m := last(&reply, reply.Text)
		if tools != nil {
			if text, calls := tools.ollamaCalls(&reply); len(calls) > 0 {
				m = last(&reply, text)
				m["message"].(map[string]any)["tool_calls"] = calls
			}
		}
		writeJSON(w, http.StatusOK, m)
		return
	}
	nd := newLines(w, s.WriteStall)
	opts.OnText = func(text string) { nd.send(line(text)) }
	hold := tools.holdBack(opts.OnText)
	if hold != nil {
		opts.OnText = hold.write
	}
	gen, stop := s.generating(r, &opts)
	defer stop()
	reply, err := answer(gen, c, opts)
	err = s.why(r, err)
	s.logReply(r, &reply, err)
	if err != nil {
		if !nd.started {
			writeOllamaError(w, err)
			return
		}
		nd.send(map[string]string{"error": asAPIError(err).msg}) // the status line is gone
		return
	}
	if hold != nil {
		if text, calls := tools.ollamaCalls(&reply); len(calls) > 0 {
			hold.tail(text)
			m := line("")
			m["message"].(map[string]any)["tool_calls"] = calls
			nd.send(m)
		} else if rest := hold.rest(); rest != "" {
			nd.send(line(rest))
		}
	}
	nd.send(last(&reply, ""))
}
