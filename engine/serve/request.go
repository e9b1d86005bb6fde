package serve

import (
	"bytes"
	"encoding/json"
	"errors"
	"maps"
	"net/http"
	"reflect"
	"slices"
	"strings"

	"github.com/trochilus-llm/trochilus/engine/assistant"
	"github.com/trochilus-llm/trochilus/tokenizer/chat"
)

// A refusal is a field serve knows and cannot honour yet: allows reports whether its value
// asks for nothing (null, or what the field means by default), which is honoured trivially.
type refusal struct {
	why    string
	allows func(raw json.RawMessage) bool
}

// refused are the fields of both endpoints serve cannot honour: anything but the value that
// asks for nothing is a 400 naming the field.
var refused = map[string]refusal{
	"functions":          {"functions are OpenAI's deprecated form of tools: send tools instead", isOneOf("[]")},
	"function_call":      {"function_call is OpenAI's deprecated form of tool_choice: send tools and tool_choice instead; only \"none\"", isOneOf(`"none"`)},
	"n":                  {"one choice per request: want n 1", isNumber(1)},
	"presence_penalty":   {"presence and frequency penalties are not supported", isNumber(0)},
	"frequency_penalty":  {"presence and frequency penalties are not supported", isNumber(0)},
	"modalities":         {"only text is supported: want [\"text\"]", isOneOf(`["text"]`)},
	"audio":              {"audio output is not supported", isOneOf()},
	"prediction":         {"predicted outputs are not supported", isOneOf()},
	"web_search_options": {"web search is not supported", isOneOf()},
	"reasoning_effort":   {"reasoning effort is not supported", isOneOf()},
	"verbosity":          {"verbosity is not supported", isOneOf()},
}

// refusedText are the fields of /v1/completions alone that serve cannot honour.
var refusedText = map[string]refusal{
	"tools":               {"tools are for /v1/chat/completions", isOneOf("[]")},
	"tool_choice":         {"tools are for /v1/chat/completions; only \"none\"", isOneOf(`"none"`)},
	"parallel_tool_calls": {"tools are for /v1/chat/completions", isOneOf("false", "true")},
	"echo":                {"echo is not supported", isOneOf("false")},
	"suffix":              {"suffix (insertion) is not supported", isOneOf(`""`)},
	"best_of":             {"one choice per request: want best_of 1", isNumber(1)},
}

// accepted are fields that are harmless no-ops for one local model, accepted so that clients
// sending them work:
//   - user, safety_identifier: identify the end user to OpenAI's abuse monitoring; nothing
//     monitors here;
//   - store, metadata: keep the completion (with tags) on OpenAI's side for its dashboard;
//     nothing is kept here, whatever the request says;
//   - service_tier: a billing and latency tier; one local model has one;
//   - prompt_cache_key: groups requests for OpenAI's prompt cache; the cache of what a
//     prompt repeats of the previous one is kept here anyway.
//
// The request's model is accepted whatever it names (one model is served; GET /v1/models
// tells its id).
var accepted = map[string]bool{"user": true, "safety_identifier": true, "store": true, "metadata": true,
	"service_tier": true, "prompt_cache_key": true}

// isOneOf returns a check that a value is null or one of texts (compact JSON).
func isOneOf(texts ...string) func(json.RawMessage) bool {
	return func(raw json.RawMessage) bool {
		var b bytes.Buffer
		if json.Compact(&b, raw) != nil {
			return false
		}
		return b.String() == "null" || slices.Contains(texts, b.String())
	}
}

// isNumber returns a check that a value is null or the number x.
func isNumber(x float64) func(json.RawMessage) bool {
	return func(raw json.RawMessage) bool {
		var v *float64
		return json.Unmarshal(raw, &v) == nil && (v == nil || *v == x)
	}
}

// decodeRequest reads a JSON request body of the OpenAI API into v, a pointer to a struct
// whose json tags (embedded structs' included) name the fields honoured: readObject, then
// decodeFields with the fields refused by both endpoints and refusedHere, and those accepted.
func decodeRequest(w http.ResponseWriter, r *http.Request, v any, refusedHere map[string]refusal) error {
	obj, err := readObject(w, r)
	if err != nil {
		return err
	}
	return decodeFields(obj, v, fieldRules{refused: []map[string]refusal{refused, refusedHere}, accepted: accepted})
}

// readObject reads a request body that must be one JSON object.
func readObject(w http.ResponseWriter, r *http.Request) (map[string]json.RawMessage, error) {
	body, err := readBody(w, r)
	if err != nil {
		return nil, err
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(body, &obj); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return nil, badRequest("request body: want a JSON object")
		}
		return nil, badRequest("request body: invalid JSON: %v", err)
	}
	if obj == nil {
		return nil, badRequest("request body: want a JSON object, got null")
	}
	return obj, nil
}

