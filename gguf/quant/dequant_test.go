package quant

import (
	"fmt"
	"math"
	"math/bits"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/trochilus-llm/trochilus/gguf"
	"github.com/trochilus-llm/trochilus/gguf/internal/geniq"
)

// r32 rounds to float32. With float32 operands, one float64 operation followed by r32 is the
// correctly rounded float32 operation (53 >= 2·24+2 bits), so the reference below does its
// arithmetic in float64 and cannot be fused into an FMA behind its back.
func r32(x float64) float64 { return float64(float32(x)) }

// refHalf decodes an IEEE half by its definition (a NaN quiet, payload kept).
func refHalf(h uint16) float64 {
	sign := 1.0
	if h&0x8000 != 0 {
		sign = -1
	}
	e, m := int(h>>10)&31, uint64(h&1023)
	switch {
	case e == 31 && m != 0:
		return math.Float64frombits(uint64(h&0x8000)<<48 | 0x7ff8000000000000 | m<<42)
	case e == 31:
		return math.Inf(int(sign))
	case e == 0:
		return sign * math.Ldexp(float64(m), -24)
	}
	return sign * math.Ldexp(float64(m|1024), e-25)
}

func le16(b []byte, i int) uint16 { return uint16(b[i]) | uint16(b[i+1])<<8 }

// refAdd is a + b with a's NaN when both are NaNs, as x86's addss keeps its first operand's (ggml
// adds the min to the product so).
func refAdd(a, b float64) float64 {
	if a != a {
		return a
	}
	return a + b
}

// iq4nl are IQ4_NL's and IQ4_XS's 16 levels (ggml-common.h's kvalues_iq4nl).
var iq4nl = [16]int{-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113}

