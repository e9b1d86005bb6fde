package gguf

import (
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
)

// ValueType is the type of a metadata value, numbered as GGUF numbers them.
type ValueType uint32

// The metadata value types.
const (
	ValueUint8   ValueType = 0
	ValueInt8    ValueType = 1
	ValueUint16  ValueType = 2
	ValueInt16   ValueType = 3
	ValueUint32  ValueType = 4
	ValueInt32   ValueType = 5
	ValueFloat32 ValueType = 6
	ValueBool    ValueType = 7
	ValueString  ValueType = 8
	ValueArray   ValueType = 9
	ValueUint64  ValueType = 10
	ValueInt64   ValueType = 11
	ValueFloat64 ValueType = 12
)

var valueTypeNames = [...]string{
	"uint8", "int8", "uint16", "int16", "uint32", "int32", "float32", "bool",
	"string", "array", "uint64", "int64", "float64",
}

// String returns the type's name as GGUF spells it ("uint32", "array"), or "ValueType(N)".
func (t ValueType) String() string {
	if t.valid() {
		return valueTypeNames[t]
	}
	return fmt.Sprintf("ValueType(%d)", uint32(t))
}

func (t ValueType) valid() bool { return t <= ValueFloat64 }

// size returns the bytes one value of a fixed-size type takes in a file, or 0 for strings and
// arrays, whose size depends on their contents.
func (t ValueType) size() int {
	switch t {
	case ValueUint8, ValueInt8, ValueBool:
		return 1
	case ValueUint16, ValueInt16:
		return 2
	case ValueUint32, ValueInt32, ValueFloat32:
		return 4
	case ValueUint64, ValueInt64, ValueFloat64:
		return 8
	}
	return 0
}

// minSize returns the fewest bytes a value of type t can take in a file: a string or an array
// holds at least its length (and an array its element type).
func (t ValueType) minSize() int64 {
	switch t {
	case ValueString:
		return 8
	case ValueArray:
		return 12
	}
	return int64(t.size())
}

func (t ValueType) isInteger() bool {
	switch t {
	case ValueUint8, ValueInt8, ValueUint16, ValueInt16, ValueUint32, ValueInt32, ValueUint64, ValueInt64:
		return true
	}
	return false
}

func (t ValueType) isSigned() bool {
	return t == ValueInt8 || t == ValueInt16 || t == ValueInt32 || t == ValueInt64
}

// Value is one metadata value: a number, a bool, a string, or an array of any of these
// (arrays of arrays included). A Value is immutable: constructors copy their arguments and
// accessors return fresh slices, so Values may be shared freely between goroutines.
//
// The zero Value is the uint8 0.
type Value struct {
	_    [0]func() // not comparable with ==: arrays would panic at run time
	typ  ValueType
	elem ValueType // element type of an array
	// bits holds a scalar: an integer as two's complement (signed kinds sign-extended), a float
	// as its IEEE bits (float32 bits for a float32), a bool as 0 or 1.
	bits uint64
	// str holds a string value, or the elements of an array of numbers or bools, little-endian,
	// exactly as a file stores them.
	str string
	// list holds the elements of an array of strings ([]string) or of arrays ([]Value).
	list any
}

// Uint8 returns a uint8 value.
func Uint8(v uint8) Value { return Value{typ: ValueUint8, bits: uint64(v)} }

// Int8 returns an int8 value.
func Int8(v int8) Value { return Value{typ: ValueInt8, bits: uint64(int64(v))} }

// Uint16 returns a uint16 value.
func Uint16(v uint16) Value { return Value{typ: ValueUint16, bits: uint64(v)} }

// Int16 returns an int16 value.
func Int16(v int16) Value { return Value{typ: ValueInt16, bits: uint64(int64(v))} }

// Uint32 returns a uint32 value.
func Uint32(v uint32) Value { return Value{typ: ValueUint32, bits: uint64(v)} }

// Int32 returns an int32 value.
func Int32(v int32) Value { return Value{typ: ValueInt32, bits: uint64(int64(v))} }

// Uint64 returns a uint64 value.
func Uint64(v uint64) Value { return Value{typ: ValueUint64, bits: v} }

