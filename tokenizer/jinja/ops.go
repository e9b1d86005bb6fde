package jinja

import (
	"math"
	"strings"
)

// integerArg returns v as an int where Python would take it as an index (an int or a bool),
// or the TypeError Python raises for anything else.
func integerArg(v Value) (int64, error) {
	n, _, isF, ok := number(v)
	if !ok || isF {
		return 0, typeError("'%s' object cannot be interpreted as an integer", typeName(v))
	}
	return n, nil
}

// number reports v as a Python number: bool and int as an int64, float as a float64.
func number(v Value) (i int64, f float64, isFloat, ok bool) {
	switch v := v.(type) {
	case bool:
		if v {
			return 1, 0, false, true
		}
		return 0, 0, false, true
	case int64:
		return v, 0, false, true
	case float64:
		return 0, v, true, true
	}
	return 0, 0, false, false
}

func asFloat(i int64, f float64, isFloat bool) float64 {
	if isFloat {
		return f
	}
	return float64(i)
}

func isStringy(v Value) (string, bool, bool) {
	switch v := v.(type) {
	case string:
		return v, false, true
	case markupValue:
		return string(v), true, true
	}
	return "", false, false
}

func unsupportedOperands(op string, a, b Value) error {
	return typeError("unsupported operand type(s) for %s: '%s' and '%s'", op, typeName(a), typeName(b))
}

func unaryOp(op string, x Value) (Value, error) {
	if u, ok := x.(undefinedValue); ok {
		return nil, u.fail()
	}
	i, f, isF, ok := number(x)
	if !ok {
		return nil, typeError("bad operand type for unary %s: '%s'", op, typeName(x))
	}
	if op == "+" {
		if isF {
			return f, nil
		}
		return i, nil
	}
	if isF {
		return -f, nil
	}
	if i == math.MinInt64 {
		return nil, overflow()
	}
	return -i, nil
}

func overflow() error {
	return &Error{Kind: "OverflowError", Msg: "integer result does not fit in 64 bits"}
}

func binaryOp(op string, a, b Value) (Value, error) {
	if u, ok := a.(undefinedValue); ok {
		return nil, u.fail()
	}
	if u, ok := b.(undefinedValue); ok {
		return nil, u.fail()
	}
	ai, af, aF, aNum := number(a)
	bi, bf, bF, bNum := number(b)
	if aNum && bNum {
		return arith(op, ai, af, aF, bi, bf, bF)
	}
	switch op {
	case "+":
		return add(a, b)
	case "*":
		if bNum && !bF {
			return repeat(a, bi, b)
		}
		if aNum && !aF {
			return repeat(b, ai, a)
		}
	case "%":
		if s, markup, ok := isStringy(a); ok {
			if markup {
				out, err := percentFormat(s, escapeArgs(b))
				return markupValue(out), err
			}
			return percentFormat(s, b)
		}
	}
	return nil, unsupportedOperands(op, a, b)
}

func escapeArgs(v Value) Value {
	switch v := v.(type) {
	case tupleValue:
		out := make(tupleValue, len(v))
		for i, e := range v {
			out[i] = escapeArg(e)
		}
		return out
	case *Dict:
		d := NewDict()
		for i, k := range v.keys {
			_ = d.Set(k, escapeArg(v.vals[i]))
		}
		return d
	}
	return escapeArg(v)
}

func escapeArg(v Value) Value {
	if s, _, ok := isStringy(v); ok {
		return escapeValue(s)
	}
	return v
}

func add(a, b Value) (Value, error) {
	as, am, aok := isStringy(a)
	bs, bm, bok := isStringy(b)
	switch {
	case aok && bok:
		if len(as)+len(bs) > maxOutput {
			return nil, errOutputTooLarge
		}
		switch {
		case am && !bm:
			return markupValue(as + htmlEscape(bs)), nil
		case bm && !am:
			return markupValue(htmlEscape(as) + bs), nil
		case am && bm:
			return markupValue(as + bs), nil
		}
		return as + bs, nil
	case aok:
		if am {
			return nil, unsupportedOperands("+", a, b)
		}
		return nil, typeError(`can only concatenate str (not "%s") to str`, typeName(b))
	}
	switch av := a.(type) {
	case []Value:
		bv, ok := b.([]Value)
		if !ok {
			return nil, typeError(`can only concatenate list (not "%s") to list`, typeName(b))
		}
		if len(av)+len(bv) > maxOutput/16 {
			return nil, errOutputTooLarge
		}
		out := make([]Value, 0, len(av)+len(bv))
		return append(append(out, av...), bv...), nil
	case tupleValue:
		bv, ok := b.(tupleValue)
		if !ok {
			return nil, typeError(`can only concatenate tuple (not "%s") to tuple`, typeName(b))
		}
		out := make(tupleValue, 0, len(av)+len(bv))
		return append(append(out, av...), bv...), nil
	}
	return nil, unsupportedOperands("+", a, b)
}

