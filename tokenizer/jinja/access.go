package jinja

import "strings"

// Method names Python objects have, so that attribute access finds a method (as getattr does
// before falling back to item lookup).
var (
	strMethods = setOf("capitalize", "casefold", "center", "count", "encode", "endswith", "expandtabs",
		"find", "format", "format_map", "index", "isalnum", "isalpha", "isascii", "isdecimal", "isdigit",
		"isidentifier", "islower", "isnumeric", "isprintable", "isspace", "istitle", "isupper", "join",
		"ljust", "lower", "lstrip", "maketrans", "partition", "removeprefix", "removesuffix", "replace",
		"rfind", "rindex", "rjust", "rpartition", "rsplit", "rstrip", "split", "splitlines", "startswith",
		"strip", "swapcase", "title", "translate", "upper", "zfill")
	dictMethods  = setOf("clear", "copy", "fromkeys", "get", "items", "keys", "pop", "popitem", "setdefault", "update", "values")
	listMethods  = setOf("append", "clear", "copy", "count", "extend", "index", "insert", "pop", "remove", "reverse", "sort")
	tupleMethods = setOf("count", "index")
	// What ImmutableSandboxedEnvironment refuses (modifies_known_mutable).
	unsafeDict = setOf("clear", "pop", "popitem", "setdefault", "update")
	unsafeList = setOf("append", "reverse", "insert", "sort", "extend", "remove")
)

func setOf(names ...string) map[string]bool {
	m := make(map[string]bool, len(names))
	for _, n := range names {
		m[n] = true
	}
	return m
}

// boundMethod is a method looked up on a value, called later.
type boundMethod struct {
	recv Value
	name string
}

func unsafeAttr(obj Value, name string) undefinedValue {
	return undefinedValue{
		hint:     "access to attribute " + pyRepr(name) + " of " + pyRepr(typeName(obj)) + " object is unsafe.",
		name:     name,
		obj:      objectTypeRepr(obj),
		hasObj:   true,
		security: true,
	}
}

// method finds a Python attribute of obj that is a method, applying the sandbox. ok is false
// when obj has no such attribute.
func method(obj Value, name string) (Value, bool) {
	if strings.HasPrefix(name, "__") && strings.HasSuffix(name, "__") && len(name) > 4 {
		return unsafeAttr(obj, name), true
	}
	switch obj.(type) {
	case string:
		if strMethods[name] {
			return &boundMethod{obj, name}, true
		}
	case markupValue:
		if strMethods[name] || name == "escape" || name == "unescape" || name == "striptags" {
			return &boundMethod{obj, name}, true
		}
	case *Dict:
		if unsafeDict[name] {
			return unsafeAttr(obj, name), true
		}
		if dictMethods[name] {
			return &boundMethod{obj, name}, true
		}
	case []Value:
		if unsafeList[name] {
			return unsafeAttr(obj, name), true
		}
		if listMethods[name] {
			return &boundMethod{obj, name}, true
		}
	case tupleValue:
		if tupleMethods[name] {
			return &boundMethod{obj, name}, true
		}
	case *cycler:
		switch name {
		case "next", "reset":
			return &boundMethod{obj, name}, true
		}
	}
	return nil, false
}

// getAttr is the sandboxed environment's getattr: a Python attribute first, then obj[name].
func getAttr(obj Value, name string) (Value, error) {
	switch o := obj.(type) {
	case undefinedValue:
		return nil, o.fail()
	case *Dict:
		if m, ok := method(o, name); ok {
			return m, nil
		}
		if v, ok := o.Get(name); ok {
			return v, nil
		}
	case *namespaceValue:
		if v, ok := o.attrs.Get(name); ok {
			if strings.HasPrefix(name, "_") {
				return unsafeAttr(obj, name), nil
			}
			return v, nil
		}
	case *loopContext:
		if v, ok := o.attr(name); ok {
			return v, nil
		}
	case *cycler:
		if name == "current" {
			return o.items[o.pos], nil
		}
	case int64, bool, float64:
		if v, ok := numberAttr(o, name); ok {
			return v, nil
		}
	}
	if m, ok := method(obj, name); ok {
		return m, nil
	}
	return undefinedAttr(obj, name), nil
}