// Int64 returns an int64 value.
func Int64(v int64) Value { return Value{typ: ValueInt64, bits: uint64(v)} }

// Float32 returns a float32 value; its bits (NaN payloads included) are kept exactly.
func Float32(v float32) Value { return Value{typ: ValueFloat32, bits: uint64(math.Float32bits(v))} }

// Float64 returns a float64 value; its bits are kept exactly.
func Float64(v float64) Value { return Value{typ: ValueFloat64, bits: math.Float64bits(v)} }

// Bool returns a bool value.
func Bool(v bool) Value {
	if v {
		return Value{typ: ValueBool, bits: 1}
	}
	return Value{typ: ValueBool}
}

// String returns a string value.
func String(s string) Value { return Value{typ: ValueString, str: s} }

// Strings returns an array of strings.
func Strings(s []string) Value {
	return Value{typ: ValueArray, elem: ValueString, list: slices.Clone(s)}
}

// Int32s returns an array of int32.
func Int32s(v []int32) Value {
	b := make([]byte, 0, 4*len(v))
	for _, x := range v {
		b = binary.LittleEndian.AppendUint32(b, uint32(x))
	}
	return Value{typ: ValueArray, elem: ValueInt32, str: string(b)}
}

// Uint32s returns an array of uint32.
func Uint32s(v []uint32) Value {
	b := make([]byte, 0, 4*len(v))
	for _, x := range v {
		b = binary.LittleEndian.AppendUint32(b, x)
	}
	return Value{typ: ValueArray, elem: ValueUint32, str: string(b)}
}

// Float32s returns an array of float32.
func Float32s(v []float32) Value {
	b := make([]byte, 0, 4*len(v))
	for _, x := range v {
		b = binary.LittleEndian.AppendUint32(b, math.Float32bits(x))
	}
	return Value{typ: ValueArray, elem: ValueFloat32, str: string(b)}
}

// Array returns an array whose elements all have type elemType: any array, including arrays of
// arrays (whose elements may each hold a different element type) and empty ones.
func Array(elemType ValueType, elems []Value) (Value, error) {
	if !elemType.valid() {
		return Value{}, fmt.Errorf("gguf: array element type %d unknown", uint32(elemType))
	}
	if len(elems) > maxArrayLen {
		return Value{}, fmt.Errorf("gguf: array of %d elements too long (at most %d)", len(elems), maxArrayLen)
	}
	for i, e := range elems {
		if e.typ != elemType {
			return Value{}, fmt.Errorf("gguf: array of %s: element %d is a %s", elemType, i, e.typ)
		}
	}
	switch elemType {
	case ValueString:
		s := make([]string, len(elems))
		for i, e := range elems {
			s[i] = e.str
		}
		return Value{typ: ValueArray, elem: ValueString, list: s}, nil
	case ValueArray:
		for i, e := range elems {
			if d := e.depth(); d >= maxDepth {
				return Value{}, fmt.Errorf("gguf: array element %d: arrays nested deeper than %d", i, maxDepth)
			}
		}
		return Value{typ: ValueArray, elem: ValueArray, list: slices.Clone(elems)}, nil
	}
	n := elemType.size()
	b := make([]byte, 0, n*len(elems))
	var le [8]byte
	for _, e := range elems {
		binary.LittleEndian.PutUint64(le[:], e.bits) // the low n bytes are the element
		b = append(b, le[:n]...)
	}
	return Value{typ: ValueArray, elem: elemType, str: string(b)}, nil
}

// depth returns how many arrays deep v is: 0 for a scalar or string, 1 for an array of those.
func (v Value) depth() int {
	if v.typ != ValueArray {
		return 0
	}
	d := 0
	for _, e := range v.arrays() {
		d = max(d, e.depth())
	}
	return d + 1
}

// Type returns the value's type.
func (v Value) Type() ValueType { return v.typ }

// ArrayType returns the element type of an array (and 0, uint8, for any other value).
func (v Value) ArrayType() ValueType { return v.elem }

