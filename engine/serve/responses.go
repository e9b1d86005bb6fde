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
// response.output_text.delta … response.completed); function tools as on chat completions
// (tools.go), their calls as function_call items; structured output by text.format. Nothing is
// stored: a request naming a previous response is refused (send the conversation as input),
// and so are reasoning settings.

// refusedResponses are the Responses fields serve knows and cannot honour.
var refusedResponses = map[string]refusal{
	"previous_response_id": {"previous responses are not kept: send the conversation as input", isOneOf()},
	"conversation":         {"conversations are not kept: send the conversation as input", isOneOf()},
	"max_tool_calls":       {"a bound on tool calls is not supported", isOneOf()},
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
	// Tools are Responses' function tools ({"type": "function", "name", "parameters"}),
	// read as chat completions' (responsesTools).
	Tools             json.RawMessage `json:"tools"`
	ToolChoice        json.RawMessage `json:"tool_choice"`
	ParallelToolCalls *bool           `json:"parallel_tool_calls"`
}

// responsesTools rewrites Responses' tools and tool_choice in chat completions' shape, which
// the templates are given and parseTools reads.
func responsesTools(tools, choice json.RawMessage) (json.RawMessage, json.RawMessage, error) {
	if !isNull(tools) {
		var list []map[string]json.RawMessage
		if err := json.Unmarshal(tools, &list); err != nil {
			return nil, nil, badParam("tools", "tools: want a list of {\"type\": \"function\", \"name\": …, \"parameters\": {…}}")
		}
		type function struct {
			Name        json.RawMessage `json:"name"`
			Description json.RawMessage `json:"description,omitempty"`
			Parameters  json.RawMessage `json:"parameters,omitempty"`
			Strict      json.RawMessage `json:"strict,omitempty"`
		}
		type tool struct {
			Type     string   `json:"type"`
			Function function `json:"function"`
		}
		out := make([]tool, len(list))
		for i, t := range list {
			var typ string
			json.Unmarshal(t["type"], &typ)
			if typ != "function" {
				return nil, nil, badParam("tools", "tools[%d].type %q: only \"function\" tools are supported (no built-in tools)", i, typ)
			}
			for k := range t {
				switch k {
				case "type", "name", "description", "parameters", "strict":
				default:
					return nil, nil, badParam("tools", "Unrecognized request argument supplied: tools[%d].%s", i, k)
				}
			}
			if isNull(t["name"]) {
				return nil, nil, badParam("tools", "tools[%d].name: want the function's name", i)
			}
			out[i] = tool{Type: "function", Function: function{Name: t["name"], Description: t["description"], Parameters: t["parameters"], Strict: t["strict"]}}
		}
		b, err := json.Marshal(out)
		if err != nil {
			return nil, nil, badParam("tools", "tools: %v", err)
		}
		tools = b
	}
	var named struct {
		Type string `json:"type"`
		Name string `json:"name"`
	}
	if !isNull(choice) && json.Unmarshal(choice, &named) == nil && named.Type == "function" {
		if named.Name == "" {
			return nil, nil, badParam("tool_choice", "tool_choice: want \"none\", \"auto\", \"required\" or {\"type\": \"function\", \"name\": …}")
		}
		b, _ := json.Marshal(map[string]any{"type": "function", "function": map[string]string{"name": named.Name}})
		choice = b
	}
	return tools, choice, nil
}

