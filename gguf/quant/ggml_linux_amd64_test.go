//go:build linux && amd64

package quant

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"unsafe"

	"github.com/ebitengine/purego"
	"github.com/trochilus-llm/trochilus/gguf"
	"github.com/trochilus-llm/trochilus/internal/oracle"
)

// ggmlPackage and ggmlPackageVersion name the npm package whose libggml-base.so the oracle
// tests load. The trait layout and type count below were read from that build (its
// disassembly and symbol table); another version must be checked again before it is trusted.
const (
	ggmlPackage        = "@node-llama-cpp/linux-x64"
	ggmlPackageVersion = "3.22.1"
	ggmlTypeCount      = 43 // GGML_TYPE_COUNT in this build: the type_traits array is 43×56 bytes
)

// ggmlTypeTraits mirrors struct ggml_type_traits (ggml.h) on linux/amd64: 56 bytes, the bool
// padded to 8 before the two function pointers.
type ggmlTypeTraits struct {
	typeName           *byte
	blckSize           int64
	blckSizeInterleave int64
	typeSize           uint64
	isQuantized        bool
	toFloat            uintptr // void (*)(const void *x, float *y, int64_t k)
	fromFloatRef       uintptr // void (*)(const float *x, void *y, int64_t k)
}

// loadGGML opens the npm package's libggml-base.so with purego, or skips/fails (oracle.Missing)
// when it is not installed.
func loadGGML(t testing.TB) *ggml {
	t.Helper()
	pkg := oracle.NPM(t, ggmlPackage)
	var meta struct{ Version string }
	raw, err := os.ReadFile(filepath.Join(pkg, "package.json"))
	if err == nil {
		err = json.Unmarshal(raw, &meta)
	}
	if err != nil {
		t.Fatalf("ggml oracle: reading %s/package.json: %v", ggmlPackage, err)
	}
	if meta.Version != ggmlPackageVersion {
		t.Fatalf("ggml oracle: %s is version %s; the trait layout was checked for %s only",
			ggmlPackage, meta.Version, ggmlPackageVersion)
	}
	path := filepath.Join(pkg, "bins", "linux-x64", "libggml-base.so")
	if _, err := os.Stat(path); err != nil {
		oracle.Missing(t, path)
	}
	lib, err := purego.Dlopen(path, purego.RTLD_NOW|purego.RTLD_LOCAL)
	if err != nil {
		t.Fatalf("ggml oracle: dlopen %s: %v", path, err)
	}
	t.Cleanup(func() { _ = purego.Dlclose(lib) })

	var (
		getTraits     func(typ uint32) *ggmlTypeTraits
		fp16ToFP32Row func(x *uint16, y *float32, n int64)
		bf16ToFP32Row func(x *uint16, y *float32, n int64)
		fp32ToFP16Row func(x *float32, y *uint16, n int64)
		fp32ToBF16Row func(x *float32, y *uint16, n int64)
	)
	register := func(fptr any, name string) {
		sym, err := purego.Dlsym(lib, name)
		if err != nil {
			t.Fatalf("ggml oracle: %s: %v", name, err)
		}
		purego.RegisterFunc(fptr, sym)
	}
	register(&getTraits, "ggml_get_type_traits")
	register(&fp16ToFP32Row, "ggml_fp16_to_fp32_row")
	register(&bf16ToFP32Row, "ggml_bf16_to_fp32_row")
	register(&fp32ToFP16Row, "ggml_fp32_to_fp16_row")
	register(&fp32ToBF16Row, "ggml_fp32_to_bf16_row_ref")

	traits := func(typ gguf.Type) *ggmlTypeTraits {
		if uint32(typ) >= ggmlTypeCount {
			t.Fatalf("ggml oracle: type id %d is past this build's %d types", uint32(typ), ggmlTypeCount)
		}
		return getTraits(uint32(typ))
	}
	// A converter takes a C function pointer from the traits; a nil one means ggml has none.
	type rowFunc func(x unsafe.Pointer, y unsafe.Pointer, k int64)
	fn := func(ptr uintptr, what string, typ gguf.Type) rowFunc {
		if ptr == 0 {
			t.Fatalf("ggml oracle: ggml has no %s for %v", what, typ)
		}
		var f rowFunc
		purego.RegisterFunc(&f, ptr)
		return f
	}
	g := &ggml{
		typeInfo: func(id uint32) (string, int64, int64, bool) {
			tr := traits(gguf.Type(id))
			name := ""
			if tr.typeName != nil {
				n := 0
				for *(*byte)(unsafe.Add(unsafe.Pointer(tr.typeName), n)) != 0 {
					n++
				}
				name = string(unsafe.Slice(tr.typeName, n))
			}
			return name, tr.blckSize, int64(tr.typeSize), tr.isQuantized
		},
		hasToFloat: func(typ gguf.Type) bool { return traits(typ).toFloat != 0 },
		toFloat: func(typ gguf.Type, src []byte, dst []float32) {
			if len(dst) == 0 {
				return
			}
			fn(traits(typ).toFloat, "to_float", typ)(unsafe.Pointer(&src[0]), unsafe.Pointer(&dst[0]), int64(len(dst)))
		},
		fromFloatRef: func(typ gguf.Type, src []float32, dst []byte) {
			if len(src) == 0 {
				return
			}
			fn(traits(typ).fromFloatRef, "from_float_ref", typ)(unsafe.Pointer(&src[0]), unsafe.Pointer(&dst[0]), int64(len(src)))
		},
		f16ToF32:  func(src []uint16, dst []float32) { fp16ToFP32Row(&src[0], &dst[0], int64(len(src))) },
		bf16ToF32: func(src []uint16, dst []float32) { bf16ToFP32Row(&src[0], &dst[0], int64(len(src))) },
		f32ToF16:  func(src []float32, dst []uint16) { fp32ToFP16Row(&src[0], &dst[0], int64(len(src))) },
		f32ToBF16: func(src []float32, dst []uint16) { fp32ToBF16Row(&src[0], &dst[0], int64(len(src))) },
		typeCount: ggmlTypeCount,
	}
	return g
}
