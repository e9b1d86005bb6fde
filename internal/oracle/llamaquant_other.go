//go:build !(linux && amd64)

package oracle

import "testing"

// LlamaQuantizer is libllama's own quantizer; the npm package ships libllama for linux/amd64
// only, so elsewhere Llama reports it missing.
type LlamaQuantizer struct{}

// Llama skips or fails t (Missing): libllama is shipped for linux/amd64 only.
func Llama(t testing.TB) *LlamaQuantizer {
	t.Helper()
	Missing(t, llamaLibrary+" (shipped for linux/amd64 only)")
	return nil
}

// Quantize is never reached: Llama does not return a LlamaQuantizer here.
func (q *LlamaQuantizer) Quantize(in, out string, ftype LlamaFtype, imatrix Imatrix) (string, error) {
	panic("oracle: no libllama on this platform")
}
