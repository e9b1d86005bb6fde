package serve

import (
	"cmp"
	"encoding/json"
	"net/http"
	"strings"

	"github.com/trochilus-llm/trochilus/engine/assistant"
	"github.com/trochilus-llm/trochilus/tokenizer/chat"
)

// OpenAI's Responses API (POST /v1/responses), the one its newer clients and agents call: the
// input as a text or a list of messages, instructions as a system message first, the answer as
// one output message of output_text, streamed as Responses events (response.created …
// response.output_text.delta … response.completed). Nothing is stored: a request naming a
// previous response is refused (send the conversation as input), and so are tools, structured
// output and reasoning settings, as on /v1/chat/completions.

// refusedResponses are the Responses fields serve knows and cannot honour.
var refusedResponses = map[string]refusal{
	"previous_response_id": {"previous responses are not kept: send the conversation as input", isOneOf()},
	"conversation":         {"conversations are not kept: send the conversation as input", isOneOf()},
	"tools":                {"tools are not supported yet", isOneOf("[]")},
	"tool_choice":          {"tools are not supported yet; only \"none\" or \"auto\"", isOneOf(`"none"`, `"auto"`)},
	"parallel_tool_calls":  {"tools are not supported yet", isOneOf("false", "true")},
	"max_tool_calls":       {"tools are not supported yet", isOneOf()},
	"reasoning":            {"reasoning settings are not supported", isOneOf("{}")},
	"include":              {"extra output (include) is not supported", isOneOf("[]")},
	"truncation":           {"truncation is not supported: want \"disabled\"", isOneOf(`"disabled"`)},
	"background":           {"background responses are not supported", isOneOf("false")},
	"top_logprobs":         {"log probabilities are not supported", isNumber(0)},
	"prompt":               {"prompt templates are not supported", isOneOf()},
}

type responsesRequest struct {
	Model           string          `json:"model"`
	Input           json.RawMessage `json:"input"`
	Instructions    *string         `json:"instructions"`
	MaxOutputTokens *int            `json:"max_output_tokens"`
	Temperature     *float64        `json:"temperature"`
	TopP            *float64        `json:"top_p"`
	TopK            *int            `json:"top_k"` // as on chat completions, an extension
	Seed            *int64          `json:"seed"`  // likewise
	Stream          bool            `json:"stream"`
	Metadata        map[string]any  `json:"metadata"`
	Text            json.RawMessage `json:"text"` // the output's format (parseTextFormat)
}

// parseResponsesInput reads the input: a text (one user message) or a list of messages, each
// {role, content} (with "type": "message" or none), content a text or a list of input_text /
// output_text parts. Other items (function calls and their outputs, reasoning, images) are
// refused.
func parseResponsesInput(raw json.RawMessage) ([]chat.Message, error) {
	var text string
	if json.Unmarshal(raw, &text) == nil {
		if text == "" {
			return nil, badParam("input", "input: want a non-empty text or a list of messages")
		}
		return []chat.Message{{Role: "user", Content: text}}, nil
	}
	var items []map[string]json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil || len(items) == 0 {
		return nil, badParam("input", "input: want a text or a non-empty list of messages")
	}
	msgs := make([]chat.Message, len(items))
	for i, it := range items {
		var typ, role string
		json.Unmarshal(it["type"], &typ)
		if typ != "" && typ != "message" {
			return nil, badParam("input", "input[%d]: items of type %q are not supported (messages only; no tools)", i, typ)
		}
		if json.Unmarshal(it["role"], &role) != nil || roles[role] == "" {
			return nil, badParam("input", "input[%d].role: want user, assistant, system or developer", i)
		}
		content, err := parseContent(it["content"], "input_text", "output_text")
		if err != nil {
			return nil, badParam("input", "input[%d].content: %v", i, err)
		}
		for k, v := range it {
			if k != "type" && k != "role" && k != "content" && k != "id" && k != "status" && !isOneOf()(v) {
				return nil, badParam("input", "input[%d].%s is not supported", i, k)
			}
		}
		msgs[i] = chat.Message{Role: roles[role], Content: content}
	}
	return msgs, nil
}