// Len returns the number of elements of an array, and 0 for any other value.
func (v Value) Len() int {
	if v.typ != ValueArray {
		return 0
	}
	switch v.elem {
	case ValueString:
		return len(v.strings())
	case ValueArray:
		return len(v.arrays())
	}
	return len(v.str) / v.elem.size()
}

func (v Value) strings() []string { s, _ := v.list.([]string); return s }
func (v Value) arrays() []Value   { a, _ := v.list.([]Value); return a }

// Uint64 returns an integer value of any kind as a uint64, if it is not negative.
func (v Value) Uint64() (uint64, bool) {
	if !v.typ.isInteger() || v.typ.isSigned() && int64(v.bits) < 0 {
		return 0, false
	}
	return v.bits, true
}

// Int64 returns an integer value of any kind as an int64, if it fits.
func (v Value) Int64() (int64, bool) {
	if !v.typ.isInteger() || v.typ == ValueUint64 && v.bits > math.MaxInt64 {
		return 0, false
	}
	return int64(v.bits), true
}

// Float64 returns a float32 or float64 value as a float64 (exactly).
func (v Value) Float64() (float64, bool) {
	switch v.typ {
	case ValueFloat32:
		return float64(math.Float32frombits(uint32(v.bits))), true
	case ValueFloat64:
		return math.Float64frombits(v.bits), true
	}
	return 0, false
}

// Bool returns a bool value.
func (v Value) Bool() (bool, bool) {
	if v.typ != ValueBool {
		return false, false
	}
	return v.bits != 0, true
}

// Str returns a string value.
func (v Value) Str() (string, bool) {
	if v.typ != ValueString {
		return "", false
	}
	return v.str, true
}

// Strings returns the elements of an array of strings (a fresh slice).
func (v Value) Strings() ([]string, bool) {
	if v.typ != ValueArray || v.elem != ValueString {
		return nil, false
	}
	return slices.Clone(v.strings()), true
}

// Elems returns the elements of any array as Values (a fresh slice): the way to walk arrays of
// arrays.
func (v Value) Elems() ([]Value, bool) {
	if v.typ != ValueArray {
		return nil, false
	}
	switch v.elem {
	case ValueString:
		s := v.strings()
		out := make([]Value, len(s))
		for i := range s {
			out[i] = String(s[i])
		}
		return out, true
	case ValueArray:
		return slices.Clone(v.arrays()), true
	}
	out := make([]Value, v.Len())
	for i := range out {
		out[i] = Value{typ: v.elem, bits: v.scalarAt(i)}
	}
	return out, true
}

// scalarAt decodes element i of an array of numbers or bools into Value.bits form.
func (v Value) scalarAt(i int) uint64 {
	n := v.elem.size()
	p := v.str[i*n : i*n+n]
	switch v.elem {
	case ValueUint8, ValueBool:
		return uint64(p[0])
	case ValueInt8:
		return uint64(int64(int8(p[0])))
	case ValueUint16:
		return uint64(uint16(p[0]) | uint16(p[1])<<8)
	case ValueInt16:
		return uint64(int64(int16(uint16(p[0]) | uint16(p[1])<<8)))
	case ValueUint32, ValueFloat32:
		return uint64(le32(p))
	case ValueInt32:
		return uint64(int64(int32(le32(p))))
	}
	return le64(p)
}

func le32(p string) uint32 {
	return uint32(p[0]) | uint32(p[1])<<8 | uint32(p[2])<<16 | uint32(p[3])<<24
}

func le64(p string) uint64 { return uint64(le32(p)) | uint64(le32(p[4:]))<<32 }

// integers returns the elements of an array of integers (of any kind) converted to T, if every
// one fits in [lo, hi].
func integers[T int32 | uint32 | int64 | uint64](v Value, lo int64, hi uint64) ([]T, bool) {
	if v.typ != ValueArray || !v.elem.isInteger() {
		return nil, false
	}
	out := make([]T, v.Len())
	for i := range out {
		e := Value{typ: v.elem, bits: v.scalarAt(i)}
		if u, ok := e.Uint64(); ok {
			if u > hi {
				return nil, false
			}
			out[i] = T(u)
			continue
		}
		s, _ := e.Int64() // negative, so it fits an int64
		if s < lo {
			return nil, false
		}
		out[i] = T(s)
	}
	return out, true
}

