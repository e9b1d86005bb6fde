// Package quant converts tensor data between ggml's weight formats and float32.
//
// Dequantize reproduces ggml's scalar dequantize_row_* functions (the to_float of ggml's type
// traits) bit for bit, NaN payloads and signed zeros included, for the types Supported names.
// The per-block decoders and half-float conversions it runs are gguf's (gguf.DequantizeQ4_K,
// gguf.F16ToF32, ...), the ones kernels' scalar definitions decode with too: this package holds
// the checked whole-tensor entry point and the tests that compare those decoders with libggml.
// They perform ggml's operations in ggml's order: the scale products d·sc and dmin·m rounded to
// float32, then scale·q rounded, then the min subtracted. In these formats every one of those
// products except Q6_K's last happens to be exact in float32 (a half times a 6- or 8-bit scale
// times a quant of at most 6 bits), and no addition follows Q6_K's, so neither ggml's build nor
// an FMA-fusing Go build (GOAMD64=v3, arm64) can change a result; the code still rounds every
// product explicitly, so that stays true for a format where it would matter.
//
// Quantize writes blocks of Q8_0, Q4_K and Q6_K (and the float types) from float32 weights. It
// makes its own rounding choices, not ggml's: every scale is rounded up so that nothing clips,
// and each decoded element lies within half a quantization step of its input.
//
// Block layouts follow ggml's ggml-common.h; all multi-byte fields are little-endian.
package quant

import (
	"fmt"

	"github.com/trochilus-llm/trochilus/gguf"
)

// blockDecoders decode one block of each block type Dequantize knows: gguf's decoders, which
// take arrays of the block's exact sizes.
var blockDecoders = map[gguf.Type]func(b []byte, y []float32){
	gguf.TypeQ8_0:   func(b []byte, y []float32) { gguf.DequantizeQ8_0((*[34]byte)(b), (*[32]float32)(y)) },
	gguf.TypeQ4_0:   func(b []byte, y []float32) { gguf.DequantizeQ4_0((*[18]byte)(b), (*[32]float32)(y)) },
	gguf.TypeQ4_1:   func(b []byte, y []float32) { gguf.DequantizeQ4_1((*[20]byte)(b), (*[32]float32)(y)) },
	gguf.TypeQ5_0:   func(b []byte, y []float32) { gguf.DequantizeQ5_0((*[22]byte)(b), (*[32]float32)(y)) },
	gguf.TypeQ5_1:   func(b []byte, y []float32) { gguf.DequantizeQ5_1((*[24]byte)(b), (*[32]float32)(y)) },
	gguf.TypeQ2_K:   func(b []byte, y []float32) { gguf.DequantizeQ2_K((*[84]byte)(b), (*[256]float32)(y)) },
	gguf.TypeQ3_K:   func(b []byte, y []float32) { gguf.DequantizeQ3_K((*[110]byte)(b), (*[256]float32)(y)) },
	gguf.TypeQ4_K:   func(b []byte, y []float32) { gguf.DequantizeQ4_K((*[144]byte)(b), (*[256]float32)(y)) },
	gguf.TypeQ5_K:   func(b []byte, y []float32) { gguf.DequantizeQ5_K((*[176]byte)(b), (*[256]float32)(y)) },
	gguf.TypeQ6_K:   func(b []byte, y []float32) { gguf.DequantizeQ6_K((*[210]byte)(b), (*[256]float32)(y)) },
	gguf.TypeIQ4_NL: func(b []byte, y []float32) { gguf.DequantizeIQ4_NL((*[18]byte)(b), (*[32]float32)(y)) },
	gguf.TypeIQ4_XS: func(b []byte, y []float32) { gguf.DequantizeIQ4_XS((*[136]byte)(b), (*[256]float32)(y)) },
	gguf.TypeMXFP4:  func(b []byte, y []float32) { gguf.DequantizeMXFP4((*[17]byte)(b), (*[32]float32)(y)) },
	gguf.TypeTQ1_0:  func(b []byte, y []float32) { gguf.DequantizeTQ1_0((*[54]byte)(b), (*[256]float32)(y)) },
	gguf.TypeTQ2_0:  func(b []byte, y []float32) { gguf.DequantizeTQ2_0((*[66]byte)(b), (*[256]float32)(y)) },

	// The lattice types (IQ1-IQ3), then the newer NVFP4, Q1_0 and Q2_0.
	gguf.TypeIQ2_XXS: func(b []byte, y []float32) { gguf.DequantizeIQ2_XXS((*[66]byte)(b), (*[256]float32)(y)) },
	gguf.TypeIQ2_XS:  func(b []byte, y []float32) { gguf.DequantizeIQ2_XS((*[74]byte)(b), (*[256]float32)(y)) },
	gguf.TypeIQ2_S:   func(b []byte, y []float32) { gguf.DequantizeIQ2_S((*[82]byte)(b), (*[256]float32)(y)) },
	gguf.TypeIQ3_XXS: func(b []byte, y []float32) { gguf.DequantizeIQ3_XXS((*[98]byte)(b), (*[256]float32)(y)) },
	gguf.TypeIQ3_S:   func(b []byte, y []float32) { gguf.DequantizeIQ3_S((*[110]byte)(b), (*[256]float32)(y)) },
	gguf.TypeIQ1_S:   func(b []byte, y []float32) { gguf.DequantizeIQ1_S((*[50]byte)(b), (*[256]float32)(y)) },
	gguf.TypeIQ1_M:   func(b []byte, y []float32) { gguf.DequantizeIQ1_M((*[56]byte)(b), (*[256]float32)(y)) },
	gguf.TypeNVFP4:   func(b []byte, y []float32) { gguf.DequantizeNVFP4((*[36]byte)(b), (*[64]float32)(y)) },
	gguf.TypeQ1_0:    func(b []byte, y []float32) { gguf.DequantizeQ1_0((*[18]byte)(b), (*[128]float32)(y)) },
	gguf.TypeQ2_0:    func(b []byte, y []float32) { gguf.DequantizeQ2_0((*[18]byte)(b), (*[64]float32)(y)) },
}

