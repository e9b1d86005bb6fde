package jinja

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/cases"
	"golang.org/x/text/language"
)

// callMethod calls a method of a str, dict, list, tuple, loop or cycler.
func (r *renderer) callMethod(m *boundMethod, args []Value, kwargs []kwValue) (Value, error) {
	switch recv := m.recv.(type) {
	case string:
		return strMethod(recv, false, m.name, args, kwargs)
	case markupValue:
		switch m.name {
		case "escape":
			return escapeValue(argOr(args, 0, nil)), nil
		case "unescape", "striptags":
			return nil, unsupported("Markup." + m.name)
		}
		return strMethod(string(recv), true, m.name, args, kwargs)
	case *Dict:
		return dictMethod(recv, m.name, args, kwargs)
	case []Value:
		return seqMethod(recv, "list", m.name, args, kwargs)
	case tupleValue:
		return seqMethod(recv, "tuple", m.name, args, kwargs)
	case *loopContext:
		switch m.name {
		case "cycle":
			if len(args) == 0 {
				return nil, typeError("no items for cycling given")
			}
			return args[recv.index0%len(args)], nil
		case "changed":
			if recv.changed != nil && seqEqual(recv.changed, args) {
				return false, nil
			}
			recv.changed = append([]Value{}, args...)
			return true, nil
		}
	case *cycler:
		switch m.name {
		case "next":
			v := recv.items[recv.pos]
			recv.pos = (recv.pos + 1) % len(recv.items)
			return v, nil
		case "reset":
			recv.pos = 0
			return nil, nil
		}
	}
	return nil, unsupported(typeName(m.recv) + "." + m.name)
}

func unsupported(what string) error {
	return &Error{Kind: "NotImplementedError", Msg: what + " is not supported by this Jinja implementation"}
}

func argOr(args []Value, i int, def Value) Value {
	if i < len(args) {
		return args[i]
	}
	return def
}

// strArg returns an argument that must be a str (or None when allowNone).
func strArg(method string, v Value, allowNone bool) (string, bool, error) {
	if v == nil && allowNone {
		return "", false, nil
	}
	if s, _, ok := isStringy(v); ok {
		return s, true, nil
	}
	if allowNone {
		return "", false, typeError("%s arg must be None or str", method)
	}
	return "", false, typeError("must be str, not %s", typeName(v))
}

