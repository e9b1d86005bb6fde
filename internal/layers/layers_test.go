package layers

import (
	"fmt"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/trochilus-llm/trochilus/internal/oracle"
)

const module = "github.com/trochilus-llm/trochilus/"

// allowed is every package's project imports in its non-test files, by path below the module.
// Imports only point down: app → ui → engine/serve, engine/library → engine/assistant,
// engine/hub → engine → experts, kernels, gguf (docs/ARCHITECTURE.md draws and explains it).
var allowed = map[string][]string{
	"app/trochilus":     {"engine", "engine/assistant", "engine/download", "engine/hub", "engine/library", "engine/machine", "engine/serve", "experts", "gguf", "internal/modelgen", "internal/units", "tokenizer", "tokenizer/chat"},
	"app/trochilus-app": {"assets", "engine/library", "ui"},
	"ui":                {"engine", "engine/assistant", "engine/download", "engine/hub", "engine/library", "engine/machine", "engine/serve", "internal/units", "kernels", "tokenizer/chat", "ui/conversation"},
	"ui/conversation":   {"tokenizer/chat"},
	"engine/serve":      {"engine", "engine/assistant", "engine/structured", "gguf", "tokenizer/chat"},
	"engine/assistant":  {"engine", "engine/structured", "tokenizer", "tokenizer/chat"},
	"engine/structured": {},
	"engine":            {"engine/machine", "experts", "gguf", "gguf/quant", "internal/osmem", "internal/units", "kernels"},
	"engine/library":    {"engine", "engine/hub", "engine/machine", "gguf"},
	"engine/hub":        {"engine", "gguf"},
	"engine/download":   {"internal/units"},
	"engine/machine":    {"gpu", "internal/directio", "internal/units"},
	"experts":           {"gguf", "internal/directio", "internal/osmem", "internal/units", "kernels"},
	"kernels":           {"gguf", "kernels/internal/bigmath"},
	"gpu":               {},
	"tokenizer":         {"gguf"},
	"tokenizer/chat":    {"tokenizer/jinja"},
	"tokenizer/jinja":   {},
	"tokenizer/hfconv":  {"gguf"},
	"gguf":              {},
	"gguf/quant":        {"gguf"},
	"assets":            {},

	"internal/modelgen":              {"assets", "gguf", "gguf/quant", "tokenizer/hfconv"},
	"internal/modelgen/modelgentest": {"gguf", "internal/modelgen"},
	// Test support that needs the engine, apart so that the engine's own tests can use
	// modelgentest (an import of engine there would be a cycle).
	"internal/modelgen/modelgentest/enginetest": {"engine", "gguf", "tokenizer", "tokenizer/chat"},
	"internal/oracle":   {"assets"},
	"internal/layers":   {},
	"internal/directio": {},
	"internal/osmem":    {},
	"internal/units":    {},

	// Generators and their helpers (go generate, build-time only).
	"gguf/internal/ggufbytes":        {},
	"gguf/internal/corpus":           {"gguf/internal/ggufbytes"},
	"gguf/internal/corpus/gencorpus": {"gguf/internal/corpus"},
	"gguf/internal/geniq":            {},
	"gguf/internal/geniq/cmd":        {"gguf/internal/geniq"},
	"kernels/internal/asmgen":        {},
	"kernels/internal/bigmath":       {},
	"kernels/internal/gentables":     {"kernels/internal/bigmath"},
	"tokenizer/internal/gentables":   {},

	// Developer tools (tools/): never imported.
	"tools/checkscreenshots": {},
	"tools/mkcorpus":         {},
	"tools/oracle":           {},
	"tools/race/bandwidth":   {},
	"tools/race/tokenbytes":  {"gguf"},
	"tools/replay":           {"experts"},
	"tools/train":            {"gguf", "internal/modelgen", "tokenizer", "tokenizer/chat", "tokenizer/hfconv"},
}

