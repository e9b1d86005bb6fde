// Package gguf reads and writes GGUF files (versions 2 and 3), the container ggml and llama.cpp
// use for model weights and metadata.
//
// Reading never trusts the header: every count, length, dimension and offset is checked against
// the file size before anything is allocated, and tensor bytes are read with positional reads, so
// one open File may serve many goroutines.
package gguf
