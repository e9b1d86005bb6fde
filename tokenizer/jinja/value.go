package jinja

import (
	"fmt"
	"math"
	"sort"
	"strings"
)

// Value is any template value. The dynamic types the interpreter understands mirror the Python
// objects Jinja2 sees; a host gives and gets the exported ones:
//
//	nil           None
//	bool          bool
//	int64         int
//	float64       float
//	string        str
//	[]Value       list
//	*Dict         dict (insertion-ordered)
//	Func          a callable supplied by the host (a global or a filter)
//
// and templates make the others (markupValue: markupsafe.Markup, a str marked safe;
// tupleValue: tuple; undefinedValue: jinja2.Undefined; *namespaceValue: namespace();
// *macroValue: a macro).
//
// ValueOf converts ordinary Go values (int, float32, map[string]any, []string, ...) to these.
type Value = any

// tupleValue is a Python tuple: like a list, but printed with parentheses and never equal to a list.
type tupleValue []Value

// markupValue is a string marked safe, as markupsafe.markupValue: joining a plain string to it with +
// HTML-escapes the plain string.
type markupValue string

// Func is a callable provided by the host: a global function or a filter. For a filter the
// filtered value is args[0]. kwargs is nil when the call has no keyword arguments.
type Func func(args []Value, kwargs map[string]Value) (Value, error)

// namespaceValue is the mutable object namespace() returns: the only thing a template may assign
// attributes on ({% set ns.x = 1 %}).
type namespaceValue struct {
	attrs *Dict
}

// undefinedValue is the value of a missing variable, attribute or item, as jinja2.undefinedValue: it
// prints as "", is false, iterates as empty, and fails on any other use.
type undefinedValue struct {
	hint     string // explicit message, if any
	name     Value  // the missing name or key
	obj      string // object_type_repr of the container, when hasObj
	hasObj   bool
	security bool // raise SecurityError rather than UndefinedError (sandbox)
}

func undefinedName(name string) undefinedValue { return undefinedValue{name: name} }

func undefinedHint(hint string) undefinedValue { return undefinedValue{hint: hint} }

func undefinedAttr(obj Value, name Value) undefinedValue {
	return undefinedValue{name: name, obj: objectTypeRepr(obj), hasObj: true}
}

// message is the text of the error Jinja raises when the undefined value is used.
func (u undefinedValue) message() string {
	if u.hint != "" {
		return u.hint
	}
	if !u.hasObj {
		return pyRepr(u.name) + " is undefined"
	}
	if _, ok := u.name.(string); !ok {
		return u.obj + " has no element " + pyRepr(u.name)
	}
	return pyRepr(u.obj) + " has no attribute " + pyRepr(u.name)
}

func (u undefinedValue) fail() error {
	if u.security {
		return &Error{Kind: "SecurityError", Msg: u.message()}
	}
	return &Error{Kind: "UndefinedError", Msg: u.message()}
}

// Error is a template error: Kind is the Python exception class Jinja2 would raise
// (TemplateSyntaxError, UndefinedError, TypeError, TemplateError, SecurityError, ...), Line the
// template line where it is known (0 otherwise).
type Error struct {
	Kind string
	Msg  string
	Line int
}

func (e *Error) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("jinja: %s: %s (line %d)", e.Kind, e.Msg, e.Line)
	}
	return fmt.Sprintf("jinja: %s: %s", e.Kind, e.Msg)
}

func typeError(format string, args ...any) error {
	return &Error{Kind: "TypeError", Msg: fmt.Sprintf(format, args...)}
}

func valueError(format string, args ...any) error {
	return &Error{Kind: "ValueError", Msg: fmt.Sprintf(format, args...)}
}

// Dict is an insertion-ordered dictionary with Python key semantics (1, 1.0 and True are the
// same key). Templates cannot mutate it: the sandbox forbids dict.update and friends.
type Dict struct {
	keys  []Value
	vals  []Value
	index map[any]int // built once the dict is large enough for scans to cost more
}

// NewDict returns an empty dictionary.
func NewDict() *Dict { return &Dict{} }

const dictIndexMin = 12

// Len returns the number of entries.
func (d *Dict) Len() int { return len(d.keys) }

// Keys returns the keys in insertion order. The slice must not be modified.
func (d *Dict) Keys() []Value { return d.keys }

// Values returns the values in insertion order. The slice must not be modified.
func (d *Dict) Values() []Value { return d.vals }

func (d *Dict) find(k Value) (int, error) {
	hk, err := hashKey(k)
	if err != nil {
		return -1, err
	}
	if d.index != nil {
		if i, ok := d.index[hk]; ok {
			return i, nil
		}
		return -1, nil
	}
	for i, key := range d.keys {
		if kk, _ := hashKey(key); kk == hk {
			return i, nil
		}
	}
	return -1, nil
}

// Get returns the value stored under k.
func (d *Dict) Get(k Value) (Value, bool) {
	i, err := d.find(k)
	if err != nil || i < 0 {
		return nil, false
	}
	return d.vals[i], true
}

