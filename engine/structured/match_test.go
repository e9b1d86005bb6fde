package structured

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

// accepts reports whether f's matcher takes all of doc and may end after it.
func accepts(f *Format, doc string) bool {
	m := f.start()
	for i := range len(doc) {
		if !m.feed(doc[i]) {
			return false
		}
	}
	return m.canEnd()
}

func mustCompile(t *testing.T, schema string) *Format {
	t.Helper()
	f, err := CompileSchema([]byte(schema))
	if err != nil {
		t.Fatalf("CompileSchema(%s): %v", schema, err)
	}
	return f
}

// TestJSONObjectDocuments checks the json_object format on documents written by hand: the
// valid objects it may generate are accepted, everything else refused.
func TestJSONObjectDocuments(t *testing.T) {
	f := JSONObject()
	good := []string{
		`{}`, `{"a":1}`, `{"a": 1}`, "{\n  \"a\": [1, 2.5, -0.5e+3, true, false, null],\n  \"b\": {\"c\": \"\\u00e9\\n\"}\n}",
		`{"a":"é😀"}`, `{"a":[]}`, `{"a":123456789012345}`, `{"a":-1.5e-99}`, `{"":{}}`, `{"a":-0}`, `{"a":1E9}`, `{"k":"\"\\\/\b\f\n\r\t"}`,
	}
	for _, doc := range good {
		if !accepts(f, doc) {
			t.Errorf("json_object refused %q", doc)
		}
	}
	bad := []string{
		``, `[]`, `1`, `"a"`, `{`, `{"a"}`, `{"a":}`, `{"a":1,}`, `{,}`, `{"a":01}`, `{"a":1.}`,
		`{"a":.5}`, `{"a":tru}`, `{"a":True}`, "{\"a\":\"\x01\"}", `{"a":"\x"}`, `{"a":"\ud800"}`,
		"{\"a\":\"\xff\"}", "{\"a\":\"\xc0\x80\"}", "{\"a\":\"\xed\xa0\x80\"}", `{} `, `{}{}`,
		`{"a":1}}`, ` {}`, "\n{}", "{  \"a\":1}", "{\n\n\"a\":1}", `{"a":-}`, `{"a":1e}`, `{"a":NaN}`,
		"{\n" + strings.Repeat(" ", maxBlanks+1) + "\"a\":1}", `{"a":1234567890123456}`, `{"a":1e100}`,
		`{"a":0.` + strings.Repeat("1", maxNumber) + `}`,
	}
	for _, doc := range bad {
		if accepts(f, doc) {
			t.Errorf("json_object accepted %q", doc)
		}
	}
}

// TestJSONObjectAcceptsEncodedValues feeds random objects as encoding/json writes them,
// compact and indented: each is accepted whole.
func TestJSONObjectAcceptsEncodedValues(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	f := JSONObject()
	for i := range 500 {
		v := map[string]any{}
		for k := range r.IntN(5) {
			v[randomString(r)+string(rune('a'+k))] = randomValue(r, 3)
		}
		compact, _ := json.Marshal(v)
		indented, _ := json.MarshalIndent(v, "", "  ")
		for _, doc := range [][]byte{compact, indented} {
			if !accepts(f, string(doc)) {
				t.Fatalf("case %d: refused %s", i, doc)
			}
		}
	}
}

func randomString(r *rand.Rand) string {
	parts := []string{"a", "Z", " ", "é", "😀", "\"", "\\", "\n", "\x01", "<", "/", "中"}
	var b strings.Builder
	for range r.IntN(6) {
		b.WriteString(parts[r.IntN(len(parts))])
	}
	return b.String()
}

