package jinja

import (
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

type tokenKind uint8

const (
	tokEOF tokenKind = iota
	tokData
	tokVarBegin
	tokVarEnd
	tokBlockBegin
	tokBlockEnd
	tokName
	tokString
	tokInt
	tokFloat
	tokOp
)

type token struct {
	kind tokenKind
	line int
	s    string  // data, name, operator, decoded string
	i    int64   // integer literal
	f    float64 // float literal
}

func (t token) describe() string {
	switch t.kind {
	case tokEOF:
		return "end of template"
	case tokData:
		return "template data / text"
	case tokVarBegin:
		return "begin of print statement"
	case tokVarEnd:
		return "end of print statement"
	case tokBlockBegin:
		return "begin of statement block"
	case tokBlockEnd:
		return "end of statement block"
	case tokName, tokOp:
		return t.s
	case tokString:
		return "string"
	case tokInt:
		return "integer"
	case tokFloat:
		return "float"
	}
	return "?"
}

// operators sorted longest first, as Jinja's operator regex tries them.
var operators = []string{"//", "**", "==", "!=", ">=", "<=", "+", "-", "/", "*", "%", "~", "[", "]", "(", ")", "{", "}", ">", "<", "=", ".", ":", "|", ",", ";"}

// lexer turns template source into tokens exactly where Jinja2's regex lexer does: the same
// data boundaries, the same whitespace removed by trim_blocks, lstrip_blocks, "-" and "+".
type lexer struct {
	src          string
	pos          int
	line         int
	trimBlocks   bool
	lstripBlocks bool
	lineStarting bool
	toks         []token
}

// normalizeNewlines makes every \r\n and \r a \n and, unless keep is set, drops one trailing
// newline, as Jinja2's tokeniter does before lexing.
func normalizeNewlines(src string, keep bool) string {
	if strings.IndexByte(src, '\r') >= 0 {
		src = strings.ReplaceAll(src, "\r\n", "\n")
		src = strings.ReplaceAll(src, "\r", "\n")
	}
	if !keep && strings.HasSuffix(src, "\n") {
		src = src[:len(src)-1]
	}
	return src
}

func lex(src string, o Options) ([]token, error) {
	l := &lexer{
		src:          normalizeNewlines(src, o.KeepTrailingNewline),
		line:         1,
		trimBlocks:   o.TrimBlocks,
		lstripBlocks: o.LStripBlocks,
		lineStarting: true,
	}
	if err := l.run(); err != nil {
		return nil, err
	}
	l.toks = append(l.toks, token{kind: tokEOF, line: l.line})
	return l.toks, nil
}

func (l *lexer) errorf(format string, args ...any) error {
	return &Error{Kind: "TemplateSyntaxError", Msg: sprintf(format, args...), Line: l.line}
}

// advance moves to p, counting lines.
func (l *lexer) advance(p int) {
	l.line += strings.Count(l.src[l.pos:p], "\n")
	l.pos = p
}

func (l *lexer) emitData(text string) {
	if text != "" {
		l.toks = append(l.toks, token{kind: tokData, line: l.line, s: text})
	}
}

// stripText applies the whitespace control of the tag that follows text: "-" strips all
// trailing whitespace; otherwise lstrip_blocks removes spaces and tabs between the last newline
// (or a line start) and a block or comment tag, never before a variable tag, never with "+".
func (l *lexer) stripText(text string, sign byte, variable bool) string {
	if sign == '-' {
		return strings.TrimRightFunc(text, pyIsSpace)
	}
	if sign != '+' && l.lstripBlocks && !variable {
		lpos := strings.LastIndexByte(text, '\n') + 1
		if lpos > 0 || l.lineStarting {
			rest := text[lpos:]
			if rest != "" && strings.TrimLeftFunc(rest, pyIsSpace) == "" {
				return text[:lpos]
			}
		}
	}
	return text
}

func (l *lexer) run() error {
	src := l.src
	for l.pos < len(src) {
		p := l.pos
		// Find the next tag start.
		for {
			i := strings.IndexByte(src[p:], '{')
			if i < 0 {
				p = -1
				break
			}
			p += i
			if p+1 < len(src) && (src[p+1] == '{' || src[p+1] == '%' || src[p+1] == '#') {
				break
			}
			p++
		}
		if p < 0 {
			l.emitData(src[l.pos:])
			l.advance(len(src))
			return nil
		}
		kind := src[p+1]
		start := p + 2
		var sign byte
		if start < len(src) && (src[start] == '-' || src[start] == '+') {
			sign = src[start]
			start++
		}
		text := src[l.pos:p]
		if kind == '%' {
			if end, ok := l.matchRawBegin(start); ok {
				l.emitData(l.stripText(text, sign, false))
				l.advance(end)
				l.lineStarting = src[end-1] == '\n'
				if err := l.lexRaw(); err != nil {
					return err
				}
				continue
			}
		}
		l.emitData(l.stripText(text, sign, kind == '{'))
		l.advance(start)
		l.lineStarting = false
		switch kind {
		case '#':
			if err := l.lexComment(); err != nil {
				return err
			}
		case '%':
			l.toks = append(l.toks, token{kind: tokBlockBegin, line: l.line})
			if err := l.lexTag(false); err != nil {
				return err
			}
		case '{':
			l.toks = append(l.toks, token{kind: tokVarBegin, line: l.line})
			if err := l.lexTag(true); err != nil {
				return err
			}
		}
	}
	return nil
}

func (l *lexer) skipSpace(p int) int {
	for p < len(l.src) {
		r, size := utf8.DecodeRuneInString(l.src[p:])
		if !pyIsSpace(r) {
			break
		}
		p += size
	}
	return p
}

// matchRawBegin matches `\s*raw\s*(-%}\s*|%})` at p (after "{%" and its sign).
func (l *lexer) matchRawBegin(p int) (int, bool) {
	p = l.skipSpace(p)
	if !strings.HasPrefix(l.src[p:], "raw") {
		return 0, false
	}
	p = l.skipSpace(p + 3)
	switch {
	case strings.HasPrefix(l.src[p:], "-%}"):
		return l.skipSpace(p + 3), true
	case strings.HasPrefix(l.src[p:], "%}"):
		return p + 2, true
	}
	return 0, false
}

// blockEnd matches the end of a block (or comment, with close "#}") at p: "+%}", "-%}" with
// all following whitespace, or "%}" with one newline when trim_blocks is on.
func (l *lexer) blockEnd(p int, close string) (int, bool) {
	src := l.src
	switch {
	case strings.HasPrefix(src[p:], "+"+close):
		return p + 3, true
	case strings.HasPrefix(src[p:], "-"+close):
		return l.skipSpace(p + 3), true
	case strings.HasPrefix(src[p:], close):
		end := p + 2
		if l.trimBlocks && end < len(src) && src[end] == '\n' {
			end++
		}
		return end, true
	}
	return 0, false
}

func (l *lexer) lexRaw() error {
	src := l.src
	for q := l.pos; ; {
		i := strings.Index(src[q:], "{%")
		if i < 0 {
			return l.errorf("Missing end of raw directive")
		}
		q += i
		p := q + 2
		var sign byte
		if p < len(src) && (src[p] == '-' || src[p] == '+') {
			sign = src[p]
			p++
		}
		p = l.skipSpace(p)
		if strings.HasPrefix(src[p:], "endraw") {
			if end, ok := l.blockEnd(l.skipSpace(p+6), "%}"); ok {
				l.emitData(l.stripText(src[l.pos:q], sign, false))
				l.advance(end)
				l.lineStarting = src[end-1] == '\n'
				return nil
			}
		}
		q += 2
	}
}

func (l *lexer) lexComment() error {
	src := l.src
	h := strings.Index(src[l.pos:], "#}")
	if h < 0 {
		return l.errorf("Missing end of comment tag")
	}
	q := l.pos + h
	if q > l.pos && (src[q-1] == '-' || src[q-1] == '+') {
		q--
	}
	end, _ := l.blockEnd(q, "#}")
	l.advance(end)
	l.lineStarting = src[end-1] == '\n'
	return nil
}

// lexTag reads the tokens of a {{ }} or {% %} tag, through its end.
func (l *lexer) lexTag(variable bool) error {
	src := l.src
	var balance []byte
	for {
		if l.pos >= len(src) {
			// Jinja reports the missing end tag when the parser meets the end of input.
			return nil
		}
		p := l.pos
		if len(balance) == 0 {
			if variable {
				if strings.HasPrefix(src[p:], "-}}") {
					end := l.skipSpace(p + 3)
					l.toks = append(l.toks, token{kind: tokVarEnd, line: l.line})
					l.advance(end)
					l.lineStarting = src[end-1] == '\n'
					return nil
				}
				if strings.HasPrefix(src[p:], "}}") {
					l.toks = append(l.toks, token{kind: tokVarEnd, line: l.line})
					l.advance(p + 2)
					return nil
				}
			} else if end, ok := l.blockEnd(p, "%}"); ok {
				l.toks = append(l.toks, token{kind: tokBlockEnd, line: l.line})
				l.advance(end)
				l.lineStarting = src[end-1] == '\n'
				return nil
			}
		}
		r, size := utf8.DecodeRuneInString(src[p:])
		switch {
		case pyIsSpace(r):
			end := l.skipSpace(p)
			l.advance(end)
			l.lineStarting = src[end-1] == '\n'
			continue
		case r >= '0' && r <= '9':
			if end, f, ok := l.matchFloat(p); ok {
				l.toks = append(l.toks, token{kind: tokFloat, line: l.line, f: f})
				l.advance(end)
				continue
			}
			end, v, err := l.matchInt(p)
			if err != nil {
				return err
			}
			l.toks = append(l.toks, token{kind: tokInt, line: l.line, i: v})
			l.advance(end)
			continue
		case r == '_' || unicode.IsLetter(r) || (r >= utf8.RuneSelf && isIdentContinue(r)):
			end := p + size
			for end < len(src) {
				r2, s2 := utf8.DecodeRuneInString(src[end:])
				if !isIdentContinue(r2) {
					break
				}
				end += s2
			}
			name := src[p:end]
			if !isIdentifier(name) {
				return l.errorf("Invalid character in identifier")
			}
			l.toks = append(l.toks, token{kind: tokName, line: l.line, s: name})
			l.advance(end)
			continue
		case r == '\'' || r == '"':
			end, ok := matchString(src, p)
			if ok {
				s, err := decodeStringLiteral(src[p+1 : end-1])
				if err != nil {
					return l.errorf("%s", err.Error())
				}
				l.toks = append(l.toks, token{kind: tokString, line: l.line, s: s})
				l.advance(end)
				continue
			}
		}
		op := ""
		for _, o := range operators {
			if strings.HasPrefix(src[p:], o) {
				op = o
				break
			}
		}
		if op == "" {
			return l.errorf("unexpected char %s at %d", pyRepr(string(r)), utf8.RuneCountInString(src[:p]))
		}
		switch op {
		case "{":
			balance = append(balance, '}')
		case "(":
			balance = append(balance, ')')
		case "[":
			balance = append(balance, ']')
		case "}", ")", "]":
			if len(balance) == 0 {
				return l.errorf("unexpected '%s'", op)
			}
			want := balance[len(balance)-1]
			balance = balance[:len(balance)-1]
			if want != op[0] {
				return l.errorf("unexpected '%s', expected '%c'", op, want)
			}
		}
		l.toks = append(l.toks, token{kind: tokOp, line: l.line, s: op})
		l.advance(p + len(op))
	}
}

func isIdentContinue(r rune) bool {
	return r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.Is(unicode.Mn, r) || unicode.Is(unicode.Mc, r) || unicode.Is(unicode.Nl, r) || unicode.Is(unicode.Pc, r)
}

func isIdentifier(s string) bool {
	r, _ := utf8.DecodeRuneInString(s)
	return r == '_' || unicode.IsLetter(r) || unicode.Is(unicode.Nl, r)
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// digitRun matches (\d+_)*\d+ at p.
func digitRun(s string, p int) (int, bool) {
	if p >= len(s) || !isDigit(s[p]) {
		return p, false
	}
	for {
		for p < len(s) && isDigit(s[p]) {
			p++
		}
		if p+1 < len(s) && s[p] == '_' && isDigit(s[p+1]) {
			p++
			continue
		}
		return p, true
	}
}

// matchFloat matches Jinja's float literal at p: digits with a fraction, an exponent or both,
// not directly after a dot.
func (l *lexer) matchFloat(p int) (int, float64, bool) {
	src := l.src
	if p > 0 && src[p-1] == '.' {
		return 0, 0, false
	}
	end, _ := digitRun(src, p)
	frac := false
	if end < len(src) && src[end] == '.' {
		if e2, ok := digitRun(src, end+1); ok {
			end = e2
			frac = true
		}
	}
	if end < len(src) && (src[end] == 'e' || src[end] == 'E') {
		q := end + 1
		if q < len(src) && (src[q] == '+' || src[q] == '-') {
			q++
		}
		if e2, ok := digitRun(src, q); ok {
			end = e2
			frac = true
		}
	}
	if !frac {
		return 0, 0, false
	}
	f, err := strconv.ParseFloat(strings.ReplaceAll(src[p:end], "_", ""), 64)
	if err != nil {
		// Python's float() gives inf for huge literals; ParseFloat reports ErrRange with ±Inf.
		if ne, ok := err.(*strconv.NumError); !ok || ne.Err != strconv.ErrRange {
			return 0, 0, false
		}
	}
	return end, f, true
}

// matchInt matches Jinja's integer literal at p (binary, octal, hex, decimal, zeros).
func (l *lexer) matchInt(p int) (int, int64, error) {
	src := l.src
	lower := func(i int) byte {
		if i < len(src) {
			c := src[i]
			if c >= 'A' && c <= 'Z' {
				c += 'a' - 'A'
			}
			return c
		}
		return 0
	}
	prefixed := func(base int, ok func(byte) bool) (int, bool) {
		q := p + 2
		n := 0
		for {
			if lower(q) == '_' && ok(lower(q+1)) {
				q += 2
			} else if ok(lower(q)) {
				q++
			} else {
				break
			}
			n++
		}
		return q, n > 0
	}
	if src[p] == '0' {
		var base int
		var ok func(byte) bool
		switch lower(p + 1) {
		case 'b':
			base, ok = 2, func(c byte) bool { return c == '0' || c == '1' }
		case 'o':
			base, ok = 8, func(c byte) bool { return c >= '0' && c <= '7' }
		case 'x':
			base, ok = 16, func(c byte) bool { return isDigit(c) || (c >= 'a' && c <= 'f') }
		}
		if base != 0 {
			if end, matched := prefixed(base, ok); matched {
				v, err := strconv.ParseInt(strings.ReplaceAll(src[p+2:end], "_", ""), base, 64)
				if err != nil {
					return 0, 0, l.errorf("integer literal %s out of range", src[p:end])
				}
				return end, v, nil
			}
		}
		end := p + 1
		for {
			if end+1 < len(src) && src[end] == '_' && src[end+1] == '0' {
				end += 2
			} else if end < len(src) && src[end] == '0' {
				end++
			} else {
				break
			}
		}
		return end, 0, nil
	}
	end := p + 1
	for {
		if end+1 < len(src) && src[end] == '_' && isDigit(src[end+1]) {
			end += 2
		} else if end < len(src) && isDigit(src[end]) {
			end++
		} else {
			break
		}
	}
	v, err := strconv.ParseInt(strings.ReplaceAll(src[p:end], "_", ""), 10, 64)
	if err != nil {
		return 0, 0, l.errorf("integer literal %s out of range", src[p:end])
	}
	return end, v, nil
}

// matchString matches a quoted string literal at p; backslash escapes any character.
func matchString(s string, p int) (int, bool) {
	q := s[p]
	for i := p + 1; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case q:
			return i + 1, true
		}
	}
	return 0, false
}

