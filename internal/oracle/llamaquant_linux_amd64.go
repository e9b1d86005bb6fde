//go:build linux && amd64

package oracle

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"unsafe"

	"github.com/ebitengine/purego"
)

// llamaQuantizeParams mirrors struct llama_model_quantize_params as include/llama.h of the
// pinned llama.cpp (v0.5.0, the git bundle npm's node-llama-cpp@3.22.1 ships; lines 434-450)
// declares it, on linux/amd64: four 32-bit enums and ints, six bools, two bytes of padding to
// align the four pointers, and a size_t; 64 bytes.
type llamaQuantizeParams struct {
	nthread              int32 // <= 0: std::thread::hardware_concurrency()
	ftype                int32 // enum llama_ftype
	outputTensorType     int32 // enum ggml_type; GGML_TYPE_COUNT leaves it to the mix
	tokenEmbeddingType   int32 // enum ggml_type; likewise
	allowRequantize      bool
	quantizeOutputTensor bool
	onlyCopy             bool
	pure                 bool
	keepSplit            bool
	dryRun               bool
	_                    [2]byte
	imatrix              uintptr // const struct llama_model_imatrix_data *
	kvOverrides          uintptr // const struct llama_model_kv_override *
	ttOverrides          uintptr // const struct llama_model_tensor_override *
	pruneLayers          uintptr // const int32_t *
	maxBufSize           uint64  // size_t; 0 means the default
}

// ggmlTypeCount is GGML_TYPE_COUNT in the pinned build (gguf/quant's ggml test reads the same
// from its type_traits table).
const ggmlTypeCount = 43

// llamaDefaultParams are llama_model_quantize_default_params' values, written out from
// src/llama-quant.cpp of the pinned llama.cpp (lines 1365-1385): Q8_0, every thread, the mix's
// own output and embedding types, output.weight quantized, 8 GiB buffers
// (LLAMA_QUANT_MAX_BUF_SIZE, line 42). The library's own defaults are compared with these when
// it is loaded, which checks the struct layout above against the binary.
var llamaDefaultParams = llamaQuantizeParams{
	ftype:                int32(LlamaFtypeQ8_0),
	outputTensorType:     ggmlTypeCount,
	tokenEmbeddingType:   ggmlTypeCount,
	quantizeOutputTensor: true,
	maxBufSize:           8 << 30,
}

// LlamaQuantizer is libllama's own quantizer, llama_model_quantize, from the pinned npm
// prebuilt: what llama-quantize runs.
type LlamaQuantizer struct {
	mu       sync.Mutex // one quantization at a time: the log is global
	quantize func(in, out string, p *llamaQuantizeParams) uint32
}

// llamaImatrixData mirrors struct llama_model_imatrix_data of llama.h (the element type of
// llama_model_quantize_params.imatrix): a tensor's name, its weights and their count; 24 bytes.
// llama-quant.cpp reads the array up to the first entry whose name is NULL. Quantize checks the
// layout on every use: the library logs how many entries it read.
type llamaImatrixData struct {
	name *byte    // const char *
	data *float32 // const float *
	size uintptr  // size_t
}

// The library is loaded once per process and never closed: llama.cpp keeps global state (its
// backends, the log callback, which purego cannot free).
var (
	llamaOnce  sync.Once
	llamaQ     *LlamaQuantizer
	llamaErr   error
	llamaMiss  string // the file that was not there, when that is why llamaErr is set
	llamaLogMu sync.Mutex
	llamaLog   strings.Builder
)

// Llama returns libllama's quantizer, or skips/fails (Missing) when the npm package is not
// installed. A package of another version, or a library whose defaults say the struct layout
// is wrong, fails t.
func Llama(t testing.TB) *LlamaQuantizer {
	t.Helper()
	pkg := NPM(t, llamaPackage)
	llamaOnce.Do(func() { llamaQ, llamaErr = loadLlama(pkg) })
	if llamaMiss != "" {
		Missing(t, llamaMiss)
	}
	if llamaErr != nil {
		t.Fatalf("llama oracle: %v", llamaErr)
	}
	return llamaQ
}

