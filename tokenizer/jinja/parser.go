package jinja

import (
	"fmt"
	"strings"
)

// parser builds the syntax tree with Jinja2's grammar and operator precedence:
// condexpr < or < and < not < compare < + - < ~ < * / // % < ** < unary < postfix/filters.
type parser struct {
	toks   []token
	p      int
	known  func(name string, filter bool) bool
	tags   map[string]bool // extra tags whose body renders unchanged
	soft   bool            // inside an if: unknown filters and tests fail only when reached
	depth  int
	tagStk []string
	endStk [][]string
}

const maxParseDepth = 200

func sprintf(format string, args ...any) string { return fmt.Sprintf(format, args...) }

func (p *parser) cur() token { return p.toks[p.p] }

func (p *parser) look() token {
	if p.p+1 < len(p.toks) {
		return p.toks[p.p+1]
	}
	return p.toks[len(p.toks)-1]
}

func (p *parser) next() token {
	t := p.toks[p.p]
	if t.kind != tokEOF {
		p.p++
	}
	return t
}

func (p *parser) fail(line int, format string, args ...any) error {
	return &Error{Kind: "TemplateSyntaxError", Msg: sprintf(format, args...), Line: line}
}

func (p *parser) isName(v string) bool {
	t := p.cur()
	return t.kind == tokName && t.s == v
}

func (p *parser) isOp(v string) bool {
	t := p.cur()
	return t.kind == tokOp && t.s == v
}

func (p *parser) skipOp(v string) bool {
	if p.isOp(v) {
		p.next()
		return true
	}
	return false
}

func (p *parser) skipName(v string) bool {
	if p.isName(v) {
		p.next()
		return true
	}
	return false
}

func (p *parser) unexpected(want string) error {
	t := p.cur()
	if t.kind == tokEOF {
		return p.fail(t.line, "unexpected end of template, expected '%s'.", want)
	}
	return p.fail(t.line, "expected token '%s', got '%s'", want, t.describe())
}

func (p *parser) expectOp(v string) error {
	if !p.skipOp(v) {
		return p.unexpected(v)
	}
	return nil
}

func (p *parser) expectName(v string) error {
	if !p.skipName(v) {
		return p.unexpected(v)
	}
	return nil
}

func (p *parser) expectKind(k tokenKind, want string) (token, error) {
	if p.cur().kind != k {
		return token{}, p.unexpected(want)
	}
	return p.next(), nil
}

func (p *parser) enter() error {
	p.depth++
	if p.depth > maxParseDepth {
		return p.fail(p.cur().line, "template nesting too deep")
	}
	return nil
}

func (p *parser) leave() { p.depth-- }

// subparse parses template data, prints and statements until a block tag named in end.
func (p *parser) subparse(end []string) ([]node, error) {
	if err := p.enter(); err != nil {
		return nil, err
	}
	defer p.leave()
	if end != nil {
		p.endStk = append(p.endStk, end)
		defer func() { p.endStk = p.endStk[:len(p.endStk)-1] }()
	}
	var body []node
	for {
		t := p.cur()
		switch t.kind {
		case tokEOF:
			return body, nil
		case tokData:
			p.next()
			body = append(body, &textNode{pos{t.line}, t.s})
		case tokVarBegin:
			p.next()
			e, err := p.parseTuple(false, true, nil, false)
			if err != nil {
				return nil, err
			}
			if _, err := p.expectKind(tokVarEnd, "end of print statement"); err != nil {
				return nil, err
			}
			body = append(body, &outputNode{pos{t.line}, e})
		case tokBlockBegin:
			p.next()
			c := p.cur()
			if end != nil && c.kind == tokName {
				for _, e := range end {
					if c.s == e {
						return body, nil
					}
				}
			}
			n, err := p.parseStatement()
			if err != nil {
				return nil, err
			}
			if n != nil {
				body = append(body, n)
			}
			if _, err := p.expectKind(tokBlockEnd, "end of statement block"); err != nil {
				return nil, err
			}
		default:
			return nil, p.fail(t.line, "internal parsing error")
		}
	}
}

