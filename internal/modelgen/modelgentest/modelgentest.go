// Package modelgentest gives tests generated models: each Config written once per test binary,
// in a temporary folder removed when the tests end. It is test support, kept out of package
// modelgen so that the programs, which link modelgen, do not link package testing.
package modelgentest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/trochilus-llm/trochilus/internal/modelgen"
)

// testModels is the cache behind TestModel: the models one test binary has written, in one
// temporary directory. It is the package's only mutable state, and exists for tests alone.
var testModels struct {
	mu      sync.Mutex
	dir     string
	entries map[string]*testEntry
	tok     *modelgen.Tokenizer
	tokErr  error
	tokOnce sync.Once
}

type testEntry struct {
	once sync.Once
	path string
	err  error
}

// testDirPrefix names the directories TestModel makes under os.TempDir.
const testDirPrefix = "trochilus-modelgen-"

// staleAfter is the age past which a directory left by an earlier test binary (one that did not
// use RunTests) is removed: far longer than any test binary runs.
const staleAfter = 2 * time.Hour

// TestModel returns the path of the model cfg describes, written the first time a test binary
// asks for it and shared by every later call, whatever the test. The file lives in a temporary
// directory that RunTests removes when the tests end; without RunTests it is left behind and
// removed by a later test binary once it is two hours old.
func TestModel(t testing.TB, cfg modelgen.Config) string {
	t.Helper()
	key, err := cacheKey(&cfg)
	if err != nil {
		t.Fatalf("modelgen: %v", err)
	}
	e := entry(t, key+".gguf")
	e.once.Do(func() { e.err = modelgen.Write(context.Background(), e.path, cfg) })
	if e.err != nil {
		t.Fatalf("modelgen: writing a test model: %v", e.err)
	}
	return e.path
}

// File returns the path of the file called name in the directory TestModel writes to, made by
// write the first time a test binary asks for that name and shared by every later call, as
// TestModel's models are: for files as costly to make, such as a model another program
// quantized. name must be a plain file name that says everything the bytes depend on; write
// is given the path to create, and a file it leaves after an error is removed.
func File(t testing.TB, name string, write func(path string) error) string {
	t.Helper()
	if name == "" || name != filepath.Base(name) || strings.HasPrefix(name, ".") {
		t.Fatalf("modelgentest: %q is not a plain file name", name)
	}
	e := entry(t, "file-"+name)
	e.once.Do(func() {
		if e.err = write(e.path); e.err != nil {
			os.Remove(e.path)
		}
	})
	if e.err != nil {
		t.Fatalf("modelgentest: making %s: %v", name, e.err)
	}
	return e.path
}

// TrainedModel returns the path of a trained tiny model (testdata/trained) as weights
// ("q4_k_m": the committed OLMoE model, expanded; "q8_0": it requantized; "qwen3-q4_k_m" and
// "qwen3-q8_0": the same of the Qwen3-MoE model), written once per test binary.
func TrainedModel(t testing.TB, weights string) string {
	t.Helper()
	prefix, compact := "trained-", modelgen.TrainedCompactPath
	if w, ok := strings.CutPrefix(weights, "qwen3-"); ok {
		prefix, compact, weights = "trained-qwen3-", modelgen.TrainedQwen3CompactPath, w
	}
	full := File(t, prefix+"q4_k_m.gguf", func(path string) error {
		return modelgen.ExpandTrainedFrom(context.Background(), path, compact)
	})
	if weights == "q4_k_m" {
		return full
	}
	return File(t, prefix+weights+".gguf", func(path string) error {
		return modelgen.RequantizeTrainedFile(path, full, weights)
	})
}

// entry returns the cache entry of the file called name, making the test binary's directory
// on first use.
func entry(t testing.TB, name string) *testEntry {
	t.Helper()
	testModels.mu.Lock()
	defer testModels.mu.Unlock()
	if testModels.entries == nil {
		testModels.entries = map[string]*testEntry{}
	}
	if testModels.dir == "" {
		sweepStale()
		dir, err := os.MkdirTemp("", testDirPrefix)
		if err != nil {
			t.Fatalf("modelgen: %v", err)
		}
		testModels.dir = dir
	}
	e := testModels.entries[name]
	if e == nil {
		e = &testEntry{path: filepath.Join(testModels.dir, name)}
		testModels.entries[name] = e
	}
	return e
}

// TinyModel returns the path of modelgen.Tiny(w) with OLMoE's tokenizer, written once per test
// binary (see TestModel).
func TinyModel(t testing.TB, w modelgen.Weights) string {
	t.Helper()
	testModels.tokOnce.Do(func() { testModels.tok, testModels.tokErr = modelgen.FindOLMoETokenizer("") })
	if testModels.tokErr != nil {
		t.Fatalf("modelgentest: %v", testModels.tokErr)
	}
	cfg := modelgen.Tiny(w)
	cfg.Tokenizer = testModels.tok
	return TestModel(t, cfg)
}

// RunTests runs m and then removes the models TestModel wrote; call it from TestMain:
//
//	func TestMain(m *testing.M) { os.Exit(modelgentest.RunTests(m)) }
func RunTests(m *testing.M) int {
	code := m.Run()
	testModels.mu.Lock()
	defer testModels.mu.Unlock()
	if testModels.dir != "" {
		if err := os.RemoveAll(testModels.dir); err != nil {
			fmt.Fprintf(os.Stderr, "modelgen: removing test models: %v\n", err)
		}
		testModels.dir, testModels.entries = "", nil
	}
	return code
}

// cacheKey names a Config: its fields (the tokenizer by a digest of its contents) and the
// generator's Version.
func cacheKey(cfg *modelgen.Config) (string, error) {
	if err := cfg.Validate(); err != nil {
		return "", err
	}
	h := sha256.New()
	c := *cfg
	c.Tokenizer = nil
	fmt.Fprintf(h, "modelgen %d\n%+v\n", modelgen.Version, c)
	if tok := cfg.Tokenizer; tok != nil {
		fmt.Fprintf(h, "tokenizer %q %d %d\n", tok.Pre, len(tok.JSON), len(tok.Config))
		h.Write(tok.JSON)
		h.Write(tok.Config)
	}
	return hex.EncodeToString(h.Sum(nil))[:20], nil
}

// sweepStale removes directories an earlier test binary left under os.TempDir.
func sweepStale() {
	tmp := os.TempDir()
	entries, err := os.ReadDir(tmp)
	if err != nil {
		return
	}
	for _, e := range entries {
		if !e.IsDir() || !strings.HasPrefix(e.Name(), testDirPrefix) {
			continue
		}
		if info, err := e.Info(); err == nil && time.Since(info.ModTime()) > staleAfter {
			os.RemoveAll(filepath.Join(tmp, e.Name()))
		}
	}
}
