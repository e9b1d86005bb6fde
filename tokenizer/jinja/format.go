package jinja

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

// percentFormat is Python's printf-style str % args.
func percentFormat(format string, args Value) (string, error) {
	var positional []Value
	var mapping *Dict
	switch a := args.(type) {
	case tupleValue:
		positional = a
	case *Dict:
		mapping = a
		positional = []Value{a}
	default:
		positional = []Value{a}
	}
	next := 0
	usedMapping := false
	var b strings.Builder
	for i := 0; i < len(format); i++ {
		c := format[i]
		if c != '%' {
			b.WriteByte(c)
			continue
		}
		i++
		if i >= len(format) {
			return "", valueError("incomplete format")
		}
		var arg Value
		haveArg := false
		if format[i] == '(' {
			end := strings.IndexByte(format[i:], ')')
			if end < 0 {
				return "", valueError("incomplete format key")
			}
			if mapping == nil {
				return "", typeError("format requires a mapping")
			}
			key := format[i+1 : i+end]
			v, ok := mapping.Get(key)
			if !ok {
				return "", &Error{Kind: "KeyError", Msg: pyRepr(key)}
			}
			arg, haveArg, usedMapping = v, true, true
			i += end + 1
		}
		spec := fmtSpec{}
		for ; i < len(format) && strings.IndexByte("-+ #0", format[i]) >= 0; i++ {
			spec.flags += string(format[i])
		}
		readNum := func() (int, bool, error) {
			if i < len(format) && format[i] == '*' {
				i++
				if next >= len(positional) {
					return 0, false, typeError("not enough arguments for format string")
				}
				n, _, isF, ok := number(positional[next])
				next++
				if !ok || isF {
					return 0, false, typeError("* wants int")
				}
				return int(n), true, nil
			}
			st := i
			for i < len(format) && isDigit(format[i]) {
				i++
			}
			if st == i {
				return 0, false, nil
			}
			n, err := strconv.Atoi(format[st:i])
			if err != nil || n > maxOutput {
				return 0, false, valueError("width too big")
			}
			return n, true, nil
		}
		var err error
		if spec.width, spec.hasWidth, err = readNum(); err != nil {
			return "", err
		}
		if i < len(format) && format[i] == '.' {
			i++
			if spec.prec, _, err = readNum(); err != nil {
				return "", err
			}
			spec.hasPrec = true
		}
		for i < len(format) && strings.IndexByte("hlL", format[i]) >= 0 {
			i++
		}
		if i >= len(format) {
			return "", valueError("incomplete format")
		}
		verb := format[i]
		if verb == '%' {
			b.WriteByte('%')
			continue
		}
		if !haveArg {
			if next >= len(positional) {
				return "", typeError("not enough arguments for format string")
			}
			arg = positional[next]
			next++
		}
		s, err := formatOne(verb, spec, arg)
		if err != nil {
			return "", err
		}
		b.WriteString(s)
		if b.Len() > maxOutput {
			return "", errOutputTooLarge
		}
	}
	if !usedMapping && next < len(positional) && mapping == nil {
		return "", typeError("not all arguments converted during string formatting")
	}
	return b.String(), nil
}

type fmtSpec struct {
	flags             string
	width, prec       int
	hasWidth, hasPrec bool
}

func formatOne(verb byte, spec fmtSpec, arg Value) (string, error) {
	var body string
	switch verb {
	case 's', 'r', 'a':
		if verb == 's' {
			body = pyStr(arg)
		} else {
			body = pyRepr(arg)
		}
		if spec.hasPrec {
			rs := []rune(body)
			if spec.prec < len(rs) {
				body = string(rs[:spec.prec])
			}
		}
	case 'd', 'i', 'u', 'x', 'X', 'o', 'c':
		i, f, isF, ok := number(arg)
		if !ok {
			return "", typeError("%%%c format: a real number is required, not %s", verb, typeName(arg))
		}
		if isF {
			if verb != 'd' && verb != 'i' && verb != 'u' {
				return "", typeError("%%%c format: an integer is required, not float", verb)
			}
			i = int64(f)
		}
		sign := ""
		if i < 0 {
			sign, i = "-", -i
		} else if strings.Contains(spec.flags, "+") {
			sign = "+"
		} else if strings.Contains(spec.flags, " ") {
			sign = " "
		}
		switch verb {
		case 'x':
			body = strconv.FormatUint(uint64(i), 16)
		case 'X':
			body = strings.ToUpper(strconv.FormatUint(uint64(i), 16))
		case 'o':
			body = strconv.FormatUint(uint64(i), 8)
		case 'c':
			return string(rune(i)), nil
		default:
			body = strconv.FormatUint(uint64(i), 10)
		}
		if spec.hasPrec && len(body) < spec.prec {
			body = strings.Repeat("0", spec.prec-len(body)) + body
		}
		return padNumber(sign, body, spec), nil
	case 'f', 'F', 'e', 'E', 'g', 'G':
		i, f, isF, ok := number(arg)
		if !ok {
			return "", typeError("must be real number, not %s", typeName(arg))
		}
		x := asFloat(i, f, isF)
		prec := 6
		if spec.hasPrec {
			prec = spec.prec
		}
		sign := ""
		if x < 0 || (x == 0 && 1/x < 0) {
			sign, x = "-", -x
		} else if strings.Contains(spec.flags, "+") {
			sign = "+"
		} else if strings.Contains(spec.flags, " ") {
			sign = " "
		}
		body = strconv.FormatFloat(x, verb|0x20, prec, 64)
		if verb == 'g' || verb == 'G' {
			if prec == 0 {
				prec = 1
			}
			body = strconv.FormatFloat(x, 'g', prec, 64)
			if !strings.Contains(spec.flags, "#") {
				body = trimFloatZeros(body)
			}
		}
		body = fixExponent(body)
		if verb >= 'A' && verb <= 'Z' {
			body = strings.ToUpper(body)
		}
		return padNumber(sign, body, spec), nil
	default:
		return "", valueError("unsupported format character '%c'", verb)
	}
	return padString(body, spec), nil
}

