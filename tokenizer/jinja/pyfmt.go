package jinja

import (
	"math"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// pyStr is Python's str(v): what {{ v }} prints.
func pyStr(v Value) string {
	switch v := v.(type) {
	case string:
		return v
	case markupValue:
		return string(v)
	case undefinedValue:
		return ""
	}
	var b strings.Builder
	writeRepr(&b, v)
	return b.String()
}

// pyRepr is Python's repr(v).
func pyRepr(v Value) string {
	var b strings.Builder
	writeRepr(&b, v)
	return b.String()
}

func writeRepr(b *strings.Builder, v Value) {
	switch v := v.(type) {
	case nil:
		b.WriteString("None")
	case bool:
		if v {
			b.WriteString("True")
		} else {
			b.WriteString("False")
		}
	case int64:
		b.WriteString(strconv.FormatInt(v, 10))
	case float64:
		b.WriteString(floatRepr(v))
	case string:
		writeStringRepr(b, v)
	case markupValue:
		b.WriteString("Markup(")
		writeStringRepr(b, string(v))
		b.WriteString(")")
	case []Value:
		b.WriteByte('[')
		for i, e := range v {
			if i > 0 {
				b.WriteString(", ")
			}
			writeRepr(b, e)
		}
		b.WriteByte(']')
	case tupleValue:
		b.WriteByte('(')
		for i, e := range v {
			if i > 0 {
				b.WriteString(", ")
			}
			writeRepr(b, e)
		}
		if len(v) == 1 {
			b.WriteByte(',')
		}
		b.WriteByte(')')
	case *Dict:
		writeDictRepr(b, v)
	case undefinedValue:
		b.WriteString("Undefined")
	case *namespaceValue:
		b.WriteString("<Namespace ")
		writeDictRepr(b, v.attrs)
		b.WriteString(">")
	case *macroValue:
		b.WriteString("<Macro ")
		if v.name == "" {
			b.WriteString("anonymous")
		} else {
			writeStringRepr(b, v.name)
		}
		b.WriteString(">")
	case *loopContext:
		b.WriteString("<LoopContext " + strconv.Itoa(v.index0+1) + "/" + strconv.Itoa(v.length) + ">")
	case dictView:
		b.WriteString("dict_" + v.kind + "(")
		writeRepr(b, v.list())
		b.WriteString(")")
	case rangeValue:
		b.WriteString("range(" + strconv.FormatInt(v.start, 10) + ", " + strconv.FormatInt(v.stop, 10))
		if v.step != 1 {
			b.WriteString(", " + strconv.FormatInt(v.step, 10))
		}
		b.WriteString(")")
	case *iterator:
		// CPython prints an address here; no renderer can reproduce it.
		b.WriteString("<" + v.kind + " object>")
	case *boundMethod:
		b.WriteString("<built-in method " + v.name + " of " + typeName(v.recv) + " object>")
	default:
		b.WriteString("<" + typeName(v) + ">")
	}
}

func writeDictRepr(b *strings.Builder, d *Dict) {
	b.WriteByte('{')
	for i, k := range d.keys {
		if i > 0 {
			b.WriteString(", ")
		}
		writeRepr(b, k)
		b.WriteString(": ")
		writeRepr(b, d.vals[i])
	}
	b.WriteByte('}')
}

// writeStringRepr writes Python's repr of a str: single quotes unless the text holds a single
// quote and no double quote, escapes for non-printable characters.
func writeStringRepr(b *strings.Builder, s string) {
	quote := byte('\'')
	if strings.IndexByte(s, '\'') >= 0 && strings.IndexByte(s, '"') < 0 {
		quote = '"'
	}
	b.WriteByte(quote)
	for _, r := range s {
		switch {
		case r == rune(quote) || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r < ' ' || r == 0x7f:
			b.WriteString(`\x`)
			writeHex(b, uint32(r), 2)
		case r < 0x7f:
			b.WriteRune(r)
		case unicode.IsPrint(r):
			b.WriteRune(r)
		case r <= 0xff:
			b.WriteString(`\x`)
			writeHex(b, uint32(r), 2)
		case r <= 0xffff:
			b.WriteString(`\u`)
			writeHex(b, uint32(r), 4)
		default:
			b.WriteString(`\U`)
			writeHex(b, uint32(r), 8)
		}
	}
	b.WriteByte(quote)
}

func writeHex(b *strings.Builder, x uint32, digits int) {
	const hex = "0123456789abcdef"
	for i := digits - 1; i >= 0; i-- {
		b.WriteByte(hex[(x>>(4*uint(i)))&15])
	}
}

// floatRepr is Python's repr(float): the shortest round-tripping digits, in positional
// notation when the decimal exponent is in [-4, 16), scientific otherwise.
func floatRepr(f float64) string {
	switch {
	case math.IsNaN(f):
		return "nan"
	case math.IsInf(f, 1):
		return "inf"
	case math.IsInf(f, -1):
		return "-inf"
	}
	sci := strconv.FormatFloat(f, 'e', -1, 64) // [-]d[.ddd]e±XX
	neg := sci[0] == '-'
	if neg {
		sci = sci[1:]
	}
	epos := strings.IndexByte(sci, 'e')
	mant, exp10 := sci[:epos], sci[epos+1:]
	e, _ := strconv.Atoi(exp10)
	digits := strings.Replace(mant, ".", "", 1)
	var out string
	decpt := e + 1 // value = 0.digits × 10^decpt
	if decpt > -4 && decpt <= 16 {
		switch {
		case decpt <= 0:
			out = "0." + strings.Repeat("0", -decpt) + digits
		case decpt >= len(digits):
			out = digits + strings.Repeat("0", decpt-len(digits)) + ".0"
		default:
			out = digits[:decpt] + "." + digits[decpt:]
		}
	} else {
		out = digits[:1]
		if len(digits) > 1 {
			out += "." + digits[1:]
		}
		sign := "+"
		if e < 0 {
			sign = "-"
			e = -e
		}
		es := strconv.Itoa(e)
		if len(es) < 2 {
			es = "0" + es
		}
		out += "e" + sign + es
	}
	if neg {
		return "-" + out
	}
	return out
}

// jsonOptions are the arguments of Python's json.dumps that tojson exposes.
type jsonOptions struct {
	ensureASCII bool
	indent      string
	pretty      bool // indent is not None
	itemSep     string
	keySep      string
	sortKeys    bool
}

// jsonDumps is Python's json.dumps with the given options.
func jsonDumps(v Value, o jsonOptions) (string, error) {
	var b strings.Builder
	if err := writeJSON(&b, v, o, 0); err != nil {
		return "", err
	}
	return b.String(), nil
}

func writeJSON(b *strings.Builder, v Value, o jsonOptions, depth int) error {
	if depth > maxDepth {
		return valueError("Circular reference detected")
	}
	switch v := v.(type) {
	case nil:
		b.WriteString("null")
	case bool:
		if v {
			b.WriteString("true")
		} else {
			b.WriteString("false")
		}
	case int64:
		b.WriteString(strconv.FormatInt(v, 10))
	case float64:
		b.WriteString(jsonFloat(v))
	case string:
		writeJSONString(b, v, o.ensureASCII)
	case markupValue:
		writeJSONString(b, string(v), o.ensureASCII)
	case []Value:
		return writeJSONArray(b, v, o, depth)
	case tupleValue:
		return writeJSONArray(b, v, o, depth)
	case *Dict:
		return writeJSONObject(b, v, o, depth)
	default:
		return typeError("Object of type %s is not JSON serializable", typeName(v))
	}
	return nil
}

func jsonFloat(f float64) string {
	switch {
	case math.IsNaN(f):
		return "NaN"
	case math.IsInf(f, 1):
		return "Infinity"
	case math.IsInf(f, -1):
		return "-Infinity"
	}
	return floatRepr(f)
}

func writeJSONNewline(b *strings.Builder, o jsonOptions, depth int) {
	b.WriteByte('\n')
	for i := 0; i < depth; i++ {
		b.WriteString(o.indent)
	}
}

func writeJSONArray(b *strings.Builder, items []Value, o jsonOptions, depth int) error {
	if len(items) == 0 {
		b.WriteString("[]")
		return nil
	}
	b.WriteByte('[')
	for i, e := range items {
		if i > 0 {
			b.WriteString(o.itemSep)
		}
		if o.pretty {
			writeJSONNewline(b, o, depth+1)
		}
		if err := writeJSON(b, e, o, depth+1); err != nil {
			return err
		}
	}
	if o.pretty {
		writeJSONNewline(b, o, depth)
	}
	b.WriteByte(']')
	return nil
}

func writeJSONObject(b *strings.Builder, d *Dict, o jsonOptions, depth int) error {
	if d.Len() == 0 {
		b.WriteString("{}")
		return nil
	}
	order := make([]int, d.Len())
	for i := range order {
		order[i] = i
	}
	if o.sortKeys {
		var err error
		sortStable(order, func(x, y int) bool {
			less, e := pyLess(d.keys[x], d.keys[y])
			if e != nil && err == nil {
				err = e
			}
			return less
		})
		if err != nil {
			return err
		}
	}
	b.WriteByte('{')
	for n, i := range order {
		if n > 0 {
			b.WriteString(o.itemSep)
		}
		if o.pretty {
			writeJSONNewline(b, o, depth+1)
		}
		var key string
		switch k := d.keys[i].(type) {
		case string:
			key = k
		case markupValue:
			key = string(k)
		case int64:
			key = strconv.FormatInt(k, 10)
		case float64:
			key = jsonFloat(k)
		case bool:
			key = "false"
			if k {
				key = "true"
			}
		case nil:
			key = "null"
		default:
			return typeError("keys must be str, int, float, bool or None, not %s", typeName(k))
		}
		writeJSONString(b, key, o.ensureASCII)
		b.WriteString(o.keySep)
		if err := writeJSON(b, d.vals[i], o, depth+1); err != nil {
			return err
		}
	}
	if o.pretty {
		writeJSONNewline(b, o, depth)
	}
	b.WriteByte('}')
	return nil
}

// writeJSONString encodes a string as Python's json module does: short escapes for the usual
// control characters, \u00XX for the rest below 0x20, and with ensureASCII every non-ASCII
// character as \uXXXX (surrogate pairs above the BMP).
func writeJSONString(b *strings.Builder, s string, ensureASCII bool) {
	b.WriteByte('"')
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"':
				b.WriteString(`\"`)
			case c == '\\':
				b.WriteString(`\\`)
			case c == '\n':
				b.WriteString(`\n`)
			case c == '\r':
				b.WriteString(`\r`)
			case c == '\t':
				b.WriteString(`\t`)
			case c == '\b':
				b.WriteString(`\b`)
			case c == '\f':
				b.WriteString(`\f`)
			case c < 0x20 || (ensureASCII && c == 0x7f):
				b.WriteString(`\u`)
				writeHex(b, uint32(c), 4)
			default:
				b.WriteByte(c)
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if !ensureASCII {
			b.WriteString(s[i : i+size])
		} else if r > 0xffff {
			r -= 0x10000
			b.WriteString(`\u`)
			writeHex(b, uint32(0xd800+(r>>10)), 4)
			b.WriteString(`\u`)
			writeHex(b, uint32(0xdc00+(r&0x3ff)), 4)
		} else {
			b.WriteString(`\u`)
			writeHex(b, uint32(r), 4)
		}
		i += size
	}
	b.WriteByte('"')
}

