package structured

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// The JSON texts a schema is read from and the canonical texts literals are generated as.

// orderKey is where decodeOrdered stores each object's keys in the order of the text (a Go map
// forgets it): a key no decoded JSON text can hold (it is not valid UTF-8; the decoder turns
// invalid bytes into U+FFFD), so it never collides with a keyword or a property.
const orderKey = "\xff order"

// decodeOrdered decodes the next JSON value from dec as encoding/json would into an any
// (numbers as json.Number), with each object's key order under orderKey. A key given twice is
// an error: which one a schema means would be a guess.
func decodeOrdered(dec *json.Decoder, depth int) (any, error) {
	if depth > 256 {
		return nil, fmt.Errorf("nested more than 256 deep")
	}
	t, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch t {
	case json.Delim('{'):
		m := map[string]any{}
		var order []string
		for dec.More() {
			kt, err := dec.Token()
			if err != nil {
				return nil, err
			}
			k := kt.(string)
			if _, dup := m[k]; dup {
				return nil, fmt.Errorf("key %q appears twice in an object", k)
			}
			if m[k], err = decodeOrdered(dec, depth+1); err != nil {
				return nil, err
			}
			order = append(order, k)
		}
		if _, err := dec.Token(); err != nil {
			return nil, err
		}
		m[orderKey] = order
		return m, nil
	case json.Delim('['):
		list := []any{}
		for dec.More() {
			v, err := decodeOrdered(dec, depth+1)
			if err != nil {
				return nil, err
			}
			list = append(list, v)
		}
		if _, err := dec.Token(); err != nil {
			return nil, err
		}
		return list, nil
	}
	return t, nil
}

// escapePointer escapes a name for a JSON pointer.
func escapePointer(name string) string {
	return strings.NewReplacer("~", "~0", "/", "~1").Replace(name)
}

// canonical returns v's JSON text as it is generated: compact, UTF-8 as is (no HTML escapes).
func canonical(v any) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		panic(fmt.Sprintf("structured: encoding a decoded JSON value: %v", err)) // cannot happen
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}

// literals returns a node matching exactly the canonical texts of values.
func literals(values []any, path string) (*node, error) {
	n := &node{kind: kindLiteral}
	for _, v := range values {
		n.literals = append(n.literals, canonical(stripOrder(v)))
	}
	slices.SortFunc(n.literals, bytes.Compare)
	n.literals = slices.CompactFunc(n.literals, bytes.Equal)
	return n, nil
}

// stripOrder removes the order keys decodeOrdered added, for re-encoding a value.
func stripOrder(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			if k != orderKey {
				out[k] = stripOrder(e)
			}
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = stripOrder(e)
		}
		return out
	}
	return v
}
