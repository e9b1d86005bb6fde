package jinja

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// ParseJSON decodes a JSON document into template values as Python's json.loads does: objects
// become *Dict in document order, integers int64, numbers with a fraction or exponent float64.
func ParseJSON(data []byte) (Value, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	v, err := decodeJSON(dec, 0)
	if err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("jinja: json: extra data after the top-level value")
	}
	return v, nil
}

func decodeJSON(dec *json.Decoder, depth int) (Value, error) {
	if depth > maxDepth {
		return nil, fmt.Errorf("jinja: json: nesting deeper than %d", maxDepth)
	}
	tok, err := dec.Token()
	if err != nil {
		return nil, fmt.Errorf("jinja: json: %w", err)
	}
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '[':
			list := []Value{}
			for dec.More() {
				v, err := decodeJSON(dec, depth+1)
				if err != nil {
					return nil, err
				}
				list = append(list, v)
			}
			if _, err := dec.Token(); err != nil {
				return nil, fmt.Errorf("jinja: json: %w", err)
			}
			return list, nil
		case '{':
			d := NewDict()
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return nil, fmt.Errorf("jinja: json: %w", err)
				}
				k, ok := kt.(string)
				if !ok {
					return nil, fmt.Errorf("jinja: json: object key %v is not a string", kt)
				}
				v, err := decodeJSON(dec, depth+1)
				if err != nil {
					return nil, err
				}
				d.SetString(k, v)
			}
			if _, err := dec.Token(); err != nil {
				return nil, fmt.Errorf("jinja: json: %w", err)
			}
			return d, nil
		}
		return nil, fmt.Errorf("jinja: json: unexpected %v", t)
	case json.Number:
		s := string(t)
		if strings.ContainsAny(s, ".eE") {
			f, err := strconv.ParseFloat(s, 64)
			if err != nil {
				if ne, ok := err.(*strconv.NumError); !ok || ne.Err != strconv.ErrRange {
					return nil, fmt.Errorf("jinja: json: number %s: %w", s, err)
				}
			}
			return f, nil
		}
		i, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("jinja: json: integer %s does not fit in 64 bits", s)
		}
		return i, nil
	case string, bool, nil:
		return t, nil
	}
	return nil, fmt.Errorf("jinja: json: unexpected token %v", tok)
}
