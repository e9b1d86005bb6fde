// Package gguf reads and writes GGUF files (versions 2 and 3, little-endian), the container
// ggml and llama.cpp use for model weights and metadata.
//
// Reading never trusts the header: every count, length, dimension and offset is checked against
// the file size and against sane limits before anything is allocated, so a header claiming
// 2^60 tensors or a 2^40-byte string is an error, not an allocation. A malformed file gives a
// *FormatError that names what is wrong and the byte offset where. Open reads only the header,
// through a buffer of positional reads; tensor bytes are read on demand with ReadTensor and
// ReadTensorAt, which may be called from many goroutines at once.
//
// Metadata values keep their file types (Value.Type); the typed getters of File accept any
// integer kind whose value fits, the way llama.cpp's loader reads them. Writer writes GGUF v3,
// in the order entries are added, with tensor data aligned and zero padding.
//
// The package also holds the one decoder of each weight format to float32 (F16ToF32,
// BF16ToF32, DequantizeQ4_K, ...) and the half-float narrowings (F32ToF16, F32ToBF16), bit for
// bit ggml's: gguf/quant's Dequantize and kernels' scalar definitions both run them, and both
// import gguf.
package gguf