func strMethod(s string, markup bool, name string, args []Value, kwargs []kwValue) (Value, error) {
	wrap := func(out string) Value { return markupIf(markup, out) }
	// Markup's wrapped methods escape their string arguments.
	if markup {
		for i, a := range args {
			if as, m, ok := isStringy(a); ok && !m {
				args[i] = htmlEscape(as)
			}
		}
	}
	switch name {
	case "strip", "lstrip", "rstrip":
		a, err := bindParams(name, []param{opt("chars", nil)}, args, kwargs)
		if err != nil {
			return nil, err
		}
		chars, has, err := strArg(name, a[0], true)
		if err != nil {
			return nil, err
		}
		return wrap(pyStrip(s, name, chars, has)), nil
	case "upper":
		return wrap(pyUpper(s)), nil
	case "lower":
		return wrap(pyLower(s)), nil
	case "title":
		return wrap(pyTitle(s)), nil
	case "capitalize":
		return wrap(pyCapitalize(s)), nil
	case "swapcase":
		var b strings.Builder
		for _, c := range s {
			switch {
			case unicode.IsUpper(c):
				b.WriteString(pyLower(string(c)))
			case unicode.IsLower(c):
				b.WriteString(pyUpper(string(c)))
			default:
				b.WriteRune(c)
			}
		}
		return wrap(b.String()), nil
	case "casefold":
		return wrap(cases.Fold().String(s)), nil
	case "split", "rsplit":
		a, err := bindParams(name, []param{opt("sep", nil), opt("maxsplit", int64(-1))}, args, kwargs)
		if err != nil {
			return nil, err
		}
		sep, has, err := strArg(name, a[0], true)
		if err != nil {
			return nil, err
		}
		n, err := integerArg(a[1])
		if err != nil {
			return nil, err
		}
		if has && sep == "" {
			return nil, valueError("empty separator")
		}
		parts := pySplit(s, sep, has, n, name == "rsplit")
		out := make([]Value, len(parts))
		for i, p := range parts {
			out[i] = wrap(p)
		}
		return out, nil
	case "splitlines":
		a, err := bindParams(name, []param{opt("keepends", false)}, args, kwargs)
		if err != nil {
			return nil, err
		}
		lines := splitLines(s, truth(a[0]))
		out := make([]Value, len(lines))
		for i, l := range lines {
			out[i] = wrap(l)
		}
		return out, nil
	case "startswith", "endswith":
		if len(args) < 1 || len(args) > 3 || len(kwargs) > 0 {
			return nil, typeError("%s() takes from 1 to 3 positional arguments", name)
		}
		sub, err := subRange(s, args[1:])
		if err != nil {
			return nil, err
		}
		var prefixes []Value
		if t, ok := args[0].(tupleValue); ok {
			prefixes = t
		} else {
			prefixes = []Value{args[0]}
		}
		for _, p := range prefixes {
			ps, ok := p.(string)
			if !ok {
				if m, isM := p.(markupValue); isM {
					ps = string(m)
				} else {
					return nil, typeError("%s first arg must be str or a tuple of str, not %s", name, typeName(p))
				}
			}
			if (name == "startswith" && strings.HasPrefix(sub, ps)) || (name == "endswith" && strings.HasSuffix(sub, ps)) {
				return true, nil
			}
		}
		return false, nil
	case "replace":
		a, err := bindParams(name, []param{req("old"), req("new"), opt("count", int64(-1))}, args, kwargs)
		if err != nil {
			return nil, err
		}
		old, _, err := strArg(name, a[0], false)
		if err != nil {
			return nil, err
		}
		nw, _, err := strArg(name, a[1], false)
		if err != nil {
			return nil, err
		}
		n, err := integerArg(a[2])
		if err != nil {
			return nil, err
		}
		return wrap(pyReplace(s, old, nw, n)), nil
	case "find", "rfind", "index", "rindex", "count":
		if len(args) < 1 || len(args) > 3 {
			return nil, typeError("%s() takes from 1 to 3 arguments", name)
		}
		sub, _, err := strArg(name, args[0], false)
		if err != nil {
			return nil, err
		}
		return strFind(s, name, sub, args[1:])
	case "join":
		if len(args) != 1 {
			return nil, typeError("join() takes exactly one argument")
		}
		items, err := iterate(args[0])
		if err != nil {
			return nil, err
		}
		parts := make([]string, len(items))
		for i, it := range items {
			is, m, ok := isStringy(it)
			if !ok {
				return nil, typeError("sequence item %d: expected str instance, %s found", i, typeName(it))
			}
			if markup && !m {
				is = htmlEscape(is)
			}
			parts[i] = is
		}
		return wrap(strings.Join(parts, s)), nil
	case "format":
		out, err := strFormat(s, args, kwargs)
		if err != nil {
			return nil, err
		}
		return wrap(out), nil
	case "center", "ljust", "rjust":
		a, err := bindParams(name, []param{req("width"), opt("fillchar", " ")}, args, kwargs)
		if err != nil {
			return nil, err
		}
		w, err := integerArg(a[0])
		if err != nil {
			return nil, err
		}
		fill, _, err := strArg(name, a[1], false)
		if err != nil || utf8.RuneCountInString(fill) != 1 {
			return nil, typeError("The fill character must be exactly one character long")
		}
		return wrap(pyPad(s, name, w, fill)), nil
	case "zfill":
		if len(args) != 1 {
			return nil, typeError("zfill() takes exactly one argument")
		}
		w, err := integerArg(args[0])
		if err != nil {
			return nil, err
		}
		n := int64(utf8.RuneCountInString(s))
		if w <= n {
			return wrap(s), nil
		}
		pad := strings.Repeat("0", int(w-n))
		if s != "" && (s[0] == '+' || s[0] == '-') {
			return wrap(s[:1] + pad + s[1:]), nil
		}
		return wrap(pad + s), nil
	case "removeprefix", "removesuffix":
		if len(args) != 1 {
			return nil, typeError("%s() takes exactly one argument", name)
		}
		a, _, err := strArg(name, args[0], false)
		if err != nil {
			return nil, err
		}
		if name == "removeprefix" {
			return wrap(strings.TrimPrefix(s, a)), nil
		}
		return wrap(strings.TrimSuffix(s, a)), nil
	case "partition", "rpartition":
		if len(args) != 1 {
			return nil, typeError("%s() takes exactly one argument", name)
		}
		sep, _, err := strArg(name, args[0], false)
		if err != nil {
			return nil, err
		}
		if sep == "" {
			return nil, valueError("empty separator")
		}
		var i int
		if name == "partition" {
			i = strings.Index(s, sep)
		} else {
			i = strings.LastIndex(s, sep)
		}
		if i < 0 {
			if name == "partition" {
				return tupleValue{wrap(s), wrap(""), wrap("")}, nil
			}
			return tupleValue{wrap(""), wrap(""), wrap(s)}, nil
		}
		return tupleValue{wrap(s[:i]), wrap(sep), wrap(s[i+len(sep):])}, nil
	case "isdigit", "isdecimal", "isnumeric", "isalpha", "isalnum", "isspace", "islower", "isupper", "isascii", "istitle", "isidentifier", "isprintable":
		return strPredicate(s, name), nil
	case "expandtabs":
		return nil, unsupported("str.expandtabs")
	}
	return nil, unsupported("str." + name)
}

