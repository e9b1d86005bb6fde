package jinja

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

type filterFunc func(r *renderer, v Value, args []Value, kwargs []kwValue) (Value, error)

var builtinFilters map[string]filterFunc

func init() {
	builtinFilters = map[string]filterFunc{
		"abs":            filterAbs,
		"attr":           filterAttr,
		"batch":          filterBatch,
		"capitalize":     strFilter(pyCapitalize),
		"center":         filterCenter,
		"count":          filterLength,
		"d":              filterDefault,
		"default":        filterDefault,
		"dictsort":       filterDictsort,
		"e":              filterEscape,
		"escape":         filterEscape,
		"first":          filterFirst,
		"float":          filterFloat,
		"forceescape":    filterForceEscape,
		"format":         filterFormat,
		"indent":         filterIndent,
		"int":            filterInt,
		"items":          filterItems,
		"join":           filterJoin,
		"last":           filterLast,
		"length":         filterLength,
		"list":           filterList,
		"lower":          strFilter(pyLower),
		"map":            filterMap,
		"max":            minMax(false),
		"min":            minMax(true),
		"reject":         selectOrReject(false, false),
		"rejectattr":     selectOrReject(false, true),
		"replace":        filterReplace,
		"reverse":        filterReverse,
		"round":          filterRound,
		"safe":           filterSafe,
		"select":         selectOrReject(true, false),
		"selectattr":     selectOrReject(true, true),
		"slice":          filterSlice,
		"sort":           filterSort,
		"string":         filterString,
		"sum":            filterSum,
		"title":          filterTitle,
		"tojson":         filterToJSON,
		"trim":           filterTrim,
		"truncate":       filterTruncate,
		"unique":         filterUnique,
		"upper":          strFilter(pyUpper),
		"wordcount":      filterWordcount,
		"filesizeformat": unsupportedFilter("filesizeformat"),
		"groupby":        unsupportedFilter("groupby"),
		"pprint":         unsupportedFilter("pprint"),
		"random":         unsupportedFilter("random"),
		"striptags":      unsupportedFilter("striptags"),
		"urlencode":      unsupportedFilter("urlencode"),
		"urlize":         unsupportedFilter("urlize"),
		"wordwrap":       unsupportedFilter("wordwrap"),
		"xmlattr":        unsupportedFilter("xmlattr"),
	}
}

func unsupportedFilter(name string) filterFunc {
	return func(*renderer, Value, []Value, []kwValue) (Value, error) {
		return nil, unsupported("the " + name + " filter")
	}
}

func noArgs(name string, args []Value, kwargs []kwValue) error {
	if len(args) > 0 || len(kwargs) > 0 {
		return typeError("%s() takes no arguments beyond the value", name)
	}
	return nil
}

// markupIf returns s as Markup where markup is true, and as a plain string otherwise.
func markupIf(markup bool, s string) Value {
	if markup {
		return markupValue(s)
	}
	return s
}

// softStr is markupsafe.soft_str: strings (and Markup) unchanged, anything else str()-ed.
func softStr(v Value) (string, bool) {
	if s, m, ok := isStringy(v); ok {
		return s, m
	}
	return pyStr(v), false
}

func strFilter(f func(string) string) filterFunc {
	return func(r *renderer, v Value, args []Value, kwargs []kwValue) (Value, error) {
		if err := noArgs("filter", args, kwargs); err != nil {
			return nil, err
		}
		s, markup := softStr(v)
		return markupIf(markup, f(s)), nil
	}
}

func filterTrim(r *renderer, v Value, args []Value, kwargs []kwValue) (Value, error) {
	a, err := bindParams("trim", []param{opt("chars", nil)}, args, kwargs)
	if err != nil {
		return nil, err
	}
	s, markup := softStr(v)
	chars, has, err := strArg("strip", a[0], true)
	if err != nil {
		return nil, err
	}
	out := pyStrip(s, "strip", chars, has)
	return markupIf(markup, out), nil
}

func filterLength(r *renderer, v Value, args []Value, kwargs []kwValue) (Value, error) {
	if err := noArgs("length", args, kwargs); err != nil {
		return nil, err
	}
	return length(v)
}