func loadLlama(pkg string) (*LlamaQuantizer, error) {
	var meta struct{ Version string }
	raw, err := os.ReadFile(filepath.Join(pkg, "package.json"))
	if err == nil {
		err = json.Unmarshal(raw, &meta)
	}
	if err != nil {
		return nil, fmt.Errorf("reading %s/package.json: %w", llamaPackage, err)
	}
	if meta.Version != llamaPackageVersion {
		return nil, fmt.Errorf("%s is version %s; llama_model_quantize_params was laid out for %s only",
			llamaPackage, meta.Version, llamaPackageVersion)
	}
	path := filepath.Join(pkg, "bins", "linux-x64", llamaLibrary)
	if _, err := os.Stat(path); err != nil {
		llamaMiss = path
		return nil, err
	}
	// libllama finds libggml and libggml-base beside it (its RUNPATH is $ORIGIN).
	lib, err := purego.Dlopen(path, purego.RTLD_NOW|purego.RTLD_LOCAL)
	if err != nil {
		return nil, fmt.Errorf("dlopen %s: %w", path, err)
	}
	var (
		backendInit   func()
		logSet        func(cb, user uintptr)
		defaultParams func() llamaQuantizeParams
		ftypeName     func(ftype int32) *byte
		defaultType   func(ftype int32) int32
		q             LlamaQuantizer
	)
	for _, f := range []struct {
		fptr any
		name string
	}{
		{&backendInit, "llama_backend_init"},
		{&logSet, "llama_log_set"},
		{&defaultParams, "llama_model_quantize_default_params"},
		{&q.quantize, "llama_model_quantize"},
		{&ftypeName, "llama_ftype_name"},
		// Declared with C++ linkage, so exported under its mangled name; called as the plain
		// function it is (an enum in, an enum out).
		{&defaultType, "_Z28llama_ftype_get_default_type11llama_ftype"},
	} {
		sym, err := purego.Dlsym(lib, f.name)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", f.name, err)
		}
		purego.RegisterFunc(f.fptr, sym)
	}
	// The struct comes back in memory (it is over 16 bytes), through the hidden pointer
	// purego passes: were the Go layout off, a field would land elsewhere and differ here.
	if got := defaultParams(); got != llamaDefaultParams {
		return nil, fmt.Errorf("llama_model_quantize_default_params returned %+v; llama-quant.cpp of v0.5.0 says %+v: the struct layout does not match this build",
			got, llamaDefaultParams)
	}
	// Every file type of the table is the library's: its name and its default tensor type.
	for _, f := range slices.Sorted(maps.Keys(llamaFtypeTable)) {
		want := llamaFtypeTable[f]
		if name, typ := cString(ftypeName(int32(f))), defaultType(int32(f)); name != want.libName || typ != want.defaultType {
			return nil, fmt.Errorf("llama_ftype %d: the library names it %q with default ggml type %d; the table says %q (%s) with %d",
				int32(f), name, typ, want.libName, want.name, want.defaultType)
		}
	}
	// llama.cpp logs through ggml's logger (stderr by default); the log is kept instead, to be
	// returned with a failure. Quantize runs on one thread, so the callback is only ever called
	// on the goroutine's own thread.
	logSet(purego.NewCallback(func(level int32, text *byte, _ uintptr) {
		llamaLogMu.Lock()
		defer llamaLogMu.Unlock()
		llamaLog.WriteString(cString(text))
	}), 0)
	backendInit()
	return &q, nil
}

// cString copies a NUL-terminated C string.
func cString(p *byte) string {
	if p == nil {
		return ""
	}
	n := 0
	for *(*byte)(unsafe.Add(unsafe.Pointer(p), n)) != 0 {
		n++
	}
	return string(unsafe.Slice(p, n))
}

