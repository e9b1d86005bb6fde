// Package structured makes a model's answer a JSON document: any JSON object, or one that a
// JSON Schema describes. Before each token is chosen, the tokens whose bytes cannot continue
// the document are masked (their logits set to −Inf), so the choice — greedy or drawn — is made
// among the rest exactly as without a format. The mask depends only on the text chosen so far,
// never on timing or threads, so a structured answer is as reproducible as any other.
//
// The documents generated are a subset of those the format allows: properties in the schema's
// order (the optional ones may be left out), no properties beyond the schema's, canonical text
// for enum and const values, no whitespace before or after the document and, between its
// tokens, whitespace bounded (none, one space, or a newline and up to 20 spaces or tabs) so
// that a model cannot loop on blanks. Every generated document
// is valid; not every valid document can be generated. Schema keywords that would constrain
// what this package cannot enforce are refused by name, never ignored.
package structured

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math/big"
	"slices"
	"sort"
)

// A Format is what an answer must be: a value of root, between the texts open and close. It
// is immutable and may serve many answers at once.
type Format struct {
	root        *node
	open, close []byte
}

// kind is a node's sort of value.
type kind uint8

const (
	kindAny     kind = iota // any JSON value
	kindObject              // an object: listed properties, or free keys with values of one node
	kindArray               // an array of items of one node
	kindString              // a string, with bounds on its length in characters
	kindNumber              // any JSON number
	kindInteger             // a number without fraction or exponent
	kindLiteral             // one of a set of JSON texts: true/false/null, enum, const
	kindAnyOf               // one of several nodes, told apart by their first byte
)

// A node is one schema, compiled.
type node struct {
	kind kind

	// kindObject: props in the schema's order, or (props nil) free keys whose values are
	// values; keySets[i] are the keys that may come when props[:i] are settled.
	props   []prop
	values  *node
	keySets []keySet

	// kindArray.
	items              *node
	minItems, maxItems int // maxItems −1: no bound

	// kindString: length bounds in characters (maxLen −1: no bound).
	minLen, maxLen int

	// kindNumber, kindInteger: no minus sign (minimum 0); and for an integer, no zero either
	// (minimum 1, exclusiveMinimum 0).
	nonNegative, positive bool

	// kindLiteral: canonical JSON texts, sorted, distinct.
	literals [][]byte

	// kindAnyOf: alternatives whose first bytes differ.
	alts []*node

	// cases, for an object whose first property is a literal (a tool call's name): the node
	// the object follows once that value is read, by the literal's index in props[0].value.
	cases []*node

	// first is the set of bytes a value may start with (a bit a byte), for choosing among
	// alternatives.
	first [4]uint64

	// ref, while compiling: the $ref this node stands for (resolved into *node when done).
	ref string
}

// A prop is an object's property: its key as JSON text ("name" with its quotes), its node and
// whether it must appear.
type prop struct {
	key      []byte
	value    *node
	required bool
}

// A keySet is the keys that may come next in an object, sorted, each with the index of its
// property; end reports whether the object may close instead (no required property is left).
type keySet struct {
	keys  [][]byte
	index []int
	end   bool
}

// JSONObject returns the format of OpenAI's json_object mode: any JSON object.
func JSONObject() *Format {
	return &Format{root: anyObject}
}

// maxDepth bounds the nesting of objects and arrays in an answer (a model left to recurse
// would otherwise grow the matcher's stack without bound).
const maxDepth = 64

// annotations are the keywords that describe without constraining; they are skipped.
var annotations = map[string]bool{
	"title": true, "description": true, "default": true, "examples": true, "$schema": true,
	"$id": true, "$comment": true, "deprecated": true, "readOnly": true, "writeOnly": true,
	"$defs": true, "definitions": true, "strict": true,
	// format is an annotation unless a validator opts into asserting it (JSON Schema 2020-12,
	// the format-annotation vocabulary): a document with a string of another form still
	// validates. pydantic writes it for datetime, UUID and URL fields, zod for .email() and
	// .url(); refusing it would refuse those schemas. The form is the prompt's to ask for.
	"format": true,
}