// parseResponsesInput reads the input: a text (one user message) or a list of items: messages
// {role, content} (with "type": "message" or none), content a text or a list of input_text /
// output_text parts; with tools, function_call items (the assistant's calls: consecutive ones
// one turn) and function_call_output items (a tool message each). Other items (reasoning,
// images) are refused.
func parseResponsesInput(raw json.RawMessage, tools bool) ([]chat.Message, error) {
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
	var msgs []chat.Message
	var calls []json.RawMessage // the function_call items of the assistant turn being read
	flush := func() error {
		if len(calls) == 0 {
			return nil
		}
		tc, err := templateToolCalls(json.RawMessage("[" + string(joinRaw(calls)) + "]"))
		if err != nil {
			return err
		}
		if n := len(msgs); n > 0 && msgs[n-1].Role == "assistant" && msgs[n-1].Extra["tool_calls"] == nil {
			msgs[n-1].Extra = map[string]any{"tool_calls": tc} // the calls of the message before them
		} else {
			msgs = append(msgs, chat.Message{Role: "assistant", Content: "", Extra: map[string]any{"tool_calls": tc}})
		}
		calls = nil
		return nil
	}
	for i, it := range items {
		var typ, role string
		json.Unmarshal(it["type"], &typ)
		switch {
		case tools && typ == "function_call":
			var c struct {
				CallID    string          `json:"call_id"`
				Name      string          `json:"name"`
				Arguments json.RawMessage `json:"arguments"`
			}
			if err := json.Unmarshal(mustObject(it), &c); err != nil || c.Name == "" {
				return nil, badParam("input", "input[%d]: a function_call wants call_id, name and arguments", i)
			}
			b, _ := json.Marshal(map[string]any{"id": c.CallID, "type": "function",
				"function": map[string]any{"name": c.Name, "arguments": c.Arguments}})
			calls = append(calls, b)
			continue
		case tools && typ == "function_call_output":
			if err := flush(); err != nil {
				return nil, badParam("input", "input[%d]: %v", i, err)
			}
			var o struct {
				CallID string          `json:"call_id"`
				Output json.RawMessage `json:"output"`
			}
			if err := json.Unmarshal(mustObject(it), &o); err != nil {
				return nil, badParam("input", "input[%d]: a function_call_output wants call_id and an output", i)
			}
			// The output is a text, or a list of text parts as newer clients send it.
			output, err := parseContent(o.Output, "input_text", "output_text")
			if err != nil {
				return nil, badParam("input", "input[%d].output: %v", i, err)
			}
			msgs = append(msgs, chat.Message{Role: "tool", Content: output, Extra: map[string]any{"tool_call_id": o.CallID}})
			continue
		case typ == "function_call" || typ == "function_call_output":
			return nil, badParam("input", "input[%d]: %s items need tools, and a model whose template renders them", i, typ)
		case typ != "" && typ != "message":
			return nil, badParam("input", "input[%d]: items of type %q are not supported (messages and function calls only)", i, typ)
		}
		if err := flush(); err != nil {
			return nil, badParam("input", "input[%d]: %v", i, err)
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
		msgs = append(msgs, chat.Message{Role: roles[role], Content: content})
	}
	if err := flush(); err != nil {
		return nil, badParam("input", "input: %v", err)
	}
	return msgs, nil
}

// mustObject re-encodes an item's fields as one JSON object.
func mustObject(fields map[string]json.RawMessage) []byte {
	b, _ := json.Marshal(fields)
	return b
}

// joinRaw joins JSON values with commas.
func joinRaw(list []json.RawMessage) []byte {
	var b []byte
	for i, v := range list {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, v...)
	}
	return b
}

