package gguf

import (
	"math"
	"slices"
	"strings"
	"testing"
)

func TestValueTypeString(t *testing.T) {
	want := []string{"uint8", "int8", "uint16", "int16", "uint32", "int32", "float32", "bool",
		"string", "array", "uint64", "int64", "float64"}
	for i, w := range want {
		if got := ValueType(i).String(); got != w {
			t.Errorf("ValueType(%d) = %q, want %q", i, got, w)
		}
	}
	if got := ValueType(13).String(); got != "ValueType(13)" {
		t.Errorf("ValueType(13) = %q", got)
	}
}

func TestValueIntegers(t *testing.T) {
	tests := []struct {
		v      Value
		typ    ValueType
		u      uint64
		uOK    bool
		i      int64
		iOK    bool
		render string
	}{
		{Uint8(255), ValueUint8, 255, true, 255, true, "255"},
		{Int8(-128), ValueInt8, 0, false, -128, true, "-128"},
		{Int8(127), ValueInt8, 127, true, 127, true, "127"},
		{Uint16(65535), ValueUint16, 65535, true, 65535, true, "65535"},
		{Int16(-2), ValueInt16, 0, false, -2, true, "-2"},
		{Uint32(math.MaxUint32), ValueUint32, math.MaxUint32, true, math.MaxUint32, true, "4294967295"},
		{Int32(math.MinInt32), ValueInt32, 0, false, math.MinInt32, true, "-2147483648"},
		{Uint64(math.MaxUint64), ValueUint64, math.MaxUint64, true, 0, false, "18446744073709551615"},
		{Uint64(math.MaxInt64), ValueUint64, math.MaxInt64, true, math.MaxInt64, true, "9223372036854775807"},
		{Int64(math.MinInt64), ValueInt64, 0, false, math.MinInt64, true, "-9223372036854775808"},
		{Int64(7), ValueInt64, 7, true, 7, true, "7"},
	}
	for _, tc := range tests {
		if tc.v.Type() != tc.typ {
			t.Errorf("%v: type %v, want %v", tc.v, tc.v.Type(), tc.typ)
		}
		u, ok := tc.v.Uint64()
		if ok != tc.uOK || u != tc.u {
			t.Errorf("%s %v: Uint64 = %d, %v; want %d, %v", tc.typ, tc.v, u, ok, tc.u, tc.uOK)
		}
		i, ok := tc.v.Int64()
		if ok != tc.iOK || i != tc.i {
			t.Errorf("%s %v: Int64 = %d, %v; want %d, %v", tc.typ, tc.v, i, ok, tc.i, tc.iOK)
		}
		if _, ok := tc.v.Float64(); ok {
			t.Errorf("%s: Float64 accepted an integer", tc.typ)
		}
		if got := tc.v.String(); got != tc.render {
			t.Errorf("%s: String = %q, want %q", tc.typ, got, tc.render)
		}
		if tc.v.Len() != 0 {
			t.Errorf("%s: Len = %d for a scalar", tc.typ, tc.v.Len())
		}
	}
}

func TestValueScalars(t *testing.T) {
	nan := math.Float32frombits(0x7fc00123) // a NaN with a payload, kept bit for bit
	if x, ok := Float32(nan).Float64(); !ok || math.Float32bits(float32(x)) != 0x7fc00123 {
		t.Errorf("Float32(NaN payload) = %v, %v; bits %#x", x, ok, math.Float32bits(float32(x)))
	}
	if x, ok := Float32(1e-5).Float64(); !ok || x != float64(float32(1e-5)) {
		t.Errorf("Float32(1e-5).Float64() = %v, %v", x, ok)
	}
	if x, ok := Float64(-0.1).Float64(); !ok || x != -0.1 {
		t.Errorf("Float64(-0.1) = %v, %v", x, ok)
	}
	if _, ok := Float64(1).Uint64(); ok {
		t.Error("Uint64 accepted a float")
	}
	if b, ok := Bool(true).Bool(); !ok || !b {
		t.Error("Bool(true)")
	}
	if b, ok := Bool(false).Bool(); !ok || b {
		t.Error("Bool(false)")
	}
	if _, ok := Uint8(1).Bool(); ok {
		t.Error("Bool accepted a uint8")
	}
	if s, ok := String("héllo").Str(); !ok || s != "héllo" {
		t.Errorf("Str = %q, %v", s, ok)
	}
	if _, ok := Uint8(1).Str(); ok {
		t.Error("Str accepted a uint8")
	}
	for _, tc := range []struct {
		v    Value
		want string
	}{
		{Float32(1e-5), "1e-05"},
		{Float64(0.1), "0.1"},
		{Bool(true), "true"},
		{String("a\n"), `"a\n"`},
	} {
		if got := tc.v.String(); got != tc.want {
			t.Errorf("String = %q, want %q", got, tc.want)
		}
	}
	long := String(strings.Repeat("é", 100)) // 200 bytes, cut on a rune boundary
	if got := long.String(); !strings.HasSuffix(got, "...(200 bytes)") || !strings.HasPrefix(got, `"ééé`) || strings.ContainsRune(got, '\uFFFD') {
		t.Errorf("long string renders as %q", got)
	}
}

