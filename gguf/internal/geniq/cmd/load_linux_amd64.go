//go:build linux && amd64

package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"unsafe"

	"github.com/ebitengine/purego"
	"github.com/trochilus-llm/trochilus/gguf/internal/geniq"
)

// typeTraits mirrors struct ggml_type_traits (ggml.h) on linux/amd64, as gguf/quant's oracle
// tests read it: 56 bytes, the bool padded to 8 before the two function pointers.
type typeTraits struct {
	typeName           *byte
	blckSize           int64
	blckSizeInterleave int64
	typeSize           uint64
	isQuantized        bool
	toFloat            uintptr // void (*)(const void *x, float *y, int64_t k)
	fromFloatRef       uintptr
}

// typeCount is GGML_TYPE_COUNT in the pinned build.
const typeCount = 43

// load opens libggml-base.so (lib, or the pinned npm package's) and returns its to_float.
func load(lib string) (geniq.ToFloat, func(), error) {
	if lib == "" {
		var err error
		if lib, err = findLib(); err != nil {
			return nil, nil, err
		}
	}
	h, err := purego.Dlopen(lib, purego.RTLD_NOW|purego.RTLD_LOCAL)
	if err != nil {
		return nil, nil, fmt.Errorf("dlopen %s: %w", lib, err)
	}
	sym, err := purego.Dlsym(h, "ggml_get_type_traits")
	if err != nil {
		_ = purego.Dlclose(h)
		return nil, nil, err
	}
	var getTraits func(typ uint32) *typeTraits
	purego.RegisterFunc(&getTraits, sym)
	type rowFunc func(x, y unsafe.Pointer, k int64)
	funcs := map[uint32]rowFunc{}
	for _, t := range geniq.Types {
		if t.ID >= typeCount {
			_ = purego.Dlclose(h)
			return nil, nil, fmt.Errorf("%v: id %d is past the build's %d types", t, t.ID, typeCount)
		}
		tr := getTraits(t.ID)
		if tr.toFloat == 0 || tr.blckSize != int64(t.Elems) || tr.typeSize != uint64(t.Bytes) {
			_ = purego.Dlclose(h)
			return nil, nil, fmt.Errorf("%s: %v has no to_float of the expected block size", lib, t)
		}
		var f rowFunc
		purego.RegisterFunc(&f, tr.toFloat)
		funcs[t.ID] = f
	}
	toFloat := func(t geniq.Type, src []byte, dst []float32) {
		f := funcs[t.ID]
		if f == nil || len(src) != len(dst)/t.Elems*t.Bytes {
			panic(fmt.Sprintf("geniq: to_float of %v on %d bytes into %d floats", t, len(src), len(dst)))
		}
		if len(dst) > 0 {
			f(unsafe.Pointer(&src[0]), unsafe.Pointer(&dst[0]), int64(len(dst)))
		}
	}
	return toFloat, func() { _ = purego.Dlclose(h) }, nil
}

// findLib returns the pinned npm package's libggml-base.so under $TROCHILUS_DEPS or the .deps
// folder of the module holding the working directory, checking the package's version.
func findLib() (string, error) {
	deps := os.Getenv("TROCHILUS_DEPS")
	if deps == "" {
		dir, err := os.Getwd()
		if err != nil {
			return "", err
		}
		for {
			if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
				break
			}
			parent := filepath.Dir(dir)
			if parent == dir {
				return "", fmt.Errorf("no go.mod above the working directory")
			}
			dir = parent
		}
		deps = filepath.Join(dir, ".deps")
	}
	name, version, _ := strings.Cut(strings.TrimPrefix(geniq.LibggmlPackage, "@"), "@")
	pkg := filepath.Join(deps, "npm", "node_modules", "@"+name)
	raw, err := os.ReadFile(filepath.Join(pkg, "package.json"))
	if err != nil {
		return "", fmt.Errorf("%w (run tools/deps.sh test)", err)
	}
	var meta struct{ Version string }
	if err := json.Unmarshal(raw, &meta); err != nil {
		return "", err
	}
	if meta.Version != version {
		return "", fmt.Errorf("%s is version %s, the tables are taken from %s", pkg, meta.Version, version)
	}
	return filepath.Join(pkg, "bins", "linux-x64", "libggml-base.so"), nil
}