// Set stores v under k, keeping the position of an existing key. It fails for unhashable keys
// (lists, dicts), as Python does.
func (d *Dict) Set(k, v Value) error {
	i, err := d.find(k)
	if err != nil {
		return err
	}
	if i >= 0 {
		d.vals[i] = v
		return nil
	}
	d.keys = append(d.keys, k)
	d.vals = append(d.vals, v)
	if d.index != nil {
		hk, _ := hashKey(k)
		d.index[hk] = len(d.keys) - 1
	} else if len(d.keys) >= dictIndexMin {
		d.index = make(map[any]int, len(d.keys)*2)
		for j, key := range d.keys {
			hk, _ := hashKey(key)
			d.index[hk] = j
		}
	}
	return nil
}

// SetString is Set for a string key, which cannot fail.
func (d *Dict) SetString(k string, v Value) { _ = d.Set(k, v) }

type nilKey struct{}

type tupleKey string

// hashKey maps a hashable value to a comparable Go key with Python's equality: numbers that
// compare equal hash equal, Markup and str are the same key.
func hashKey(k Value) (any, error) {
	switch k := k.(type) {
	case nil:
		return nilKey{}, nil
	case bool:
		if k {
			return int64(1), nil
		}
		return int64(0), nil
	case int64:
		return k, nil
	case float64:
		if k == math.Trunc(k) && math.Abs(k) < 1<<63 {
			return int64(k), nil
		}
		return k, nil
	case string:
		return k, nil
	case markupValue:
		return string(k), nil
	case tupleValue:
		var b strings.Builder
		for _, e := range k {
			hk, err := hashKey(e)
			if err != nil {
				return nil, err
			}
			fmt.Fprintf(&b, "%T:%v;", hk, hk)
		}
		return tupleKey(b.String()), nil
	case undefinedValue:
		return undefinedValue{}, nil
	case *namespaceValue, *macroValue, *loopContext:
		return k, nil
	}
	return nil, typeError("unhashable type: '%s'", typeName(k))
}

// newNamespace returns a namespace holding the given attributes.
func newNamespace(attrs *Dict) *namespaceValue {
	if attrs == nil {
		attrs = NewDict()
	}
	return &namespaceValue{attrs: attrs}
}

// Attr returns a namespace attribute.
func (n *namespaceValue) Attr(name string) (Value, bool) { return n.attrs.Get(name) }

// ValueOf converts a Go value into a template value: integers to int64, floats to float64,
// maps with string keys to *Dict (keys sorted, since Go maps have no order; use ParseJSON to
// keep a document's order), slices to lists. Values already in template form pass through.
func ValueOf(x any) (Value, error) {
	switch x := x.(type) {
	case nil, bool, int64, float64, string, markupValue, *Dict, undefinedValue, *namespaceValue, Func, tupleValue:
		return x, nil
	case int:
		return int64(x), nil
	case int8:
		return int64(x), nil
	case int16:
		return int64(x), nil
	case int32:
		return int64(x), nil
	case uint8:
		return int64(x), nil
	case uint16:
		return int64(x), nil
	case uint32:
		return int64(x), nil
	case uint:
		return unsignedValue(uint64(x))
	case uint64:
		return unsignedValue(x)
	case float32:
		return float64(x), nil
	case func(args []Value, kwargs map[string]Value) (Value, error):
		return Func(x), nil
	case []Value:
		return listOf(x)
	case []string:
		return listOf(x)
	case []map[string]any:
		return listOf(x)
	case map[string]any:
		return dictOf(x)
	case map[string]string:
		return dictOf(x)
	}
	return nil, fmt.Errorf("jinja: cannot use Go value of type %T in a template", x)
}

// unsignedValue converts x to int64, or fails where it is out of int64's range.
func unsignedValue(x uint64) (Value, error) {
	if x > math.MaxInt64 {
		return nil, fmt.Errorf("jinja: value %d out of int64 range", x)
	}
	return int64(x), nil
}

// listOf converts each element of x with ValueOf into a list.
func listOf[T any](x []T) (Value, error) {
	out, err := mapEach(x, func(e T) (Value, error) { return ValueOf(e) })
	if err != nil {
		return nil, err
	}
	return out, nil
}

// mapEach applies f to each element of x, stopping at the first error.
func mapEach[T any](x []T, f func(T) (Value, error)) ([]Value, error) {
	out := make([]Value, len(x))
	for i, e := range x {
		v, err := f(e)
		if err != nil {
			return nil, err
		}
		out[i] = v
	}
	return out, nil
}