func repeat(seq Value, n int64, nv Value) (Value, error) {
	if n < 0 {
		n = 0
	}
	switch s := seq.(type) {
	case string:
		if n > 0 && int64(len(s)) > maxOutput/n {
			return nil, errOutputTooLarge
		}
		return strings.Repeat(s, int(n)), nil
	case markupValue:
		if n > 0 && int64(len(s)) > maxOutput/n {
			return nil, errOutputTooLarge
		}
		return markupValue(strings.Repeat(string(s), int(n))), nil
	case []Value:
		if n > 0 && int64(len(s)) > maxOutput/16/n {
			return nil, errOutputTooLarge
		}
		out := make([]Value, 0, len(s)*int(n))
		for i := int64(0); i < n; i++ {
			out = append(out, s...)
		}
		return out, nil
	case tupleValue:
		if n > 0 && int64(len(s)) > maxOutput/16/n {
			return nil, errOutputTooLarge
		}
		out := make(tupleValue, 0, len(s)*int(n))
		for i := int64(0); i < n; i++ {
			out = append(out, s...)
		}
		return out, nil
	}
	return nil, unsupportedOperands("*", seq, nv)
}

func arith(op string, ai int64, af float64, aF bool, bi int64, bf float64, bF bool) (Value, error) {
	if !aF && !bF {
		return intArith(op, ai, bi)
	}
	x, y := asFloat(ai, af, aF), asFloat(bi, bf, bF)
	switch op {
	case "+":
		return x + y, nil
	case "-":
		return x - y, nil
	case "*":
		return x * y, nil
	case "/":
		if y == 0 {
			return nil, &Error{Kind: "ZeroDivisionError", Msg: "float division by zero"}
		}
		return x / y, nil
	case "//":
		if y == 0 {
			return nil, &Error{Kind: "ZeroDivisionError", Msg: "float floor division by zero"}
		}
		d, _ := floatDivmod(x, y)
		return d, nil
	case "%":
		if y == 0 {
			return nil, &Error{Kind: "ZeroDivisionError", Msg: "float modulo"}
		}
		_, m := floatDivmod(x, y)
		return m, nil
	case "**":
		if x == 0 && y < 0 {
			return nil, &Error{Kind: "ZeroDivisionError", Msg: "0.0 cannot be raised to a negative power"}
		}
		if x < 0 && y != math.Trunc(y) {
			return nil, valueError("complex results are not supported")
		}
		return math.Pow(x, y), nil
	}
	return nil, typeError("unknown operator %s", op)
}

// floatDivmod is CPython's float_divmod: floor division and a modulo with the divisor's sign.
func floatDivmod(vx, wx float64) (float64, float64) {
	mod := math.Mod(vx, wx)
	div := (vx - mod) / wx
	if mod != 0 {
		if (wx < 0) != (mod < 0) {
			mod += wx
			div -= 1
		}
	} else {
		mod = math.Copysign(0, wx)
	}
	var floordiv float64
	if div != 0 {
		floordiv = math.Floor(div)
		if div-floordiv > 0.5 {
			floordiv += 1
		}
	} else {
		floordiv = math.Copysign(0, vx/wx)
	}
	return floordiv, mod
}

