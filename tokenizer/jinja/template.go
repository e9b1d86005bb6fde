package jinja

import (
	"errors"
	"strings"
)

// Options are the lexer settings of a Jinja2 Environment.
type Options struct {
	TrimBlocks          bool // remove the first newline after a block tag
	LStripBlocks        bool // strip spaces and tabs before a block tag at the start of a line
	KeepTrailingNewline bool // keep a single trailing newline of the template source
}

// Environment holds what Jinja2's Environment adds to the language: lexer options, filters and
// globals beyond the built-in ones, and block tags whose body renders unchanged. Templates
// always run with the semantics of ImmutableSandboxedEnvironment (no mutation of lists or
// dicts, no private attributes) and autoescaping off. An Environment must not be modified once
// templates are parsed from it.
type Environment struct {
	Options
	// Filters adds or replaces filters. A filter receives the filtered value as args[0].
	Filters map[string]Func
	// Globals are variables every template sees, below the render variables.
	Globals map[string]Value
	// TransparentTags names block tags ({% name %}...{% endname %}) that render their body
	// unchanged, such as transformers' {% generation %}.
	TransparentTags []string
}

// Template is a parsed template, safe for concurrent rendering.
type Template struct {
	env  *Environment
	body []node
}

// Parse parses template source. Syntax errors are *Error values with Kind
// "TemplateSyntaxError" (or "TemplateAssertionError" for an unknown filter or test) and a line.
func (e *Environment) Parse(src string) (*Template, error) {
	toks, err := lex(src, e.Options)
	if err != nil {
		return nil, err
	}
	tags := map[string]bool{}
	for _, t := range e.TransparentTags {
		tags[t] = true
	}
	p := &parser{toks: toks, tags: tags, known: e.known}
	body, err := p.subparse(nil)
	if err != nil {
		return nil, err
	}
	if p.cur().kind != tokEOF {
		return nil, p.fail(p.cur().line, "unexpected '%s'", p.cur().describe())
	}
	if err := checkLoopControls(body, false); err != nil {
		return nil, err
	}
	return &Template{env: e, body: body}, nil
}

func (e *Environment) known(name string, filter bool) bool {
	if filter {
		if _, ok := e.Filters[name]; ok {
			return true
		}
		_, ok := builtinFilters[name]
		return ok
	}
	_, ok := builtinTests[name]
	return ok
}