func filterDefault(r *renderer, v Value, args []Value, kwargs []kwValue) (Value, error) {
	a, err := bindParams("default", []param{opt("default_value", ""), opt("boolean", false)}, args, kwargs)
	if err != nil {
		return nil, err
	}
	if _, undef := v.(undefinedValue); undef || (truth(a[1]) && !truth(v)) {
		return a[0], nil
	}
	return v, nil
}

func filterEscape(r *renderer, v Value, args []Value, kwargs []kwValue) (Value, error) {
	if err := noArgs("escape", args, kwargs); err != nil {
		return nil, err
	}
	return escapeValue(v), nil
}

func filterForceEscape(r *renderer, v Value, args []Value, kwargs []kwValue) (Value, error) {
	if err := noArgs("forceescape", args, kwargs); err != nil {
		return nil, err
	}
	s, _ := softStr(v)
	return markupValue(htmlEscape(s)), nil
}

func filterSafe(r *renderer, v Value, args []Value, kwargs []kwValue) (Value, error) {
	if err := noArgs("safe", args, kwargs); err != nil {
		return nil, err
	}
	return markupValue(pyStr(v)), nil
}

func filterString(r *renderer, v Value, args []Value, kwargs []kwValue) (Value, error) {
	if err := noArgs("string", args, kwargs); err != nil {
		return nil, err
	}
	s, markup := softStr(v)
	return markupIf(markup, s), nil
}

func filterFirst(r *renderer, v Value, args []Value, kwargs []kwValue) (Value, error) {
	if err := noArgs("first", args, kwargs); err != nil {
		return nil, err
	}
	if it, ok := v.(*iterator); ok {
		if it.pos < len(it.items) {
			it.pos++
			return it.items[it.pos-1], nil
		}
		return undefinedHint("No first item, sequence was empty."), nil
	}
	items, err := iterate(v)
	if err != nil {
		return nil, err
	}
	if len(items) == 0 {
		return undefinedHint("No first item, sequence was empty."), nil
	}
	return items[0], nil
}

func filterLast(r *renderer, v Value, args []Value, kwargs []kwValue) (Value, error) {
	if err := noArgs("last", args, kwargs); err != nil {
		return nil, err
	}
	if _, ok := v.(*iterator); ok {
		return nil, typeError("'%s' object is not reversible", typeName(v))
	}
	if _, ok := v.(dictView); ok {
		return nil, typeError("'%s' object is not reversible", typeName(v))
	}
	items, err := iterate(v)
	if err != nil {
		return nil, typeError("'%s' object is not reversible", typeName(v))
	}
	if len(items) == 0 {
		return undefinedHint("No last item, sequence was empty."), nil
	}
	return items[len(items)-1], nil
}

func filterJoin(r *renderer, v Value, args []Value, kwargs []kwValue) (Value, error) {
	a, err := bindParams("join", []param{opt("d", ""), opt("attribute", nil)}, args, kwargs)
	if err != nil {
		return nil, err
	}
	items, err := attributeItems(v, a[1])
	if err != nil {
		return nil, err
	}
	sep := pyStr(a[0])
	var b strings.Builder
	for i, it := range items {
		if i > 0 {
			b.WriteString(sep)
		}
		writeValue(&b, it)
		if b.Len() > maxOutput {
			return nil, errOutputTooLarge
		}
	}
	return b.String(), nil
}

func filterList(r *renderer, v Value, args []Value, kwargs []kwValue) (Value, error) {
	if err := noArgs("list", args, kwargs); err != nil {
		return nil, err
	}
	items, err := iterate(v)
	if err != nil {
		return nil, err
	}
	return append([]Value{}, items...), nil
}

func filterItems(r *renderer, v Value, args []Value, kwargs []kwValue) (Value, error) {
	if err := noArgs("items", args, kwargs); err != nil {
		return nil, err
	}
	switch d := v.(type) {
	case undefinedValue:
		return &iterator{kind: "generator"}, nil
	case *Dict:
		return &iterator{kind: "generator", items: dictView{"items", d}.list()}, nil
	}
	return nil, typeError("Can only get item pairs from a mapping.")
}

func filterReplace(r *renderer, v Value, args []Value, kwargs []kwValue) (Value, error) {
	a, err := bindParams("replace", []param{req("old"), req("new"), opt("count", nil)}, args, kwargs)
	if err != nil {
		return nil, err
	}
	count := int64(-1)
	if a[2] != nil {
		n, err := integerArg(a[2])
		if err != nil {
			return nil, err
		}
		count = n
	}
	return pyReplace(pyStr(v), pyStr(a[0]), pyStr(a[1]), count), nil
}

