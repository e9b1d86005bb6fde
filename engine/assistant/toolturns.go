package assistant

import (
	"bytes"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/trochilus-llm/trochilus/tokenizer/chat"
)

// toolTurns returns turns as the template can render them. A template that requires call ids
// of a length (Mistral's nine alphanumerics, IDLen) raises on any other, and Ollama's calls and
// results carry none: each call's id is made that length (an id that is one already is kept, a
// longer one keeps its last alphanumerics, as vLLM and Mistral Small 3.1's template cut them;
// one that is missing or short is made from a hash, of the id or of the call's place), and a
// tool result's tool_call_id the same way, or, when it has none, the id of the first call of
// the turn before that no result answered yet. The ids are functions of the conversation, so
// that the same conversation renders the same prompt (and its cache is kept).
func (s ToolSyntax) toolTurns(turns []chat.Message) ([]chat.Message, error) {
	if s.IDLen == 0 {
		return turns, nil
	}
	out := slices.Clone(turns)
	var pending []string // the last turn's call ids no result has answered
	for i, m := range out {
		switch {
		case m.Role == "assistant" && m.Extra["tool_calls"] != nil:
			raw, ok := rawJSON(m.Extra["tool_calls"])
			if !ok {
				continue // not JSON text: passed as it is, for the template to judge
			}
			var calls []json.RawMessage
			if err := json.Unmarshal(raw, &calls); err != nil {
				return nil, fmt.Errorf("%w: messages[%d].tool_calls: %w", ErrBadTurn, i, err)
			}
			pending = pending[:0]
			for k, call := range calls {
				var c struct {
					ID string `json:"id"`
				}
				json.Unmarshal(call, &c)
				id := s.callID(c.ID, fmt.Sprintf("call %d.%d", i, k))
				var err error
				if calls[k], err = setKey(call, "id", id); err != nil {
					return nil, fmt.Errorf("%w: messages[%d].tool_calls[%d]: %w", ErrBadTurn, i, k, err)
				}
				pending = append(pending, id)
			}
			list, _ := json.Marshal(calls)
			out[i].Extra = maps.Clone(m.Extra)
			out[i].Extra["tool_calls"] = json.RawMessage(list)
		case m.Role == "tool":
			old, _ := m.Extra["tool_call_id"].(string)
			var id string
			switch {
			case old != "":
				id = s.callID(old, "")
			case len(pending) > 0:
				id = pending[0]
			default:
				id = s.callID("", fmt.Sprintf("result %d", i))
			}
			if j := slices.Index(pending, id); j >= 0 {
				pending = slices.Delete(pending, j, j+1)
			}
			out[i].Extra = maps.Clone(m.Extra)
			if out[i].Extra == nil {
				out[i].Extra = map[string]any{}
			}
			out[i].Extra["tool_call_id"] = id
		}
	}
	return out, nil
}

// callID makes id an id of IDLen alphanumerics; place stands for a missing id.
func (s ToolSyntax) callID(id, place string) string {
	alnum := strings.Map(func(r rune) rune {
		if r < 128 && (r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') {
			return r
		}
		return -1
	}, id)
	if len(alnum) >= s.IDLen {
		return alnum[len(alnum)-s.IDLen:]
	}
	// A short id is hashed alone, so that its call and its result agree.
	if id == "" {
		id = "\x00" + place
	}
	h := fnv.New64a()
	h.Write([]byte(id))
	out := strconv.FormatUint(h.Sum64(), 36)
	for len(out) < s.IDLen {
		out = "0" + out
	}
	return out[len(out)-s.IDLen:]
}

// rawJSON returns v as JSON text when it is that (json.RawMessage or []byte).
func rawJSON(v any) (json.RawMessage, bool) {
	switch v := v.(type) {
	case json.RawMessage:
		return v, true
	case []byte:
		return v, true
	}
	return nil, false
}

// setKey returns the JSON object obj with key set to the string value: in its place when obj
// has it, first otherwise; the other members keep their order (templates print them in it).
func setKey(obj json.RawMessage, key, value string) (json.RawMessage, error) {
	dec := json.NewDecoder(bytes.NewReader(obj))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, fmt.Errorf("want a JSON object")
	}
	v, _ := json.Marshal(value)
	k, _ := json.Marshal(key)
	var members [][]byte
	found := false
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil, err
		}
		name, _ := t.(string)
		var val json.RawMessage
		if err := dec.Decode(&val); err != nil {
			return nil, err
		}
		n, _ := json.Marshal(name)
		if name == key {
			val, found = v, true
		}
		members = append(members, append(append(n, ':'), val...))
	}
	if !found {
		members = append([][]byte{append(append(k, ':'), v...)}, members...)
	}
	return json.RawMessage("{" + string(bytes.Join(members, []byte(","))) + "}"), nil
}
