package jinja

func (p *parser) parseExpression(withCond bool) (expr, error) {
	if err := p.enter(); err != nil {
		return nil, err
	}
	defer p.leave()
	if withCond {
		return p.parseCondExpr()
	}
	return p.parseOr()
}

func (p *parser) parseCondExpr() (expr, error) {
	line := p.cur().line
	e1, err := p.parseOr()
	if err != nil {
		return nil, err
	}
	for p.isName("if") {
		old := p.soft
		p.soft = true
		p.next()
		test, err := p.parseOr()
		if err != nil {
			return nil, err
		}
		var e3 expr
		if p.skipName("else") {
			if e3, err = p.parseCondExpr(); err != nil {
				return nil, err
			}
		}
		p.soft = old
		e1 = &condExpr{epos{line}, test, e1, e3}
		line = p.cur().line
	}
	return e1, nil
}

func (p *parser) parseOr() (expr, error) {
	line := p.cur().line
	l, err := p.parseAnd()
	if err != nil {
		return nil, err
	}
	for p.skipName("or") {
		r, err := p.parseAnd()
		if err != nil {
			return nil, err
		}
		l = &orExpr{epos{line}, l, r}
	}
	return l, nil
}

func (p *parser) parseAnd() (expr, error) {
	line := p.cur().line
	l, err := p.parseNot()
	if err != nil {
		return nil, err
	}
	for p.skipName("and") {
		r, err := p.parseNot()
		if err != nil {
			return nil, err
		}
		l = &andExpr{epos{line}, l, r}
	}
	return l, nil
}

func (p *parser) parseNot() (expr, error) {
	if p.isName("not") {
		line := p.next().line
		if err := p.enter(); err != nil {
			return nil, err
		}
		defer p.leave()
		x, err := p.parseNot()
		if err != nil {
			return nil, err
		}
		return &unaryExpr{epos{line}, "not", x}, nil
	}
	return p.parseCompare()
}

func (p *parser) parseCompare() (expr, error) {
	line := p.cur().line
	first, err := p.parseMath1()
	if err != nil {
		return nil, err
	}
	var ops []string
	var operands []expr
	for {
		t := p.cur()
		var op string
		switch {
		case t.kind == tokOp && (t.s == "==" || t.s == "!=" || t.s == "<" || t.s == "<=" || t.s == ">" || t.s == ">="):
			p.next()
			op = t.s
		case p.isName("in"):
			p.next()
			op = "in"
		case p.isName("not") && p.look().kind == tokName && p.look().s == "in":
			p.next()
			p.next()
			op = "notin"
		}
		if op == "" {
			break
		}
		x, err := p.parseMath1()
		if err != nil {
			return nil, err
		}
		ops = append(ops, op)
		operands = append(operands, x)
	}
	if len(ops) == 0 {
		return first, nil
	}
	return &compareExpr{epos{line}, first, ops, operands}, nil
}

func (p *parser) parseMath1() (expr, error) {
	line := p.cur().line
	l, err := p.parseConcat()
	if err != nil {
		return nil, err
	}
	for p.isOp("+") || p.isOp("-") {
		op := p.next().s
		r, err := p.parseConcat()
		if err != nil {
			return nil, err
		}
		l = &binExpr{epos{line}, op, l, r}
	}
	return l, nil
}

func (p *parser) parseConcat() (expr, error) {
	line := p.cur().line
	first, err := p.parseMath2()
	if err != nil {
		return nil, err
	}
	items := []expr{first}
	for p.skipOp("~") {
		x, err := p.parseMath2()
		if err != nil {
			return nil, err
		}
		items = append(items, x)
	}
	if len(items) == 1 {
		return first, nil
	}
	return &concatExpr{epos{line}, items}, nil
}

func (p *parser) parseMath2() (expr, error) {
	line := p.cur().line
	l, err := p.parsePow()
	if err != nil {
		return nil, err
	}
	for p.isOp("*") || p.isOp("/") || p.isOp("//") || p.isOp("%") {
		op := p.next().s
		r, err := p.parsePow()
		if err != nil {
			return nil, err
		}
		l = &binExpr{epos{line}, op, l, r}
	}
	return l, nil
}