// subRange applies optional start/end arguments (as str.startswith takes them) to s.
func subRange(s string, bounds []Value) (string, error) {
	if len(bounds) == 0 {
		return s, nil
	}
	var end Value
	if len(bounds) > 1 {
		end = bounds[1]
	}
	v, err := sliceValue(s, bounds[0], end, nil)
	if err != nil {
		return "", err
	}
	return v.(string), nil
}

func strFind(s, name, sub string, bounds []Value) (Value, error) {
	rs := []rune(s)
	n := int64(len(rs))
	start, end := int64(0), n
	for k, v := range bounds {
		if v == nil {
			continue
		}
		i, _, isF, ok := number(v)
		if !ok || isF {
			return nil, typeError("slice indices must be integers or None or have an __index__ method")
		}
		if k == 0 {
			start = i
		} else {
			end = i
		}
	}
	// CPython's ADJUST_INDICES.
	if end > n {
		end = n
	} else if end < 0 {
		end = max(end+n, 0)
	}
	if start < 0 {
		start = max(start+n, 0)
	}
	subLen := int64(utf8.RuneCountInString(sub))
	if end-start < subLen || start > n {
		switch name {
		case "count":
			return int64(0), nil
		case "index", "rindex":
			return nil, valueError("substring not found")
		}
		return int64(-1), nil
	}
	hay := string(rs[start:end])
	switch name {
	case "count":
		if sub == "" {
			return end - start + 1, nil
		}
		return int64(strings.Count(hay, sub)), nil
	}
	var i int
	if name == "find" || name == "index" {
		i = strings.Index(hay, sub)
	} else {
		i = strings.LastIndex(hay, sub)
	}
	if i < 0 {
		if name == "index" || name == "rindex" {
			return nil, valueError("substring not found")
		}
		return int64(-1), nil
	}
	return start + int64(utf8.RuneCountInString(hay[:i])), nil
}

