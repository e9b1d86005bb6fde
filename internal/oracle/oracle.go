// Package oracle finds the external reference implementations tests compare against: the npm
// packages, Debian Python and llama.cpp's vocabularies that tools/deps.sh installs, and the files
// of the repository's own they read.
//
// An oracle that is missing skips its test, unless TROCHILUS_REQUIRE_ORACLES=1 (the gate sets
// it), where a missing oracle fails the test: a skipped oracle must never read as a pass.
package oracle

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/trochilus-llm/trochilus/assets"
)

// Root returns the module root (the directory holding go.mod), found by walking up from the
// working directory.
func Root(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatalf("oracle: getwd: %v", err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatalf("oracle: no go.mod above the working directory")
		}
		dir = parent
	}
}

// Required reports whether the gate demands every oracle.
func Required() bool { return os.Getenv("TROCHILUS_REQUIRE_ORACLES") == "1" }

// Long skips t unless TROCHILUS_LONG=1, which the gate's check-long step sets: the checks too
// slow for every run (an exhaustive comparison, the CLI built twice), named ...Long so that
// step can pick them.
func Long(t testing.TB) {
	t.Helper()
	if os.Getenv("TROCHILUS_LONG") != "1" {
		t.Skip("long check: set TROCHILUS_LONG=1")
	}
}

// Missing skips or fails t, as Required says, because an oracle is not installed.
func Missing(t testing.TB, what string) {
	t.Helper()
	if Required() {
		t.Fatalf("oracle %s is missing (run tools/deps.sh test): required by TROCHILUS_REQUIRE_ORACLES=1", what)
	}
	t.Skipf("oracle %s is missing (run tools/deps.sh test); skipped", what)
}

// NPM returns the path of an installed npm package under .deps/npm/node_modules (e.g.
// "@anush008/tokenizers"), or skips/fails when it is not there.
func NPM(t testing.TB, pkg string) string {
	t.Helper()
	p := filepath.Join(depsDir(t), "npm", "node_modules", pkg)
	if _, err := os.Stat(p); err != nil {
		Missing(t, "npm "+pkg)
	}
	return p
}

// NodeModules returns the node_modules folder that NPM packages live in (for NODE_PATH).
func NodeModules(t testing.TB) string {
	t.Helper()
	return filepath.Join(depsDir(t), "npm", "node_modules")
}

// Node returns the node binary, or skips/fails.
func Node(t testing.TB) string {
	t.Helper()
	p, err := exec.LookPath("node")
	if err != nil {
		Missing(t, "node")
	}
	return p
}

// Python returns Debian's python3 (/usr/bin/python3, which sees Debian's dist-packages) after
// checking it can import the given modules, or skips/fails.
func Python(t testing.TB, modules ...string) string {
	t.Helper()
	const py = "/usr/bin/python3"
	if _, err := os.Stat(py); err != nil {
		Missing(t, py)
	}
	for _, m := range modules {
		if err := exec.Command(py, "-c", "import "+m).Run(); err != nil {
			Missing(t, "python module "+m)
		}
	}
	return py
}

// Vocab returns the path of one of llama.cpp's vocab-only GGUF files (e.g.
// "ggml-vocab-gpt-2.gguf"), which tools/deps.sh extracts into .deps/llama-vocab from the llama.cpp
// source a pinned npm package ships (testdata/vocab/README.md), or skips/fails when it is absent.
func Vocab(t testing.TB, name string) string {
	t.Helper()
	p := filepath.Join(VocabDir(t), name)
	if _, err := os.Stat(p); err != nil {
		Missing(t, "llama.cpp vocabulary "+name)
	}
	return p
}

// VocabFiles returns the paths of every vocabulary testdata/vocab/SHA256SUMS lists, through
// Vocab.
func VocabFiles(t testing.TB) []string {
	t.Helper()
	sums, err := os.ReadFile(filepath.Join(Root(t), "testdata", "vocab", "SHA256SUMS"))
	if err != nil {
		t.Fatal(err)
	}
	var paths []string
	for _, line := range strings.Split(strings.TrimSpace(string(sums)), "\n") {
		f := strings.Fields(line)
		if len(f) != 2 {
			t.Fatalf("testdata/vocab/SHA256SUMS: bad line %q", line)
		}
		paths = append(paths, Vocab(t, f[1]))
	}
	return paths
}

// VocabDir returns the folder Vocab's files live in (which may not exist).
func VocabDir(t testing.TB) string {
	t.Helper()
	return filepath.Join(depsDir(t), "llama-vocab")
}

// OLMoETokenizerFile writes OLMoE's tokenizer.json, which the binaries embed (package assets),
// into a temporary folder of t's and returns its path, for oracles that read a file.
func OLMoETokenizerFile(t testing.TB) string {
	t.Helper()
	js, _, err := assets.OLMoETokenizer()
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "tokenizer.json")
	if err := os.WriteFile(p, js, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// depsDir is where tools/deps.sh installs: $TROCHILUS_DEPS, or .deps under the module root.
func depsDir(t testing.TB) string {
	t.Helper()
	if dir := os.Getenv("TROCHILUS_DEPS"); dir != "" {
		return dir
	}
	return filepath.Join(Root(t), ".deps")
}