func (p *parser) parsePow() (expr, error) {
	line := p.cur().line
	l, err := p.parseUnary(true)
	if err != nil {
		return nil, err
	}
	for p.skipOp("**") {
		r, err := p.parseUnary(true)
		if err != nil {
			return nil, err
		}
		l = &binExpr{epos{line}, "**", l, r}
	}
	return l, nil
}

func (p *parser) parseUnary(withFilter bool) (expr, error) {
	if err := p.enter(); err != nil {
		return nil, err
	}
	defer p.leave()
	t := p.cur()
	var e expr
	var err error
	if t.kind == tokOp && (t.s == "-" || t.s == "+") {
		p.next()
		x, err := p.parseUnary(false)
		if err != nil {
			return nil, err
		}
		e = &unaryExpr{epos{t.line}, t.s, x}
	} else if e, err = p.parsePrimary(); err != nil {
		return nil, err
	}
	if e, err = p.parsePostfix(e); err != nil {
		return nil, err
	}
	if withFilter {
		return p.parseFilterExpr(e)
	}
	return e, nil
}

func (p *parser) parsePrimary() (expr, error) {
	t := p.cur()
	switch t.kind {
	case tokName:
		p.next()
		switch t.s {
		case "true", "True":
			return &constExpr{epos{t.line}, true}, nil
		case "false", "False":
			return &constExpr{epos{t.line}, false}, nil
		case "none", "None":
			return &constExpr{epos{t.line}, nil}, nil
		}
		return &nameExpr{epos{t.line}, t.s}, nil
	case tokString:
		p.next()
		s := t.s
		for p.cur().kind == tokString {
			s += p.next().s
		}
		return &constExpr{epos{t.line}, s}, nil
	case tokInt:
		p.next()
		return &constExpr{epos{t.line}, t.i}, nil
	case tokFloat:
		p.next()
		return &constExpr{epos{t.line}, t.f}, nil
	case tokOp:
		switch t.s {
		case "(":
			p.next()
			e, err := p.parseTuple(false, true, nil, true)
			if err != nil {
				return nil, err
			}
			if err := p.expectOp(")"); err != nil {
				return nil, err
			}
			return e, nil
		case "[":
			return p.parseList()
		case "{":
			return p.parseDict()
		}
	}
	return nil, p.fail(t.line, "unexpected '%s'", t.describe())
}

// parseTuple parses comma-separated expressions; a single one without a trailing comma is
// returned alone. simplified allows only primaries (assignment targets).
func (p *parser) parseTuple(simplified, withCond bool, extraEnd []string, explicitParens bool) (expr, error) {
	if err := p.enter(); err != nil {
		return nil, err
	}
	defer p.leave()
	line := p.cur().line
	var items []expr
	isTuple := false
	for {
		if len(items) > 0 {
			if err := p.expectOp(","); err != nil {
				return nil, err
			}
		}
		if p.isTupleEnd(extraEnd) {
			break
		}
		var e expr
		var err error
		switch {
		case simplified:
			e, err = p.parsePrimary()
		default:
			e, err = p.parseExpression(withCond)
		}
		if err != nil {
			return nil, err
		}
		items = append(items, e)
		if p.isOp(",") {
			isTuple = true
		} else {
			break
		}
		line = p.cur().line
	}
	if !isTuple {
		if len(items) > 0 {
			return items[0], nil
		}
		if !explicitParens {
			return nil, p.fail(p.cur().line, "Expected an expression, got '%s'", p.cur().describe())
		}
	}
	return &tupleExpr{epos{line}, items}, nil
}

func (p *parser) isTupleEnd(extraEnd []string) bool {
	t := p.cur()
	if t.kind == tokVarEnd || t.kind == tokBlockEnd || (t.kind == tokOp && t.s == ")") {
		return true
	}
	for _, e := range extraEnd {
		if t.kind == tokName && t.s == e {
			return true
		}
	}
	return false
}

