package jinja

import "strings"

func (r *renderer) eval(e expr, sc *scope) (Value, error) {
	switch e := e.(type) {
	case *constExpr:
		return e.v, nil
	case *nameExpr:
		if v, ok := sc.lookup(e.name); ok {
			return v, nil
		}
		return undefinedName(e.name), nil
	case *getattrExpr:
		obj, err := r.eval(e.obj, sc)
		if err != nil {
			return nil, err
		}
		return getAttr(obj, e.attr)
	case *getitemExpr:
		obj, err := r.eval(e.obj, sc)
		if err != nil {
			return nil, err
		}
		if s, ok := e.key.(*sliceExpr); ok {
			return r.evalSlice(obj, s, sc)
		}
		key, err := r.eval(e.key, sc)
		if err != nil {
			return nil, err
		}
		return getItem(obj, key)
	case *sliceExpr:
		return nil, typeError("slice outside a subscript")
	case *tupleExpr:
		items, err := r.evalList(e.items, sc)
		return tupleValue(items), err
	case *listExpr:
		items, err := r.evalList(e.items, sc)
		if items == nil && err == nil {
			items = []Value{}
		}
		return items, err
	case *dictExpr:
		d := NewDict()
		for i := range e.keys {
			k, err := r.eval(e.keys[i], sc)
			if err != nil {
				return nil, err
			}
			v, err := r.eval(e.vals[i], sc)
			if err != nil {
				return nil, err
			}
			if err := d.Set(k, v); err != nil {
				return nil, err
			}
		}
		return d, nil
	case *callExpr:
		return r.evalCall(e, sc, nil)
	case *filterExpr:
		var in Value
		if e.node != nil {
			var err error
			if in, err = r.eval(e.node, sc); err != nil {
				return nil, err
			}
		}
		return r.callFilter(e, in, sc)
	case *testExpr:
		v, args, kwargs, err := r.evalWithArgs(e.node, &e.callArgs, sc)
		if err != nil {
			return nil, err
		}
		return r.callTest(e.name, v, args, kwargs)
	case *unaryExpr:
		x, err := r.eval(e.x, sc)
		if err != nil {
			return nil, err
		}
		if e.op == "not" {
			return !truth(x), nil
		}
		return unaryOp(e.op, x)
	case *binExpr:
		l, err := r.eval(e.l, sc)
		if err != nil {
			return nil, err
		}
		rv, err := r.eval(e.r, sc)
		if err != nil {
			return nil, err
		}
		return binaryOp(e.op, l, rv)
	case *andExpr:
		l, err := r.eval(e.l, sc)
		if err != nil || !truth(l) {
			return l, err
		}
		return r.eval(e.r, sc)
	case *orExpr:
		l, err := r.eval(e.l, sc)
		if err != nil || truth(l) {
			return l, err
		}
		return r.eval(e.r, sc)
	case *concatExpr:
		var b strings.Builder
		for _, it := range e.items {
			v, err := r.eval(it, sc)
			if err != nil {
				return nil, err
			}
			writeValue(&b, v)
			if b.Len() > maxOutput {
				return nil, errOutputTooLarge
			}
		}
		return b.String(), nil
	case *compareExpr:
		left, err := r.eval(e.first, sc)
		if err != nil {
			return nil, err
		}
		for i, op := range e.ops {
			right, err := r.eval(e.operands[i], sc)
			if err != nil {
				return nil, err
			}
			ok, err := compare(op, left, right)
			if err != nil {
				return nil, err
			}
			if !ok {
				return false, nil
			}
			left = right
		}
		return true, nil
	case *condExpr:
		t, err := r.eval(e.test, sc)
		if err != nil {
			return nil, err
		}
		if truth(t) {
			return r.eval(e.yes, sc)
		}
		if e.no == nil {
			return undefinedHint(sprintf("the inline if-expression on line %d evaluated to false and no else section was defined.", e.line)), nil
		}
		return r.eval(e.no, sc)
	}
	return nil, typeError("unknown expression %T", e)
}