func intArith(op string, a, b int64) (Value, error) {
	switch op {
	case "+":
		s := a + b
		if (s > a) != (b > 0) {
			return nil, overflow()
		}
		return s, nil
	case "-":
		s := a - b
		if (s < a) != (b > 0) {
			return nil, overflow()
		}
		return s, nil
	case "*":
		if a == 0 || b == 0 {
			return int64(0), nil
		}
		p := a * b
		if p/b != a || (a == -1 && b == math.MinInt64) || (b == -1 && a == math.MinInt64) {
			return nil, overflow()
		}
		return p, nil
	case "/":
		if b == 0 {
			return nil, &Error{Kind: "ZeroDivisionError", Msg: "division by zero"}
		}
		return trueDivide(a, b), nil
	case "//":
		if b == 0 {
			return nil, &Error{Kind: "ZeroDivisionError", Msg: "integer division or modulo by zero"}
		}
		if a == math.MinInt64 && b == -1 {
			return nil, overflow()
		}
		q := a / b
		if (a%b != 0) && ((a < 0) != (b < 0)) {
			q--
		}
		return q, nil
	case "%":
		if b == 0 {
			return nil, &Error{Kind: "ZeroDivisionError", Msg: "integer division or modulo by zero"}
		}
		if b == -1 {
			return int64(0), nil
		}
		m := a % b
		if m != 0 && ((m < 0) != (b < 0)) {
			m += b
		}
		return m, nil
	case "**":
		if b < 0 {
			if a == 0 {
				return nil, &Error{Kind: "ZeroDivisionError", Msg: "0.0 cannot be raised to a negative power"}
			}
			return math.Pow(float64(a), float64(b)), nil
		}
		result := int64(1)
		base := a
		for e := b; e > 0; e >>= 1 {
			if e&1 == 1 {
				v, err := intArith("*", result, base)
				if err != nil {
					return nil, err
				}
				result = v.(int64)
			}
			if e > 1 {
				v, err := intArith("*", base, base)
				if err != nil {
					return nil, err
				}
				base = v.(int64)
			}
		}
		return result, nil
	}
	return nil, typeError("unknown operator %s", op)
}

// trueDivide is Python's int / int: the correctly rounded quotient.
func trueDivide(a, b int64) float64 {
	const exact = 1 << 53
	if a > -exact && a < exact && b > -exact && b < exact {
		return float64(a) / float64(b)
	}
	// Large operands: float64 conversion would round twice; divide with extra care.
	q := a / b
	r := a % b
	return float64(q) + float64(r)/float64(b)
}

// pyEquals is Python's ==.
func pyEquals(a, b Value) bool {
	ai, af, aF, aNum := number(a)
	bi, bf, bF, bNum := number(b)
	if aNum || bNum {
		if !(aNum && bNum) {
			return false
		}
		if !aF && !bF {
			return ai == bi
		}
		if aF && bF {
			return af == bf
		}
		if aF {
			return intFloatEqual(bi, af)
		}
		return intFloatEqual(ai, bf)
	}
	if as, _, ok := isStringy(a); ok {
		bs, _, ok := isStringy(b)
		return ok && as == bs
	}
	switch av := a.(type) {
	case nil:
		return b == nil
	case []Value:
		bv, ok := b.([]Value)
		return ok && seqEqual(av, bv)
	case tupleValue:
		bv, ok := b.(tupleValue)
		return ok && seqEqual(av, bv)
	case *Dict:
		bv, ok := b.(*Dict)
		if !ok {
			return false
		}
		if av == bv {
			return true
		}
		if av.Len() != bv.Len() {
			return false
		}
		for i, k := range av.keys {
			v, ok := bv.Get(k)
			if !ok || !pyEquals(av.vals[i], v) {
				return false
			}
		}
		return true
	case undefinedValue:
		_, ok := b.(undefinedValue)
		return ok
	case rangeValue:
		bv, ok := b.(rangeValue)
		if !ok {
			return false
		}
		n := av.length()
		return n == bv.length() && (n == 0 || (av.start == bv.start && (n == 1 || av.step == bv.step)))
	case dictView:
		bv, ok := b.(dictView)
		return ok && av.kind == bv.kind && av.d == bv.d
	case *namespaceValue, *macroValue, *loopContext, *iterator, *builtinFunc, *cycler, *joiner:
		return a == b
	case *boundMethod:
		bv, ok := b.(*boundMethod)
		return ok && av.name == bv.name && pyEquals(av.recv, bv.recv)
	}
	return false
}

func intFloatEqual(i int64, f float64) bool {
	if f != math.Trunc(f) || math.IsInf(f, 0) {
		return false
	}
	if f >= -(1<<63) && f < 1<<63 {
		return int64(f) == i
	}
	return false
}

