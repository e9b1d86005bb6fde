//go:build !(linux && amd64)

package quant

import (
	"testing"

	"github.com/trochilus-llm/trochilus/internal/oracle"
)

// loadGGML reports the oracle missing: the npm package ships libggml-base.so for linux/amd64
// only.
func loadGGML(t testing.TB) *ggml {
	t.Helper()
	oracle.Missing(t, "libggml-base.so (shipped for linux/amd64 only)")
	return nil
}