func randomValue(r *rand.Rand, depth int) any {
	k := r.IntN(7)
	if depth == 0 {
		k = r.IntN(4)
	}
	switch k {
	case 0:
		return randomString(r)
	case 1:
		return r.NormFloat64() * 1e6
	case 2:
		return r.IntN(3) == 0
	case 3:
		return nil
	case 4, 5:
		list := []any{}
		for range r.IntN(4) {
			list = append(list, randomValue(r, depth-1))
		}
		return list
	}
	m := map[string]any{}
	for range r.IntN(4) {
		m[randomString(r)] = randomValue(r, depth-1)
	}
	return m
}

// FuzzJSONObjectAcceptsOnlyJSON: whatever the matcher accepts as a complete document is a
// valid JSON object by encoding/json.
func FuzzJSONObjectAcceptsOnlyJSON(f *testing.F) {
	for _, s := range []string{`{}`, `{"a":[1,{"b":null}]}`, `{"a":1e5}`, `{"\u00e9":"x"}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, doc string) {
		if accepts(JSONObject(), doc) {
			var v map[string]any
			if err := json.Unmarshal([]byte(doc), &v); err != nil || v == nil {
				t.Fatalf("accepted %q, which encoding/json reads as %v (%v)", doc, v, err)
			}
		}
	})
}

// walk generates a random document of f byte by byte, each byte drawn among those the
// matcher allows (all 256 tried), closing strings and containers once the text is long. It
// returns "" if no document ends within the bound.
func walk(f *Format, r *rand.Rand) string {
	m := f.start()
	var doc []byte
	var allowed []byte
	for len(doc) < 4000 {
		if m.canEnd() && (len(doc) > 0 && r.IntN(3) == 0 || len(m.frames) == 1) {
			return string(doc)
		}
		allowed = allowed[:0]
		var next matcher
		for b := range 256 {
			next.copyFrom(&m)
			if next.feed(byte(b)) {
				allowed = append(allowed, byte(b))
			}
		}
		if len(allowed) == 0 {
			return ""
		}
		b := allowed[r.IntN(len(allowed))]
		if len(doc) > 60 {
			// Prefer what ends something: quotes, closing brackets, a digit's end.
			for _, c := range []byte{'"', '}', ']', 'l', 'e', '0'} {
				if bytes.IndexByte(allowed, c) >= 0 && r.IntN(2) == 0 {
					b = c
					break
				}
			}
		}
		m.feed(b)
		doc = append(doc, b)
	}
	return ""
}

// walks makes n random documents of f (walk) and gives each one that ends to check; fewer
// than half of them ending fails the test, what (a prefix) naming f.
func walks(t *testing.T, f *Format, r *rand.Rand, n int, what string, check func(doc string)) {
	t.Helper()
	made := 0
	for range n {
		doc := walk(f, r)
		if doc == "" {
			continue
		}
		made++
		check(doc)
	}
	if made < n/2 {
		t.Errorf("%sonly %d of %d walks ended", what, made, n)
	}
}

// TestWalksAreValid: random documents of json_object and of several schemas parse, and
// validate against their schema (by the independent checker in validate_test.go).
func TestWalksAreValid(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, schema := range testSchemas {
		f := mustCompile(t, schema)
		var s any
		if err := json.Unmarshal([]byte(schema), &s); err != nil {
			t.Fatal(err)
		}
		walks(t, f, r, 200, "schema "+schema+": ", func(doc string) {
			var v any
			if err := json.Unmarshal([]byte(doc), &v); err != nil {
				t.Fatalf("schema %s: generated %q, not JSON: %v", schema, doc, err)
			}
			if err := validate(s, s, v); err != nil {
				t.Fatalf("schema %s: generated %s: %v", schema, doc, err)
			}
		})
	}
}

var testSchemas = []string{
	`{"type":"object"}`,
	`{"type":"object","properties":{"name":{"type":"string"},"age":{"type":"integer"},"tags":{"type":"array","items":{"type":"string","maxLength":3},"minItems":1,"maxItems":3}},"required":["name","age","tags"],"additionalProperties":false}`,
	`{"type":"object","properties":{"a":{"type":"number"},"b":{"type":"boolean"},"c":{"type":"null"}},"required":["c"],"additionalProperties":false}`,
	`{"type":"object","properties":{"color":{"enum":["red","green","blue",1,10,null]},"k":{"const":{"x":[1,2]}}},"required":["color","k"]}`,
	`{"type":"object","properties":{"v":{"anyOf":[{"type":"string","minLength":2},{"type":"null"},{"type":"array","items":{"type":"integer"}}]}},"required":["v"],"additionalProperties":false}`,
	`{"type":"object","properties":{"tree":{"$ref":"#/$defs/node"}},"required":["tree"],"$defs":{"node":{"type":"object","properties":{"value":{"type":"integer"},"children":{"type":"array","items":{"$ref":"#/$defs/node"},"maxItems":2}},"required":["value","children"],"additionalProperties":false}}}`,
	`{"type":"object","additionalProperties":{"type":"integer"}}`,
	`{"type":"object","additionalProperties":false}`,
	`{"type":["object","null"],"properties":{"x":{"type":"string","nullable":true}},"required":["x"]}`,
	`{"type":"array","items":{"type":"number"}}`,
	`{"enum":[0,1,12,123]}`,
	`{"type":"object","properties":{"n":{"type":"integer","minimum":-9007199254740991,"maximum":9007199254740991},"p":{"type":"number","minimum":0}},"required":["n","p"]}`,
	`{"type":"object","properties":{"e":{"type":"string","enum":["a",1,"b"]},"l":{"minItems":1,"maxItems":2},"w":{"type":"string","format":"date-time"},"p":{"type":"integer","exclusiveMinimum":0}},"required":["e","l","w","p"]}`,
}

// TestSchemaDocuments checks schemas on documents written by hand.
func TestSchemaDocuments(t *testing.T) {
	cases := []struct {
		schema    string
		good, bad []string
	}{
		{testSchemas[1],
			[]string{`{"name":"x","age":3,"tags":["a"]}`, `{"name":"","age":-12,"tags":["abc","é","x"]}`},
			[]string{`{"age":3,"name":"x","tags":["a"]}`, `{"name":"x","age":3.5,"tags":["a"]}`, `{"name":"x","age":3,"tags":[]}`,
				`{"name":"x","age":3,"tags":["abcd"]}`, `{"name":"x","age":3,"tags":["a","b","c","d"]}`, `{"name":"x","age":3}`,
				`{"name":"x","age":3,"tags":["a"],"z":1}`, `{"name":1,"age":3,"tags":["a"]}`}},
		{testSchemas[2],
			[]string{`{"c":null}`, `{"a":1,"c":null}`, `{"b":true,"c":null}`, `{"a":-1.5e3,"b":false,"c":null}`},
			[]string{`{}`, `{"a":1}`, `{"c":null,"a":1}`, `{"b":1,"c":null}`, `{"c":nul}`}},
		{testSchemas[3],
			[]string{`{"color":"red","k":{"x":[1,2]}}`, `{"color":10,"k":{"x":[1,2]}}`, `{"color":1,"k":{"x":[1,2]}}`, `{"color":null,"k":{"x":[1,2]}}`},
			[]string{`{"color":"re","k":{"x":[1,2]}}`, `{"color":100,"k":{"x":[1,2]}}`, `{"color":"red","k":{"x":[1, 2]}}`, `{"color":"red","k":{"x":[2,1]}}`}},
		{testSchemas[4],
			[]string{`{"v":"ab"}`, `{"v":null}`, `{"v":[1,-2]}`},
			[]string{`{"v":"a"}`, `{"v":[1.5]}`, `{"v":{}}`, `{"v":true}`}},
		{testSchemas[5],
			[]string{`{"tree":{"value":1,"children":[{"value":2,"children":[]}]}}`},
			[]string{`{"tree":{"value":1,"children":[{"value":2}]}}`, `{"tree":{"value":1,"children":[{"value":2,"children":[]},{"value":3,"children":[]},{"value":4,"children":[]}]}}`}},
		{testSchemas[6], []string{`{}`, `{"a":1,"b":-2}`}, []string{`{"a":"x"}`, `{"a":1.0}`}},
		{testSchemas[7], []string{`{}`}, []string{`{"a":1}`}},
		{testSchemas[8], []string{`null`, `{"x":"s"}`, `{"x":null}`}, []string{`{}`, `{"x":1}`}},
		{testSchemas[9], []string{`[]`, `[1,2.5]`, "[\n  1\n]"}, []string{`[1,]`, `["a"]`, `{}`}},
		{testSchemas[10], []string{`0`, `1`, `12`, `123`}, []string{`2`, `1234`, `01`, `-1`}},
		{testSchemas[11], []string{`{"n":-5,"p":0}`, `{"n":5,"p":1.5e3}`}, []string{`{"n":5,"p":-1}`, `{"n":1.5,"p":1}`}},
		{testSchemas[12], []string{`{"e":"a","l":[1],"w":"now","p":1}`, `{"e":"b","l":[1,{}],"w":"","p":10}`}, []string{`{"e":1,"l":[1],"w":"","p":1}`, `{"e":"a","l":[],"w":"","p":1}`, `{"e":"a","l":[1,2,3],"w":"","p":1}`, `{"e":"a","l":{},"w":"","p":1}`, `{"e":"a","l":[1],"w":"","p":0}`, `{"e":"a","l":[1],"w":"","p":-3}`}},
	}
	for _, c := range cases {
		f := mustCompile(t, c.schema)
		for _, doc := range c.good {
			if !accepts(f, doc) {
				t.Errorf("schema %s refused %s", c.schema, doc)
			}
		}
		for _, doc := range c.bad {
			if accepts(f, doc) {
				t.Errorf("schema %s accepted %s", c.schema, doc)
			}
		}
	}
}

// TestSchemaErrors checks that what cannot be enforced is refused by name and place.
func TestSchemaErrors(t *testing.T) {
	cases := []struct{ schema, want string }{
		{`{"type":"string","pattern":"^a"}`, `schema at /: keyword "pattern" is not supported`},
		{`{"type":"object","properties":{"when":{"type":"string","pattern":"^2"}}}`, `schema at /properties/when: keyword "pattern"`},
		{`{"anyOf":[{"type":"string"},{"type":"null"}],"maxLength":2}`, `keyword "maxLength" beside "anyOf"`},
		{`{"type":"object","required":["a"],"anyOf":[{"type":"object"}]}`, `keyword "required" beside "anyOf"`},
		{`{"const":"x","type":"integer"}`, `no value is of the type [integer]`},
		{`{"$defs":{"s":{"type":"string"}},"$ref":"#/$defs/s","maxLength":1}`, `keyword "maxLength" beside "$ref"`},
		{`{"allOf":[{"type":"object"}],"additionalProperties":false}`, `keyword "additionalProperties" beside "allOf"`},
		{`{"type":"object","properties":{"n":{"type":"integer","minimum":2}}}`, `keyword "minimum" is not supported with 2`},
		{`{"type":"number","exclusiveMinimum":0}`, `keyword "exclusiveMinimum" is not supported with 0`},
		{`{"type":"number","maximum":1e300}`, `keyword "maximum" is not supported`},
		{`{"minimum":5}`, `keyword "minimum" is not supported`},
		{`{"anyOf":[{"type":"object"},{"type":"object","properties":{"a":{}}}]}`, `alternatives 0 and 1 can both start with '{'`},
		{`{"type":"object","required":["a"],"properties":{"b":{}}}`, `"a" is not among the properties`},
		{`{"$ref":"#/$defs/missing"}`, `$ref "#/$defs/missing" names nothing`},
		{`{"$ref":"http://example.com/s.json"}`, `only references within the schema`},
		{`{"type":"strin"}`, `unknown type "strin"`},
		{`{"type":"array","minItems":3,"maxItems":2}`, `maxItems 2 is below minItems 3`},
		{`{"type":"string","maxLength":-1}`, `maxLength: want an integer`},
		{`{"enum":[]}`, `enum: want a non-empty list`},
		{`false`, `false allows no value`},
		{`[1]`, `want an object or a boolean`},
		{`{"type":"object","properties":{"a":{},"a":{}}}`, `key "a" appears twice`},
		{`{"type":"object"} x`, `text after the schema`},
		{`{"allOf":[{},{}]}`, `only a list of one schema`},
	}
	for _, c := range cases {
		_, err := CompileSchema([]byte(c.schema))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("CompileSchema(%s): %v, want an error containing %q", c.schema, err, c.want)
		}
	}
}

// TestMaskMatchesEveryToken compares Mask with feeding every token's bytes on its own, from
// random states of random documents, over a vocabulary of single bytes, JSON pieces and
// random byte strings (so that tokens share beginnings in every way the sorted walk skips).
func TestMaskMatchesEveryToken(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	var tokens [][]byte
	for b := range 256 {
		tokens = append(tokens, []byte{byte(b)})
	}
	pieces := []string{`{"`, `":`, `",`, `"}`, `true`, `tr`, `null`, `nul`, `1`, `12`, `.5`, `e+`, `\u00`, `\n  `, `é`, "\xc3", "\xa9\"", `"name`, `name"`, `"age":`, `}]`, `]}`, `red`, `"red"`, `-0`}
	for _, p := range pieces {
		tokens = append(tokens, []byte(p))
	}
	alphabet := []byte(`{}[]":,. 0129-+eEtrufalsn\` + "\n\xc3\xa9")
	for range 400 {
		t := make([]byte, 1+r.IntN(5))
		for i := range t {
			t[i] = alphabet[r.IntN(len(alphabet))]
		}
		tokens = append(tokens, t)
	}
	end := int32(len(tokens))
	tokens = append(tokens, nil, []byte("<|end|>")) // a control token, and the end token
	v := NewVocabulary(tokens, []int32{end + 1})
	for _, schema := range testSchemas {
		f := mustCompile(t, schema)
		for range 20 {
			// A state partway through a random document.
			doc := walk(f, r)
			c := f.Start(v)
			cut := r.IntN(len(doc) + 1)
			for i := range cut {
				c.m.feed(doc[i])
			}
			logits := make([]float32, len(tokens))
			err := c.Mask(logits)
			anyAllowed := false
			for id, tok := range tokens {
				want := false
				switch {
				case id == int(end+1):
					want = c.Complete()
				case len(tok) > 0:
					m := matcher{}
					m.copyFrom(&c.m)
					want = true
					for _, b := range tok {
						if !m.feed(b) {
							want = false
							break
						}
					}
				}
				anyAllowed = anyAllowed || want
				if got := !math.IsInf(float64(logits[id]), -1); got != want {
					t.Fatalf("schema %s after %q: token %q allowed %v, want %v", schema, doc[:cut], tok, got, want)
				}
			}
			if (err == nil) != anyAllowed {
				t.Fatalf("schema %s after %q: Mask error %v with a token allowed: %v", schema, doc[:cut], err, anyAllowed)
			}
		}
	}
}