func strPredicate(s, name string) bool {
	if s == "" {
		return name == "isascii"
	}
	switch name {
	case "islower", "isupper":
		cased := false
		for _, c := range s {
			if unicode.IsUpper(c) || unicode.IsTitle(c) {
				if name == "islower" {
					return false
				}
				cased = true
			} else if unicode.IsLower(c) {
				if name == "isupper" {
					return false
				}
				cased = true
			}
		}
		return cased
	case "istitle":
		cased, prevCased := false, false
		for _, c := range s {
			switch {
			case unicode.IsUpper(c) || unicode.IsTitle(c):
				if prevCased {
					return false
				}
				prevCased, cased = true, true
			case unicode.IsLower(c):
				if !prevCased {
					return false
				}
				prevCased, cased = true, true
			default:
				prevCased = false
			}
		}
		return cased
	case "isidentifier":
		for i, c := range s {
			if !(c == '_' || unicode.IsLetter(c) || (i > 0 && isIdentContinue(c))) {
				return false
			}
		}
		return true
	}
	for _, c := range s {
		var ok bool
		switch name {
		case "isdigit", "isdecimal":
			ok = unicode.IsDigit(c)
		case "isnumeric":
			ok = unicode.IsNumber(c)
		case "isalpha":
			ok = unicode.IsLetter(c)
		case "isalnum":
			ok = unicode.IsLetter(c) || unicode.IsNumber(c)
		case "isspace":
			ok = pyIsSpace(c)
		case "isascii":
			ok = c < utf8.RuneSelf
		case "isprintable":
			ok = unicode.IsPrint(c)
		}
		if !ok {
			return false
		}
	}
	return true
}

func pyPad(s, how string, width int64, fill string) string {
	n := int64(utf8.RuneCountInString(s))
	if width <= n {
		return s
	}
	if width-n > maxOutput {
		width = n + maxOutput
	}
	total := width - n
	var left int64
	switch how {
	case "ljust":
		left = 0
	case "rjust":
		left = total
	default:
		// CPython's center puts the odd extra space on the left when the width is odd.
		left = total/2 + (total & width & 1)
	}
	return strings.Repeat(fill, int(left)) + s + strings.Repeat(fill, int(total-left))
}

func pyStrip(s, how, chars string, has bool) string {
	f := pyIsSpace
	if has {
		f = func(r rune) bool { return strings.ContainsRune(chars, r) }
	}
	switch how {
	case "lstrip":
		return strings.TrimLeftFunc(s, f)
	case "rstrip":
		return strings.TrimRightFunc(s, f)
	}
	return strings.TrimFunc(s, f)
}

// pySplit is str.split / str.rsplit. Without a separator, runs of whitespace separate and
// leading/trailing whitespace yields no empty strings.
func pySplit(s, sep string, hasSep bool, maxsplit int64, fromRight bool) []string {
	if !hasSep {
		var fields []string
		if !fromRight {
			rest := s
			for {
				rest = strings.TrimLeftFunc(rest, pyIsSpace)
				if rest == "" {
					return fields
				}
				if maxsplit >= 0 && int64(len(fields)) == maxsplit {
					return append(fields, rest)
				}
				i := strings.IndexFunc(rest, pyIsSpace)
				if i < 0 {
					return append(fields, rest)
				}
				fields = append(fields, rest[:i])
				rest = rest[i:]
			}
		}
		rest := s
		for {
			rest = strings.TrimRightFunc(rest, pyIsSpace)
			if rest == "" {
				break
			}
			if maxsplit >= 0 && int64(len(fields)) == maxsplit {
				fields = append(fields, rest)
				break
			}
			i := strings.LastIndexFunc(rest, pyIsSpace)
			if i < 0 {
				fields = append(fields, rest)
				break
			}
			_, size := utf8.DecodeRuneInString(rest[i:])
			fields = append(fields, rest[i+size:])
			rest = rest[:i]
		}
		for i, j := 0, len(fields)-1; i < j; i, j = i+1, j-1 {
			fields[i], fields[j] = fields[j], fields[i]
		}
		return fields
	}
	if maxsplit < 0 {
		return strings.Split(s, sep)
	}
	if !fromRight {
		return strings.SplitN(s, sep, int(min(maxsplit, int64(len(s)))+1))
	}
	var parts []string
	rest := s
	for int64(len(parts)) < maxsplit {
		i := strings.LastIndex(rest, sep)
		if i < 0 {
			break
		}
		parts = append(parts, rest[i+len(sep):])
		rest = rest[:i]
	}
	parts = append(parts, rest)
	for i, j := 0, len(parts)-1; i < j; i, j = i+1, j-1 {
		parts[i], parts[j] = parts[j], parts[i]
	}
	return parts
}