// Supported reports whether Dequantize decodes t.
func Supported(t gguf.Type) bool {
	switch t {
	case gguf.TypeF32, gguf.TypeF16, gguf.TypeBF16:
		return true
	}
	return blockDecoders[t] != nil
}

// QuantizeSupported reports whether Quantize encodes t.
func QuantizeSupported(t gguf.Type) bool {
	switch t {
	case gguf.TypeF32, gguf.TypeF16, gguf.TypeBF16, gguf.TypeQ8_0, gguf.TypeQ4_K, gguf.TypeQ6_K:
		return true
	}
	return false
}

// checkArgs verifies that op supports t and that elems elements of t take exactly nbytes bytes.
func checkArgs(op string, t gguf.Type, supported bool, nbytes, elems int) error {
	if !supported {
		return fmt.Errorf("quant: %s: type %v is not supported", op, t)
	}
	want, err := t.RowBytes(int64(elems))
	if err != nil {
		return fmt.Errorf("quant: %s %v: %w", op, t, err)
	}
	if want != int64(nbytes) {
		return fmt.Errorf("quant: %s %v: %d elements take %d bytes, got %d", op, t, elems, want, nbytes)
	}
	return nil
}

// Dequantize decodes src, a whole number of blocks of type t, into dst, one float32 per element.
// len(src) must be exactly the bytes that len(dst) elements of t take. The values are those
// ggml's dequantize_row_* (to_float) writes, bit for bit.
func Dequantize(t gguf.Type, src []byte, dst []float32) error {
	if err := checkArgs("dequantize", t, Supported(t), len(src), len(dst)); err != nil {
		return err
	}
	switch t {
	case gguf.TypeF32:
		gguf.DequantizeF32(src, dst)
	case gguf.TypeF16:
		gguf.DequantizeF16(src, dst)
	case gguf.TypeBF16:
		gguf.DequantizeBF16(src, dst)
	default:
		decode, bb, be := blockDecoders[t], t.BlockBytes(), t.BlockElems()
		for i := 0; i < len(dst)/be; i++ {
			decode(src[i*bb:(i+1)*bb], dst[i*be:(i+1)*be])
		}
	}
	return nil
}

// Quantize encodes src into dst as type t. len(dst) must be exactly the bytes that len(src)
// elements of t take. F32 keeps every bit; F16 and BF16 round each value as gguf.F32ToF16 and
// gguf.F32ToBF16 do (so out-of-range values become infinities, as in ggml). The block types
// (Q8_0, Q4_K, Q6_K) need finite input whose block scales fit a half: a NaN, an infinity or a
// block too large for a half scale is an error, and dst is then left partly written.
func Quantize(t gguf.Type, src []float32, dst []byte) error {
	if err := checkArgs("quantize", t, QuantizeSupported(t), len(dst), len(src)); err != nil {
		return err
	}
	switch t {
	case gguf.TypeF32:
		quantizeF32(src, dst)
	case gguf.TypeF16:
		for i, f := range src {
			h := gguf.F32ToF16(f)
			dst[2*i], dst[2*i+1] = byte(h), byte(h>>8)
		}
	case gguf.TypeBF16:
		for i, f := range src {
			h := gguf.F32ToBF16(f)
			dst[2*i], dst[2*i+1] = byte(h), byte(h>>8)
		}
	case gguf.TypeQ8_0:
		for i := 0; i < len(src); i += 32 {
			if err := quantizeQ8_0((*[32]float32)(src[i:]), (*[34]byte)(dst[i/32*34:])); err != nil {
				return fmt.Errorf("quant: quantize Q8_0 block at element %d: %w", i, err)
			}
		}
	case gguf.TypeQ4_K:
		for i := 0; i < len(src); i += 256 {
			if err := quantizeQ4_K((*[256]float32)(src[i:]), (*[144]byte)(dst[i/256*144:])); err != nil {
				return fmt.Errorf("quant: quantize Q4_K block at element %d: %w", i, err)
			}
		}
	case gguf.TypeQ6_K:
		for i := 0; i < len(src); i += 256 {
			if err := quantizeQ6_K((*[256]float32)(src[i:]), (*[210]byte)(dst[i/256*210:])); err != nil {
				return fmt.Errorf("quant: quantize Q6_K block at element %d: %w", i, err)
			}
		}
	}
	return nil
}