// row is each product package's row in docs/ARCHITECTURE.md's drawing: a package imports only
// packages of lower rows.
var row = map[string]int{
	"app/trochilus": 7, "app/trochilus-app": 7,
	"ui":           6,
	"engine/serve": 5, "engine/library": 5, "ui/conversation": 5,
	"engine/assistant": 4, "engine/hub": 4,
	"engine": 3, "internal/modelgen": 3,
	"experts": 2, "engine/machine": 2, "tokenizer": 2, "tokenizer/chat": 2, "tokenizer/hfconv": 2,
	"kernels": 1, "gguf/quant": 1, "gpu": 1, "tokenizer/jinja": 1, "engine/download": 1, "engine/structured": 1,
	"gguf": 0, "assets": 0, "internal/directio": 0, "internal/osmem": 0, "internal/units": 0,
}

// testOnly is what a package's tests import beyond allowed: the test support packages, and
// packages a test compares against or builds its inputs with.
var testOnly = map[string][]string{
	"app/trochilus":                  {"internal/modelgen/modelgentest", "kernels"},
	"ui":                             {"gguf", "internal/modelgen", "internal/modelgen/modelgentest", "internal/modelgen/modelgentest/enginetest"},
	"engine/serve":                   {"internal/modelgen", "internal/modelgen/modelgentest", "internal/modelgen/modelgentest/enginetest", "internal/oracle"},
	"engine/assistant":               {"gguf", "internal/modelgen", "internal/modelgen/modelgentest", "internal/modelgen/modelgentest/enginetest", "kernels"},
	"engine":                         {"internal/modelgen", "internal/modelgen/modelgentest", "internal/oracle"},
	"engine/library":                 {"internal/modelgen", "internal/modelgen/modelgentest", "internal/units"},
	"gpu":                            {"kernels"},
	"kernels":                        {"gguf/quant", "internal/oracle"},
	"tokenizer":                      {"internal/oracle", "tokenizer/hfconv"},
	"tokenizer/chat":                 {"internal/oracle"},
	"tokenizer/jinja":                {"internal/oracle"},
	"tokenizer/hfconv":               {"assets", "internal/oracle"},
	"gguf":                           {"gguf/internal/corpus", "gguf/internal/ggufbytes", "internal/oracle"},
	"gguf/quant":                     {"gguf/internal/geniq", "internal/oracle"},
	"internal/modelgen":              {"internal/oracle"},
	"internal/modelgen/modelgentest": {}, // none beyond its program's
	"internal/layers":                {"internal/oracle"},
	"internal/directio":              {}, // no project package
	"internal/osmem":                 {}, // no project package
	"internal/units":                 {}, // no project package
	// Its external test runs the JSON Schema suite on the trained model through a chat
	// (engine/assistant), with the package's own validator (export_test.go).
	"engine/structured": {"engine", "engine/assistant", "internal/modelgen/modelgentest", "internal/modelgen/modelgentest/enginetest", "kernels", "tokenizer/chat"},
	"tools/oracle":      {"gguf", "gguf/quant", "internal/modelgen", "internal/oracle"},
	"tools/train":       {"gguf/quant"},
}