// splitLines is str.splitlines, which breaks on more than \n.
func splitLines(s string, keepEnds bool) []string {
	var lines []string
	start := 0
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		brk := 0
		switch r {
		case '\n', '\v', '\f', 0x1c, 0x1d, 0x1e, 0x85, 0x2028, 0x2029:
			brk = size
		case '\r':
			brk = 1
			if i+1 < len(s) && s[i+1] == '\n' {
				brk = 2
			}
		}
		if brk == 0 {
			i += size
			continue
		}
		end := i
		if keepEnds {
			end = i + brk
		}
		lines = append(lines, s[start:end])
		i += brk
		start = i
	}
	if start < len(s) {
		lines = append(lines, s[start:])
	}
	return lines
}

func pyReplace(s, old, nw string, count int64) string {
	if count < 0 {
		return strings.ReplaceAll(s, old, nw)
	}
	if count > int64(len(s))+1 {
		count = int64(len(s)) + 1
	}
	return strings.Replace(s, old, nw, int(count))
}

// pyUpper and pyLower use full Unicode case mapping (ß → SS), as Python's str methods do. A
// cases.Caser holds state, so each non-ASCII call makes its own.
func pyUpper(s string) string {
	if isASCII(s) {
		return strings.ToUpper(s)
	}
	return cases.Upper(language.Und).String(s)
}

func pyLower(s string) string {
	if isASCII(s) {
		return strings.ToLower(s)
	}
	return cases.Lower(language.Und).String(s)
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

func isCased(r rune) bool { return unicode.IsUpper(r) || unicode.IsLower(r) || unicode.IsTitle(r) }

// pyTitle is str.title: a cased character after an uncased one is title-cased, the others
// lower-cased.
func pyTitle(s string) string {
	var b strings.Builder
	prevCased := false
	for _, r := range s {
		if prevCased {
			b.WriteString(pyLower(string(r)))
		} else {
			b.WriteRune(unicode.ToTitle(r))
		}
		prevCased = isCased(r)
	}
	return b.String()
}

// pyCapitalize is str.capitalize (Python 3.8+): the first character title-cased, the rest
// lower-cased.
func pyCapitalize(s string) string {
	r, size := utf8.DecodeRuneInString(s)
	if size == 0 {
		return s
	}
	return string(unicode.ToTitle(r)) + pyLower(s[size:])
}

func dictMethod(d *Dict, name string, args []Value, kwargs []kwValue) (Value, error) {
	switch name {
	case "get":
		a, err := bindParams("get", []param{req("key"), opt("default", nil)}, args, kwargs)
		if err != nil {
			return nil, err
		}
		if _, err := hashKey(a[0]); err != nil {
			return nil, err
		}
		if v, ok := d.Get(a[0]); ok {
			return v, nil
		}
		return a[1], nil
	case "items", "keys", "values":
		if len(args) > 0 || len(kwargs) > 0 {
			return nil, typeError("dict.%s() takes no arguments", name)
		}
		return dictView{name, d}, nil
	case "copy":
		c := NewDict()
		for i, k := range d.keys {
			_ = c.Set(k, d.vals[i])
		}
		return c, nil
	}
	return nil, unsupported("dict." + name)
}

func seqMethod(items []Value, kind, name string, args []Value, kwargs []kwValue) (Value, error) {
	switch name {
	case "count":
		if len(args) != 1 {
			return nil, typeError("count() takes exactly one argument")
		}
		n := int64(0)
		for _, it := range items {
			if pyEquals(it, args[0]) {
				n++
			}
		}
		return n, nil
	case "index":
		if len(args) < 1 {
			return nil, typeError("index expected at least 1 argument, got 0")
		}
		for i, it := range items {
			if pyEquals(it, args[0]) {
				return int64(i), nil
			}
		}
		return nil, valueError("%s is not in %s", pyRepr(args[0]), kind)
	case "copy":
		if kind == "list" {
			return append([]Value{}, items...), nil
		}
	}
	// list.pop and list.clear mutate in place; the sandbox allows them but chat templates do
	// not use them, and values here are shared.
	return nil, unsupported(kind + "." + name)
}