func (r *renderer) evalList(items []expr, sc *scope) ([]Value, error) {
	if len(items) == 0 {
		return nil, nil
	}
	out := make([]Value, len(items))
	for i, it := range items {
		v, err := r.eval(it, sc)
		if err != nil {
			return nil, err
		}
		out[i] = v
	}
	return out, nil
}

func (r *renderer) evalSlice(obj Value, s *sliceExpr, sc *scope) (Value, error) {
	var parts [3]Value
	for i, e := range []expr{s.start, s.stop, s.step} {
		if e == nil {
			continue
		}
		v, err := r.eval(e, sc)
		if err != nil {
			return nil, err
		}
		parts[i] = v
	}
	if u, ok := obj.(undefinedValue); ok {
		return nil, u.fail()
	}
	v, err := sliceValue(obj, parts[0], parts[1], parts[2])
	if err != nil {
		if e, ok := err.(*Error); ok && e.Kind == "ValueError" {
			return nil, err
		}
		// Jinja's getitem turns TypeError and LookupError into an undefined value.
		return undefinedAttr(obj, pyRepr(tupleValue{parts[0], parts[1], parts[2]})), nil
	}
	return v, nil
}

// evalWithArgs evaluates e and then the call arguments c, in Python's order.
func (r *renderer) evalWithArgs(e expr, c *callArgs, sc *scope) (Value, []Value, []kwValue, error) {
	v, err := r.eval(e, sc)
	if err != nil {
		return nil, nil, nil, err
	}
	args, kwargs, err := r.evalArgs(c, sc)
	if err != nil {
		return nil, nil, nil, err
	}
	return v, args, kwargs, nil
}

// evalArgs evaluates call arguments, expanding *args and **kwargs.
func (r *renderer) evalArgs(c *callArgs, sc *scope) ([]Value, []kwValue, error) {
	var args []Value
	if len(c.args) > 0 {
		args = make([]Value, 0, len(c.args))
	}
	for _, a := range c.args {
		v, err := r.eval(a, sc)
		if err != nil {
			return nil, nil, err
		}
		args = append(args, v)
	}
	if c.dynArgs != nil {
		v, err := r.eval(c.dynArgs, sc)
		if err != nil {
			return nil, nil, err
		}
		items, err := iterate(v)
		if err != nil {
			return nil, nil, err
		}
		args = append(args, items...)
	}
	var kwargs []kwValue
	for _, k := range c.kwargs {
		v, err := r.eval(k.value, sc)
		if err != nil {
			return nil, nil, err
		}
		kwargs = append(kwargs, kwValue{k.name, v})
	}
	if c.dynKwargs != nil {
		v, err := r.eval(c.dynKwargs, sc)
		if err != nil {
			return nil, nil, err
		}
		d, ok := v.(*Dict)
		if !ok {
			if _, undef := v.(undefinedValue); undef {
				return args, kwargs, nil
			}
			return nil, nil, typeError("argument after ** must be a mapping, not %s", typeName(v))
		}
		for i, k := range d.keys {
			ks, ok := k.(string)
			if !ok {
				return nil, nil, typeError("keywords must be strings")
			}
			kwargs = append(kwargs, kwValue{ks, d.vals[i]})
		}
	}
	return args, kwargs, nil
}

func (r *renderer) evalCall(e *callExpr, sc *scope, caller *macroValue) (Value, error) {
	fn, args, kwargs, err := r.evalWithArgs(e.fn, &e.callArgs, sc)
	if err != nil {
		return nil, err
	}
	if caller != nil {
		kwargs = append(kwargs, kwValue{"caller", caller})
	}
	return r.call(fn, args, kwargs)
}