// checkLoopControls rejects break and continue outside a loop, which Python refuses (with a
// SyntaxError) when it compiles Jinja's generated code.
func checkLoopControls(body []node, inLoop bool) error {
	for _, n := range body {
		var err error
		switch n := n.(type) {
		case *loopControlNode:
			if !inLoop {
				what := "continue"
				if n.brk {
					what = "break"
				}
				return &Error{Kind: "SyntaxError", Msg: sprintf("'%s' outside loop", what), Line: n.line}
			}
		case *ifNode:
			for _, b := range n.bodies {
				if err = checkLoopControls(b, inLoop); err != nil {
					return err
				}
			}
			err = checkLoopControls(n.els, inLoop)
		case *forNode:
			if err = checkLoopControls(n.body, true); err == nil {
				err = checkLoopControls(n.els, inLoop)
			}
		case *macroNode:
			err = checkLoopControls(n.body, false)
		case *callBlockNode:
			err = checkLoopControls(n.body, false)
		case *setBlockNode:
			err = checkLoopControls(n.body, false)
		case *filterBlockNode:
			err = checkLoopControls(n.body, inLoop)
		case *withNode:
			err = checkLoopControls(n.body, inLoop)
		case *blockNode:
			err = checkLoopControls(n.body, false)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// Limits on one render, so that hostile templates fail instead of exhausting memory or time.
const (
	maxDepth      = 500      // nested macro calls and data structures
	maxOutput     = 16 << 20 // bytes of output, and of any one string or list built
	maxIterations = 2_000_000
)

var errOutputTooLarge = &Error{Kind: "MemoryError", Msg: "template output exceeds the size limit"}

// Render renders the template with the given variables. Values may be template values or plain
// Go values (see ValueOf).
func (t *Template) Render(vars map[string]Value) (string, error) {
	r := &renderer{env: t.env}
	top := &scope{parent: &scope{parent: globalScope(t.env)}}
	for k, v := range vars {
		cv, err := ValueOf(v)
		if err != nil {
			return "", err
		}
		top.parent.set(k, cv)
	}
	var out strings.Builder
	if _, err := r.exec(t.body, top, &out); err != nil {
		return "", err
	}
	return out.String(), nil
}

func globalScope(env *Environment) *scope {
	s := &scope{}
	for _, name := range []string{"range", "dict", "namespace", "cycler", "joiner", "lipsum"} {
		s.set(name, &builtinFunc{name: name, fn: builtinGlobals[name]})
	}
	for k, v := range env.Globals {
		s.set(k, v)
	}
	return s
}

// scope is one level of variables: the template top level, a loop iteration, a macro call.
// Scopes are small, so a slice beats a map.
type scope struct {
	names  []string
	vals   []Value
	parent *scope
}

func (s *scope) lookup(name string) (Value, bool) {
	for ; s != nil; s = s.parent {
		for i := len(s.names) - 1; i >= 0; i-- {
			if s.names[i] == name {
				return s.vals[i], true
			}
		}
	}
	return nil, false
}

func (s *scope) set(name string, v Value) {
	for i, n := range s.names {
		if n == name {
			s.vals[i] = v
			return
		}
	}
	s.names = append(s.names, name)
	s.vals = append(s.vals, v)
}

type ctrl uint8

const (
	ctrlNone ctrl = iota
	ctrlBreak
	ctrlContinue
)

type renderer struct {
	env   *Environment
	depth int
	iters int
}

func withLine(err error, line int) error {
	var e *Error
	if errors.As(err, &e) && e.Line == 0 && line > 0 {
		c := *e
		c.Line = line
		return &c
	}
	return err
}

func (r *renderer) exec(body []node, sc *scope, out *strings.Builder) (ctrl, error) {
	for _, n := range body {
		c, err := r.execNode(n, sc, out)
		if err != nil {
			return ctrlNone, withLine(err, n.nodeLine())
		}
		if out.Len() > maxOutput {
			return ctrlNone, errOutputTooLarge
		}
		if c != ctrlNone {
			return c, nil
		}
	}
	return ctrlNone, nil
}

func (r *renderer) execNode(n node, sc *scope, out *strings.Builder) (ctrl, error) {
	switch n := n.(type) {
	case *textNode:
		out.WriteString(n.text)
	case *outputNode:
		v, err := r.eval(n.expr, sc)
		if err != nil {
			return ctrlNone, err
		}
		writeValue(out, v)
	case *ifNode:
		for i, c := range n.conds {
			v, err := r.eval(c, sc)
			if err != nil {
				return ctrlNone, err
			}
			if truth(v) {
				return r.exec(n.bodies[i], sc, out)
			}
		}
		return r.exec(n.els, sc, out)
	case *forNode:
		v, err := r.eval(n.iter, sc)
		if err != nil {
			return ctrlNone, err
		}
		return ctrlNone, r.execFor(n, v, sc, out, 0)
	case *setNode:
		v, err := r.eval(n.value, sc)
		if err != nil {
			return ctrlNone, err
		}
		return ctrlNone, r.assign(n.target, v, sc)
	case *setBlockNode:
		var b strings.Builder
		if _, err := r.exec(n.body, &scope{parent: sc}, &b); err != nil {
			return ctrlNone, err
		}
		var v Value = b.String()
		if n.filter != nil {
			var err error
			if v, err = r.applyFilterChain(n.filter, v, sc); err != nil {
				return ctrlNone, err
			}
		}
		return ctrlNone, r.assign(n.target, v, sc)
	case *macroNode:
		sc.set(n.name, &macroValue{name: n.name, sig: &n.sig, body: n.body, closure: sc})
	case *callBlockNode:
		caller := &macroValue{name: "caller", sig: &n.sig, body: n.body, closure: sc}
		v, err := r.evalCall(n.call, sc, caller)
		if err != nil {
			return ctrlNone, err
		}
		writeValue(out, v)
	case *filterBlockNode:
		var b strings.Builder
		if _, err := r.exec(n.body, &scope{parent: sc}, &b); err != nil {
			return ctrlNone, err
		}
		v, err := r.applyFilterChain(n.filter, b.String(), sc)
		if err != nil {
			return ctrlNone, err
		}
		writeValue(out, v)
	case *withNode:
		inner := &scope{parent: sc}
		for i, tg := range n.targets {
			v, err := r.eval(n.values[i], sc)
			if err != nil {
				return ctrlNone, err
			}
			if err := r.assign(tg, v, inner); err != nil {
				return ctrlNone, err
			}
		}
		return r.exec(n.body, inner, out)
	case *loopControlNode:
		if n.brk {
			return ctrlBreak, nil
		}
		return ctrlContinue, nil
	case *blockNode:
		return r.exec(n.body, sc, out)
	case *unsupportedNode:
		return ctrlNone, typeError("no loader for this environment specified ({%% %s %%} is not supported)", n.tag)
	}
	return ctrlNone, nil
}

func writeValue(out *strings.Builder, v Value) {
	switch v := v.(type) {
	case string:
		out.WriteString(v)
	case markupValue:
		out.WriteString(string(v))
	case undefinedValue:
	default:
		writeRepr(out, v)
	}
}

// applyFilterChain applies a filter chain whose innermost node is nil (a filter block or set
// block) to v.
func (r *renderer) applyFilterChain(f *filterExpr, v Value, sc *scope) (Value, error) {
	var in Value
	if f.node != nil {
		var err error
		if in, err = r.applyFilterChain(f.node.(*filterExpr), v, sc); err != nil {
			return nil, err
		}
	} else {
		in = v
	}
	return r.callFilter(f, in, sc)
}

func (r *renderer) assign(t target, v Value, sc *scope) error {
	switch t := t.(type) {
	case nameTarget:
		sc.set(t.name, v)
	case tupleTarget:
		items, err := unpack(v, len(t.items))
		if err != nil {
			return err
		}
		for i, it := range t.items {
			if err := r.assign(it, items[i], sc); err != nil {
				return err
			}
		}
	case nsTarget:
		obj, _ := sc.lookup(t.name)
		ns, ok := obj.(*namespaceValue)
		if !ok {
			return &Error{Kind: "TemplateRuntimeError", Msg: "cannot assign attribute on non-namespace object"}
		}
		ns.attrs.SetString(t.attr, v)
	}
	return nil
}

func unpack(v Value, n int) ([]Value, error) {
	items, err := iterate(v)
	if err != nil {
		return nil, typeError("cannot unpack non-iterable %s object", typeName(v))
	}
	if len(items) < n {
		return nil, valueError("not enough values to unpack (expected %d, got %d)", n, len(items))
	}
	if len(items) > n {
		return nil, valueError("too many values to unpack (expected %d)", n)
	}
	return items, nil
}

// loopContext is the loop variable of a for loop.
type loopContext struct {
	items   []Value
	index0  int
	length  int
	depth0  int
	changed []Value
	hasLast bool
	// for recursive loops
	node *forNode
	sc   *scope
	r    *renderer
}

func (r *renderer) execFor(n *forNode, iterable Value, sc *scope, out *strings.Builder, depth0 int) error {
	items, err := iterate(iterable)
	if err != nil {
		return err
	}
	if n.cond != nil {
		kept := make([]Value, 0, len(items))
		for _, it := range items {
			fs := &scope{parent: sc}
			if err := r.assign(n.target, it, fs); err != nil {
				return err
			}
			ok, err := r.eval(n.cond, fs)
			if err != nil {
				return err
			}
			if truth(ok) {
				kept = append(kept, it)
			}
		}
		items = kept
	}
	loop := &loopContext{items: items, length: len(items), depth0: depth0}
	if n.recursive {
		loop.node, loop.sc, loop.r = n, sc, r
	}
	for i, it := range items {
		r.iters++
		if r.iters > maxIterations {
			return &Error{Kind: "RuntimeError", Msg: "template exceeds the iteration limit"}
		}
		loop.index0 = i
		is := &scope{parent: sc, names: make([]string, 0, 4), vals: make([]Value, 0, 4)}
		if err := r.assign(n.target, it, is); err != nil {
			return err
		}
		is.set("loop", loop)
		c, err := r.exec(n.body, is, out)
		if err != nil {
			return err
		}
		if c == ctrlBreak {
			break
		}
	}
	if len(items) == 0 {
		_, err := r.exec(n.els, &scope{parent: sc}, out)
		return err
	}
	return nil
}

func (l *loopContext) attr(name string) (Value, bool) {
	switch name {
	case "index":
		return int64(l.index0 + 1), true
	case "index0":
		return int64(l.index0), true
	case "revindex":
		return int64(l.length - l.index0), true
	case "revindex0":
		return int64(l.length - l.index0 - 1), true
	case "first":
		return l.index0 == 0, true
	case "last":
		return l.index0 == l.length-1, true
	case "length":
		return int64(l.length), true
	case "depth":
		return int64(l.depth0 + 1), true
	case "depth0":
		return int64(l.depth0), true
	case "previtem":
		if l.index0 == 0 {
			return undefinedHint("there is no previous item"), true
		}
		return l.items[l.index0-1], true
	case "nextitem":
		if l.index0+1 >= l.length {
			return undefinedHint("there is no next item"), true
		}
		return l.items[l.index0+1], true
	case "cycle", "changed":
		return &boundMethod{recv: l, name: name}, true
	}
	return nil, false
}

// macroValue is a macro defined in a template, or the caller of a {% call %} block.
type macroValue struct {
	name    string
	sig     *signature
	body    []node
	closure *scope
}

type kwValue struct {
	name  string
	value Value
}

// callMacro binds arguments as jinja2.runtime.Macro.__call__ does and renders the body.
func (r *renderer) callMacro(m *macroValue, args []Value, kwargs []kwValue) (Value, error) {
	if r.depth >= maxDepth {
		return nil, &Error{Kind: "RecursionError", Msg: "maximum recursion depth exceeded"}
	}
	sig := m.sig
	sc := &scope{parent: m.closure}
	kw := append([]kwValue(nil), kwargs...)
	take := func(name string) (Value, bool) {
		for i, k := range kw {
			if k.name == name {
				kw = append(kw[:i], kw[i+1:]...)
				return k.value, true
			}
		}
		return nil, false
	}
	nparams := len(sig.params)
	for i, name := range sig.params {
		var v Value
		var ok bool
		if i < len(args) {
			v, ok = args[i], true
		} else {
			v, ok = take(name)
		}
		if !ok {
			d := i - (nparams - len(sig.defaults))
			if d >= 0 {
				// Defaults see the parameters bound before them.
				dv, err := r.eval(sig.defaults[d], sc)
				if err != nil {
					return nil, err
				}
				v = dv
			} else {
				v = undefinedHint("parameter " + pyRepr(name) + " was not provided")
			}
		}
		sc.set(name, v)
	}
	if sig.usesCaller {
		if c, ok := take("caller"); ok && c != nil {
			sc.set("caller", c)
		} else {
			sc.set("caller", undefinedHint("No caller defined"))
		}
	}
	if sig.usesKwargs {
		d := NewDict()
		for _, k := range kw {
			d.SetString(k.name, k.value)
		}
		sc.set("kwargs", d)
	} else if len(kw) > 0 {
		if kw[0].name == "caller" {
			return nil, typeError("macro %s was invoked with two values for the special caller argument. This is most likely a bug.", pyRepr(m.name))
		}
		return nil, typeError("macro %s takes no keyword argument %s", pyRepr(m.name), pyRepr(kw[0].name))
	}
	if sig.usesVarargs {
		var extra tupleValue
		if len(args) > nparams {
			extra = append(tupleValue{}, args[nparams:]...)
		} else {
			extra = tupleValue{}
		}
		sc.set("varargs", extra)
	} else if len(args) > nparams {
		return nil, typeError("macro %s takes not more than %d argument(s)", pyRepr(m.name), nparams)
	}
	r.depth++
	defer func() { r.depth-- }()
	var out strings.Builder
	if _, err := r.exec(m.body, sc, &out); err != nil {
		return nil, err
	}
	return out.String(), nil
}