// Int32s returns an array of integers of any kind as int32s, if every element fits.
func (v Value) Int32s() ([]int32, bool) { return integers[int32](v, math.MinInt32, math.MaxInt32) }

// Uint32s returns an array of integers of any kind as uint32s, if every element fits.
func (v Value) Uint32s() ([]uint32, bool) { return integers[uint32](v, 0, math.MaxUint32) }

// Int64s returns an array of integers of any kind as int64s, if every element fits.
func (v Value) Int64s() ([]int64, bool) { return integers[int64](v, math.MinInt64, math.MaxInt64) }

// Uint64s returns an array of integers of any kind as uint64s, if none is negative.
func (v Value) Uint64s() ([]uint64, bool) { return integers[uint64](v, 0, math.MaxUint64) }

// Float32s returns an array of float32.
func (v Value) Float32s() ([]float32, bool) {
	if v.typ != ValueArray || v.elem != ValueFloat32 {
		return nil, false
	}
	out := make([]float32, v.Len())
	for i := range out {
		out[i] = math.Float32frombits(le32(v.str[4*i:]))
	}
	return out, true
}

// Float64s returns an array of float32 or float64 as float64s (exactly).
func (v Value) Float64s() ([]float64, bool) {
	if v.typ != ValueArray || v.elem != ValueFloat32 && v.elem != ValueFloat64 {
		return nil, false
	}
	out := make([]float64, v.Len())
	for i := range out {
		out[i], _ = Value{typ: v.elem, bits: v.scalarAt(i)}.Float64()
	}
	return out, true
}

// Bools returns an array of bools.
func (v Value) Bools() ([]bool, bool) {
	if v.typ != ValueArray || v.elem != ValueBool {
		return nil, false
	}
	out := make([]bool, v.Len())
	for i := range out {
		out[i] = v.str[i] != 0
	}
	return out, true
}

// Rendering limits for String: metadata holds vocabularies of 50,000 strings and chat templates of
// several kilobytes, which nobody wants printed whole.
const (
	shownElems  = 8
	shownString = 120
)

// String renders the value for people: numbers in Go syntax, strings quoted, arrays as
// [a b c ...] with long arrays and long strings elided.
func (v Value) String() string {
	var b strings.Builder
	v.render(&b)
	return b.String()
}

func (v Value) render(b *strings.Builder) {
	switch {
	case v.typ == ValueString:
		renderString(b, v.str)
	case v.typ == ValueArray:
		n := v.Len()
		b.WriteByte('[')
		for i := range min(n, shownElems) {
			if i > 0 {
				b.WriteByte(' ')
			}
			switch v.elem {
			case ValueString:
				renderString(b, v.strings()[i])
			case ValueArray:
				v.arrays()[i].render(b)
			default:
				Value{typ: v.elem, bits: v.scalarAt(i)}.render(b)
			}
		}
		if n > shownElems {
			fmt.Fprintf(b, " ... (%d %s in all)", n, v.elem)
		}
		b.WriteByte(']')
	case v.typ == ValueBool:
		b.WriteString(strconv.FormatBool(v.bits != 0))
	case v.typ == ValueFloat32:
		b.WriteString(strconv.FormatFloat(float64(math.Float32frombits(uint32(v.bits))), 'g', -1, 32))
	case v.typ == ValueFloat64:
		b.WriteString(strconv.FormatFloat(math.Float64frombits(v.bits), 'g', -1, 64))
	case v.typ.isSigned():
		b.WriteString(strconv.FormatInt(int64(v.bits), 10))
	default:
		b.WriteString(strconv.FormatUint(v.bits, 10))
	}
}

func renderString(b *strings.Builder, s string) {
	if len(s) <= shownString {
		b.WriteString(strconv.Quote(s))
		return
	}
	cut := shownString
	for cut > 0 && !isRuneStart(s[cut]) {
		cut--
	}
	b.WriteString(strconv.Quote(s[:cut]))
	fmt.Fprintf(b, "...(%d bytes)", len(s))
}

func isRuneStart(c byte) bool { return c&0xC0 != 0x80 }