func TestValueArrays(t *testing.T) {
	s := []string{"a", "", "ü"}
	v := Strings(s)
	s[0] = "changed" // the Value holds its own copy
	if got, ok := v.Strings(); !ok || !slices.Equal(got, []string{"a", "", "ü"}) {
		t.Errorf("Strings = %q, %v", got, ok)
	}
	if v.Type() != ValueArray || v.ArrayType() != ValueString || v.Len() != 3 {
		t.Errorf("Strings: type %v of %v, len %d", v.Type(), v.ArrayType(), v.Len())
	}
	if got := v.String(); got != `["a" "" "ü"]` {
		t.Errorf("String = %s", got)
	}

	i32 := Int32s([]int32{-1, 0, math.MaxInt32})
	if got, ok := i32.Int32s(); !ok || !slices.Equal(got, []int32{-1, 0, math.MaxInt32}) {
		t.Errorf("Int32s = %v, %v", got, ok)
	}
	if got, ok := i32.Int64s(); !ok || !slices.Equal(got, []int64{-1, 0, math.MaxInt32}) {
		t.Errorf("Int64s = %v, %v", got, ok)
	}
	if _, ok := i32.Uint32s(); ok {
		t.Error("Uint32s accepted -1")
	}
	if _, ok := i32.Uint64s(); ok {
		t.Error("Uint64s accepted -1")
	}
	u32 := Uint32s([]uint32{0, math.MaxUint32})
	if _, ok := u32.Int32s(); ok {
		t.Error("Int32s accepted 2^32-1")
	}
	if got, ok := u32.Uint64s(); !ok || !slices.Equal(got, []uint64{0, math.MaxUint32}) {
		t.Errorf("Uint64s = %v, %v", got, ok)
	}
	// Narrow kinds widen when every element fits.
	u8, err := Array(ValueUint8, []Value{Uint8(1), Uint8(200)})
	if err != nil {
		t.Fatal(err)
	}
	if got, ok := u8.Int32s(); !ok || !slices.Equal(got, []int32{1, 200}) {
		t.Errorf("uint8 array as Int32s = %v, %v", got, ok)
	}
	f32 := Float32s([]float32{1.5, float32(math.Inf(-1))})
	if got, ok := f32.Float32s(); !ok || got[0] != 1.5 || !math.IsInf(float64(got[1]), -1) {
		t.Errorf("Float32s = %v, %v", got, ok)
	}
	if got, ok := f32.Float64s(); !ok || !slices.Equal(got, []float64{1.5, math.Inf(-1)}) {
		t.Errorf("Float64s = %v, %v", got, ok)
	}
	if _, ok := f32.Int32s(); ok {
		t.Error("Int32s accepted floats")
	}
	if _, ok := i32.Float32s(); ok {
		t.Error("Float32s accepted ints")
	}
	if _, ok := Uint32(3).Strings(); ok {
		t.Error("Strings accepted a scalar")
	}

	bools, err := Array(ValueBool, []Value{Bool(true), Bool(false)})
	if err != nil {
		t.Fatal(err)
	}
	if got, ok := bools.Bools(); !ok || !slices.Equal(got, []bool{true, false}) {
		t.Errorf("Bools = %v, %v", got, ok)
	}

	// Elems gives every element of every kind of array as a Value.
	el, ok := i32.Elems()
	if !ok || len(el) != 3 || el[0].Type() != ValueInt32 {
		t.Fatalf("Elems = %v, %v", el, ok)
	}
	if n, _ := el[0].Int64(); n != -1 {
		t.Errorf("Elems[0] = %v", el[0])
	}
	el, _ = v.Elems()
	if s, _ := el[2].Str(); s != "ü" {
		t.Errorf("string Elems[2] = %v", el[2])
	}

	long := Int32s(make([]int32, 50280))
	if got := long.String(); got != "[0 0 0 0 0 0 0 0 ... (50280 int32 in all)]" {
		t.Errorf("long array renders as %s", got)
	}
}

func TestArrayOfArrays(t *testing.T) {
	inner1 := Strings([]string{"x"})
	inner2 := Int32s([]int32{1, 2})
	empty, err := Array(ValueFloat64, nil)
	if err != nil {
		t.Fatal(err)
	}
	outer, err := Array(ValueArray, []Value{inner1, inner2, empty})
	if err != nil {
		t.Fatal(err)
	}
	if outer.Len() != 3 || outer.ArrayType() != ValueArray {
		t.Fatalf("outer: len %d, elem %v", outer.Len(), outer.ArrayType())
	}
	el, ok := outer.Elems()
	if !ok {
		t.Fatal("Elems refused an array of arrays")
	}
	if got, _ := el[1].Int32s(); !slices.Equal(got, []int32{1, 2}) {
		t.Errorf("element 1 = %v", el[1])
	}
	if el[2].Len() != 0 || el[2].ArrayType() != ValueFloat64 {
		t.Errorf("element 2 = %v of %v", el[2], el[2].ArrayType())
	}
	if got := outer.String(); got != `[["x"] [1 2] []]` {
		t.Errorf("String = %s", got)
	}

	if _, err := Array(ValueInt32, []Value{Int32(1), Uint32(2)}); err == nil || !strings.Contains(err.Error(), "element 1 is a uint32") {
		t.Errorf("mixed array: %v", err)
	}
	if _, err := Array(ValueType(13), nil); err == nil || !strings.Contains(err.Error(), "element type 13 unknown") {
		t.Errorf("bad element type: %v", err)
	}
	deep := Strings(nil)
	for range maxDepth - 1 {
		if deep, err = Array(ValueArray, []Value{deep}); err != nil {
			t.Fatalf("depth %d: %v", deep.depth(), err)
		}
	}
	if deep.depth() != maxDepth {
		t.Fatalf("depth %d", deep.depth())
	}
	if _, err := Array(ValueArray, []Value{deep}); err == nil || !strings.Contains(err.Error(), "nested deeper than 8") {
		t.Errorf("too deep: %v", err)
	}
}