// Quantize has llama_model_quantize write the model at in (F16 or F32 weights) as ftype to out,
// with every other parameter at llama.cpp's default, as `llama-quantize [--imatrix F] in out
// FTYPE 1` does: the mix's own rules choose each tensor's type, weighted by imatrix when it is
// not nil (the mixes with IQ1_S, IQ1_M, IQ2_XXS, IQ2_XS, IQ2_S or IQ3_XXS tensors, and Q2_K_S,
// are refused without one). It returns llama.cpp's log of the run.
func (q *LlamaQuantizer) Quantize(in, out string, ftype LlamaFtype, imatrix Imatrix) (string, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	p := llamaDefaultParams
	p.ftype = int32(ftype)
	// One thread: the output does not depend on it (rows are quantized independently), and the
	// log callback is then never called from a thread Go did not start.
	p.nthread = 1
	// The entries and what they point to are Go heap memory, which does not move; KeepAlive
	// below holds it until llama_model_quantize has copied it (it copies the whole matrix into
	// its own map before it reads a tensor).
	var entries []llamaImatrixData
	var names [][]byte
	if imatrix != nil {
		for _, name := range slices.Sorted(maps.Keys(imatrix)) {
			w := imatrix[name]
			if len(w) == 0 {
				return "", fmt.Errorf("imatrix entry %q is empty", name)
			}
			c := append([]byte(name), 0)
			names = append(names, c)
			entries = append(entries, llamaImatrixData{name: &c[0], data: &w[0], size: uintptr(len(w))})
		}
		entries = append(entries, llamaImatrixData{}) // the NULL name that ends the array
		p.imatrix = uintptr(unsafe.Pointer(&entries[0]))
	}
	llamaLogMu.Lock()
	llamaLog.Reset()
	llamaLogMu.Unlock()
	rc := q.quantize(in, out, &p)
	runtime.KeepAlive(entries)
	runtime.KeepAlive(names)
	runtime.KeepAlive(imatrix)
	llamaLogMu.Lock()
	log := llamaLog.String()
	llamaLogMu.Unlock()
	if rc != 0 {
		return log, fmt.Errorf("llama_model_quantize %s -> %s (%v): returned %d: %s", in, out, ftype, rc, lastLines(log, 5))
	}
	if _, err := os.Stat(out); err != nil {
		return log, errors.Join(fmt.Errorf("llama_model_quantize %s (%v) returned 0 but wrote nothing", in, ftype), err)
	}
	if imatrix != nil {
		// The library must have read every entry (were llamaImatrixData laid out otherwise than
		// llama.h's struct, it would read another count or crash) and found each tensor's.
		m := imatrixEntries.FindStringSubmatch(log)
		if m == nil || m[1] != strconv.Itoa(len(imatrix)) {
			return log, fmt.Errorf("llama_model_quantize %s (%v): given %d imatrix entries, its log says %q", in, ftype, len(imatrix), m)
		}
		// llama-imatrix collects neither token_embd.weight (a row lookup, not a product) nor,
		// by default, output.weight: only those may go without.
		for _, m := range imatrixMissed.FindAllStringSubmatch(log, -1) {
			if m[1] != "token_embd.weight" && m[1] != "output.weight" {
				return log, fmt.Errorf("llama_model_quantize %s (%v): %s", in, ftype, m[0])
			}
		}
	}
	return log, nil
}

// What llama_model_quantize logs of an importance matrix: how many entries it read, and a
// quantized tensor it found no entry of (or one of another size) for.
var (
	imatrixEntries = regexp.MustCompile(`have importance matrix data with (\d+) entries`)
	imatrixMissed  = regexp.MustCompile(`(?:did not find weights for|imatrix size \d+ is different from tensor size \d+ for) (\S+)`)
)

// lastLines returns the last n lines of s, for an error message.
func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