func (s *Server) responses(w http.ResponseWriter, r *http.Request) {
	var req responsesRequest
	obj, err := readObject(w, r)
	if err == nil {
		err = decodeFields(obj, &req, fieldRules{refused: []map[string]refusal{refusedResponses}, accepted: accepted})
	}
	var turns []chat.Message
	if err == nil {
		turns, err = parseResponsesInput(req.Input)
	}
	if err == nil && req.Instructions != nil && *req.Instructions != "" {
		turns = append([]chat.Message{{Role: "system", Content: *req.Instructions}}, turns...)
	}
	if err == nil {
		err = s.promptBound("input", contentBytes(turns))
	}
	var opts assistant.Options
	if err == nil {
		common := options{Temperature: req.Temperature, TopP: req.TopP, TopK: req.TopK, Seed: req.Seed, MaxTokens: req.MaxOutputTokens}
		opts, err = common.check()
		if e, ok := err.(*apiError); ok && e.param == "max_tokens" {
			e.param, e.msg = "max_output_tokens", strings.Replace(e.msg, "max_tokens", "max_output_tokens", 1)
		}
	}
	if err == nil {
		opts.Format, err = parseTextFormat(req.Text)
	}
	// The response repeats the format asked for.
	var textFormat any = map[string]any{"format": map[string]string{"type": "text"}}
	if !isNull(req.Text) {
		textFormat = req.Text
	}
	chat, ok := s.begin(w, r, &opts, err, writeError)
	if !ok {
		return
	}
	defer s.release(chat)

	id, msgID, created := newID("resp_"), newID("msg_"), s.now().Unix()
	response := func(status string, text *string, reply *assistant.Reply) map[string]any {
		out := []any{}
		if text != nil {
			out = append(out, outputMessage(msgID, itemStatus(reply), *text))
		}
		resp := map[string]any{"id": id, "object": "response", "created_at": created, "status": status,
			"model": s.name, "output": out, "error": nil, "incomplete_details": nil,
			"instructions": req.Instructions, "max_output_tokens": req.MaxOutputTokens,
			"temperature": req.Temperature, "top_p": req.TopP, "parallel_tool_calls": false,
			"tool_choice": "none", "tools": []any{}, "text": textFormat,
			"truncation": "disabled", "store": false, "metadata": cmpMetadata(req.Metadata), "usage": nil}
		if opts.Sampling != nil {
			resp["seed"] = int64(opts.Sampling.Seed)
		}
		if reply != nil {
			resp["usage"] = map[string]any{"input_tokens": reply.Prompt,
				"input_tokens_details":  map[string]int{"cached_tokens": reply.Reused},
				"output_tokens":         reply.Tokens,
				"output_tokens_details": map[string]int{"reasoning_tokens": 0},
				"total_tokens":          reply.Prompt + reply.Tokens}
			if !reply.Finished() {
				resp["status"] = "incomplete"
				resp["incomplete_details"] = map[string]string{"reason": "max_output_tokens"}
			}
		}
		return resp
	}

	if !req.Stream {
		reply, err := chat.Reply(r.Context(), turns, opts)
		err = s.why(r, err)
		s.logReply(r, &reply, err)
		if err != nil {
			writeError(w, err)
			return
		}
		writeJSON(w, http.StatusOK, response("completed", &reply.Text, &reply))
		return
	}

	ev := newEvents(w)
	seq := 0
	send := func(typ string, fields map[string]any) {
		fields["type"], fields["sequence_number"] = typ, seq
		seq++
		ev.sendNamed(typ, fields)
	}
	where := func(m map[string]any) map[string]any {
		m["item_id"], m["output_index"], m["content_index"] = msgID, 0, 0
		return m
	}
	// The opening events wait for the answer's first piece (or its end), so that a request
	// that fails before any text (a prompt the context cannot hold) gets its HTTP status.
	opened := false
	open := func() {
		if opened {
			return
		}
		opened = true
		send("response.created", map[string]any{"response": response("in_progress", nil, nil)})
		send("response.in_progress", map[string]any{"response": response("in_progress", nil, nil)})
		item := outputMessage(msgID, "in_progress", "")
		item["content"] = []any{}
		send("response.output_item.added", map[string]any{"output_index": 0, "item": item})
		send("response.content_part.added", where(map[string]any{"part": outputText("")}))
	}
	opts.OnText = func(text string) {
		open()
		send("response.output_text.delta", where(map[string]any{"delta": text, "logprobs": []any{}}))
	}
	reply, err := chat.Reply(r.Context(), turns, opts)
	err = s.why(r, err)
	s.logReply(r, &reply, err)
	if err != nil && !opened {
		writeError(w, err)
		return
	}
	open()
	if err != nil {
		e := asAPIError(err)
		failed := response("failed", nil, nil)
		failed["error"] = map[string]string{"code": cmp.Or(e.code, "server_error"), "message": e.msg}
		send("response.failed", map[string]any{"response": failed})
		return
	}
	send("response.output_text.done", where(map[string]any{"text": reply.Text, "logprobs": []any{}}))
	send("response.content_part.done", where(map[string]any{"part": outputText(reply.Text)}))
	send("response.output_item.done", map[string]any{"output_index": 0, "item": outputMessage(msgID, itemStatus(&reply), reply.Text)})
	final := response("completed", &reply.Text, &reply)
	done := "response.completed"
	if final["status"] == "incomplete" {
		done = "response.incomplete"
	}
	send(done, map[string]any{"response": final})
}

// itemStatus is the output message's status: incomplete when the token limit cut the answer.
func itemStatus(reply *assistant.Reply) string {
	if reply != nil && !reply.Finished() {
		return "incomplete"
	}
	return "completed"
}

// outputMessage is the answer as a Responses output item.
func outputMessage(id, status, text string) map[string]any {
	return map[string]any{"type": "message", "id": id, "status": status, "role": "assistant",
		"content": []any{outputText(text)}}
}

func outputText(text string) map[string]any {
	return map[string]any{"type": "output_text", "text": text, "annotations": []any{}, "logprobs": []any{}}
}

func cmpMetadata(m map[string]any) map[string]any {
	if m == nil {
		return map[string]any{}
	}
	return m
}
