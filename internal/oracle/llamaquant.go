package oracle

import "fmt"

// LlamaFtype is llama.h's enum llama_ftype: the weight mix llama_model_quantize is asked for,
// which it refines tensor by tensor (llama-quant.cpp's llama_tensor_get_type_impl).
type LlamaFtype int32

// Every file type the pinned libllama (llama.cpp v0.5.0) quantizes to, with llama.h's values
// (gguf/filetype.go holds the same table by name; 4-6 and 33-35 are retired). NVFP4 (39) is
// left out: llama_ftype_get_default_type refuses it (GGML_TYPE_COUNT), so llama_model_quantize
// cannot write it. The values are not taken on trust: Llama checks each against the library's
// own llama_ftype_name and llama_ftype_get_default_type when it loads it (llamaFtypeTable).
const (
	LlamaFtypeF16       LlamaFtype = 1
	LlamaFtypeQ4_0      LlamaFtype = 2
	LlamaFtypeQ4_1      LlamaFtype = 3
	LlamaFtypeQ8_0      LlamaFtype = 7
	LlamaFtypeQ5_0      LlamaFtype = 8
	LlamaFtypeQ5_1      LlamaFtype = 9
	LlamaFtypeQ2_K      LlamaFtype = 10
	LlamaFtypeQ3_K_S    LlamaFtype = 11
	LlamaFtypeQ3_K_M    LlamaFtype = 12
	LlamaFtypeQ3_K_L    LlamaFtype = 13
	LlamaFtypeQ4_K_S    LlamaFtype = 14
	LlamaFtypeQ4_K_M    LlamaFtype = 15
	LlamaFtypeQ5_K_S    LlamaFtype = 16
	LlamaFtypeQ5_K_M    LlamaFtype = 17
	LlamaFtypeQ6_K      LlamaFtype = 18
	LlamaFtypeIQ2_XXS   LlamaFtype = 19
	LlamaFtypeIQ2_XS    LlamaFtype = 20
	LlamaFtypeQ2_K_S    LlamaFtype = 21
	LlamaFtypeIQ3_XS    LlamaFtype = 22
	LlamaFtypeIQ3_XXS   LlamaFtype = 23
	LlamaFtypeIQ1_S     LlamaFtype = 24
	LlamaFtypeIQ4_NL    LlamaFtype = 25
	LlamaFtypeIQ3_S     LlamaFtype = 26
	LlamaFtypeIQ3_M     LlamaFtype = 27
	LlamaFtypeIQ2_S     LlamaFtype = 28
	LlamaFtypeIQ2_M     LlamaFtype = 29
	LlamaFtypeIQ4_XS    LlamaFtype = 30
	LlamaFtypeIQ1_M     LlamaFtype = 31
	LlamaFtypeBF16      LlamaFtype = 32
	LlamaFtypeTQ1_0     LlamaFtype = 36
	LlamaFtypeTQ2_0     LlamaFtype = 37
	LlamaFtypeMXFP4_MOE LlamaFtype = 38
	LlamaFtypeQ1_0      LlamaFtype = 40
	LlamaFtypeQ2_0      LlamaFtype = 41
)

// llamaFtypeInfo is what the pinned library says of a file type: llama_ftype_name's text and
// llama_ftype_get_default_type's ggml type (ggml.h's enum ggml_type, the ids gguf.Type uses).
type llamaFtypeInfo struct {
	name        string // llama-quantize's name ("Q4_K_M")
	libName     string // llama_ftype_name
	defaultType int32  // llama_ftype_get_default_type
}

