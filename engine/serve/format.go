package serve

import (
	"bytes"
	"encoding/json"

	"github.com/trochilus-llm/trochilus/engine/structured"
)

// Structured output, as each API asks for it. The answer is then a JSON document by
// constrained decoding (engine/structured): the tokens that cannot continue it are masked
// before each choice, which stays the same on every machine. The prompt is not changed: as
// OpenAI's documentation advises, the request's messages should ask for JSON themselves.

// formatFields are the Responses API's text.format: a type and, for json_schema, the schema
// with its name, description and strictness (chat completions nest the same fields under
// response_format.json_schema).
type formatFields struct {
	Type        string          `json:"type"`
	Name        *string         `json:"name"`
	Description *string         `json:"description"`
	Schema      json.RawMessage `json:"schema"`
	Strict      *bool           `json:"strict"`
}

// parseResponseFormat reads chat completions' response_format: null or {"type":"text"} (plain
// text: nil), {"type":"json_object"}, or {"type":"json_schema","json_schema":{"name":…,
// "schema":{…},"strict":…}}.
func parseResponseFormat(raw json.RawMessage) (*structured.Format, error) {
	if isNull(raw) {
		return nil, nil
	}
	var rf struct {
		Type       string          `json:"type"`
		JSONSchema json.RawMessage `json:"json_schema"`
	}
	if err := decodeNested(raw, &rf, "response_format"); err != nil {
		return nil, err
	}
	var f struct {
		Name        *string         `json:"name"`
		Description *string         `json:"description"`
		Schema      json.RawMessage `json:"schema"`
		Strict      *bool           `json:"strict"`
	}
	if rf.Type == "json_schema" {
		if isNull(rf.JSONSchema) {
			return nil, badParam("response_format", "response_format: json_schema needs \"json_schema\": {\"name\": …, \"schema\": {…}}")
		}
		if err := decodeNested(rf.JSONSchema, &f, "response_format.json_schema"); err != nil {
			return nil, err
		}
	}
	return compileFormat(rf.Type, f.Schema, "response_format")
}

// parseTextFormat reads responses' text setting: {"format":{"type":"text"|"json_object"|
// "json_schema", "name", "schema", "strict"}}; verbosity is refused.
func parseTextFormat(raw json.RawMessage) (*structured.Format, error) {
	if isNull(raw) {
		return nil, nil
	}
	var t struct {
		Format    json.RawMessage `json:"format"`
		Verbosity json.RawMessage `json:"verbosity"`
	}
	if err := decodeNested(raw, &t, "text"); err != nil {
		return nil, err
	}
	if !isNull(t.Verbosity) {
		return nil, badParam("text", "text.verbosity: verbosity is not supported")
	}
	if isNull(t.Format) {
		return nil, nil
	}
	var f formatFields
	if err := decodeNested(t.Format, &f, "text.format"); err != nil {
		return nil, err
	}
	return compileFormat(f.Type, f.Schema, "text.format")
}

// parseOllamaFormat reads Ollama's format: "" (plain text), "json" (a JSON object), or a JSON
// Schema object.
func parseOllamaFormat(raw json.RawMessage) (*structured.Format, error) {
	if isNull(raw) {
		return nil, nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		switch s {
		case "":
			return nil, nil
		case "json":
			return structured.JSONObject(), nil
		}
		return nil, badParam("format", "format %q: want \"json\" or a JSON Schema object", s)
	}
	return compileFormat("json_schema", raw, "format")
}

// compileFormat turns a format's fields into the answer's format; param names the field in
// errors.
func compileFormat(kind string, schema json.RawMessage, param string) (*structured.Format, error) {
	switch kind {
	case "text":
		return nil, nil
	case "json_object":
		return structured.JSONObject(), nil
	case "json_schema":
		if isNull(schema) {
			return nil, badParam(param, "%s: json_schema needs a schema", param)
		}
		format, err := structured.CompileSchema(schema)
		if err != nil {
			e := badParam(param, "%s: %v", param, err)
			e.code = "unsupported_parameter"
			return nil, e
		}
		return format, nil
	}
	return nil, badParam(param, "%s: type %q: want \"text\", \"json_object\" or \"json_schema\"", param, kind)
}

// isNull reports whether raw is absent or JSON null.
func isNull(raw json.RawMessage) bool {
	return len(bytes.TrimSpace(raw)) == 0 || string(bytes.TrimSpace(raw)) == "null"
}

// decodeNested decodes the object raw, the request's field param, into v field by field as
// decodeFields does (errors name param.field; an unknown field is a 400).
func decodeNested(raw json.RawMessage, v any, param string) error {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(raw, &obj); err != nil || obj == nil {
		return badParam(param, "%s: want an object", param)
	}
	return decodeFields(obj, v, fieldRules{in: param + "."})
}