// sortStable is a stable insertion/merge sort over indices with a comparison that may record
// an error (Python's sorted raises on incomparable items; we finish the sort and report it).
func sortStable(idx []int, less func(a, b int) bool) {
	if len(idx) < 2 {
		return
	}
	tmp := make([]int, len(idx))
	mergeSort(idx, tmp, less)
}

func mergeSort(a, tmp []int, less func(x, y int) bool) {
	if len(a) <= 12 {
		for i := 1; i < len(a); i++ {
			for j := i; j > 0 && less(a[j], a[j-1]); j-- {
				a[j], a[j-1] = a[j-1], a[j]
			}
		}
		return
	}
	mid := len(a) / 2
	mergeSort(a[:mid], tmp[:mid], less)
	mergeSort(a[mid:], tmp[mid:], less)
	copy(tmp, a)
	i, j, k := 0, mid, 0
	for i < mid && j < len(a) {
		if less(tmp[j], tmp[i]) {
			a[k] = tmp[j]
			j++
		} else {
			a[k] = tmp[i]
			i++
		}
		k++
	}
	for ; i < mid; i++ {
		a[k] = tmp[i]
		k++
	}
	for ; j < len(a); j++ {
		a[k] = tmp[j]
		k++
	}
}

// pyIsSpace is Python's str.isspace for one character (which \s in Python's re also follows).
func pyIsSpace(r rune) bool {
	if r < utf8.RuneSelf {
		return r == ' ' || (r >= '\t' && r <= '\r') || (r >= 0x1c && r <= 0x1f)
	}
	return unicode.IsSpace(r)
}

// htmlEscape is markupsafe.escape on a plain string.
func htmlEscape(s string) string {
	if !strings.ContainsAny(s, `&<>"'`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '&':
			b.WriteString("&amp;")
		case '<':
			b.WriteString("&lt;")
		case '>':
			b.WriteString("&gt;")
		case '"':
			b.WriteString("&#34;")
		case '\'':
			b.WriteString("&#39;")
		default:
			b.WriteByte(s[i])
		}
	}
	return b.String()
}

// escapeValue is markupsafe.escape: Markup passes through, anything else is str()-ed and
// escaped.
func escapeValue(v Value) markupValue {
	if m, ok := v.(markupValue); ok {
		return m
	}
	return markupValue(htmlEscape(pyStr(v)))
}