// refElement decodes element i of block b from the layout's definition, element by element,
// independently of the block decoders' loop structure.
func refElement(typ gguf.Type, b []byte, i int) float32 {
	switch typ {
	case gguf.TypeQ8_0:
		return float32(r32(float64(int8(b[2+i])) * refHalf(le16(b, 0))))
	case gguf.TypeQ4_0:
		q := int(b[2+i%16]>>(4*(i/16))) & 15
		return float32(r32(float64(q-8) * refHalf(le16(b, 0))))
	case gguf.TypeQ2_K:
		sc := b[i/16]
		q := int(b[16+32*(i/128)+i%32]>>(2*(i%128/32))) & 3
		d, dmin := refHalf(le16(b, 80)), refHalf(le16(b, 82))
		return float32(r32(r32(r32(d*float64(sc&15))*float64(q)) - r32(dmin*float64(sc>>4))))
	case gguf.TypeQ3_K:
		sub := i / 16
		lo := int(b[96+sub%8]>>(4*(sub/8))) & 15
		hi := int(b[104+sub%4]>>(2*(sub/4))) & 3
		q := int(b[32+32*(i/128)+i%32]>>(2*(i%128/32))) & 3
		if b[i%32]>>(i/32)&1 == 0 {
			q -= 4
		}
		d := refHalf(le16(b, 108))
		return float32(r32(r32(d*float64(lo|hi<<4-32)) * float64(q)))
	case gguf.TypeQ4_K, gguf.TypeQ5_K:
		j, s := i/32, b[4:16]
		var sc, m int
		if j < 4 {
			sc, m = int(s[j]&63), int(s[j+4]&63)
		} else {
			sc = int(s[j+4]&15) | int(s[j-4]>>6)<<4
			m = int(s[j+4]>>4) | int(s[j]>>6)<<4
		}
		qs := 16
		if typ == gguf.TypeQ5_K {
			qs = 48
		}
		q := int(b[qs+32*(i/64)+i%32])
		if i&32 != 0 {
			q >>= 4
		}
		q &= 15
		if typ == gguf.TypeQ5_K {
			q |= int(b[16+i%32]>>(i/32)&1) << 4
		}
		d, dmin := refHalf(le16(b, 0)), refHalf(le16(b, 2))
		return float32(r32(r32(r32(d*float64(sc))*float64(q)) - r32(dmin*float64(m))))
	case gguf.TypeQ6_K:
		h, c, l := i/128, i%128/32, i%32
		q := int(b[64*h+32*(c&1)+l])
		if c >= 2 {
			q >>= 4
		}
		q = q&15 | int(b[128+32*h+l]>>(2*c)&3)<<4
		d := refHalf(le16(b, 208))
		return float32(r32(r32(d*float64(int8(b[192+i/16]))) * float64(q-32)))
	case gguf.TypeQ4_1:
		q := int(b[4+i%16]>>(4*(i/16))) & 15
		return float32(r32(refAdd(r32(float64(q)*refHalf(le16(b, 0))), refHalf(le16(b, 2)))))
	case gguf.TypeQ5_0, gguf.TypeQ5_1: // element i's fifth bit is bit i of the 32-bit qh
		at := 2 // qh, after d (and m)
		if typ == gguf.TypeQ5_1 {
			at = 4
		}
		qh := uint32(le16(b, at)) | uint32(le16(b, at+2))<<16
		q := int(b[at+4+i%16]>>(4*(i/16)))&15 | int(qh>>i&1)<<4
		if typ == gguf.TypeQ5_0 {
			return float32(r32(float64(q-16) * refHalf(le16(b, 0))))
		}
		return float32(r32(refAdd(r32(float64(q)*refHalf(le16(b, 0))), refHalf(le16(b, 2)))))
	case gguf.TypeIQ4_NL:
		q := b[2+i%16] >> (4 * (i / 16)) & 15
		return float32(r32(refHalf(le16(b, 0)) * float64(iq4nl[q])))
	case gguf.TypeIQ4_XS:
		sub := i / 32
		ls := int(b[4+sub/2]>>(4*(sub%2)))&15 | int(le16(b, 2)>>(2*sub)&3)<<4
		dl := r32(refHalf(le16(b, 0)) * float64(ls-32))
		q := b[8+16*sub+i%16] >> (4 * (i % 32 / 16)) & 15
		return float32(r32(dl * float64(iq4nl[q])))
	case gguf.TypeMXFP4: // E2M1 values, halved by the scale 2^(e−128)
		q := b[1+i%16] >> (4 * (i / 16)) & 15
		e2m1 := [16]float64{0, 0.5, 1, 1.5, 2, 3, 4, 6, -0, -0.5, -1, -1.5, -2, -3, -4, -6}
		return float32(r32(e2m1[q] * 2 * math.Ldexp(1, int(b[0])-128)))
	case gguf.TypeTQ1_0: // base-3 digits as a fraction of 256: digit n of x is ⌊3·(x·3^n mod 256)/256⌋
		var x, n int
		switch {
		case i < 160:
			x, n = int(b[i%32]), i/32
		case i < 240:
			x, n = int(b[32+(i-160)%16]), (i-160)/16
		default:
			x, n = int(b[48+(i-240)%4]), (i-240)/4
		}
		digit := x * int(math.Pow(3, float64(n))) % 256 * 3 / 256
		return float32(r32(float64(digit-1) * refHalf(le16(b, 52))))
	case gguf.TypeTQ2_0:
		q := int(b[32*(i/128)+i%32]>>(2*(i%128/32))) & 3
		return float32(r32(float64(q-1) * refHalf(le16(b, 64))))
	case gguf.TypeNVFP4: // E2M1 values doubled, under half the UE4M3 scale of each 16 elements
		q := b[4+8*(i/16)+i%8] >> (4 * (i % 16 / 8)) & 15
		e2m1 := [16]float64{0, 0.5, 1, 1.5, 2, 3, 4, 6, -0, -0.5, -1, -1.5, -2, -3, -4, -6}
		return float32(r32(e2m1[q] * 2 * refUE4M3(b[i/16]) / 2))
	case gguf.TypeQ1_0: // d where the bit is set, else −d (a NaN's sign flipped, as C's unary minus)
		d := refHalf(le16(b, 0))
		if b[2+i/8]>>(i%8)&1 == 0 {
			d = -d
		}
		return float32(d)
	case gguf.TypeQ2_0:
		q := int(b[2+i/4]>>(2*(i%4))) & 3
		return float32(r32(float64(q-1) * refHalf(le16(b, 0))))
	}
	if v, ok := refIQ(typ, b, i); ok {
		return v
	}
	panic(fmt.Sprintf("refElement: no reference for %v", typ))
}