// CompileSchema compiles a JSON Schema (the subset structured output uses: type, properties,
// required, additionalProperties, items, minItems, maxItems, enum, const, anyOf, oneOf, a
// one-element allOf, nullable, minLength, maxLength, $ref into $defs or definitions) into a
// format. An error names the keyword and where in the schema it is.
func CompileSchema(schema []byte) (*Format, error) {
	dec := json.NewDecoder(bytes.NewReader(schema))
	dec.UseNumber()
	doc, err := decodeOrdered(dec, 0)
	if err != nil {
		return nil, fmt.Errorf("schema: %w", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("schema: text after the schema")
	}
	c := &compiler{doc: doc, refs: map[string]*node{}}
	root, err := c.compile(doc, "")
	if err != nil {
		return nil, err
	}
	for _, n := range c.pending {
		target, ok := c.refs[n.ref]
		if !ok || target.ref != "" {
			return nil, fmt.Errorf("schema: $ref %q: a reference to a reference is not supported", n.ref)
		}
		*n = *target
	}
	if err := c.check(root, map[*node]bool{}); err != nil {
		return nil, err
	}
	return &Format{root: root}, nil
}

// compiler holds the schema document (for $ref) and the references met.
type compiler struct {
	doc     any
	refs    map[string]*node // compiled targets by $ref text
	pending []*node          // nodes that stand for a $ref, resolved at the end
}

// at returns where a keyword is, for errors: a JSON pointer, "/" for the root.
func at(path string) string {
	if path == "" {
		return "/"
	}
	return path
}

func (c *compiler) compile(v any, path string) (*node, error) {
	switch s := v.(type) {
	case bool:
		if s {
			return &node{kind: kindAny}, nil
		}
		return nil, fmt.Errorf("schema at %s: false allows no value", at(path))
	case map[string]any:
		return c.compileObject(s, path)
	}
	return nil, fmt.Errorf("schema at %s: want an object or a boolean", at(path))
}

func (c *compiler) compileObject(s map[string]any, path string) (*node, error) {
	for k := range s {
		if !annotations[k] && !known[k] {
			if why, refused := refused[k]; refused {
				return nil, fmt.Errorf("schema at %s: keyword %q is not supported (%s)", at(path), k, why)
			}
		}
	}
	// A composition keyword and the keywords beside it would have to hold together; the
	// matcher follows one node, so constraining keywords beside these are refused by name
	// (enum and const may have a type: their values are then those of the type).
	for _, k := range []string{"$ref", "allOf", "anyOf", "oneOf", "const", "enum"} {
		if _, ok := s[k]; !ok {
			continue
		}
		for _, other := range slices.Sorted(maps.Keys(s)) {
			if other == k || !known[other] || (k == "const" || k == "enum") && (other == "type" || other == "nullable") {
				continue
			}
			return nil, fmt.Errorf("schema at %s: keyword %q beside %q is not supported (both must hold; write them as one schema)", at(path), other, k)
		}
		break
	}
	if ref, ok := s["$ref"]; ok {
		r, ok := ref.(string)
		if !ok {
			return nil, fmt.Errorf("schema at %s: $ref: want a string", at(path))
		}
		return c.reference(r, path)
	}
	if all, ok := s["allOf"]; ok {
		list, ok := all.([]any)
		if !ok || len(list) != 1 {
			return nil, fmt.Errorf("schema at %s: allOf: only a list of one schema is supported", at(path))
		}
		return c.compile(list[0], path+"/allOf/0")
	}
	if v, ok := s["const"]; ok {
		return typedLiterals([]any{v}, s, path+"/const")
	}
	if v, ok := s["enum"]; ok {
		list, ok := v.([]any)
		if !ok || len(list) == 0 {
			return nil, fmt.Errorf("schema at %s/enum: want a non-empty list", at(path))
		}
		return typedLiterals(list, s, path+"/enum")
	}
	for _, k := range []string{"anyOf", "oneOf"} {
		v, ok := s[k]
		if !ok {
			continue
		}
		// oneOf is anyOf here: alternatives must start differently, so at most one matches.
		list, ok := v.([]any)
		if !ok || len(list) == 0 {
			return nil, fmt.Errorf("schema at %s/%s: want a non-empty list", at(path), k)
		}
		var alts []*node
		for i, a := range list {
			n, err := c.compile(a, fmt.Sprintf("%s/%s/%d", path, k, i))
			if err != nil {
				return nil, err
			}
			alts = append(alts, n)
		}
		return anyOf(alts, path+"/"+k)
	}

	var types []string
	switch t := s["type"].(type) {
	case nil:
		if _, ok := s["type"]; ok {
			return nil, fmt.Errorf("schema at %s/type: want a string or a list of strings", at(path))
		}
	case string:
		types = []string{t}
	case []any:
		for _, e := range t {
			name, ok := e.(string)
			if !ok {
				return nil, fmt.Errorf("schema at %s/type: want a string or a list of strings", at(path))
			}
			types = append(types, name)
		}
	default:
		return nil, fmt.Errorf("schema at %s/type: want a string or a list of strings", at(path))
	}
	if n, _ := s["nullable"].(bool); n && len(types) > 0 && !slices.Contains(types, "null") {
		types = append(types, "null")
	}
	if len(types) == 0 {
		// No type: the keywords present say which; none means any value.
		switch {
		case s["properties"] != nil || s["additionalProperties"] != nil || s["required"] != nil:
			types = []string{"object"}
		case s["items"] != nil || s["minItems"] != nil || s["maxItems"] != nil:
			types = []string{"array"}
		case s["minLength"] != nil || s["maxLength"] != nil:
			types = []string{"string"}
		case s["minimum"] != nil || s["maximum"] != nil || s["exclusiveMinimum"] != nil:
			types = []string{"number"}
		default:
			return &node{kind: kindAny}, nil
		}
	}
	if slices.Contains(types, "number") {
		types = slices.DeleteFunc(types, func(t string) bool { return t == "integer" })
	}
	var alts []*node
	for _, t := range types {
		n, err := c.typed(t, s, path)
		if err != nil {
			return nil, err
		}
		alts = append(alts, n)
	}
	if len(alts) == 1 {
		return alts[0], nil
	}
	return anyOf(alts, path+"/type")
}

// typedLiterals returns the literal values of an enum or const that are of the schema's type
// (all of them without one): both keywords must hold.
func typedLiterals(values []any, s map[string]any, path string) (*node, error) {
	var types []string
	switch t := s["type"].(type) {
	case string:
		types = []string{t}
	case []any:
		for _, e := range t {
			if name, ok := e.(string); ok {
				types = append(types, name)
			}
		}
	}
	if n, _ := s["nullable"].(bool); n && len(types) > 0 {
		types = append(types, "null")
	}
	if len(types) == 0 {
		return literals(values, path)
	}
	var kept []any
	for _, v := range values {
		if slices.ContainsFunc(types, func(t string) bool { return ofType(t, v) }) {
			kept = append(kept, v)
		}
	}
	if len(kept) == 0 {
		return nil, fmt.Errorf("schema at %s: no value is of the type %v", at(path), types)
	}
	return literals(kept, path)
}

// ofType reports whether a decoded JSON value (numbers as json.Number) is of JSON Schema type t.
func ofType(t string, v any) bool {
	switch x := v.(type) {
	case nil:
		return t == "null"
	case bool:
		return t == "boolean"
	case string:
		return t == "string"
	case json.Number:
		if t == "number" {
			return true
		}
		f, _, err := big.ParseFloat(string(x), 10, 256, big.ToNearestEven)
		return t == "integer" && err == nil && f.IsInt()
	case []any:
		return t == "array"
	case map[string]any:
		return t == "object"
	}
	return false
}

// known are the keywords compile reads.
var known = map[string]bool{
	"type": true, "properties": true, "required": true, "additionalProperties": true, "items": true,
	"minItems": true, "maxItems": true, "enum": true, "const": true, "anyOf": true, "oneOf": true,
	"allOf": true, "nullable": true, "minLength": true, "maxLength": true, "$ref": true,
	"minimum": true, "maximum": true, "exclusiveMinimum": true,
}

// refused are the keywords that constrain values in ways this package does not enforce, with
// what to do instead. Unknown keywords are annotations (JSON Schema ignores them).
var refused = map[string]string{
	"pattern":               "a regular expression over a string; use enum, or describe the form in the prompt",
	"exclusiveMaximum":      "numeric bounds are not enforced",
	"multipleOf":            "numeric bounds are not enforced",
	"not":                   "negation is not enforced",
	"if":                    "conditional schemas are not enforced",
	"then":                  "conditional schemas are not enforced",
	"else":                  "conditional schemas are not enforced",
	"patternProperties":     "keys by pattern are not enforced",
	"propertyNames":         "key schemas are not enforced",
	"dependentRequired":     "dependencies between properties are not enforced",
	"dependentSchemas":      "dependencies between properties are not enforced",
	"dependencies":          "dependencies between properties are not enforced",
	"minProperties":         "property counts are not enforced",
	"maxProperties":         "property counts are not enforced",
	"uniqueItems":           "unique items are not enforced",
	"contains":              "contains is not enforced",
	"minContains":           "contains is not enforced",
	"maxContains":           "contains is not enforced",
	"prefixItems":           "tuples are not supported yet",
	"unevaluatedItems":      "unevaluated items are not enforced",
	"unevaluatedProperties": "unevaluated properties are not enforced",
	"contentEncoding":       "string contents are not enforced",
	"contentMediaType":      "string contents are not enforced",
	"$dynamicRef":           "dynamic references are not supported",
}

// typed compiles s as one type.
func (c *compiler) typed(t string, s map[string]any, path string) (*node, error) {
	switch t {
	case "null":
		return literals([]any{nil}, path)
	case "boolean":
		return literals([]any{false, true}, path)
	case "number", "integer":
		n := &node{kind: kindNumber}
		if t == "integer" {
			n.kind = kindInteger
		}
		return n, bounds(n, s, path)
	case "string":
		n := &node{kind: kindString}
		var err error
		if n.minLen, n.maxLen, err = counts(s, "minLength", "maxLength", path); err != nil {
			return nil, err
		}
		return n, nil
	case "array":
		n := &node{kind: kindArray}
		var err error
		if n.minItems, n.maxItems, err = counts(s, "minItems", "maxItems", path); err != nil {
			return nil, err
		}
		n.items = &node{kind: kindAny}
		if it, ok := s["items"]; ok {
			if n.items, err = c.compile(it, path+"/items"); err != nil {
				return nil, err
			}
		}
		return n, nil
	case "object":
		return c.object(s, path)
	}
	return nil, fmt.Errorf("schema at %s/type: unknown type %q", at(path), t)
}

// bounds reads minimum, maximum and exclusiveMinimum for a number node. The matcher writes no integer beyond
// ±(10^15 − 1) (maxWhole digits), so bounds at least that wide ask for nothing more (zod
// writes ±(2^53 − 1) for every integer); a minimum of 0 is kept by writing no sign. Other
// bounds are refused: the matcher cannot yet hold a number to a range digit by digit.
func bounds(n *node, s map[string]any, path string) error {
	widest := new(big.Float).SetFloat64(999999999999999)
	for _, key := range []string{"minimum", "maximum", "exclusiveMinimum"} {
		v, ok := s[key]
		if !ok {
			continue
		}
		num, isNum := v.(json.Number)
		f, _, err := big.ParseFloat(string(num), 10, 128, big.ToNearestEven)
		if !isNum || err != nil {
			return fmt.Errorf("schema at %s/%s: want a number", at(path), key)
		}
		one := big.NewFloat(1)
		switch {
		case key == "minimum" && f.Sign() == 0:
			n.nonNegative = true
		case n.kind == kindInteger && (key == "minimum" && f.Cmp(one) == 0 || key == "exclusiveMinimum" && f.Sign() == 0):
			n.nonNegative, n.positive = true, true // zod's .positive() on an integer
		case n.kind == kindInteger && key == "minimum" && f.Cmp(new(big.Float).Neg(widest)) <= 0:
		case n.kind == kindInteger && key == "maximum" && f.Cmp(widest) >= 0:
		default:
			return fmt.Errorf("schema at %s: keyword %q is not supported with %s (numeric bounds are enforced only as minimum 0, an integer's minimum 1 or exclusiveMinimum 0, or integers' bounds beyond ±(10^15−1))", at(path), key, num)
		}
	}
	return nil
}

// count reads a non-negative integer keyword, or returns def when it is absent.
func count(s map[string]any, key string, def int, path string) (int, error) {
	v, ok := s[key]
	if !ok {
		return def, nil
	}
	n, ok := v.(json.Number)
	if ok {
		if i, err := n.Int64(); err == nil && i >= 0 && i <= 1<<20 {
			return int(i), nil
		}
	}
	return 0, fmt.Errorf("schema at %s/%s: want an integer from 0 to %d", at(path), key, 1<<20)
}

// counts reads a lower and an upper count keyword (minLength and maxLength, minItems and
// maxItems): the lower 0 when absent, the upper -1 (no bound) when absent and never below the
// lower.
func counts(s map[string]any, minKey, maxKey, path string) (lo, hi int, err error) {
	if lo, err = count(s, minKey, 0, path); err != nil {
		return 0, 0, err
	}
	if hi, err = count(s, maxKey, -1, path); err != nil {
		return 0, 0, err
	}
	if hi >= 0 && hi < lo {
		return 0, 0, fmt.Errorf("schema at %s: %s %d is below %s %d", at(path), maxKey, hi, minKey, lo)
	}
	return lo, hi, nil
}

// object compiles an object schema: its listed properties in order, or, with none listed,
// free keys whose values follow additionalProperties (any value when it is absent or true).
func (c *compiler) object(s map[string]any, path string) (*node, error) {
	n := &node{kind: kindObject}
	required := map[string]bool{}
	if r, ok := s["required"]; ok {
		list, ok := r.([]any)
		if !ok {
			return nil, fmt.Errorf("schema at %s/required: want a list of names", at(path))
		}
		for _, e := range list {
			name, ok := e.(string)
			if !ok {
				return nil, fmt.Errorf("schema at %s/required: want a list of names", at(path))
			}
			required[name] = true
		}
	}
	props, _ := s["properties"].(map[string]any)
	if _, ok := s["properties"]; ok && props == nil {
		return nil, fmt.Errorf("schema at %s/properties: want an object", at(path))
	}
	// The properties in the order the schema writes them: the order a model is asked for.
	names, _ := props[orderKey].([]string)
	if len(names) == 0 {
		if len(required) > 0 {
			return nil, fmt.Errorf("schema at %s/required: names a property that properties does not list", at(path))
		}
		if ap, ok := s["additionalProperties"]; ok {
			if b, isBool := ap.(bool); isBool && !b {
				// No property at all: only {}.
				n.keySets = []keySet{{end: true}}
				return n, nil
			}
		}
		n.values = &node{kind: kindAny}
		if ap, ok := s["additionalProperties"]; ok {
			var err error
			if n.values, err = c.compile(ap, path+"/additionalProperties"); err != nil {
				return nil, err
			}
		}
		return n, nil
	}
	for _, name := range names {
		v, err := c.compile(props[name], path+"/properties/"+escapePointer(name))
		if err != nil {
			return nil, err
		}
		n.props = append(n.props, prop{key: canonical(name), value: v, required: required[name]})
		delete(required, name)
	}
	for _, name := range slices.Sorted(maps.Keys(required)) {
		return nil, fmt.Errorf("schema at %s/required: %q is not among the properties", at(path), name)
	}
	setKeySets(n)
	return n, nil
}

// setKeySets sets the key sets of an object of listed properties: keySets[i] are the properties
// from i up to the first required one.
func setKeySets(n *node) {
	n.keySets = nil
	for i := 0; i <= len(n.props); i++ {
		var ks keySet
		ks.end = true
		for j := i; j < len(n.props); j++ {
			ks.keys = append(ks.keys, n.props[j].key)
			ks.index = append(ks.index, j)
			if n.props[j].required {
				ks.end = false
				break
			}
		}
		sortKeys(&ks)
		n.keySets = append(n.keySets, ks)
	}
}

// sortKeys sorts a key set's keys, keeping each with its property's index.
func sortKeys(ks *keySet) {
	order := make([]int, len(ks.keys))
	for i := range order {
		order[i] = i
	}
	sort.Slice(order, func(a, b int) bool { return bytes.Compare(ks.keys[order[a]], ks.keys[order[b]]) < 0 })
	keys, index := make([][]byte, len(order)), make([]int, len(order))
	for i, o := range order {
		keys[i], index[i] = ks.keys[o], ks.index[o]
	}
	ks.keys, ks.index = keys, index
}
