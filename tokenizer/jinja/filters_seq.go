package jinja

import (
	"strconv"
	"strings"
)

func filterDictsort(r *renderer, v Value, args []Value, kwargs []kwValue) (Value, error) {
	a, err := bindParams("dictsort", []param{opt("case_sensitive", false), opt("by", "key"), opt("reverse", false)}, args, kwargs)
	if err != nil {
		return nil, err
	}
	d, ok := v.(*Dict)
	if !ok {
		return nil, typeError("'%s' object has no attribute 'items'", typeName(v))
	}
	pos := 0
	switch a[1] {
	case "key":
	case "value":
		pos = 1
	default:
		return nil, &Error{Kind: "FilterArgumentError", Msg: `You can only sort by either "key" or "value"`}
	}
	items := dictView{"items", d}.list()
	keys := make([]Value, len(items))
	for i, it := range items {
		k := it.(tupleValue)[pos]
		if !truth(a[0]) {
			k = ignoreCase(k)
		}
		keys[i] = k
	}
	return sortByKeys(items, keys, truth(a[2]))
}

func ignoreCase(v Value) Value {
	switch s := v.(type) {
	case string:
		return pyLower(s)
	case markupValue:
		return markupValue(pyLower(string(s)))
	}
	return v
}

// sortByKeys sorts items by precomputed keys, stably, as Python's sorted(key=...) does; with
// reverse the stable order of equal keys is kept too.
func sortByKeys(items, keys []Value, reverse bool) ([]Value, error) {
	idx := make([]int, len(items))
	for i := range idx {
		idx[i] = i
	}
	var err error
	sortStable(idx, func(x, y int) bool {
		a, b := keys[x], keys[y]
		if reverse {
			a, b = b, a
		}
		less, e := pyLess(a, b)
		if e != nil && err == nil {
			err = e
		}
		return less
	})
	if err != nil {
		return nil, err
	}
	out := make([]Value, len(items))
	for i, j := range idx {
		out[i] = items[j]
	}
	return out, nil
}

// attrParts is _prepare_attribute_parts: "a.0.b" → ["a", 0, "b"].
func attrParts(attr Value) []Value {
	if attr == nil {
		return nil
	}
	s, ok := attr.(string)
	if !ok {
		return []Value{attr}
	}
	var parts []Value
	for _, p := range strings.Split(s, ".") {
		if p != "" && strings.Trim(p, "0123456789") == "" {
			n, err := strconv.ParseInt(p, 10, 64)
			if err == nil {
				parts = append(parts, n)
				continue
			}
		}
		parts = append(parts, p)
	}
	return parts
}

// attrGetter is make_attrgetter: item lookups along a dotted path, with an optional default
// for undefined results.
func attrGetter(attr Value, def Value) func(Value) (Value, error) {
	parts := attrParts(attr)
	return func(item Value) (Value, error) {
		for _, p := range parts {
			var err error
			if item, err = getItem(item, p); err != nil {
				return nil, err
			}
			if _, undef := item.(undefinedValue); undef && def != nil {
				item = def
			}
		}
		return item, nil
	}
}

// attributeItems iterates v, taking each item's attribute attr instead where attr is not nil.
func attributeItems(v, attr Value) ([]Value, error) {
	items, err := iterate(v)
	if err != nil || attr == nil {
		return items, err
	}
	return mapAttr(items, attr, nil)
}

func mapAttr(items []Value, attr, def Value) ([]Value, error) {
	return mapEach(items, attrGetter(attr, def))
}

func filterMap(r *renderer, v Value, args []Value, kwargs []kwValue) (Value, error) {
	if !truth(v) {
		return &iterator{kind: "generator"}, nil
	}
	items, err := iterate(v)
	if err != nil {
		return nil, err
	}
	if len(args) == 0 && kwargIndex(kwargs, "attribute") >= 0 {
		var attr, def Value
		for _, k := range kwargs {
			switch k.name {
			case "attribute":
				attr = k.value
			case "default":
				def = k.value
			default:
				return nil, &Error{Kind: "FilterArgumentError", Msg: "Unexpected keyword argument " + pyRepr(k.name)}
			}
		}
		out, err := mapAttr(items, attr, def)
		if err != nil {
			return nil, err
		}
		return &iterator{kind: "generator", items: out}, nil
	}
	if len(args) == 0 {
		return nil, &Error{Kind: "FilterArgumentError", Msg: "map requires a filter argument"}
	}
	name, ok := args[0].(string)
	if !ok {
		return nil, typeError("filter name must be a string")
	}
	out := make([]Value, len(items))
	for i, it := range items {
		if out[i], err = r.filter(name, it, args[1:], kwargs); err != nil {
			return nil, err
		}
	}
	return &iterator{kind: "generator", items: out}, nil
}