func (s *Server) responses(w http.ResponseWriter, r *http.Request) {
	var req responsesRequest
	obj, err := readObject(w, r)
	if err == nil {
		err = decodeFields(obj, &req, fieldRules{refused: []map[string]refusal{refusedResponses}, accepted: accepted})
	}
	syntax, canCall := s.chat.ToolSyntax()
	var plan toolPlan
	tools, choice := req.Tools, req.ToolChoice
	if err == nil {
		tools, choice, err = responsesTools(req.Tools, req.ToolChoice)
	}
	if err == nil {
		plan, err = parseTools(tools, choice, req.ParallelToolCalls, syntax, canCall, functionName)
	}
	var turns []chat.Message
	if err == nil {
		turns, err = parseResponsesInput(req.Input, canCall && plan.tools != nil)
	}
	if err == nil && req.Instructions != nil && *req.Instructions != "" {
		turns = append([]chat.Message{{Role: "system", Content: *req.Instructions}}, turns...)
	}
	if err == nil {
		err = s.promptBound("input", contentBytes(turns))
	}
	if err == nil {
		err = s.countPrompt("input", turns, &plan)
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
	if err == nil && plan.forced != nil && opts.Format != nil {
		err = badParam("text", "text.format: a forced tool call (tool_choice) is the answer's format already")
	}
	plan.apply(&opts)
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
	// The answer's output items: its text as a message (none when the answer is only calls),
	// then a function_call item per call.
	var readText string
	var readCalls []map[string]any // read once: each call's id stays the same in every event
	read := func(reply *assistant.Reply) (string, []map[string]any) {
		if readCalls == nil {
			readText, readCalls = plan.calls(reply)
			if readCalls == nil {
				readCalls = []map[string]any{}
			}
		}
		return readText, readCalls
	}
	items := func(reply *assistant.Reply) []any {
		text, calls := read(reply)
		out := []any{}
		if text != "" || len(calls) == 0 {
			out = append(out, outputMessage(msgID, itemStatus(reply), text))
		}
		for _, c := range calls {
			out = append(out, functionCall(c, "completed"))
		}
		return out
	}
	parallel := req.ParallelToolCalls == nil || *req.ParallelToolCalls
	var toolsEcho any = []any{}
	if !isNull(req.Tools) {
		toolsEcho = req.Tools
	}
	var choiceEcho any = "auto" // the default, as OpenAI echoes it with or without tools
	if !isNull(req.ToolChoice) {
		choiceEcho = req.ToolChoice
	}
	response := func(status string, reply *assistant.Reply) map[string]any {
		out := []any{}
		if reply != nil {
			out = items(reply)
		}
		resp := map[string]any{"id": id, "object": "response", "created_at": created, "status": status,
			"model": s.name, "output": out, "error": nil, "incomplete_details": nil,
			"instructions": req.Instructions, "max_output_tokens": req.MaxOutputTokens,
			"temperature": req.Temperature, "top_p": req.TopP, "parallel_tool_calls": parallel,
			"tool_choice": choiceEcho, "tools": toolsEcho, "text": textFormat,
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
		writeJSON(w, http.StatusOK, response("completed", &reply))
		return
	}

	ev := newEvents(w, s.WriteStall)
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
	opened, messaged := false, false
	open := func() {
		if opened {
			return
		}
		opened = true
		send("response.created", map[string]any{"response": response("in_progress", nil)})
		send("response.in_progress", map[string]any{"response": response("in_progress", nil)})
	}
	// The message item opens with the answer's first text (an answer of calls alone has none).
	message := func() {
		open()
		if messaged {
			return
		}
		messaged = true
		item := outputMessage(msgID, "in_progress", "")
		item["content"] = []any{}
		send("response.output_item.added", map[string]any{"output_index": 0, "item": item})
		send("response.content_part.added", where(map[string]any{"part": outputText("")}))
	}
	opts.OnText = func(text string) {
		message()
		send("response.output_text.delta", where(map[string]any{"delta": text, "logprobs": []any{}}))
	}
	hold := plan.holdBack(opts.OnText)
	if hold != nil {
		opts.OnText = hold.write
	}
	gen, stop := s.generating(r, &opts)
	defer stop()
	reply, err := chat.Reply(gen, turns, opts)
	err = s.why(r, err)
	s.logReply(r, &reply, err)
	if err != nil && !opened {
		writeError(w, err)
		return
	}
	open()
	if err != nil {
		e := asAPIError(err)
		failed := response("failed", nil)
		failed["error"] = map[string]string{"code": cmp.Or(e.code, "server_error"), "message": e.msg}
		send("response.failed", map[string]any{"response": failed})
		return
	}
	text, calls := read(&reply)
	if hold != nil && len(calls) == 0 {
		if rest := hold.rest(); rest != "" {
			opts.OnText(rest)
		}
	} else if hold != nil {
		hold.tail(text) // text after the calls, as the message's text has it
	}
	if text != "" || len(calls) == 0 {
		message()
		send("response.output_text.done", where(map[string]any{"text": text, "logprobs": []any{}}))
		send("response.content_part.done", where(map[string]any{"part": outputText(text)}))
		send("response.output_item.done", map[string]any{"output_index": 0, "item": outputMessage(msgID, itemStatus(&reply), text)})
	}
	for i, c := range calls {
		at := i
		if messaged {
			at++
		}
		item := functionCall(c, "in_progress")
		args := item["arguments"]
		item["arguments"] = ""
		send("response.output_item.added", map[string]any{"output_index": at, "item": item})
		send("response.function_call_arguments.delta", map[string]any{"item_id": item["id"], "output_index": at, "delta": args})
		send("response.function_call_arguments.done", map[string]any{"item_id": item["id"], "output_index": at, "name": item["name"], "arguments": args})
		item["arguments"], item["status"] = args, "completed"
		send("response.output_item.done", map[string]any{"output_index": at, "item": item})
	}
	final := response("completed", &reply)
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

// functionCall is a call as a Responses output item, from the call chat completions would
// report (toolPlan.calls): its id (call_…) the call_id, a function_call item id of its own.
func functionCall(c map[string]any, status string) map[string]any {
	fn := c["function"].(map[string]any)
	callID := c["id"].(string)
	return map[string]any{"type": "function_call", "id": "fc_" + strings.TrimPrefix(callID, "call_"), "call_id": callID,
		"name": fn["name"], "arguments": fn["arguments"], "status": status}
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