// refUE4M3 decodes an NVFP4 scale byte by the OCP E4M3 definition ggml uses, unsigned: 4
// exponent bits under bias 7 (bits 3-6), 3 mantissa bits, subnormal at exponent 0; 0x7f (E4M3's
// NaN) is 0, and ggml ignores bit 7.
func refUE4M3(e uint8) float64 {
	exp, man := int(e>>3&15), float64(e&7)
	switch {
	case e == 0x7f:
		return 0
	case exp == 0:
		return math.Ldexp(man, -9)
	}
	return math.Ldexp(1+man/8, exp-7)
}

// iqTables are the grids of gguf/iq_tables.go, as TestIQTablesMatchGGML checks them.
var iqTables = sync.OnceValues(func() (*geniq.Tables, error) {
	src, err := os.ReadFile(filepath.Join("..", "iq_tables.go"))
	if err != nil {
		return nil, err
	}
	return geniq.Parse(src)
})

// refSigned is grid magnitude m (byte j of an entry) times the sub-block factor dl, negated
// where neg says. ggml's v·(neg ? −1.f : 1.f) is compiled as a negation, which flips a NaN's sign
// too (a multiplication would return the NaN unchanged), and Go's −v is one.
func refSigned(dl float64, m uint8, neg bool) float32 {
	v := r32(dl * float64(m))
	if neg {
		v = -v
	}
	return float32(v)
}

// refSign7 is bit j of the 8-element sign pattern that the 7 bits s7 code: bit j of s7 for
// j < 7, and for j = 7 the bit that makes the count of minus signs even.
func refSign7(s7 uint32, j int) bool {
	if j == 7 {
		return bits.OnesCount32(s7&127)%2 == 1
	}
	return s7>>j&1 == 1
}

// refIQ decodes element i of block b of an IQ type, element by element from the layout.
func refIQ(typ gguf.Type, b []byte, i int) (float32, bool) {
	tb, err := iqTables()
	if err != nil {
		panic(err)
	}
	byteOf := func(w uint64, j int) uint8 { return uint8(w >> (8 * j)) }
	le32 := func(at int) uint32 { return uint32(le16(b, at)) | uint32(le16(b, at+2))<<16 }
	iq2dl := func(s int) float64 { return r32(r32(refHalf(le16(b, 0))*(0.5+float64(s))) * 0.25) }
	nibble := func(at, k int) int { return int(b[at+k/2]>>(4*(k%2))) & 15 } // nibble k of b[at:]
	iq1 := func(dl float64, g uint64, neg bool, delta float32) float32 {
		dv := float64(delta)
		if neg {
			dv = -dv
		}
		return float32(r32(dl * r32(float64(int8(byteOf(g, i%8)))+dv)))
	}
	switch typ {
	case gguf.TypeIQ2_XXS:
		ib, l := i/32, i%32/8
		aux := le32(6 + 8*ib)
		return refSigned(iq2dl(int(aux>>28)), byteOf(tb.IQ2XXS[b[2+8*ib+l]], i%8), refSign7(aux>>(7*l), i%8)), true
	case gguf.TypeIQ2_XS:
		w := le16(b, 2+2*(i/8))
		dl := iq2dl(nibble(66, i/16))
		return refSigned(dl, byteOf(tb.IQ2XS[w&511], i%8), refSign7(uint32(w>>9), i%8)), true
	case gguf.TypeIQ2_S:
		g := i / 8
		idx := int(b[2+g]) | int(b[66+g/4]>>(2*(g%4))&3)<<8
		return refSigned(iq2dl(nibble(74, i/16)), byteOf(tb.IQ2S[idx], i%8), b[34+g]>>(i%8)&1 == 1), true
	case gguf.TypeIQ3_XXS:
		g := i / 8
		aux := le32(66 + 4*(g/4))
		dl := r32(r32(refHalf(le16(b, 0))*(0.5+float64(aux>>28))) * 0.5)
		return refSigned(dl, byteOf(uint64(tb.IQ3XXS[b[2+i/4]]), i%4), refSign7(aux>>(7*(g%4)), i%8)), true
	case gguf.TypeIQ3_S:
		slot := i / 4
		idx := int(b[2+slot]) | int(b[66+slot/8]>>(slot%8)&1)<<8
		dl := r32(refHalf(le16(b, 0)) * float64(1+2*nibble(106, i/32)))
		return refSigned(dl, byteOf(uint64(tb.IQ3S[idx]), i%4), b[74+i/8]>>(i%8)&1 == 1), true
	case gguf.TypeIQ1_S:
		g, qh := i/8, le16(b, 34+2*(i/32))
		idx := int(b[2+g]) | int(qh>>(3*(g%4))&7)<<8
		dl := r32(refHalf(le16(b, 0)) * float64(2*(qh>>12&7)+1))
		return iq1(dl, tb.IQ1S[idx], qh&0x8000 != 0, tb.IQ1SDelta), true
	case gguf.TypeIQ1_M:
		g, u := i/8, i/16
		var d uint16
		for k := 0; k < 4; k++ {
			d |= le16(b, 48+2*k) >> 12 << (4 * k)
		}
		sc := int(le16(b, 48+2*(u/4))>>(3*(u%4))) & 7
		nib := nibble(32, g)
		dl := r32(refHalf(d) * float64(2*sc+1))
		return iq1(dl, tb.IQ1S[int(b[g])|(nib&7)<<8], nib&8 != 0, tb.IQ1MDelta), true
	}
	return 0, false
}

