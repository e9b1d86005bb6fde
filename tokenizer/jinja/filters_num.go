package jinja

import (
	"math"
	"strconv"
	"strings"
)

func filterInt(r *renderer, v Value, args []Value, kwargs []kwValue) (Value, error) {
	a, err := bindParams("int", []param{opt("default", int64(0)), opt("base", int64(10))}, args, kwargs)
	if err != nil {
		return nil, err
	}
	if s, _, ok := isStringy(v); ok {
		base, _, _, _ := number(a[1])
		if n, ok := parsePyInt(s, base); ok {
			return n, nil
		}
		if f, ok := parsePyFloat(s); ok {
			return floatToInt(f)
		}
		return a[0], nil
	}
	if i, f, isF, ok := number(v); ok {
		if isF {
			return floatToInt(f)
		}
		return i, nil
	}
	return a[0], nil
}

func floatToInt(f float64) (Value, error) {
	if math.IsNaN(f) {
		return nil, valueError("cannot convert float NaN to integer")
	}
	if math.IsInf(f, 0) {
		return nil, &Error{Kind: "OverflowError", Msg: "cannot convert float infinity to integer"}
	}
	if f >= 1<<63 || f < -(1<<63) {
		return nil, overflow()
	}
	return int64(f), nil
}

// parsePyInt is int(s, base) for a str: surrounding whitespace, a sign, underscores between
// digits, and a 0x/0o/0b prefix matching the base (or any, for base 0).
func parsePyInt(s string, base int64) (int64, bool) {
	s = strings.TrimFunc(s, pyIsSpace)
	neg := false
	if s != "" && (s[0] == '+' || s[0] == '-') {
		neg = s[0] == '-'
		s = s[1:]
	}
	lower := strings.ToLower(s)
	prefixBase := map[string]int64{"0x": 16, "0o": 8, "0b": 2}
	if len(lower) > 2 {
		if pb, ok := prefixBase[lower[:2]]; ok && (base == 0 || base == pb) {
			s, base = s[2:], pb
			if strings.HasPrefix(s, "_") {
				s = s[1:]
			}
		}
	}
	if base == 0 {
		base = 10
		if len(s) > 1 && s[0] == '0' && strings.Trim(s, "0_") != "" {
			return 0, false
		}
	}
	if s == "" || s[0] == '_' || s[len(s)-1] == '_' || strings.Contains(s, "__") {
		return 0, false
	}
	n, err := strconv.ParseInt(strings.ReplaceAll(s, "_", ""), int(base), 64)
	if err != nil {
		return 0, false
	}
	if neg {
		n = -n
	}
	return n, true
}

// parsePyFloat is float(s) for a str.
func parsePyFloat(s string) (float64, bool) {
	s = strings.TrimFunc(s, pyIsSpace)
	low := strings.ToLower(strings.TrimLeft(s, "+-"))
	switch low {
	case "inf", "infinity", "nan":
		f, _ := strconv.ParseFloat(strings.Replace(s, "infinity", "inf", 1), 64)
		if low == "nan" {
			return math.NaN(), true
		}
		if strings.HasPrefix(s, "-") {
			return math.Inf(-1), true
		}
		_ = f
		return math.Inf(1), true
	}
	if s == "" || strings.ContainsAny(low, "xp") || strings.HasPrefix(s, "_") || strings.HasSuffix(s, "_") || strings.Contains(s, "__") || strings.Contains(s, "_.") || strings.Contains(s, "._") {
		return 0, false
	}
	f, err := strconv.ParseFloat(strings.ReplaceAll(s, "_", ""), 64)
	if err != nil {
		if ne, ok := err.(*strconv.NumError); ok && ne.Err == strconv.ErrRange {
			return f, true
		}
		return 0, false
	}
	return f, true
}

func filterFloat(r *renderer, v Value, args []Value, kwargs []kwValue) (Value, error) {
	a, err := bindParams("float", []param{opt("default", 0.0)}, args, kwargs)
	if err != nil {
		return nil, err
	}
	if s, _, ok := isStringy(v); ok {
		if f, ok := parsePyFloat(s); ok {
			return f, nil
		}
		return a[0], nil
	}
	if i, f, isF, ok := number(v); ok {
		return asFloat(i, f, isF), nil
	}
	return a[0], nil
}

func filterAbs(r *renderer, v Value, args []Value, kwargs []kwValue) (Value, error) {
	if err := noArgs("abs", args, kwargs); err != nil {
		return nil, err
	}
	i, f, isF, ok := number(v)
	if !ok {
		return nil, typeError("bad operand type for abs(): '%s'", typeName(v))
	}
	if isF {
		return math.Abs(f), nil
	}
	if i < 0 {
		if i == math.MinInt64 {
			return nil, overflow()
		}
		return -i, nil
	}
	return i, nil
}

func filterRound(r *renderer, v Value, args []Value, kwargs []kwValue) (Value, error) {
	a, err := bindParams("round", []param{opt("precision", int64(0)), opt("method", "common")}, args, kwargs)
	if err != nil {
		return nil, err
	}
	method, _ := a[1].(string)
	if method != "common" && method != "ceil" && method != "floor" {
		return nil, &Error{Kind: "FilterArgumentError", Msg: "method must be common, ceil or floor"}
	}
	prec, err := integerArg(a[0])
	if err != nil {
		return nil, err
	}
	i, f, isF, ok := number(v)
	if !ok {
		return nil, typeError("type %s doesn't define __round__ method", typeName(v))
	}
	if method == "common" {
		if !isF {
			if prec >= 0 {
				return i, nil
			}
			p, err := intArith("**", 10, -prec)
			if err != nil {
				return nil, err
			}
			q, _ := intArith("//", i, p.(int64))
			rem := i - q.(int64)*p.(int64)
			half := p.(int64) / 2
			if rem > half || (rem == half && q.(int64)%2 != 0) {
				q = q.(int64) + 1
			}
			return q.(int64) * p.(int64), nil
		}
		return roundFloat(f, prec), nil
	}
	x := asFloat(i, f, isF)
	scale := math.Pow(10, float64(prec))
	if method == "ceil" {
		return math.Ceil(x*scale) / scale, nil
	}
	return math.Floor(x*scale) / scale, nil
}

// roundFloat is Python's round(float, n): correctly rounded, ties to even on the exact value.
func roundFloat(f float64, n int64) float64 {
	if math.IsNaN(f) || math.IsInf(f, 0) || n > 330 {
		return f
	}
	if n < 0 {
		if n < -330 {
			return math.Copysign(0, f)
		}
		p := math.Pow(10, float64(-n))
		y := math.RoundToEven(f / p)
		return y * p
	}
	out, _ := strconv.ParseFloat(strconv.FormatFloat(f, 'f', int(n), 64), 64)
	return out
}

func filterSum(r *renderer, v Value, args []Value, kwargs []kwValue) (Value, error) {
	a, err := bindParams("sum", []param{opt("attribute", nil), opt("start", int64(0))}, args, kwargs)
	if err != nil {
		return nil, err
	}
	items, err := attributeItems(v, a[0])
	if err != nil {
		return nil, err
	}
	total := a[1]
	if _, _, ok := isStringy(total); ok {
		return nil, typeError("sum() can't sum strings [use ''.join(seq) instead]")
	}
	for _, it := range items {
		if total, err = binaryOp("+", total, it); err != nil {
			return nil, err
		}
	}
	return total, nil
}