func trimFloatZeros(s string) string {
	e := strings.IndexAny(s, "eE")
	mant, exp := s, ""
	if e >= 0 {
		mant, exp = s[:e], s[e:]
	}
	if strings.Contains(mant, ".") {
		mant = strings.TrimRight(strings.TrimRight(mant, "0"), ".")
	}
	return mant + exp
}

// fixExponent makes Go's e+0X exponents match C's two-digit minimum (Go already does) and keeps
// the sign.
func fixExponent(s string) string { return s }

func padNumber(sign, body string, spec fmtSpec) string {
	n := len(sign) + utf8.RuneCountInString(body)
	if !spec.hasWidth || spec.width <= n {
		return sign + body
	}
	pad := spec.width - n
	switch {
	case strings.Contains(spec.flags, "-"):
		return sign + body + strings.Repeat(" ", pad)
	case strings.Contains(spec.flags, "0"):
		return sign + strings.Repeat("0", pad) + body
	}
	return strings.Repeat(" ", pad) + sign + body
}

func padString(body string, spec fmtSpec) string {
	n := utf8.RuneCountInString(body)
	if !spec.hasWidth || spec.width <= n {
		return body
	}
	if strings.Contains(spec.flags, "-") {
		return body + strings.Repeat(" ", spec.width-n)
	}
	return strings.Repeat(" ", spec.width-n) + body
}

// strFormat is a subset of str.format: {} {0} {name} fields with an optional !s / !r
// conversion and no format spec.
func strFormat(format string, args []Value, kwargs []kwValue) (string, error) {
	var b strings.Builder
	auto := 0
	for i := 0; i < len(format); i++ {
		c := format[i]
		if c == '}' {
			if i+1 < len(format) && format[i+1] == '}' {
				b.WriteByte('}')
				i++
				continue
			}
			return "", valueError("Single '}' encountered in format string")
		}
		if c != '{' {
			b.WriteByte(c)
			continue
		}
		if i+1 < len(format) && format[i+1] == '{' {
			b.WriteByte('{')
			i++
			continue
		}
		end := strings.IndexByte(format[i:], '}')
		if end < 0 {
			return "", valueError("expected '}' before end of string")
		}
		field := format[i+1 : i+end]
		i += end
		conv := byte('s')
		if k := strings.IndexByte(field, '!'); k >= 0 {
			if k+2 != len(field) {
				return "", unsupported("str.format conversion " + field)
			}
			conv = field[k+1]
			field = field[:k]
		}
		if strings.ContainsAny(field, ":[.") {
			return "", unsupported("str.format field " + pyRepr(field))
		}
		var v Value
		switch {
		case field == "":
			if auto >= len(args) {
				return "", &Error{Kind: "IndexError", Msg: "Replacement index " + strconv.Itoa(auto) + " out of range for positional args tuple"}
			}
			v = args[auto]
			auto++
		case isDigit(field[0]):
			n, err := strconv.Atoi(field)
			if err != nil || n >= len(args) {
				return "", &Error{Kind: "IndexError", Msg: "Replacement index " + field + " out of range for positional args tuple"}
			}
			v = args[n]
		default:
			found := false
			for _, k := range kwargs {
				if k.name == field {
					v, found = k.value, true
				}
			}
			if !found {
				return "", &Error{Kind: "KeyError", Msg: pyRepr(field)}
			}
		}
		switch conv {
		case 's':
			b.WriteString(pyStr(v))
		case 'r', 'a':
			b.WriteString(pyRepr(v))
		default:
			return "", valueError("Unknown conversion specifier %c", conv)
		}
	}
	return b.String(), nil
}
