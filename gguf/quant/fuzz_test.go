package quant

import (
	"encoding/binary"
	"math"
	"testing"

	"github.com/trochilus-llm/trochilus/gguf"
)

// FuzzDequantize decodes arbitrary bytes as an arbitrary type id into a destination whose length
// is skewed from the matching one: it must never panic, must succeed exactly when the type is
// supported and the lengths match, and then must agree bit for bit with refElement.
func FuzzDequantize(f *testing.F) {
	for _, l := range blockLayouts() {
		b := make([]byte, 2*l.typ.BlockBytes())
		for i := range b {
			b[i] = byte(i * 37)
		}
		f.Add(uint32(l.typ), b, int8(0))
		f.Add(uint32(l.typ), b[:l.typ.BlockBytes()+1], int8(0))
		f.Add(uint32(l.typ), b, int8(-1))
	}
	f.Add(uint32(gguf.TypeF16), []byte{0, 0x7c, 1, 0xfc}, int8(0))
	f.Add(uint32(gguf.TypeBF16), []byte{0x80, 0x7f, 1, 0xff}, int8(1))
	f.Add(uint32(gguf.TypeF32), []byte{1, 2, 3, 0x7f}, int8(0))
	f.Add(uint32(gguf.TypeQ5_0), make([]byte, 22), int8(0))
	f.Add(uint32(1<<31), []byte{}, int8(0))
	f.Fuzz(func(t *testing.T, id uint32, data []byte, skew int8) {
		typ := gguf.Type(id)
		be, bb := typ.BlockElems(), typ.BlockBytes()
		match := 0
		if bb > 0 {
			match = len(data) / bb * be
		}
		n := max(0, match+int(skew))
		dst := make([]float32, n)
		err := Dequantize(typ, data, dst)
		want := Supported(typ) && len(data)%bb == 0 && n == match
		if (err == nil) != want {
			t.Fatalf("Dequantize(%v, %d bytes, %d floats): err = %v, want success %v", typ, len(data), n, err, want)
		}
		if err != nil {
			return
		}
		for i, got := range dst {
			var ref float32
			switch typ {
			case gguf.TypeF32:
				ref = math.Float32frombits(binary.LittleEndian.Uint32(data[4*i:]))
			case gguf.TypeF16:
				ref = float32(refHalf(le16(data, 2*i)))
			case gguf.TypeBF16:
				ref = math.Float32frombits(uint32(le16(data, 2*i)) << 16)
			default:
				ref = refElement(typ, data[i/be*bb:(i/be+1)*bb], i%be)
			}
			if math.Float32bits(got) != math.Float32bits(ref) {
				t.Fatalf("%v element %d: got %#08x, reference %#08x", typ, i, math.Float32bits(got), math.Float32bits(ref))
			}
		}
	})
}

// FuzzQuantize encodes arbitrary float32 bit patterns: it must never panic; it may fail only on a
// NaN, an infinity or a magnitude too large for a half scale; a success must be well formed and
// within errorBounds.
func FuzzQuantize(f *testing.F) {
	seed := make([]byte, 4*256)
	for i := 0; i < 256; i++ {
		binary.LittleEndian.PutUint32(seed[4*i:], math.Float32bits(float32(i%13)-6.5))
	}
	for _, typ := range []gguf.Type{gguf.TypeQ8_0, gguf.TypeQ4_K, gguf.TypeQ6_K, gguf.TypeF16} {
		f.Add(uint32(typ), seed)
	}
	f.Fuzz(func(t *testing.T, id uint32, data []byte) {
		typ := gguf.Type(id)
		x := make([]float32, len(data)/4)
		var amax float64
		finite := true
		for i := range x {
			x[i] = math.Float32frombits(binary.LittleEndian.Uint32(data[4*i:]))
			v := float64(x[i])
			finite = finite && !math.IsNaN(v) && !math.IsInf(v, 0)
			amax = math.Max(amax, math.Abs(v))
		}
		if be := typ.BlockElems(); be > 0 {
			x = x[:len(x)/be*be]
		}
		rb, rerr := typ.RowBytes(int64(len(x)))
		if rerr != nil {
			rb = 0
		}
		dst := make([]byte, rb)
		err := Quantize(typ, x, dst)
		if !QuantizeSupported(typ) {
			if err == nil {
				t.Fatalf("Quantize(%v) succeeded on an unsupported type", typ)
			}
			return
		}
		blockType := typ == gguf.TypeQ8_0 || typ == gguf.TypeQ4_K || typ == gguf.TypeQ6_K
		if err != nil {
			// 1e4 is far below the smallest magnitude whose scale overflows a half.
			if !blockType || (finite && amax < 1e4) {
				t.Fatalf("Quantize(%v, %d finite values up to %g): %v", typ, len(x), amax, err)
			}
			return
		}
		if !blockType {
			return
		}
		checkWellFormed(t, typ, dst)
		y := make([]float32, len(x))
		if err := Dequantize(typ, dst, y); err != nil {
			t.Fatal(err)
		}
		bound := errorBounds(typ, x)
		for i := range y {
			if e := math.Abs(float64(y[i]) - float64(x[i])); !(e <= bound[i]) {
				t.Fatalf("%v element %d: %g decodes to %g, error %g over the bound %g", typ, i, x[i], y[i], e, bound[i])
			}
		}
	})
}