// decodeStringLiteral reproduces Jinja's
// value.encode("ascii", "backslashreplace").decode("unicode-escape"): non-ASCII characters
// become \x/\u/\U escapes first, then Python's escape sequences are decoded.
func decodeStringLiteral(raw string) (string, error) {
	ascii := true
	for i := 0; i < len(raw); i++ {
		if raw[i] >= utf8.RuneSelf || raw[i] == '\\' {
			ascii = false
			break
		}
	}
	if ascii {
		return raw, nil
	}
	var enc strings.Builder
	for _, r := range raw {
		switch {
		case r < utf8.RuneSelf:
			enc.WriteRune(r)
		case r <= 0xff:
			enc.WriteString(`\x`)
			writeHex(&enc, uint32(r), 2)
		case r <= 0xffff:
			enc.WriteString(`\u`)
			writeHex(&enc, uint32(r), 4)
		default:
			enc.WriteString(`\U`)
			writeHex(&enc, uint32(r), 8)
		}
	}
	s := enc.String()
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '\\' {
			b.WriteByte(c)
			continue
		}
		if i+1 >= len(s) {
			return "", errorString(`\ at end of string`)
		}
		i++
		switch c = s[i]; c {
		case '\n':
		case '\\', '\'', '"':
			b.WriteByte(c)
		case 'a':
			b.WriteByte(7)
		case 'b':
			b.WriteByte(8)
		case 'f':
			b.WriteByte(12)
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		case 't':
			b.WriteByte('\t')
		case 'v':
			b.WriteByte(11)
		case '0', '1', '2', '3', '4', '5', '6', '7':
			v := int(c - '0')
			for k := 0; k < 2 && i+1 < len(s) && s[i+1] >= '0' && s[i+1] <= '7'; k++ {
				i++
				v = v*8 + int(s[i]-'0')
			}
			b.WriteRune(fixSurrogate(rune(v)))
		case 'x', 'u', 'U':
			n := map[byte]int{'x': 2, 'u': 4, 'U': 8}[c]
			if i+n >= len(s) {
				return "", errorString(truncatedEscape(c))
			}
			v, err := strconv.ParseUint(s[i+1:i+1+n], 16, 32)
			if err != nil || !isHex(s[i+1:i+1+n]) {
				return "", errorString(truncatedEscape(c))
			}
			if v > unicode.MaxRune {
				return "", errorString("illegal Unicode character")
			}
			b.WriteRune(fixSurrogate(rune(v)))
			i += n
		case 'N':
			return "", errorString(`\N{...} escapes are not supported`)
		default:
			b.WriteByte('\\')
			b.WriteByte(c)
		}
	}
	return b.String(), nil
}

func isHex(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !isDigit(c) && (c < 'a' || c > 'f') && (c < 'A' || c > 'F') {
			return false
		}
	}
	return true
}

// fixSurrogate maps lone surrogates, which a Go string cannot hold, to U+FFFD.
func fixSurrogate(r rune) rune {
	if r >= 0xd800 && r <= 0xdfff {
		return utf8.RuneError
	}
	return r
}

func truncatedEscape(c byte) string {
	switch c {
	case 'x':
		return `truncated \xXX escape`
	case 'u':
		return `truncated \uXXXX escape`
	}
	return `truncated \UXXXXXXXX escape`
}

type errorString string

func (e errorString) Error() string { return string(e) }
