package oracle

import "fmt"

// LlamaFtype is llama.h's enum llama_ftype: the weight mix llama_model_quantize is asked for,
// which it refines tensor by tensor (llama-quant.cpp's llama_tensor_get_type_impl).
type LlamaFtype int32

// The file types the oracle tests make, with llama.h's values (include/llama.h of the pinned
// llama.cpp v0.5.0, lines 118-161; gguf/filetype.go holds the same table by name).
const (
	LlamaFtypeF16    LlamaFtype = 1
	LlamaFtypeQ8_0   LlamaFtype = 7
	LlamaFtypeQ2_K   LlamaFtype = 10
	LlamaFtypeQ3_K_S LlamaFtype = 11
	LlamaFtypeQ3_K_M LlamaFtype = 12
	LlamaFtypeQ3_K_L LlamaFtype = 13
	LlamaFtypeQ4_K_S LlamaFtype = 14
	LlamaFtypeQ4_K_M LlamaFtype = 15
	LlamaFtypeQ5_K_S LlamaFtype = 16
	LlamaFtypeQ5_K_M LlamaFtype = 17
	LlamaFtypeQ6_K   LlamaFtype = 18
)

var llamaFtypeNames = map[LlamaFtype]string{
	LlamaFtypeF16: "F16", LlamaFtypeQ8_0: "Q8_0", LlamaFtypeQ2_K: "Q2_K", LlamaFtypeQ3_K_S: "Q3_K_S",
	LlamaFtypeQ3_K_M: "Q3_K_M", LlamaFtypeQ3_K_L: "Q3_K_L", LlamaFtypeQ4_K_S: "Q4_K_S",
	LlamaFtypeQ4_K_M: "Q4_K_M", LlamaFtypeQ5_K_S: "Q5_K_S", LlamaFtypeQ5_K_M: "Q5_K_M",
	LlamaFtypeQ6_K: "Q6_K",
}

// String returns llama-quantize's name of the file type ("Q4_K_M").
func (f LlamaFtype) String() string {
	if n, ok := llamaFtypeNames[f]; ok {
		return n
	}
	return fmt.Sprintf("ftype(%d)", int32(f))
}

// The pinned build llama_model_quantize is loaded from: the npm package of ggml's libraries and
// the libllama in it. llamaQuantizeParams' layout was read from that build's llama.h; another
// version must be checked again before it is trusted.
const (
	llamaPackage        = "@node-llama-cpp/linux-x64"
	llamaPackageVersion = "3.22.1"
	llamaLibrary        = "libllama.v0.5.0.so"
)