// TestConstraintFollowsAnAnswer: accepting tokens one by one keeps Mask and Complete right,
// and an end token ends the answer only when the document is whole.
func TestConstraintFollowsAnAnswer(t *testing.T) {
	tokens := [][]byte{[]byte(`{"`), []byte(`a`), []byte(`":`), []byte(`1`), []byte(`}`), []byte(`<end>`)}
	v := NewVocabulary(tokens, []int32{5})
	c := JSONObject().Start(v)
	if err := c.Accept(5); err == nil {
		t.Fatal("the end token was accepted before the document")
	}
	c = JSONObject().Start(v)
	for _, id := range []int32{0, 1, 2, 3} {
		if err := c.Accept(id); err != nil {
			t.Fatal(err)
		}
	}
	logits := make([]float32, len(tokens))
	if err := c.Mask(logits); err != nil {
		t.Fatal(err)
	}
	want := []bool{false, false, false, true, true, false} // more digits, or the end of the object
	for id, w := range want {
		if got := !math.IsInf(float64(logits[id]), -1); got != w || c.Complete() {
			t.Fatalf("after {\"a\":1 token %q allowed %v, want %v (complete %v)", tokens[id], got, w, c.Complete())
		}
	}
	if err := c.Accept(2); err == nil {
		t.Fatal(`accepted '":' after a number`)
	}
	c = JSONObject().Start(v)
	for _, id := range []int32{0, 1, 2, 3, 4} {
		if err := c.Accept(id); err != nil {
			t.Fatal(err)
		}
	}
	clear(logits)
	if err := c.Mask(logits); err != nil || !c.Complete() {
		t.Fatalf("after a whole object: %v, complete %v", err, c.Complete())
	}
	for id := range tokens {
		if got := !math.IsInf(float64(logits[id]), -1); got != (id == 5) {
			t.Fatalf("after a whole object token %q allowed %v", tokens[id], got)
		}
	}
	if err := c.Accept(5); err != nil {
		t.Fatal(err)
	}
	if err := c.Mask(logits); !errors.Is(err, ErrNoToken) {
		t.Fatalf("Mask after the end: %v", err)
	}
}