func kwargIndex(kwargs []kwValue, name string) int {
	for i, k := range kwargs {
		if k.name == name {
			return i
		}
	}
	return -1
}

func selectOrReject(keep, lookupAttr bool) filterFunc {
	return func(r *renderer, v Value, args []Value, kwargs []kwValue) (Value, error) {
		if !truth(v) {
			return &iterator{kind: "generator"}, nil
		}
		items, err := iterate(v)
		if err != nil {
			return nil, err
		}
		get := func(x Value) (Value, error) { return x, nil }
		off := 0
		if lookupAttr {
			if len(args) == 0 {
				return nil, &Error{Kind: "FilterArgumentError", Msg: "Missing parameter for attribute name"}
			}
			get = attrGetter(args[0], nil)
			off = 1
		}
		var test func(Value) (bool, error)
		if len(args) > off {
			name, ok := args[off].(string)
			if !ok {
				return nil, typeError("test name must be a string")
			}
			rest := args[off+1:]
			test = func(x Value) (bool, error) {
				ok, err := r.callTest(name, x, rest, kwargs)
				return truth(ok), err
			}
		} else {
			test = func(x Value) (bool, error) { return truth(x), nil }
		}
		var out []Value
		for _, it := range items {
			x, err := get(it)
			if err != nil {
				return nil, err
			}
			ok, err := test(x)
			if err != nil {
				return nil, err
			}
			if ok == keep {
				out = append(out, it)
			}
		}
		return &iterator{kind: "generator", items: out}, nil
	}
}

// compareKey is the key that unique, min and max compare items by: their attribute attr,
// case-folded unless caseSensitive is true.
func compareKey(caseSensitive, attr Value) func(Value) (Value, error) {
	get := attrGetter(attr, nil)
	return func(x Value) (Value, error) {
		k, err := get(x)
		if err != nil {
			return nil, err
		}
		if !truth(caseSensitive) {
			k = ignoreCase(k)
		}
		return k, nil
	}
}

func filterUnique(r *renderer, v Value, args []Value, kwargs []kwValue) (Value, error) {
	a, err := bindParams("unique", []param{opt("case_sensitive", false), opt("attribute", nil)}, args, kwargs)
	if err != nil {
		return nil, err
	}
	items, err := iterate(v)
	if err != nil {
		return nil, err
	}
	key := compareKey(a[0], a[1])
	seen := map[any]bool{}
	var out []Value
	for _, it := range items {
		k, err := key(it)
		if err != nil {
			return nil, err
		}
		hk, err := hashKey(k)
		if err != nil {
			return nil, err
		}
		if !seen[hk] {
			seen[hk] = true
			out = append(out, it)
		}
	}
	return &iterator{kind: "generator", items: out}, nil
}

func filterReverse(r *renderer, v Value, args []Value, kwargs []kwValue) (Value, error) {
	if err := noArgs("reverse", args, kwargs); err != nil {
		return nil, err
	}
	if s, markup, ok := isStringy(v); ok {
		rs := []rune(s)
		for i, j := 0, len(rs)-1; i < j; i, j = i+1, j-1 {
			rs[i], rs[j] = rs[j], rs[i]
		}
		return markupIf(markup, string(rs)), nil
	}
	kind := "reversed"
	switch v.(type) {
	case []Value:
		kind = "list_reverseiterator"
	case *Dict:
		kind = "dict_reversekeyiterator"
	case rangeValue:
		kind = "range_iterator"
	}
	items, err := iterate(v)
	if err != nil {
		return nil, &Error{Kind: "FilterArgumentError", Msg: "argument must be iterable"}
	}
	out := make([]Value, len(items))
	for i, it := range items {
		out[len(items)-1-i] = it
	}
	if _, ok := v.(*iterator); ok {
		return out, nil
	}
	return &iterator{kind: kind, items: out}, nil
}