// llamaFtypeTable holds llama.h's enum llama_ftype with the pinned library's own answers for
// each value (llama_ftype_name, llama_ftype_get_default_type; both exported by
// libllama.v0.5.0.so), and Llama compares every entry with those answers when it loads the
// library, so a wrong value fails the load rather than quantizing another mix.
var llamaFtypeTable = map[LlamaFtype]llamaFtypeInfo{
	LlamaFtypeF16:       {"F16", "F16", 1},
	LlamaFtypeQ4_0:      {"Q4_0", "Q4_0", 2},
	LlamaFtypeQ4_1:      {"Q4_1", "Q4_1", 3},
	LlamaFtypeQ8_0:      {"Q8_0", "Q8_0", 8},
	LlamaFtypeQ5_0:      {"Q5_0", "Q5_0", 6},
	LlamaFtypeQ5_1:      {"Q5_1", "Q5_1", 7},
	LlamaFtypeQ2_K:      {"Q2_K", "Q2_K - Medium", 10},
	LlamaFtypeQ3_K_S:    {"Q3_K_S", "Q3_K - Small", 11},
	LlamaFtypeQ3_K_M:    {"Q3_K_M", "Q3_K - Medium", 11},
	LlamaFtypeQ3_K_L:    {"Q3_K_L", "Q3_K - Large", 11},
	LlamaFtypeQ4_K_S:    {"Q4_K_S", "Q4_K - Small", 12},
	LlamaFtypeQ4_K_M:    {"Q4_K_M", "Q4_K - Medium", 12},
	LlamaFtypeQ5_K_S:    {"Q5_K_S", "Q5_K - Small", 13},
	LlamaFtypeQ5_K_M:    {"Q5_K_M", "Q5_K - Medium", 13},
	LlamaFtypeQ6_K:      {"Q6_K", "Q6_K", 14},
	LlamaFtypeIQ2_XXS:   {"IQ2_XXS", "IQ2_XXS - 2.0625 bpw", 16},
	LlamaFtypeIQ2_XS:    {"IQ2_XS", "IQ2_XS - 2.3125 bpw", 17},
	LlamaFtypeQ2_K_S:    {"Q2_K_S", "Q2_K - Small", 10},
	LlamaFtypeIQ3_XS:    {"IQ3_XS", "IQ3_XS - 3.3 bpw", 21},
	LlamaFtypeIQ3_XXS:   {"IQ3_XXS", "IQ3_XXS - 3.0625 bpw", 18},
	LlamaFtypeIQ1_S:     {"IQ1_S", "IQ1_S - 1.5625 bpw", 19},
	LlamaFtypeIQ4_NL:    {"IQ4_NL", "IQ4_NL - 4.5 bpw", 20},
	LlamaFtypeIQ3_S:     {"IQ3_S", "IQ3_S - 3.4375 bpw", 21},
	LlamaFtypeIQ3_M:     {"IQ3_M", "IQ3_S mix - 3.66 bpw", 21},
	LlamaFtypeIQ2_S:     {"IQ2_S", "IQ2_S - 2.5 bpw", 17},
	LlamaFtypeIQ2_M:     {"IQ2_M", "IQ2_M - 2.7 bpw", 22},
	LlamaFtypeIQ4_XS:    {"IQ4_XS", "IQ4_XS - 4.25 bpw", 23},
	LlamaFtypeIQ1_M:     {"IQ1_M", "IQ1_M - 1.75 bpw", 29},
	LlamaFtypeBF16:      {"BF16", "BF16", 30},
	LlamaFtypeTQ1_0:     {"TQ1_0", "TQ1_0 - 1.69 bpw ternary", 34},
	LlamaFtypeTQ2_0:     {"TQ2_0", "TQ2_0 - 2.06 bpw ternary", 35},
	LlamaFtypeMXFP4_MOE: {"MXFP4_MOE", "MXFP4 MoE", 39},
	LlamaFtypeQ1_0:      {"Q1_0", "Q1_0", 41},
	LlamaFtypeQ2_0:      {"Q2_0", "Q2_0", 42},
}

// String returns llama-quantize's name of the file type ("Q4_K_M").
func (f LlamaFtype) String() string {
	if i, ok := llamaFtypeTable[f]; ok {
		return i.name
	}
	return fmt.Sprintf("ftype(%d)", int32(f))
}

// DefaultType returns the ggml type (gguf.Type's id) llama_ftype_get_default_type gives the
// file type: the type of every tensor the mix's per-tensor rules leave alone. Llama has checked
// it against the library.
func (f LlamaFtype) DefaultType() (int32, bool) {
	i, ok := llamaFtypeTable[f]
	return i.defaultType, ok
}

// Imatrix is an importance matrix as llama_model_quantize takes it: for each weight tensor by
// its GGUF name, one weight per input column (ne[0] floats), or for a stacked expert tensor
// one run of ne[0] per expert, expert after expert (ne[0]·ne[2] floats), as llama-imatrix writes
// them and llama-quant.cpp looks them up (by the tensor's name, its size checked). Larger means
// the column's error costs more: llama-imatrix's value is the mean of the squared inputs the
// column was multiplied with.
type Imatrix map[string][]float32

// The pinned build llama_model_quantize is loaded from: the npm package of ggml's libraries and
// the libllama in it. llamaQuantizeParams' layout was read from that build's llama.h; another
// version must be checked again before it is trusted.
const (
	llamaPackage        = "@node-llama-cpp/linux-x64"
	llamaPackageVersion = "3.22.1"
	llamaLibrary        = "libllama.v0.5.0.so"
)