func (r *renderer) call(fn Value, args []Value, kwargs []kwValue) (Value, error) {
	switch f := fn.(type) {
	case *macroValue:
		return r.callMacro(f, args, kwargs)
	case Func:
		return f(args, kwMap(kwargs))
	case *builtinFunc:
		return f.fn(r, args, kwargs)
	case *boundMethod:
		return r.callMethod(f, args, kwargs)
	case *loopContext:
		if f.node == nil {
			return nil, typeError("The loop must have the 'recursive' marker to be called recursively.")
		}
		if len(args) != 1 || len(kwargs) > 0 {
			return nil, typeError("loop() takes exactly one argument")
		}
		if r.depth >= maxDepth {
			return nil, &Error{Kind: "RecursionError", Msg: "maximum recursion depth exceeded"}
		}
		r.depth++
		defer func() { r.depth-- }()
		var b strings.Builder
		if err := r.execFor(f.node, args[0], f.sc, &b, f.depth0+1); err != nil {
			return nil, err
		}
		return b.String(), nil
	case *joiner:
		if !f.used {
			f.used = true
			return "", nil
		}
		return f.sep, nil
	case undefinedValue:
		return nil, f.fail()
	}
	return nil, typeError("'%s' object is not callable", typeName(fn))
}

func kwMap(kwargs []kwValue) map[string]Value {
	if len(kwargs) == 0 {
		return nil
	}
	m := make(map[string]Value, len(kwargs))
	for _, k := range kwargs {
		m[k.name] = k.value
	}
	return m
}

func (r *renderer) callFilter(f *filterExpr, v Value, sc *scope) (Value, error) {
	args, kwargs, err := r.evalArgs(&f.callArgs, sc)
	if err != nil {
		return nil, err
	}
	return r.filter(f.name, v, args, kwargs)
}

// filter applies the named filter: the environment's own first, then the built-in ones.
func (r *renderer) filter(name string, v Value, args []Value, kwargs []kwValue) (Value, error) {
	if f, ok := r.env.Filters[name]; ok {
		return f(append([]Value{v}, args...), kwMap(kwargs))
	}
	f, ok := builtinFilters[name]
	if !ok {
		return nil, &Error{Kind: "TemplateRuntimeError", Msg: sprintf("No filter named '%s' found.", name)}
	}
	return f(r, v, args, kwargs)
}

func (r *renderer) callTest(name string, v Value, args []Value, kwargs []kwValue) (Value, error) {
	t, ok := builtinTests[name]
	if !ok {
		return nil, &Error{Kind: "TemplateRuntimeError", Msg: sprintf("No test named '%s' found.", name)}
	}
	ok, err := t(r, v, args, kwargs)
	return ok, err
}

// builtinFunc is a global such as range or namespace.
type builtinFunc struct {
	name string
	fn   func(r *renderer, args []Value, kwargs []kwValue) (Value, error)
}

// params binds positional and keyword arguments to named parameters as Python does. defaults
// holds one value per parameter; a nil entry marks a required parameter (use noDefault).
type param struct {
	name string
	def  Value
	req  bool
}

func bindParams(fname string, ps []param, args []Value, kwargs []kwValue) ([]Value, error) {
	if len(args) > len(ps) {
		return nil, typeError("%s() takes at most %d positional arguments (%d given)", fname, len(ps), len(args))
	}
	out := make([]Value, len(ps))
	set := make([]bool, len(ps))
	for i, a := range args {
		out[i] = a
		set[i] = true
	}
	for _, k := range kwargs {
		found := false
		for i, p := range ps {
			if p.name == k.name {
				if set[i] {
					return nil, typeError("%s() got multiple values for argument '%s'", fname, k.name)
				}
				out[i] = k.value
				set[i] = true
				found = true
				break
			}
		}
		if !found {
			return nil, typeError("%s() got an unexpected keyword argument '%s'", fname, k.name)
		}
	}
	for i, p := range ps {
		if !set[i] {
			if p.req {
				return nil, typeError("%s() missing required argument: '%s'", fname, p.name)
			}
			out[i] = p.def
		}
	}
	return out, nil
}

func req(name string) param            { return param{name: name, req: true} }
func opt(name string, def Value) param { return param{name: name, def: def} }