// parseStatements parses a tag body: the rest of the opening tag, then statements until one of
// end, which stays current unless drop is set.
func (p *parser) parseStatements(end []string, drop bool) ([]node, error) {
	p.skipOp(":")
	if _, err := p.expectKind(tokBlockEnd, "end of statement block"); err != nil {
		return nil, err
	}
	body, err := p.subparse(end)
	if err != nil {
		return nil, err
	}
	if p.cur().kind == tokEOF {
		return nil, p.failEOF(end)
	}
	if drop {
		p.next()
	}
	return body, nil
}

func (p *parser) failEOF(end []string) error {
	stack := append(append([][]string{}, p.endStk...), end)
	return p.failUnknown("", stack, p.cur().line)
}

func (p *parser) failUnknown(name string, stack [][]string, line int) error {
	var msg []string
	if name == "" {
		msg = append(msg, "Unexpected end of template.")
	} else {
		msg = append(msg, sprintf("Encountered unknown tag '%s'.", name))
	}
	if len(stack) > 0 {
		var quoted []string
		for _, e := range stack[len(stack)-1] {
			quoted = append(quoted, "'"+e+"'")
		}
		looking := strings.Join(quoted, " or ")
		expected := false
		for _, s := range stack {
			for _, e := range s {
				if e == name {
					expected = true
				}
			}
		}
		if name != "" && expected {
			msg = append(msg, "You probably made a nesting mistake. Jinja is expecting this tag, but currently looking for "+looking+".")
		} else {
			msg = append(msg, "Jinja was looking for the following tags: "+looking+".")
		}
	}
	if len(p.tagStk) > 0 {
		msg = append(msg, sprintf("The innermost block that needs to be closed is '%s'.", p.tagStk[len(p.tagStk)-1]))
	}
	return p.fail(line, "%s", strings.Join(msg, " "))
}

func (p *parser) parseStatement() (node, error) {
	t := p.cur()
	if t.kind != tokName {
		return nil, p.fail(t.line, "tag name expected")
	}
	p.tagStk = append(p.tagStk, t.s)
	defer func() { p.tagStk = p.tagStk[:len(p.tagStk)-1] }()
	switch t.s {
	case "for":
		return p.parseFor()
	case "if":
		return p.parseIf()
	case "set":
		return p.parseSet()
	case "macro":
		return p.parseMacro()
	case "call":
		return p.parseCallBlock()
	case "filter":
		return p.parseFilterBlock()
	case "with":
		return p.parseWith()
	case "print":
		p.next()
		var items []expr
		for p.cur().kind != tokBlockEnd {
			if len(items) > 0 {
				if err := p.expectOp(","); err != nil {
					return nil, err
				}
			}
			e, err := p.parseExpression(true)
			if err != nil {
				return nil, err
			}
			items = append(items, e)
		}
		if len(items) == 1 {
			return &outputNode{pos{t.line}, items[0]}, nil
		}
		return &blockNode{pos{t.line}, printNodes(t.line, items)}, nil
	case "break", "continue":
		p.next()
		return &loopControlNode{pos{t.line}, t.s == "break"}, nil
	case "block":
		p.next()
		name, err := p.expectKind(tokName, "name")
		if err != nil {
			return nil, err
		}
		p.skipName("scoped")
		p.skipName("required")
		body, err := p.parseStatements([]string{"endblock"}, true)
		if err != nil {
			return nil, err
		}
		p.skipName(name.s)
		return &blockNode{pos{t.line}, body}, nil
	case "extends", "include", "import", "from":
		// Parse the rest of the tag loosely; rendering fails without a loader.
		p.next()
		for p.cur().kind != tokBlockEnd && p.cur().kind != tokEOF {
			p.next()
		}
		return &unsupportedNode{pos{t.line}, t.s}, nil
	case "autoescape":
		return nil, p.fail(t.line, "the autoescape tag is not supported")
	}
	if p.tags[t.s] {
		p.next()
		body, err := p.parseStatements([]string{"end" + t.s}, true)
		if err != nil {
			return nil, err
		}
		return &blockNode{pos{t.line}, body}, nil
	}
	p.tagStk = p.tagStk[:len(p.tagStk)-1]
	err := p.failUnknown(t.s, p.endStk, t.line)
	p.tagStk = append(p.tagStk, t.s)
	return nil, err
}