func seqEqual(a, b []Value) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !pyEquals(a[i], b[i]) {
			return false
		}
	}
	return true
}

// pyLess is Python's a < b for the types that order.
func pyLess(a, b Value) (bool, error) {
	c, err := pyCompare(a, b, "<")
	return c < 0, err
}

// pyCompare orders a and b, failing as Python does for types without an order.
func pyCompare(a, b Value, op string) (int, error) {
	if u, ok := a.(undefinedValue); ok {
		return 0, u.fail()
	}
	if u, ok := b.(undefinedValue); ok {
		return 0, u.fail()
	}
	ai, af, aF, aNum := number(a)
	bi, bf, bF, bNum := number(b)
	if aNum && bNum {
		if !aF && !bF {
			return cmpInt(ai, bi), nil
		}
		x, y := asFloat(ai, af, aF), asFloat(bi, bf, bF)
		switch {
		case x < y:
			return -1, nil
		case x > y:
			return 1, nil
		case x == y:
			return 0, nil
		}
		return 2, nil // NaN: every comparison false
	}
	if as, _, ok := isStringy(a); ok {
		if bs, _, ok := isStringy(b); ok {
			return strings.Compare(as, bs), nil
		}
	}
	switch av := a.(type) {
	case []Value:
		if bv, ok := b.([]Value); ok {
			return seqCompare(av, bv, op)
		}
	case tupleValue:
		if bv, ok := b.(tupleValue); ok {
			return seqCompare(av, bv, op)
		}
	}
	return 0, typeError("'%s' not supported between instances of '%s' and '%s'", op, typeName(a), typeName(b))
}

func cmpInt(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func seqCompare(a, b []Value, op string) (int, error) {
	for i := 0; i < len(a) && i < len(b); i++ {
		if pyEquals(a[i], b[i]) {
			continue
		}
		return pyCompare(a[i], b[i], op)
	}
	return cmpInt(int64(len(a)), int64(len(b))), nil
}

func compare(op string, l, r Value) (bool, error) {
	switch op {
	case "==":
		return pyEquals(l, r), nil
	case "!=":
		return !pyEquals(l, r), nil
	case "in":
		return contains(r, l)
	case "notin":
		ok, err := contains(r, l)
		return !ok, err
	}
	c, err := pyCompare(l, r, op)
	if err != nil {
		return false, err
	}
	if c == 2 {
		return false, nil
	}
	switch op {
	case "<":
		return c < 0, nil
	case "<=":
		return c <= 0, nil
	case ">":
		return c > 0, nil
	case ">=":
		return c >= 0, nil
	}
	return false, typeError("unknown comparison %s", op)
}

// contains is Python's item in container.
func contains(container, item Value) (bool, error) {
	if s, _, ok := isStringy(container); ok {
		sub, _, ok := isStringy(item)
		if !ok {
			return false, typeError("'in <string>' requires string as left operand, not %s", typeName(item))
		}
		return strings.Contains(s, sub), nil
	}
	switch c := container.(type) {
	case []Value:
		return seqContains(c, item), nil
	case tupleValue:
		return seqContains(c, item), nil
	case *Dict:
		if _, err := hashKey(item); err != nil {
			return false, err
		}
		_, ok := c.Get(item)
		return ok, nil
	case undefinedValue:
		return false, nil
	case dictView:
		if c.kind == "keys" {
			_, ok := c.d.Get(item)
			return ok, nil
		}
		return seqContains(c.list(), item), nil
	case rangeValue:
		i, _, isF, ok := number(item)
		if !ok || isF {
			return seqContains(mustIterate(c), item), nil
		}
		n := c.length()
		for k := int64(0); k < n; k++ {
			if c.at(k) == i {
				return true, nil
			}
		}
		return false, nil
	case *iterator:
		for c.pos < len(c.items) {
			v := c.items[c.pos]
			c.pos++
			if pyEquals(v, item) {
				return true, nil
			}
		}
		return false, nil
	}
	return false, typeError("argument of type '%s' is not iterable", typeName(container))
}

func mustIterate(v Value) []Value {
	items, _ := iterate(v)
	return items
}

func seqContains(items []Value, item Value) bool {
	for _, v := range items {
		if pyEquals(v, item) {
			return true
		}
	}
	return false
}