// FuzzCompileSchema: any text either compiles or is refused with an error, and a compiled
// format reads any bytes without a panic or a hang.
func FuzzCompileSchema(f *testing.F) {
	for _, s := range testSchemas {
		f.Add(s, []byte(`{"name":"x","tags":[1,{"a":null}]}`))
	}
	f.Add(`{"anyOf":[{"$ref":"#"},{"type":"null"}]}`, []byte(`null`))
	f.Add(`{"properties":{"a":{"$ref":"#"}}}`, []byte(`{"a":{"a":{}}}`))
	f.Fuzz(func(t *testing.T, schema string, doc []byte) {
		format, err := CompileSchema([]byte(schema))
		if err != nil {
			return
		}
		m := format.start()
		for _, b := range doc {
			if !m.feed(b) {
				break
			}
		}
		m.canEnd()
	})
}

// TestNoDeadEnds walks many random documents byte by byte: wherever a document is not
// complete, some byte can continue it (no number, string or container closes the way on).
func TestNoDeadEnds(t *testing.T) {
	r := rand.New(rand.NewPCG(13, 14))
	prefixes := []string{`{"a":0.` + strings.Repeat("1", 29) + `e`, `{"a":0.` + strings.Repeat("1", 29), `{"a":-`, `{"a":1` + strings.Repeat("0", 14)}
	for _, schema := range testSchemas {
		f := mustCompile(t, schema)
		for range 50 {
			m := f.start()
			for n := 0; n < 300; n++ {
				var next []byte
				for b := range 256 {
					var c matcher
					c.copyFrom(&m)
					if c.feed(byte(b)) {
						next = append(next, byte(b))
					}
				}
				if len(next) == 0 {
					if !m.canEnd() {
						t.Fatalf("schema %s: a dead end", schema)
					}
					break
				}
				m.feed(next[r.IntN(len(next))])
			}
		}
	}
	for _, p := range prefixes {
		m := JSONObject().start()
		ok := true
		for i := range len(p) {
			ok = ok && m.feed(p[i])
		}
		if !ok {
			continue // the prefix itself is refused: no dead end
		}
		alive := m.canEnd()
		for b := range 256 {
			var c matcher
			c.copyFrom(&m)
			alive = alive || c.feed(byte(b))
		}
		if !alive {
			t.Errorf("after %q no byte is allowed and the document cannot end", p)
		}
	}
}