// dictOf converts each value of x with ValueOf into a *Dict, keys sorted.
func dictOf[T any](x map[string]T) (Value, error) {
	keys := make([]string, 0, len(x))
	for k := range x {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	d := NewDict()
	for _, k := range keys {
		v, err := ValueOf(x[k])
		if err != nil {
			return nil, err
		}
		d.SetString(k, v)
	}
	return d, nil
}

// typeName is Python's type(x).__name__ for the value.
func typeName(v Value) string {
	switch v := v.(type) {
	case nil:
		return "NoneType"
	case bool:
		return "bool"
	case int64:
		return "int"
	case float64:
		return "float"
	case string:
		return "str"
	case markupValue:
		return "Markup"
	case []Value:
		return "list"
	case tupleValue:
		return "tuple"
	case *Dict:
		return "dict"
	case undefinedValue:
		return "Undefined"
	case *namespaceValue:
		return "Namespace"
	case *macroValue:
		return "Macro"
	case *loopContext:
		return "LoopContext"
	case *iterator:
		return v.kind
	case dictView:
		return "dict_" + v.kind
	case rangeValue:
		return "range"
	case Func, *builtinFunc:
		return "function"
	case *boundMethod:
		return "builtin_function_or_method"
	case *cycler:
		return "Cycler"
	case *joiner:
		return "Joiner"
	}
	return fmt.Sprintf("%T", v)
}

// objectTypeRepr is jinja2.utils.object_type_repr, used in undefined-attribute messages.
func objectTypeRepr(v Value) string {
	if v == nil {
		return "None"
	}
	return typeName(v) + " object"
}

// truth is Python's bool(v).
func truth(v Value) bool {
	switch v := v.(type) {
	case nil:
		return false
	case bool:
		return v
	case int64:
		return v != 0
	case float64:
		return v != 0
	case string:
		return v != ""
	case markupValue:
		return v != ""
	case []Value:
		return len(v) > 0
	case tupleValue:
		return len(v) > 0
	case *Dict:
		return v.Len() > 0
	case undefinedValue:
		return false
	case dictView:
		return v.d.Len() > 0
	case rangeValue:
		return v.length() > 0
	}
	return true
}

// iterator is a single-use Python iterator or generator (what map, select, reverse, items ...
// return): iterating it consumes it.
type iterator struct {
	kind  string // Python type name: generator, list_reverseiterator, ...
	items []Value
	pos   int
}

func (it *iterator) rest() []Value {
	r := it.items[it.pos:]
	it.pos = len(it.items)
	return r
}

// dictView is dict.keys(), dict.values() or dict.items().
type dictView struct {
	kind string // keys, values, items
	d    *Dict
}

func (v dictView) list() []Value {
	switch v.kind {
	case "keys":
		return append([]Value(nil), v.d.keys...)
	case "values":
		return append([]Value(nil), v.d.vals...)
	}
	out := make([]Value, len(v.d.keys))
	for i := range v.d.keys {
		out[i] = tupleValue{v.d.keys[i], v.d.vals[i]}
	}
	return out
}

// rangeValue is the object range() returns.
type rangeValue struct{ start, stop, step int64 }

func (r rangeValue) length() int64 {
	if r.step > 0 && r.start < r.stop {
		return (r.stop - r.start + r.step - 1) / r.step
	}
	if r.step < 0 && r.start > r.stop {
		return (r.start - r.stop - r.step - 1) / (-r.step)
	}
	return 0
}

func (r rangeValue) at(i int64) int64 { return r.start + i*r.step }

// iterate returns the items a for loop over v sees. Iterators are consumed.
func iterate(v Value) ([]Value, error) {
	switch v := v.(type) {
	case []Value:
		return v, nil
	case tupleValue:
		return v, nil
	case *Dict:
		return v.keys, nil
	case string:
		return stringChars(v, false), nil
	case markupValue:
		return stringChars(string(v), true), nil
	case undefinedValue:
		return nil, nil
	case *iterator:
		return v.rest(), nil
	case dictView:
		return v.list(), nil
	case rangeValue:
		n := v.length()
		out := make([]Value, n)
		for i := int64(0); i < n; i++ {
			out[i] = v.at(i)
		}
		return out, nil
	case *namespaceValue:
		return nil, typeError("'Namespace' object is not iterable")
	}
	return nil, typeError("'%s' object is not iterable", typeName(v))
}

func stringChars(s string, markup bool) []Value {
	out := make([]Value, 0, len(s))
	for _, r := range s {
		if markup {
			out = append(out, markupValue(string(r)))
		} else {
			out = append(out, string(r))
		}
	}
	return out
}

// length is Python's len(v).
func length(v Value) (int64, error) {
	switch v := v.(type) {
	case string:
		return int64(runeCount(v)), nil
	case markupValue:
		return int64(runeCount(string(v))), nil
	case []Value:
		return int64(len(v)), nil
	case tupleValue:
		return int64(len(v)), nil
	case *Dict:
		return int64(v.Len()), nil
	case undefinedValue:
		return 0, nil
	case dictView:
		return int64(v.d.Len()), nil
	case rangeValue:
		return v.length(), nil
	case *loopContext:
		return int64(v.length), nil
	}
	return 0, typeError("object of type '%s' has no len()", typeName(v))
}

func runeCount(s string) int {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return len([]rune(s))
		}
	}
	return len(s)
}

// Str returns Python's str(v): what {{ v }} prints.
func Str(v Value) string { return pyStr(v) }

// Truth returns Python's bool(v): what {% if v %} tests.
func Truth(v Value) bool { return truth(v) }

// Items returns the elements of a list or tuple.
func Items(v Value) ([]Value, bool) {
	switch v := v.(type) {
	case []Value:
		return v, true
	case tupleValue:
		return v, true
	}
	return nil, false
}