// TestDequantizeMatchesReference decodes random and structured blocks of every block type and
// compares each element's bits with refElement. It needs no oracle, so it runs everywhere,
// including under GOAMD64=v3 and on arm64, where a fused multiply-add would show.
func TestDequantizeMatchesReference(t *testing.T) {
	for _, l := range blockLayouts() {
		typ, bb, be := l.typ, l.typ.BlockBytes(), l.typ.BlockElems()
		r := rand.NewChaCha8([32]byte{byte(typ), 2})
		src := structuredBlocks(l, r)
		random := make([]byte, 3000*bb)
		_, _ = r.Read(random)
		src = append(src, random...)
		n := len(src) / bb
		got := make([]float32, n*be)
		if err := Dequantize(typ, src, got); err != nil {
			t.Fatal(err)
		}
		var mismatches, nans, negZeros int
		for i, g := range got {
			blk := src[i/be*bb : (i/be+1)*bb]
			want := refElement(typ, blk, i%be)
			if math.Float32bits(g) != math.Float32bits(want) {
				if mismatches++; mismatches <= 5 {
					t.Errorf("%v block %d element %d: got %#08x (%g), reference %#08x (%g)",
						typ, i/be, i%be, math.Float32bits(g), g, math.Float32bits(want), want)
				}
			}
			switch {
			case g != g:
				nans++
			case g == 0 && math.Signbit(float64(g)):
				negZeros++
			}
		}
		t.Logf("%-7v %5d blocks, %7d elements (%d NaN, %d -0): %d mismatches", typ, n, len(got), nans, negZeros, mismatches)
	}
}

// TestDequantizeKnownValues decodes hand-built blocks whose values are worked out by hand.
func TestDequantizeKnownValues(t *testing.T) {
	// Q8_0: d = 0.5 (0x3800); q = -3, 127, -128.
	q8 := make([]byte, 34)
	q8[0], q8[1] = 0x00, 0x38
	q8[2], q8[3], q8[4] = 0xfd, 0x7f, 0x80
	// Q4_K: d = 2 (0x4000), dmin = 0.25 (0x3400); sub-block 0 has sc 3, m 4 (bytes 4 and 8);
	// sub-block 4 has sc = 0x2|1<<4 = 18 and m = 0x1|2<<4 = 33 (byte 12 = 0x12, top bits of
	// bytes 4 and 8). Nibble byte 0 = 0xa5: element 0 (sub-block 0) has q 5, element 32 (sub-block 1,
	// sc = m = 0) has q 10. Byte 64 = 0x07: element 128 (sub-block 4) has q 7.
	q4 := make([]byte, 144)
	q4[0], q4[1], q4[2], q4[3] = 0x00, 0x40, 0x00, 0x34
	q4[4], q4[8] = 3|1<<6, 4|2<<6
	q4[12] = 0x12
	q4[16], q4[16+64] = 0xa5, 0x07
	// Q6_K: d = 1 (0x3c00); scale 0 = -2; element 0: low nibble 0xf, high bits 3 -> q 63-32 = 31.
	q6 := make([]byte, 210)
	q6[0], q6[128], q6[192] = 0x0f, 0x03, 0xfe
	q6[208], q6[209] = 0x00, 0x3c
	cases := []struct {
		typ  gguf.Type
		src  []byte
		at   []int
		want []float32
	}{
		{gguf.TypeQ8_0, q8, []int{0, 1, 2, 3}, []float32{-1.5, 63.5, -64, 0}},
		{gguf.TypeQ4_K, q4, []int{0, 1, 32, 128}, []float32{2*3*5 - 1, -1, 0, 2*18*7 - 0.25*33}},
		{gguf.TypeQ6_K, q6, []int{0, 1, 16}, []float32{-62, 64, 0}},
	}
	for _, c := range cases {
		out := make([]float32, c.typ.BlockElems())
		if err := Dequantize(c.typ, c.src, out); err != nil {
			t.Fatal(err)
		}
		for k, i := range c.at {
			if out[i] != c.want[k] {
				t.Errorf("%v element %d = %v, want %v", c.typ, i, out[i], c.want[k])
			}
		}
	}
	// Q6_K element 16 uses scale 1 = 0 and q = 0-32: (1·0)·(-32) is -0.
	out := make([]float32, 256)
	_ = Dequantize(gguf.TypeQ6_K, q6, out)
	if !math.Signbit(float64(out[16])) {
		t.Errorf("Q6_K (1·0)·(−32) = %v, want −0", out[16])
	}
}