// imports reads the project imports of every Go file below root, whatever its build tags, as
// package → imported package → the files that import it; test files separately.
func imports(t *testing.T, root string) (prod, test map[string]map[string][]string) {
	t.Helper()
	prod, test = map[string]map[string][]string{}, map[string]map[string][]string{}
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			// What the go command ignores (and build outputs such as the Wine check's overlay
			// under build/windows/_overlay), skipped as it skips them.
			if path != root && (strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") || name == "testdata" || name == "node_modules") {
				return filepath.SkipDir
			}
			if path != root {
				if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil {
					return filepath.SkipDir // another module
				}
			}
			return nil
		}
		if !strings.HasSuffix(name, ".go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, filepath.Dir(path))
		if err != nil {
			return err
		}
		pkg := filepath.ToSlash(rel)
		into := prod
		if strings.HasSuffix(name, "_test.go") {
			into = test
		}
		if into[pkg] == nil {
			into[pkg] = map[string][]string{}
		}
		for _, imp := range f.Imports {
			p := strings.Trim(imp.Path.Value, `"`)
			if dep, ok := strings.CutPrefix(p, module); ok && dep != pkg {
				into[pkg][dep] = append(into[pkg][dep], filepath.ToSlash(filepath.Join(rel, name)))
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return prod, test
}

func TestImportGraph(t *testing.T) {
	root := oracle.Root(t)
	prod, test := imports(t, root)
	checkGraph(t, prod, test)

	arch, err := os.ReadFile(filepath.Join(root, "docs", "ARCHITECTURE.md"))
	if err != nil {
		t.Fatal(err)
	}
	for pkg := range allowed {
		if !strings.Contains(string(arch), "`"+pkg+"`") {
			t.Errorf("docs/ARCHITECTURE.md does not name package `%s`", pkg)
		}
	}
}

// checkGraph compares the imports found with the tables.
func checkGraph(t testing.TB, prod, test map[string]map[string][]string) {
	t.Helper()
	pkgs := map[string]bool{}
	for p := range prod {
		pkgs[p] = true
	}
	for p := range test {
		pkgs[p] = true
	}
	for _, pkg := range sortedKeys(pkgs) {
		want, known := allowed[pkg]
		if !known {
			t.Errorf("package %s is not in the import table (internal/layers): add it with its imports, and to docs/ARCHITECTURE.md", pkg)
			continue
		}
		for _, dep := range sortedKeys(prod[pkg]) {
			if !slices.Contains(want, dep) {
				t.Errorf("new arrow %s → %s (%s): not in the import table; if it is right, add it there and say why in docs/ARCHITECTURE.md",
					pkg, dep, strings.Join(prod[pkg][dep], ", "))
			}
		}
		for _, dep := range sortedKeys(test[pkg]) {
			if !slices.Contains(want, dep) && !slices.Contains(testOnly[pkg], dep) {
				t.Errorf("new test arrow %s → %s (%s): not in the import table's test imports", pkg, dep, strings.Join(test[pkg][dep], ", "))
			}
		}
		for _, dep := range want {
			if _, ok := prod[pkg][dep]; !ok {
				t.Errorf("the import table lets %s import %s, which none of its files does: remove the arrow", pkg, dep)
			}
		}
		for _, dep := range testOnly[pkg] {
			if _, ok := test[pkg][dep]; !ok {
				t.Errorf("the import table lets %s's tests import %s, which none does: remove the arrow", pkg, dep)
			}
		}
	}
	for pkg := range allowed {
		if !pkgs[pkg] {
			t.Errorf("the import table names %s, which does not exist", pkg)
		}
	}
	for pkg, deps := range prod {
		r, ranked := row[pkg]
		for dep := range deps {
			if d, ok := row[dep]; ranked && ok && d >= r {
				t.Errorf("%s (row %d) imports %s (row %d): imports point down only", pkg, r, dep, d)
			}
		}
	}
	// The engine side never depends on the window toolkit's layer.
	for pkg, deps := range prod {
		if strings.HasPrefix(pkg, "ui") || strings.HasPrefix(pkg, "app/") {
			continue
		}
		for dep := range deps {
			if strings.HasPrefix(dep, "ui") || strings.HasPrefix(dep, "app/") {
				t.Errorf("%s imports %s: only app/ may import ui", pkg, dep)
			}
		}
	}
}

// A planted upward import fails the check, naming the arrow.
func TestImportGraphCatchesAnUpwardArrow(t *testing.T) {
	prod, test := imports(t, oracle.Root(t))
	prod["gguf"]["engine"] = []string{"gguf/planted.go"}
	rec := &recorder{}
	checkGraph(rec, prod, test)
	if len(rec.errs) != 2 || !strings.Contains(rec.errs[0], "new arrow gguf → engine (gguf/planted.go)") ||
		!strings.Contains(rec.errs[1], "gguf (row 0) imports engine (row 3): imports point down only") {
		t.Fatalf("errors %q, want the planted arrow named as new and as upward", rec.errs)
	}
}

// recorder is a testing.TB that keeps the errors reported to it.
type recorder struct {
	testing.TB
	errs []string
}

func (r *recorder) Helper() {}
func (r *recorder) Errorf(format string, args ...any) {
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
