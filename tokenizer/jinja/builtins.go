package jinja

type testFunc func(r *renderer, v Value, args []Value, kwargs []kwValue) (bool, error)

var builtinTests map[string]testFunc

func init() {
	builtinTests = map[string]testFunc{
		"odd":         modTest(2, 1),
		"even":        modTest(2, 0),
		"divisibleby": testDivisibleBy,
		"defined": func(_ *renderer, v Value, _ []Value, _ []kwValue) (bool, error) {
			_, u := v.(undefinedValue)
			return !u, nil
		},
		"undefined": func(_ *renderer, v Value, _ []Value, _ []kwValue) (bool, error) {
			_, u := v.(undefinedValue)
			return u, nil
		},
		"none":    func(_ *renderer, v Value, _ []Value, _ []kwValue) (bool, error) { return v == nil, nil },
		"boolean": func(_ *renderer, v Value, _ []Value, _ []kwValue) (bool, error) { _, ok := v.(bool); return ok, nil },
		"false": func(_ *renderer, v Value, _ []Value, _ []kwValue) (bool, error) {
			b, ok := v.(bool)
			return ok && !b, nil
		},
		"true": func(_ *renderer, v Value, _ []Value, _ []kwValue) (bool, error) {
			b, ok := v.(bool)
			return ok && b, nil
		},
		"integer": func(_ *renderer, v Value, _ []Value, _ []kwValue) (bool, error) { _, ok := v.(int64); return ok, nil },
		"float":   func(_ *renderer, v Value, _ []Value, _ []kwValue) (bool, error) { _, ok := v.(float64); return ok, nil },
		"number": func(_ *renderer, v Value, _ []Value, _ []kwValue) (bool, error) {
			_, _, _, ok := number(v)
			return ok, nil
		},
		"string": func(_ *renderer, v Value, _ []Value, _ []kwValue) (bool, error) {
			_, _, ok := isStringy(v)
			return ok, nil
		},
		"mapping":  func(_ *renderer, v Value, _ []Value, _ []kwValue) (bool, error) { _, ok := v.(*Dict); return ok, nil },
		"lower":    caseTest("islower"),
		"upper":    caseTest("isupper"),
		"sequence": testSequence,
		"iterable": testIterable,
		"callable": testCallable,
		"sameas":   testSameAs,
		"escaped": func(_ *renderer, v Value, _ []Value, _ []kwValue) (bool, error) {
			_, ok := v.(markupValue)
			return ok, nil
		},
		"in": func(_ *renderer, v Value, args []Value, kwargs []kwValue) (bool, error) {
			a, err := bindParams("test_in", []param{req("seq")}, args, kwargs)
			if err != nil {
				return false, err
			}
			return contains(a[0], v)
		},
		"filter": func(r *renderer, v Value, _ []Value, _ []kwValue) (bool, error) {
			s, ok := v.(string)
			return ok && r.env.known(s, true), nil
		},
		"test": func(r *renderer, v Value, _ []Value, _ []kwValue) (bool, error) {
			s, ok := v.(string)
			return ok && r.env.known(s, false), nil
		},
	}
	for _, op := range [][]string{{"==", "eq", "equalto"}, {"!=", "ne"}, {">", "gt", "greaterthan"}, {">=", "ge"}, {"<", "lt", "lessthan"}, {"<=", "le"}} {
		t := compareTest(op[0])
		for _, name := range op {
			builtinTests[name] = t
		}
	}
}

func oneArg(name string, args []Value, kwargs []kwValue) (Value, error) {
	if len(args)+len(kwargs) != 1 {
		return nil, typeError("%s() takes exactly 2 positional arguments (%d given)", name, 1+len(args)+len(kwargs))
	}
	if len(args) == 1 {
		return args[0], nil
	}
	return kwargs[0].value, nil
}

func compareTest(op string) testFunc {
	return func(_ *renderer, v Value, args []Value, kwargs []kwValue) (bool, error) {
		other, err := oneArg(op, args, kwargs)
		if err != nil {
			return false, err
		}
		return compare(op, v, other)
	}
}

func modTest(n, want int64) testFunc {
	return func(_ *renderer, v Value, args []Value, kwargs []kwValue) (bool, error) {
		if err := noArgs("test", args, kwargs); err != nil {
			return false, err
		}
		m, err := binaryOp("%", v, n)
		if err != nil {
			return false, err
		}
		return pyEquals(m, want), nil
	}
}

func testDivisibleBy(_ *renderer, v Value, args []Value, kwargs []kwValue) (bool, error) {
	num, err := oneArg("test_divisibleby", args, kwargs)
	if err != nil {
		return false, err
	}
	m, err := binaryOp("%", v, num)
	if err != nil {
		return false, err
	}
	return pyEquals(m, int64(0)), nil
}

func caseTest(method string) testFunc {
	return func(_ *renderer, v Value, args []Value, kwargs []kwValue) (bool, error) {
		if err := noArgs("test", args, kwargs); err != nil {
			return false, err
		}
		return strPredicate(pyStr(v), method), nil
	}
}

func testSequence(_ *renderer, v Value, _ []Value, _ []kwValue) (bool, error) {
	switch v.(type) {
	case string, markupValue, []Value, tupleValue, *Dict, undefinedValue, rangeValue:
		return true, nil
	}
	return false, nil
}