func printNodes(line int, items []expr) []node {
	out := make([]node, len(items))
	for i, e := range items {
		out[i] = &outputNode{pos{line}, e}
	}
	return out
}

func (p *parser) hard() func() {
	old := p.soft
	p.soft = false
	return func() { p.soft = old }
}

func (p *parser) parseFor() (node, error) {
	line := p.next().line
	tg, err := p.parseAssignTarget(true, false, []string{"in"}, false)
	if err != nil {
		return nil, err
	}
	if err := p.expectName("in"); err != nil {
		return nil, err
	}
	iter, err := p.parseTuple(false, false, []string{"recursive"}, false)
	if err != nil {
		return nil, err
	}
	defer p.hard()()
	var cond expr
	if p.skipName("if") {
		if cond, err = p.parseExpression(true); err != nil {
			return nil, err
		}
	}
	recursive := p.skipName("recursive")
	body, err := p.parseStatements([]string{"endfor", "else"}, false)
	if err != nil {
		return nil, err
	}
	var els []node
	if p.next().s == "else" {
		if els, err = p.parseStatements([]string{"endfor"}, true); err != nil {
			return nil, err
		}
	}
	return &forNode{pos{line}, tg, iter, cond, body, els, recursive}, nil
}

func (p *parser) parseIf() (node, error) {
	n := &ifNode{pos: pos{p.next().line}}
	old := p.soft
	p.soft = true
	defer func() { p.soft = old }()
	for {
		test, err := p.parseTuple(false, false, nil, false)
		if err != nil {
			return nil, err
		}
		body, err := p.parseStatements([]string{"elif", "else", "endif"}, false)
		if err != nil {
			return nil, err
		}
		n.conds = append(n.conds, test)
		n.bodies = append(n.bodies, body)
		t := p.next()
		if t.s == "elif" {
			continue
		}
		if t.s == "else" {
			if n.els, err = p.parseStatements([]string{"endif"}, true); err != nil {
				return nil, err
			}
		}
		return n, nil
	}
}

func (p *parser) parseSet() (node, error) {
	line := p.next().line
	tg, err := p.parseAssignTarget(true, false, nil, true)
	if err != nil {
		return nil, err
	}
	if p.skipOp("=") {
		v, err := p.parseTuple(false, true, nil, false)
		if err != nil {
			return nil, err
		}
		return &setNode{pos{line}, tg, v}, nil
	}
	defer p.hard()()
	f, err := p.parseFilter(nil, false)
	if err != nil {
		return nil, err
	}
	body, err := p.parseStatements([]string{"endset"}, true)
	if err != nil {
		return nil, err
	}
	var fe *filterExpr
	if f != nil {
		fe = f.(*filterExpr)
	}
	return &setBlockNode{pos{line}, tg, fe, body}, nil
}

func (p *parser) parseSignature(sig *signature) error {
	if err := p.expectOp("("); err != nil {
		return err
	}
	for !p.isOp(")") {
		if len(sig.params) > 0 {
			if err := p.expectOp(","); err != nil {
				return err
			}
		}
		name, err := p.expectKind(tokName, "name")
		if err != nil {
			return err
		}
		if p.skipOp("=") {
			d, err := p.parseExpression(true)
			if err != nil {
				return err
			}
			sig.defaults = append(sig.defaults, d)
		} else if len(sig.defaults) > 0 {
			return p.fail(name.line, "non-default argument follows default argument")
		}
		sig.params = append(sig.params, name.s)
	}
	return p.expectOp(")")
}