func filterTitle(r *renderer, v Value, args []Value, kwargs []kwValue) (Value, error) {
	if err := noArgs("title", args, kwargs); err != nil {
		return nil, err
	}
	s, _ := softStr(v)
	// do_title splits on runs of -, whitespace, (, {, [ and <, keeping the separators, then
	// upper-cases the first character of every piece and lower-cases the rest.
	isSep := func(r rune) bool { return r == '-' || r == '(' || r == '{' || r == '[' || r == '<' || pyIsSpace(r) }
	var b strings.Builder
	i := 0
	for i < len(s) {
		r0, _ := utf8.DecodeRuneInString(s[i:])
		sep := isSep(r0)
		j := i
		for j < len(s) {
			r, size := utf8.DecodeRuneInString(s[j:])
			if isSep(r) != sep {
				break
			}
			j += size
		}
		piece := s[i:j]
		_, size := utf8.DecodeRuneInString(piece)
		b.WriteString(pyUpper(piece[:size]))
		b.WriteString(pyLower(piece[size:]))
		i = j
	}
	return b.String(), nil
}

func filterCenter(r *renderer, v Value, args []Value, kwargs []kwValue) (Value, error) {
	a, err := bindParams("center", []param{opt("width", int64(80))}, args, kwargs)
	if err != nil {
		return nil, err
	}
	s, markup := softStr(v)
	w, err := integerArg(a[0])
	if err != nil {
		return nil, err
	}
	out := pyPad(s, "center", w, " ")
	return markupIf(markup, out), nil
}

func filterIndent(r *renderer, v Value, args []Value, kwargs []kwValue) (Value, error) {
	a, err := bindParams("indent", []param{opt("width", int64(4)), opt("first", false), opt("blank", false)}, args, kwargs)
	if err != nil {
		return nil, err
	}
	s, markup, ok := isStringy(v)
	if !ok {
		return nil, typeError("unsupported operand type(s) for +=: '%s' and 'str'", typeName(v))
	}
	var ind string
	if w, isStr := a[0].(string); isStr {
		ind = w
	} else {
		n, _, isF, ok := number(a[0])
		if !ok || isF {
			return nil, typeError("can't multiply sequence by non-int of type '%s'", typeName(a[0]))
		}
		if n > 0 {
			if n > maxOutput {
				return nil, errOutputTooLarge
			}
			ind = strings.Repeat(" ", int(n))
		}
	}
	if markup {
		ind = htmlEscape(ind)
	}
	lines := splitLines(s+"\n", false)
	var b strings.Builder
	if truth(a[2]) {
		for i, l := range lines {
			if i > 0 {
				b.WriteString("\n" + ind)
			}
			b.WriteString(l)
		}
	} else {
		for i, l := range lines {
			if i > 0 {
				b.WriteByte('\n')
				if l != "" {
					b.WriteString(ind)
				}
			}
			b.WriteString(l)
		}
	}
	out := b.String()
	if truth(a[1]) {
		out = ind + out
	}
	return markupIf(markup, out), nil
}

func filterWordcount(r *renderer, v Value, args []Value, kwargs []kwValue) (Value, error) {
	if err := noArgs("wordcount", args, kwargs); err != nil {
		return nil, err
	}
	s, _ := softStr(v)
	n, in := int64(0), false
	for _, c := range s {
		word := c == '_' || unicode.IsLetter(c) || unicode.IsNumber(c) || unicode.Is(unicode.Mn, c)
		if word && !in {
			n++
		}
		in = word
	}
	return n, nil
}

func filterTruncate(r *renderer, v Value, args []Value, kwargs []kwValue) (Value, error) {
	a, err := bindParams("truncate", []param{opt("length", int64(255)), opt("killwords", false), opt("end", "..."), opt("leeway", nil)}, args, kwargs)
	if err != nil {
		return nil, err
	}
	s, _ := softStr(v)
	n, _, _, _ := number(a[0])
	end := pyStr(a[2])
	leeway := int64(5)
	if a[3] != nil {
		leeway, _, _, _ = number(a[3])
	}
	rs := []rune(s)
	endLen := int64(utf8.RuneCountInString(end))
	if n < endLen {
		return nil, &Error{Kind: "AssertionError", Msg: sprintf("expected length >= %d, got %d", endLen, n)}
	}
	if int64(len(rs)) <= n+leeway {
		return s, nil
	}
	cut := string(rs[:n-endLen])
	if truth(a[1]) {
		return cut + end, nil
	}
	if i := strings.LastIndexByte(cut, ' '); i >= 0 {
		cut = cut[:i]
	}
	return cut + end, nil
}