func filterSort(r *renderer, v Value, args []Value, kwargs []kwValue) (Value, error) {
	a, err := bindParams("sort", []param{opt("reverse", false), opt("case_sensitive", false), opt("attribute", nil)}, args, kwargs)
	if err != nil {
		return nil, err
	}
	items, err := iterate(v)
	if err != nil {
		return nil, err
	}
	keys := make([]Value, len(items))
	var attrs []Value
	if s, ok := a[2].(string); ok {
		for _, p := range strings.Split(s, ",") {
			attrs = append(attrs, p)
		}
	} else {
		attrs = []Value{a[2]}
	}
	for i, it := range items {
		key := make([]Value, len(attrs))
		for j, at := range attrs {
			var x Value = it
			if at != nil {
				if x, err = attrGetter(at, nil)(it); err != nil {
					return nil, err
				}
			}
			if !truth(a[1]) {
				x = ignoreCase(x)
			}
			key[j] = x
		}
		keys[i] = key
	}
	return sortByKeys(items, keys, truth(a[0]))
}

func minMax(isMin bool) filterFunc {
	return func(r *renderer, v Value, args []Value, kwargs []kwValue) (Value, error) {
		a, err := bindParams("min", []param{opt("case_sensitive", false), opt("attribute", nil)}, args, kwargs)
		if err != nil {
			return nil, err
		}
		items, err := iterate(v)
		if err != nil {
			return nil, err
		}
		if len(items) == 0 {
			return undefinedHint("No aggregated item, sequence was empty."), nil
		}
		key := compareKey(a[0], a[1])
		best := items[0]
		bestKey, err := key(best)
		if err != nil {
			return nil, err
		}
		for _, it := range items[1:] {
			k, err := key(it)
			if err != nil {
				return nil, err
			}
			var better bool
			if isMin {
				better, err = pyLess(k, bestKey)
			} else {
				better, err = pyLess(bestKey, k)
			}
			if err != nil {
				return nil, err
			}
			if better {
				best, bestKey = it, k
			}
		}
		return best, nil
	}
}

// countAndFill binds the arguments of filter, whose count parameter (what, to errors) must be
// a positive integer and whose fill_with defaults to none, and iterates v.
func countAndFill(v Value, filter, count, what string, args []Value, kwargs []kwValue) (n int64, fill Value, items []Value, err error) {
	a, err := bindParams(filter, []param{req(count), opt("fill_with", nil)}, args, kwargs)
	if err != nil {
		return 0, nil, nil, err
	}
	n, _, isF, ok := number(a[0])
	if !ok || isF || n <= 0 {
		return 0, nil, nil, valueError("%s must be a positive integer", what)
	}
	items, err = iterate(v)
	if err != nil {
		return 0, nil, nil, err
	}
	return n, a[1], items, nil
}

func filterBatch(r *renderer, v Value, args []Value, kwargs []kwValue) (Value, error) {
	n, fill, items, err := countAndFill(v, "batch", "linecount", "batch size", args, kwargs)
	if err != nil {
		return nil, err
	}
	var out []Value
	for i := 0; i < len(items); i += int(n) {
		end := min(i+int(n), len(items))
		chunk := append([]Value{}, items[i:end]...)
		if fill != nil {
			for int64(len(chunk)) < n {
				chunk = append(chunk, fill)
			}
		}
		out = append(out, chunk)
	}
	return &iterator{kind: "generator", items: out}, nil
}

func filterSlice(r *renderer, v Value, args []Value, kwargs []kwValue) (Value, error) {
	slices, fill, seq, err := countAndFill(v, "slice", "slices", "slice count", args, kwargs)
	if err != nil {
		return nil, err
	}
	n := int64(len(seq))
	per, extra := n/slices, n%slices
	offset := int64(0)
	var out []Value
	for k := int64(0); k < slices; k++ {
		start := offset + k*per
		if k < extra {
			offset++
		}
		end := offset + (k+1)*per
		chunk := append([]Value{}, seq[start:end]...)
		if fill != nil && k >= extra {
			chunk = append(chunk, fill)
		}
		out = append(out, chunk)
	}
	return &iterator{kind: "generator", items: out}, nil
}