func (p *parser) parseList() (expr, error) {
	line := p.next().line
	var items []expr
	for !p.isOp("]") {
		if len(items) > 0 {
			if err := p.expectOp(","); err != nil {
				return nil, err
			}
		}
		if p.isOp("]") {
			break
		}
		e, err := p.parseExpression(true)
		if err != nil {
			return nil, err
		}
		items = append(items, e)
	}
	if err := p.expectOp("]"); err != nil {
		return nil, err
	}
	return &listExpr{epos{line}, items}, nil
}

func (p *parser) parseDict() (expr, error) {
	line := p.next().line
	d := &dictExpr{epos: epos{line}}
	for !p.isOp("}") {
		if len(d.keys) > 0 {
			if err := p.expectOp(","); err != nil {
				return nil, err
			}
		}
		if p.isOp("}") {
			break
		}
		k, err := p.parseExpression(true)
		if err != nil {
			return nil, err
		}
		if err := p.expectOp(":"); err != nil {
			return nil, err
		}
		v, err := p.parseExpression(true)
		if err != nil {
			return nil, err
		}
		d.keys = append(d.keys, k)
		d.vals = append(d.vals, v)
	}
	if err := p.expectOp("}"); err != nil {
		return nil, err
	}
	return d, nil
}

func (p *parser) parsePostfix(e expr) (expr, error) {
	for {
		var err error
		switch {
		case p.isOp(".") || p.isOp("["):
			e, err = p.parseSubscript(e)
		case p.isOp("("):
			e, err = p.parseCall(e)
		default:
			return e, nil
		}
		if err != nil {
			return nil, err
		}
	}
}

func (p *parser) parseFilterExpr(e expr) (expr, error) {
	for {
		var err error
		switch {
		case p.isOp("|"):
			e, err = p.parseFilter(e, false)
		case p.isName("is"):
			e, err = p.parseTest(e)
		case p.isOp("("):
			e, err = p.parseCall(e)
		default:
			return e, nil
		}
		if err != nil {
			return nil, err
		}
	}
}

func (p *parser) parseSubscript(e expr) (expr, error) {
	t := p.next()
	if t.s == "." {
		a := p.next()
		switch a.kind {
		case tokName:
			return &getattrExpr{epos{t.line}, e, a.s}, nil
		case tokInt:
			return &getitemExpr{epos{t.line}, e, &constExpr{epos{a.line}, a.i}}, nil
		}
		return nil, p.fail(a.line, "expected name or number")
	}
	var args []expr
	for !p.isOp("]") {
		if len(args) > 0 {
			if err := p.expectOp(","); err != nil {
				return nil, err
			}
		}
		a, err := p.parseSubscribed()
		if err != nil {
			return nil, err
		}
		args = append(args, a)
	}
	if err := p.expectOp("]"); err != nil {
		return nil, err
	}
	if len(args) == 1 {
		return &getitemExpr{epos{t.line}, e, args[0]}, nil
	}
	return &getitemExpr{epos{t.line}, e, &tupleExpr{epos{t.line}, args}}, nil
}

func (p *parser) parseSubscribed() (expr, error) {
	line := p.cur().line
	var parts []expr
	if p.skipOp(":") {
		parts = []expr{nil}
	} else {
		e, err := p.parseExpression(true)
		if err != nil {
			return nil, err
		}
		if !p.isOp(":") {
			return e, nil
		}
		p.next()
		parts = []expr{e}
	}
	if p.isOp(":") || p.isOp("]") || p.isOp(",") {
		parts = append(parts, nil)
	} else {
		e, err := p.parseExpression(true)
		if err != nil {
			return nil, err
		}
		parts = append(parts, e)
	}
	if p.skipOp(":") {
		if p.isOp("]") || p.isOp(",") {
			parts = append(parts, nil)
		} else {
			e, err := p.parseExpression(true)
			if err != nil {
				return nil, err
			}
			parts = append(parts, e)
		}
	} else {
		parts = append(parts, nil)
	}
	return &sliceExpr{epos{line}, parts[0], parts[1], parts[2]}, nil
}