// getItem is the sandboxed environment's getitem: obj[key] first, then a Python attribute for
// string keys, else an undefined value.
func getItem(obj Value, key Value) (Value, error) {
	switch o := obj.(type) {
	case undefinedValue:
		return nil, o.fail()
	case *Dict:
		if _, err := hashKey(key); err == nil {
			if v, ok := o.Get(key); ok {
				return v, nil
			}
		}
	case []Value:
		if v, ok := indexSeq(o, key); ok {
			return v, nil
		}
	case tupleValue:
		if v, ok := indexSeq(o, key); ok {
			return v, nil
		}
	case string, markupValue:
		s, markup, _ := isStringy(o)
		if i, _, isF, ok := number(key); ok && !isF {
			rs := []rune(s)
			if i < 0 {
				i += int64(len(rs))
			}
			if i >= 0 && i < int64(len(rs)) {
				return markupIf(markup, string(rs[i])), nil
			}
		}
	case rangeValue:
		if i, _, isF, ok := number(key); ok && !isF {
			n := o.length()
			if i < 0 {
				i += n
			}
			if i >= 0 && i < n {
				return o.at(i), nil
			}
		}
	}
	if name, ok := key.(string); ok {
		switch o := obj.(type) {
		case *namespaceValue, *loopContext, *cycler:
			return getAttr(o, name)
		}
		if m, ok := method(obj, name); ok {
			return m, nil
		}
	}
	return undefinedAttr(obj, key), nil
}

func indexSeq(items []Value, key Value) (Value, bool) {
	i, _, isF, ok := number(key)
	if !ok || isF {
		return nil, false
	}
	if i < 0 {
		i += int64(len(items))
	}
	if i < 0 || i >= int64(len(items)) {
		return nil, false
	}
	return items[i], true
}

func sliceIndex(v Value) (int64, bool, error) {
	if v == nil {
		return 0, false, nil
	}
	i, _, isF, ok := number(v)
	if !ok || isF {
		return 0, false, typeError("slice indices must be integers or None or have an __index__ method")
	}
	return i, true, nil
}

// sliceBounds is CPython's PySlice_GetIndicesEx for a sequence of length n.
func sliceBounds(startV, stopV, stepV Value, n int64) (start, step, count int64, err error) {
	step = 1
	if s, ok, err := sliceIndex(stepV); err != nil {
		return 0, 0, 0, err
	} else if ok {
		if s == 0 {
			return 0, 0, 0, valueError("slice step cannot be zero")
		}
		step = s
	}
	adjust := func(v Value, def int64) (int64, error) {
		i, ok, err := sliceIndex(v)
		if err != nil {
			return 0, err
		}
		if !ok {
			return def, nil
		}
		if i < 0 {
			i += n
			if i < 0 {
				if step < 0 {
					return -1, nil
				}
				return 0, nil
			}
		} else if i >= n {
			if step < 0 {
				return n - 1, nil
			}
			return n, nil
		}
		return i, nil
	}
	var stop int64
	if step < 0 {
		if start, err = adjust(startV, n-1); err != nil {
			return
		}
		if stop, err = adjust(stopV, -1); err != nil {
			return
		}
		if stop < start {
			count = (start-stop-1)/(-step) + 1
		}
	} else {
		if start, err = adjust(startV, 0); err != nil {
			return
		}
		if stop, err = adjust(stopV, n); err != nil {
			return
		}
		if start < stop {
			count = (stop-start-1)/step + 1
		}
	}
	return start, step, count, nil
}

func sliceValue(obj, startV, stopV, stepV Value) (Value, error) {
	pick := func(n int64) (func(yield func(int64)), error) {
		start, step, count, err := sliceBounds(startV, stopV, stepV, n)
		if err != nil {
			return nil, err
		}
		return func(yield func(int64)) {
			for k := int64(0); k < count; k++ {
				yield(start + k*step)
			}
		}, nil
	}
	switch o := obj.(type) {
	case []Value, tupleValue:
		var items []Value
		if l, ok := o.([]Value); ok {
			items = l
		} else {
			items = o.(tupleValue)
		}
		each, err := pick(int64(len(items)))
		if err != nil {
			return nil, err
		}
		out := []Value{}
		each(func(i int64) { out = append(out, items[i]) })
		if _, ok := o.(tupleValue); ok {
			return tupleValue(out), nil
		}
		return out, nil
	case string, markupValue:
		s, markup, _ := isStringy(o)
		rs := []rune(s)
		each, err := pick(int64(len(rs)))
		if err != nil {
			return nil, err
		}
		var b strings.Builder
		each(func(i int64) { b.WriteRune(rs[i]) })
		return markupIf(markup, b.String()), nil
	case rangeValue:
		start, step, count, err := sliceBounds(startV, stopV, stepV, o.length())
		if err != nil {
			return nil, err
		}
		ns := o.at(start)
		return rangeValue{ns, ns + count*o.step*step, o.step * step}, nil
	}
	return nil, typeError("'%s' object is not subscriptable", typeName(obj))
}

// numberAttr returns the data attributes of int and float (real, imag, numerator, denominator).
func numberAttr(v Value, name string) (Value, bool) {
	i, f, isF, _ := number(v)
	switch name {
	case "real":
		if isF {
			return f, true
		}
		return i, true
	case "imag":
		if isF {
			return 0.0, true
		}
		return int64(0), true
	case "numerator":
		if !isF {
			return i, true
		}
	case "denominator":
		if !isF {
			return int64(1), true
		}
	}
	return nil, false
}