func testIterable(_ *renderer, v Value, _ []Value, _ []kwValue) (bool, error) {
	switch v.(type) {
	case string, markupValue, []Value, tupleValue, *Dict, undefinedValue, rangeValue, *iterator, dictView, *loopContext:
		return true, nil
	}
	return false, nil
}

func testCallable(_ *renderer, v Value, _ []Value, _ []kwValue) (bool, error) {
	switch v.(type) {
	case *macroValue, Func, *builtinFunc, *boundMethod, *loopContext, undefinedValue, *joiner:
		return true, nil
	}
	return false, nil
}

// testSameAs is Python's "is". Small ints are one object in CPython; other numbers and
// strings are compared as distinct objects unless they are the same Go value.
func testSameAs(_ *renderer, v Value, args []Value, kwargs []kwValue) (bool, error) {
	other, err := oneArg("test_sameas", args, kwargs)
	if err != nil {
		return false, err
	}
	switch a := v.(type) {
	case nil:
		return other == nil, nil
	case bool:
		b, ok := other.(bool)
		return ok && a == b, nil
	case int64:
		b, ok := other.(int64)
		return ok && a == b && a >= -5 && a <= 256, nil
	case []Value:
		b, ok := other.([]Value)
		return ok && len(a) == len(b) && len(a) > 0 && &a[0] == &b[0], nil
	case *Dict, *namespaceValue, *macroValue, *loopContext, *iterator, *cycler, *joiner, *builtinFunc:
		return v == other, nil
	case string:
		b, ok := other.(string)
		return ok && a == b && len(a) <= 1, nil
	}
	return false, nil
}

var builtinGlobals map[string]func(r *renderer, args []Value, kwargs []kwValue) (Value, error)

func init() {
	builtinGlobals = map[string]func(r *renderer, args []Value, kwargs []kwValue) (Value, error){
		"range":     globalRange,
		"dict":      globalDict,
		"namespace": globalNamespace,
		"cycler": func(_ *renderer, args []Value, kwargs []kwValue) (Value, error) {
			if len(args) == 0 {
				return nil, &Error{Kind: "RuntimeError", Msg: "at least one item has to be provided"}
			}
			return &cycler{items: append([]Value{}, args...)}, nil
		},
		"joiner": func(_ *renderer, args []Value, kwargs []kwValue) (Value, error) {
			a, err := bindParams("joiner", []param{opt("sep", ", ")}, args, kwargs)
			if err != nil {
				return nil, err
			}
			return &joiner{sep: pyStr(a[0])}, nil
		},
		"lipsum": func(*renderer, []Value, []kwValue) (Value, error) {
			return nil, unsupported("lipsum (random text)")
		},
	}
}

type cycler struct {
	items []Value
	pos   int
}

type joiner struct {
	sep  string
	used bool
}

// maxRange is the sandbox's MAX_RANGE.
const maxRange = 100000

func globalRange(_ *renderer, args []Value, kwargs []kwValue) (Value, error) {
	if len(kwargs) > 0 {
		return nil, typeError("range() takes no keyword arguments")
	}
	if len(args) < 1 || len(args) > 3 {
		return nil, typeError("range expected at most 3 arguments, got %d", len(args))
	}
	var n [3]int64
	for i, a := range args {
		v, err := integerArg(a)
		if err != nil {
			return nil, err
		}
		n[i] = v
	}
	r := rangeValue{0, n[0], 1}
	switch len(args) {
	case 2:
		r = rangeValue{n[0], n[1], 1}
	case 3:
		if n[2] == 0 {
			return nil, valueError("range() arg 3 must not be zero")
		}
		r = rangeValue{n[0], n[1], n[2]}
	}
	if r.length() > maxRange {
		return nil, &Error{Kind: "OverflowError", Msg: "Range too big. The sandbox blocks ranges larger than MAX_RANGE (100000)."}
	}
	return r, nil
}

func dictFrom(fname string, args []Value, kwargs []kwValue) (*Dict, error) {
	if len(args) > 1 {
		return nil, typeError("%s expected at most 1 argument, got %d", fname, len(args))
	}
	d := NewDict()
	if len(args) == 1 {
		switch src := args[0].(type) {
		case *Dict:
			for i, k := range src.keys {
				_ = d.Set(k, src.vals[i])
			}
		case *namespaceValue:
			return nil, typeError("'Namespace' object is not iterable")
		default:
			items, err := iterate(src)
			if err != nil {
				return nil, err
			}
			for i, it := range items {
				pair, err := iterate(it)
				if err != nil {
					return nil, typeError("cannot convert dictionary update sequence element #%d to a sequence", i)
				}
				if len(pair) != 2 {
					return nil, valueError("dictionary update sequence element #%d has length %d; 2 is required", i, len(pair))
				}
				if err := d.Set(pair[0], pair[1]); err != nil {
					return nil, err
				}
			}
		}
	}
	for _, k := range kwargs {
		d.SetString(k.name, k.value)
	}
	return d, nil
}

func globalDict(_ *renderer, args []Value, kwargs []kwValue) (Value, error) {
	return dictFrom("dict", args, kwargs)
}

func globalNamespace(_ *renderer, args []Value, kwargs []kwValue) (Value, error) {
	d, err := dictFrom("dict", args, kwargs)
	if err != nil {
		return nil, err
	}
	return &namespaceValue{attrs: d}, nil
}