// fieldRules are what decodeFields does with a field that v has no place for: refused (a 400
// unless its value asks for nothing), accepted (a harmless no-op), else unknown (a 400). In
// names the object the fields are in, for errors ("options." names options.temperature).
type fieldRules struct {
	refused  []map[string]refusal
	accepted map[string]bool
	in       string
}

// decodeFields decodes the fields of obj into v field by field, so that an error names the
// field and says what it wants in JSON's words (never Go's types); a refused field asking for
// something, or one not known at all, is a 400 (as OpenAI answers an unknown one:
// "Unrecognized request argument supplied").
func decodeFields(obj map[string]json.RawMessage, v any, rules fieldRules) error {
	fields := map[string]reflect.Value{}
	collectFields(reflect.ValueOf(v).Elem(), fields)
	var unknown []string
	for _, name := range slices.Sorted(maps.Keys(obj)) { // the same request, the same error
		raw := obj[name]
		if f, ok := fields[name]; ok {
			if err := json.Unmarshal(raw, f.Addr().Interface()); err != nil {
				return fieldError(rules.in+name, err)
			}
			continue
		}
		var ref refusal
		var isRefused bool
		for _, m := range rules.refused {
			if ref, isRefused = m[name]; isRefused {
				break
			}
		}
		switch {
		case isRefused && !ref.allows(raw):
			e := badParam(rules.in+name, "%s%s: %s", rules.in, name, ref.why)
			e.code = "unsupported_parameter"
			return e
		case !isRefused && !rules.accepted[name]:
			unknown = append(unknown, rules.in+name)
		}
	}
	switch len(unknown) {
	case 0:
		return nil
	case 1:
		return badParam(unknown[0], "Unrecognized request argument supplied: %s", unknown[0])
	}
	return badRequest("Unrecognized request arguments supplied: %s", strings.Join(unknown, ", "))
}

// collectFields maps the json names of a struct's fields, those of embedded structs
// included, to the fields.
func collectFields(v reflect.Value, into map[string]reflect.Value) {
	t := v.Type()
	for i := range t.NumField() {
		f := t.Field(i)
		if f.Anonymous && f.Type.Kind() == reflect.Struct {
			collectFields(v.Field(i), into)
			continue
		}
		if name, _, _ := strings.Cut(f.Tag.Get("json"), ","); name != "" && name != "-" {
			into[name] = v.Field(i)
		}
	}
}

// fieldError says what was wrong with a field's value, in JSON's words.
func fieldError(name string, err error) error {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		where := name
		if te.Field != "" {
			where += "." + te.Field
		}
		return badParam(name, "%s: want %s, got %s", where, describe(te.Type), te.Value)
	}
	return badParam(name, "%s: %v", name, err)
}

// describe names the JSON values that a Go type takes.
func describe(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Bool:
		return "true or false"
	case reflect.Int64:
		return "an integer from -9223372036854775808 to 9223372036854775807"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32:
		return "an integer"
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "a non-negative integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.String:
		return "a string"
	case reflect.Slice, reflect.Array:
		if t.Elem().Kind() == reflect.Uint8 && t.Name() == "RawMessage" {
			return "a JSON value"
		}
		return "a list"
	case reflect.Map, reflect.Struct:
		return "an object"
	}
	return "a JSON value"
}

// promptBound refuses, before any tokenizing, a prompt of n bytes that cannot fit the
// context: every token's text is at most tokenBytes bytes, and normalization (NFC) leaves at
// least one byte of every character of at most four, so n bytes are at least
// n / (4·tokenBytes) tokens. A prompt that passes is tokenized and checked exactly.
func (s *Server) promptBound(param string, n int) error {
	ctx := s.chat.Context()
	if least := n / (4 * s.tokenBytes); least >= ctx {
		e := badParam(param, "the prompt is %d bytes, at least %d tokens, and the context holds %d", n, least, ctx)
		e.code = "context_length_exceeded"
		return e
	}
	return nil
}

// countPrompt refuses, before the request waits for a chat, turns whose prompt (with the
// plan's tools, when there is one) the context cannot hold: rendering and tokenizing them costs
// no chat's time, whereas finding out after taking one would hold it from the requests waiting.
func (s *Server) countPrompt(param string, turns []chat.Message, plan *toolPlan) error {
	var opts assistant.Options
	if plan != nil {
		plan.apply(&opts)
	}
	n, err := s.chat.Count(turns, opts)
	if err != nil {
		return err
	}
	return s.promptFits(param, n)
}

// promptFits refuses a prompt of n tokens that leaves the context no room for an answer, as
// the chat would once it had the request (assistant's "the prompt takes ... tokens").
func (s *Server) promptFits(param string, n int) error {
	if ctx := s.chat.Context(); n >= ctx {
		e := badParam(param, "the prompt takes %d tokens and the context holds %d", n, ctx)
		e.code = "context_length_exceeded"
		return e
	}
	return nil
}