func (p *parser) parseMacro() (node, error) {
	line := p.next().line
	name, err := p.expectKind(tokName, "name")
	if err != nil {
		return nil, err
	}
	n := &macroNode{pos: pos{line}, name: name.s}
	if err := p.parseSignature(&n.sig); err != nil {
		return nil, err
	}
	defer p.hard()()
	if n.body, err = p.parseStatements([]string{"endmacro"}, true); err != nil {
		return nil, err
	}
	markSpecialNames(&n.sig, n.body)
	return n, nil
}

func (p *parser) parseCallBlock() (node, error) {
	line := p.next().line
	n := &callBlockNode{pos: pos{line}}
	if p.isOp("(") {
		if err := p.parseSignature(&n.sig); err != nil {
			return nil, err
		}
	}
	e, err := p.parseExpression(true)
	if err != nil {
		return nil, err
	}
	call, ok := e.(*callExpr)
	if !ok {
		return nil, p.fail(line, "expected call")
	}
	n.call = call
	defer p.hard()()
	if n.body, err = p.parseStatements([]string{"endcall"}, true); err != nil {
		return nil, err
	}
	markSpecialNames(&n.sig, n.body)
	return n, nil
}

func (p *parser) parseFilterBlock() (node, error) {
	line := p.next().line
	defer p.hard()()
	f, err := p.parseFilter(nil, true)
	if err != nil {
		return nil, err
	}
	body, err := p.parseStatements([]string{"endfilter"}, true)
	if err != nil {
		return nil, err
	}
	return &filterBlockNode{pos{line}, f.(*filterExpr), body}, nil
}

func (p *parser) parseWith() (node, error) {
	n := &withNode{pos: pos{p.next().line}}
	for p.cur().kind != tokBlockEnd {
		if len(n.targets) > 0 {
			if err := p.expectOp(","); err != nil {
				return nil, err
			}
		}
		tg, err := p.parseAssignTarget(true, false, nil, false)
		if err != nil {
			return nil, err
		}
		if err := p.expectOp("="); err != nil {
			return nil, err
		}
		v, err := p.parseExpression(true)
		if err != nil {
			return nil, err
		}
		n.targets = append(n.targets, tg)
		n.values = append(n.values, v)
	}
	defer p.hard()()
	var err error
	if n.body, err = p.parseStatements([]string{"endwith"}, true); err != nil {
		return nil, err
	}
	return n, nil
}

// parseAssignTarget parses a name, a tuple of names, or (withNamespace) ns.attr.
func (p *parser) parseAssignTarget(withTuple, nameOnly bool, extraEnd []string, withNamespace bool) (target, error) {
	t := p.cur()
	if withNamespace && p.look().kind == tokOp && p.look().s == "." {
		name, err := p.expectKind(tokName, "name")
		if err != nil {
			return nil, err
		}
		p.next()
		attr, err := p.expectKind(tokName, "name")
		if err != nil {
			return nil, err
		}
		return nsTarget{name.s, attr.s}, nil
	}
	if nameOnly {
		name, err := p.expectKind(tokName, "name")
		if err != nil {
			return nil, err
		}
		return nameTarget{name.s}, nil
	}
	var e expr
	var err error
	if withTuple {
		e, err = p.parseTuple(true, true, extraEnd, false)
	} else {
		e, err = p.parsePrimary()
	}
	if err != nil {
		return nil, err
	}
	tg, ok := toTarget(e)
	if !ok {
		return nil, p.fail(t.line, "can't assign to %s", pyRepr(exprKind(e)))
	}
	return tg, nil
}

func toTarget(e expr) (target, bool) {
	switch e := e.(type) {
	case *nameExpr:
		switch e.name {
		case "true", "false", "none", "True", "False", "None":
			return nil, false
		}
		return nameTarget{e.name}, true
	case *tupleExpr:
		var items []target
		for _, it := range e.items {
			t, ok := toTarget(it)
			if !ok {
				return nil, false
			}
			items = append(items, t)
		}
		return tupleTarget{items}, true
	}
	return nil, false
}

func exprKind(e expr) string {
	switch e.(type) {
	case *constExpr:
		return "const"
	case *listExpr:
		return "list"
	case *dictExpr:
		return "dict"
	case *callExpr:
		return "call"
	}
	return "expression"
}
