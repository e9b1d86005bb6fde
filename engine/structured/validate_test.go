package structured

import (
	"fmt"
	"math"
	"reflect"
	"slices"
	"strings"
	"unicode/utf8"
)

// validate checks a decoded JSON value against a decoded schema by JSON Schema's rules for
// the keywords the package supports: an independent reading of the specification, written
// apart from the compiler, so that the generated documents are checked by other code than
// generated them.
func validate(root, schema, v any) error {
	switch s := schema.(type) {
	case bool:
		if !s {
			return fmt.Errorf("false schema")
		}
		return nil
	case map[string]any:
		return validateObject(root, s, v)
	}
	return fmt.Errorf("schema %v is neither an object nor a boolean", schema)
}

func validateObject(root any, s map[string]any, v any) error {
	if ref, ok := s["$ref"].(string); ok {
		target := root
		for _, part := range strings.Split(strings.TrimPrefix(ref, "#"), "/")[1:] {
			target = target.(map[string]any)[part]
		}
		return validate(root, target, v)
	}
	if all, ok := s["allOf"].([]any); ok {
		for _, a := range all {
			if err := validate(root, a, v); err != nil {
				return err
			}
		}
	}
	if c, ok := s["const"]; ok && !reflect.DeepEqual(c, v) {
		return fmt.Errorf("%v is not the const %v", v, c)
	}
	if e, ok := s["enum"].([]any); ok && !slices.ContainsFunc(e, func(x any) bool { return reflect.DeepEqual(x, v) }) {
		return fmt.Errorf("%v is not in the enum %v", v, e)
	}
	for _, k := range []string{"anyOf", "oneOf"} {
		alts, ok := s[k].([]any)
		if !ok {
			continue
		}
		matched := 0
		for _, a := range alts {
			if validate(root, a, v) == nil {
				matched++
			}
		}
		if matched == 0 || k == "oneOf" && matched > 1 {
			return fmt.Errorf("%v matches %d of %s", v, matched, k)
		}
	}
	if t, ok := s["type"]; ok {
		var types []any
		switch tt := t.(type) {
		case string:
			types = []any{tt}
		case []any:
			types = tt
		}
		if n, _ := s["nullable"].(bool); n {
			types = append(types, "null")
		}
		if !slices.ContainsFunc(types, func(x any) bool { return isType(x.(string), v) }) {
			return fmt.Errorf("%v is none of the types %v", v, types)
		}
	}
	switch x := v.(type) {
	case map[string]any:
		props, _ := s["properties"].(map[string]any)
		for k, e := range x {
			if ps, ok := props[k]; ok {
				if err := validate(root, ps, e); err != nil {
					return fmt.Errorf("property %q: %w", k, err)
				}
			} else if ap, ok := s["additionalProperties"]; ok {
				if err := validate(root, ap, e); err != nil {
					return fmt.Errorf("additional property %q: %w", k, err)
				}
			}
		}
		if req, ok := s["required"].([]any); ok {
			for _, r := range req {
				if _, ok := x[r.(string)]; !ok {
					return fmt.Errorf("required %q is missing", r)
				}
			}
		}
	case []any:
		if items, ok := s["items"]; ok {
			for i, e := range x {
				if err := validate(root, items, e); err != nil {
					return fmt.Errorf("item %d: %w", i, err)
				}
			}
		}
		if n, ok := s["minItems"].(float64); ok && float64(len(x)) < n {
			return fmt.Errorf("%d items, fewer than %v", len(x), n)
		}
		if n, ok := s["maxItems"].(float64); ok && float64(len(x)) > n {
			return fmt.Errorf("%d items, more than %v", len(x), n)
		}
	case float64:
		if n, ok := s["minimum"].(float64); ok && x < n {
			return fmt.Errorf("%v is below the minimum %v", x, n)
		}
		if n, ok := s["maximum"].(float64); ok && x > n {
			return fmt.Errorf("%v is above the maximum %v", x, n)
		}
		if n, ok := s["exclusiveMinimum"].(float64); ok && x <= n {
			return fmt.Errorf("%v is not above the exclusive minimum %v", x, n)
		}
	case string:
		chars := float64(utf8.RuneCountInString(x))
		if n, ok := s["minLength"].(float64); ok && chars < n {
			return fmt.Errorf("%q is shorter than %v", x, n)
		}
		if n, ok := s["maxLength"].(float64); ok && chars > n {
			return fmt.Errorf("%q is longer than %v", x, n)
		}
	}
	return nil
}

func isType(t string, v any) bool {
	switch t {
	case "null":
		return v == nil
	case "boolean":
		_, ok := v.(bool)
		return ok
	case "number":
		_, ok := v.(float64)
		return ok
	case "integer":
		f, ok := v.(float64)
		return ok && f == math.Trunc(f)
	case "string":
		_, ok := v.(string)
		return ok
	case "array":
		_, ok := v.([]any)
		return ok
	case "object":
		_, ok := v.(map[string]any)
		return ok
	}
	return false
}
