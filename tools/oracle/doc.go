// Package oracle holds the Python reference implementations ("oracles") that the Go code is
// checked against, written so that they share no code with it. The OLMoE float32 reference
// forward pass lives here: gguf_reader.py reads GGUF files and dequantizes ggml's formats bit for
// bit, olmoe_ref.py runs the model as transformers' modeling_olmoe.py does, and olmoe_f64.py is
// a plain float64 re-derivation used to check it. README.md documents their command lines and
// output layout.
//
// The Go files here are tests only: they check the Python reference against package quant, the
// real ggml library, gguf-parser-go, internal/modelgen's files and itself.
package oracle
