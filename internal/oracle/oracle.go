// Package oracle finds the external reference implementations tests compare against: the npm
// packages and Debian Python that tools/deps.sh installs.
//
// An oracle that is missing skips its test, unless TROCHILUS_REQUIRE_ORACLES=1 (the gate sets
// it), where a missing oracle fails the test: a skipped oracle must never read as a pass.
package oracle

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
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
	dir := os.Getenv("TROCHILUS_DEPS")
	if dir == "" {
		dir = filepath.Join(Root(t), ".deps")
	}
	p := filepath.Join(dir, "npm", "node_modules", pkg)
	if _, err := os.Stat(p); err != nil {
		Missing(t, "npm "+pkg)
	}
	return p
}

// NodeModules returns the node_modules folder that NPM packages live in (for NODE_PATH).
func NodeModules(t testing.TB) string {
	t.Helper()
	dir := os.Getenv("TROCHILUS_DEPS")
	if dir == "" {
		dir = filepath.Join(Root(t), ".deps")
	}
	return filepath.Join(dir, "npm", "node_modules")
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

// Shared returns the path of a file under ../shared (the read-only reference folder beside the
// checkout), or skips/fails when it is absent.
func Shared(t testing.TB, rel string) string {
	t.Helper()
	dir := os.Getenv("TROCHILUS_SHARED")
	if dir == "" {
		dir = filepath.Join(Root(t), "..", "shared")
	}
	p := filepath.Join(dir, rel)
	if _, err := os.Stat(p); err != nil {
		Missing(t, "shared/"+rel)
	}
	return p
}