func TestDequantizeErrors(t *testing.T) {
	cases := []struct {
		typ   gguf.Type
		src   int
		dst   int
		error string
	}{
		{gguf.TypeQ8_K, 292, 256, "not supported"},
		{gguf.Type(99), 4, 1, "not supported"},
		{gguf.TypeQ8_0, 34, 31, "whole number"},
		{gguf.TypeQ8_0, 33, 32, "take 34 bytes, got 33"},
		{gguf.TypeQ4_K, 288, 256, "take 144 bytes, got 288"},
		{gguf.TypeF32, 4, 2, "take 8 bytes"},
		{gguf.TypeQ6_K, 0, 256, "take 210 bytes, got 0"},
	}
	for _, c := range cases {
		err := Dequantize(c.typ, make([]byte, c.src), make([]float32, c.dst))
		if err == nil || !strings.Contains(err.Error(), c.error) {
			t.Errorf("Dequantize(%v, %d bytes, %d floats) = %v, want an error with %q", c.typ, c.src, c.dst, err, c.error)
		}
	}
	if err := Dequantize(gguf.TypeQ4_K, nil, nil); err != nil {
		t.Errorf("Dequantize of zero elements: %v", err)
	}
	for _, typ := range []gguf.Type{gguf.TypeF32, gguf.TypeF16, gguf.TypeBF16, gguf.TypeQ8_0, gguf.TypeQ4_0,
		gguf.TypeQ4_1, gguf.TypeQ5_0, gguf.TypeQ5_1, gguf.TypeQ2_K, gguf.TypeQ3_K, gguf.TypeQ4_K, gguf.TypeQ5_K,
		gguf.TypeQ6_K, gguf.TypeIQ4_NL, gguf.TypeIQ4_XS, gguf.TypeMXFP4, gguf.TypeTQ1_0, gguf.TypeTQ2_0,
		gguf.TypeIQ2_XXS, gguf.TypeIQ2_XS, gguf.TypeIQ2_S, gguf.TypeIQ3_XXS, gguf.TypeIQ3_S, gguf.TypeIQ1_S,
		gguf.TypeIQ1_M, gguf.TypeNVFP4, gguf.TypeQ1_0, gguf.TypeQ2_0} {
		if !Supported(typ) {
			t.Errorf("Supported(%v) = false", typ)
		}
	}
	for _, typ := range []gguf.Type{gguf.TypeQ8_1, gguf.TypeQ8_K, gguf.TypeI8, gguf.TypeF64, gguf.Type(4), gguf.Type(43), gguf.Type(1000)} {
		if Supported(typ) {
			t.Errorf("Supported(%v) = true", typ)
		}
	}
}

// TestDequantizeAllocatesNothing decodes a few blocks of every block type: the decoders work in
// place (the engine runs them per weight row).
func TestDequantizeAllocatesNothing(t *testing.T) {
	for _, l := range blockLayouts() {
		src := make([]byte, 4*l.typ.BlockBytes())
		_, _ = rand.NewChaCha8([32]byte{byte(l.typ)}).Read(src)
		dst := make([]float32, 4*l.typ.BlockElems())
		if a := testing.AllocsPerRun(20, func() { _ = Dequantize(l.typ, src, dst) }); a != 0 {
			t.Errorf("%v: %v allocations a call", l.typ, a)
		}
	}
}