func (p *parser) parseCallArgs() (callArgs, error) {
	var c callArgs
	open := p.cur()
	if err := p.expectOp("("); err != nil {
		return c, err
	}
	bad := func() error { return p.fail(open.line, "invalid syntax for function call expression") }
	requireComma := false
	for !p.isOp(")") {
		if requireComma {
			if err := p.expectOp(","); err != nil {
				return c, err
			}
			if p.isOp(")") {
				break
			}
		}
		switch {
		case p.isOp("*"):
			if c.dynArgs != nil || c.dynKwargs != nil {
				return c, bad()
			}
			p.next()
			e, err := p.parseExpression(true)
			if err != nil {
				return c, err
			}
			c.dynArgs = e
		case p.isOp("**"):
			if c.dynKwargs != nil {
				return c, bad()
			}
			p.next()
			e, err := p.parseExpression(true)
			if err != nil {
				return c, err
			}
			c.dynKwargs = e
		case p.cur().kind == tokName && p.look().kind == tokOp && p.look().s == "=":
			if c.dynKwargs != nil {
				return c, bad()
			}
			name := p.next().s
			p.next()
			e, err := p.parseExpression(true)
			if err != nil {
				return c, err
			}
			c.kwargs = append(c.kwargs, kwarg{name, e})
		default:
			if c.dynArgs != nil || c.dynKwargs != nil || len(c.kwargs) > 0 {
				return c, bad()
			}
			e, err := p.parseExpression(true)
			if err != nil {
				return c, err
			}
			c.args = append(c.args, e)
		}
		requireComma = true
	}
	return c, p.expectOp(")")
}

func (p *parser) parseCall(e expr) (expr, error) {
	line := p.cur().line
	c, err := p.parseCallArgs()
	if err != nil {
		return nil, err
	}
	return &callExpr{epos{line}, e, c}, nil
}

func (p *parser) dottedName() (string, int, error) {
	t, err := p.expectKind(tokName, "name")
	if err != nil {
		return "", 0, err
	}
	name := t.s
	for p.skipOp(".") {
		n, err := p.expectKind(tokName, "name")
		if err != nil {
			return "", 0, err
		}
		name += "." + n.s
	}
	return name, t.line, nil
}

func (p *parser) checkKnown(name string, filter bool, line int) error {
	if p.soft || p.known == nil || p.known(name, filter) {
		return nil
	}
	what := "test"
	if filter {
		what = "filter"
	}
	return &Error{Kind: "TemplateAssertionError", Msg: sprintf("No %s named '%s'.", what, name), Line: line}
}

// parseFilter parses "| name(args)" links; inline starts without a pipe (filter blocks).
func (p *parser) parseFilter(e expr, inline bool) (expr, error) {
	for p.isOp("|") || inline {
		if !inline {
			p.next()
		}
		name, line, err := p.dottedName()
		if err != nil {
			return nil, err
		}
		if err := p.checkKnown(name, true, line); err != nil {
			return nil, err
		}
		var c callArgs
		if p.isOp("(") {
			if c, err = p.parseCallArgs(); err != nil {
				return nil, err
			}
		}
		e = &filterExpr{epos{line}, e, name, c}
		inline = false
	}
	return e, nil
}

func (p *parser) parseTest(e expr) (expr, error) {
	t := p.next()
	negated := p.skipName("not")
	name, line, err := p.dottedName()
	if err != nil {
		return nil, err
	}
	if err := p.checkKnown(name, false, line); err != nil {
		return nil, err
	}
	var c callArgs
	cur := p.cur()
	switch {
	case p.isOp("("):
		if c, err = p.parseCallArgs(); err != nil {
			return nil, err
		}
	case (cur.kind == tokName || cur.kind == tokString || cur.kind == tokInt || cur.kind == tokFloat ||
		(cur.kind == tokOp && (cur.s == "[" || cur.s == "{"))) &&
		!(cur.kind == tokName && (cur.s == "else" || cur.s == "or" || cur.s == "and")):
		if cur.kind == tokName && cur.s == "is" {
			return nil, p.fail(cur.line, "You cannot chain multiple tests with is")
		}
		a, err := p.parsePrimary()
		if err != nil {
			return nil, err
		}
		if a, err = p.parsePostfix(a); err != nil {
			return nil, err
		}
		c.args = []expr{a}
	}
	var out expr = &testExpr{epos{t.line}, e, name, c}
	if negated {
		out = &unaryExpr{epos{t.line}, "not", out}
	}
	return out, nil
}