func filterFormat(r *renderer, v Value, args []Value, kwargs []kwValue) (Value, error) {
	if len(args) > 0 && len(kwargs) > 0 {
		return nil, &Error{Kind: "FilterArgumentError", Msg: "can't handle positional and keyword arguments at the same time"}
	}
	s, markup := softStr(v)
	var fa Value = tupleValue(args)
	if len(kwargs) > 0 {
		d := NewDict()
		for _, k := range kwargs {
			d.SetString(k.name, k.value)
		}
		fa = d
	}
	if markup {
		out, err := percentFormat(s, escapeArgs(fa))
		return markupValue(out), err
	}
	return percentFormat(s, fa)
}

func filterAttr(r *renderer, v Value, args []Value, kwargs []kwValue) (Value, error) {
	a, err := bindParams("attr", []param{req("name")}, args, kwargs)
	if err != nil {
		return nil, err
	}
	name, ok := a[0].(string)
	if !ok {
		return nil, typeError("attribute name must be string")
	}
	switch o := v.(type) {
	case undefinedValue:
		return nil, o.fail()
	case *namespaceValue:
		if x, ok := o.attrs.Get(name); ok {
			return x, nil
		}
	case *loopContext:
		if x, ok := o.attr(name); ok {
			return x, nil
		}
	}
	if m, ok := method(v, name); ok {
		return m, nil
	}
	return undefinedAttr(v, name), nil
}

// filterToJSON is Jinja's own tojson: sorted keys, then <, >, & and ' escaped as \u00XX, marked
// safe. Hosts such as transformers replace it through Environment.Filters.
func filterToJSON(r *renderer, v Value, args []Value, kwargs []kwValue) (Value, error) {
	a, err := bindParams("tojson", []param{opt("indent", nil)}, args, kwargs)
	if err != nil {
		return nil, err
	}
	o := jsonOptions{ensureASCII: true, itemSep: ", ", keySep: ": ", sortKeys: true}
	if a[0] != nil {
		if o, err = withIndent(o, a[0]); err != nil {
			return nil, err
		}
	}
	s, err := jsonDumps(v, o)
	if err != nil {
		return nil, err
	}
	s = strings.NewReplacer("<", `\u003c`, ">", `\u003e`, "&", `\u0026`, "'", `\u0027`).Replace(s)
	return markupValue(s), nil
}

func withIndent(o jsonOptions, indent Value) (jsonOptions, error) {
	o.pretty = true
	o.itemSep = ","
	if s, ok := indent.(string); ok {
		o.indent = s
		return o, nil
	}
	n, _, isF, ok := number(indent)
	if !ok || isF {
		return o, typeError("can't multiply sequence by non-int of type '%s'", typeName(indent))
	}
	if n > 1024 {
		return o, errOutputTooLarge
	}
	if n > 0 {
		o.indent = strings.Repeat(" ", int(n))
	}
	return o, nil
}

// JSONOptions configures DumpJSON like Python's json.dumps arguments.
type JSONOptions struct {
	EnsureASCII bool
	// Indent is nil for single-line output, an int64 count of spaces or a string.
	Indent Value
	// Separators is nil for the default (", " or "," with an indent, and ": "), or an item
	// separator and a key separator.
	Separators *[2]string
	SortKeys   bool
}

// DumpJSON serializes a template value exactly as Python's json.dumps does with the given
// options (float formatting, escapes, separators, key order).
func DumpJSON(v Value, opts JSONOptions) (string, error) {
	o := jsonOptions{ensureASCII: opts.EnsureASCII, itemSep: ", ", keySep: ": ", sortKeys: opts.SortKeys}
	if opts.Indent != nil {
		var err error
		if o, err = withIndent(o, opts.Indent); err != nil {
			return "", err
		}
	}
	if opts.Separators != nil {
		o.itemSep, o.keySep = opts.Separators[0], opts.Separators[1]
	}
	return jsonDumps(v, o)
}
