package engine

import (
	"context"
	"encoding/binary"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/trochilus-llm/trochilus/gguf"
	"github.com/trochilus-llm/trochilus/gguf/quant"
	"github.com/trochilus-llm/trochilus/internal/modelgen"
	"github.com/trochilus-llm/trochilus/internal/modelgen/modelgentest"
)

// blockScales says where a type's block keeps its scales, so that random blocks can be made
// with finite, model-like ones: the f16 fields' offsets, or the E8M0 byte's.
var blockScales = map[gguf.Type]struct {
	halves []int
	e8m0   int
}{
	gguf.TypeQ4_1:   {halves: []int{0, 2}, e8m0: -1},
	gguf.TypeQ5_0:   {halves: []int{0}, e8m0: -1},
	gguf.TypeQ5_1:   {halves: []int{0, 2}, e8m0: -1},
	gguf.TypeIQ4_NL: {halves: []int{0}, e8m0: -1},
	gguf.TypeIQ4_XS: {halves: []int{0}, e8m0: -1},
	gguf.TypeMXFP4:  {e8m0: 0},
	gguf.TypeTQ1_0:  {halves: []int{52}, e8m0: -1},
	gguf.TypeTQ2_0:  {halves: []int{64}, e8m0: -1},

	// The lattice types, and the newer NVFP4 (its four UE4M3 scales random: at most 240), Q1_0
	// and Q2_0. IQ1_M's d is the top nibbles of its four scale words: halves there give it such.
	gguf.TypeIQ2_XXS: {halves: []int{0}, e8m0: -1},
	gguf.TypeIQ2_XS:  {halves: []int{0}, e8m0: -1},
	gguf.TypeIQ2_S:   {halves: []int{0}, e8m0: -1},
	gguf.TypeIQ3_XXS: {halves: []int{0}, e8m0: -1},
	gguf.TypeIQ3_S:   {halves: []int{0}, e8m0: -1},
	gguf.TypeIQ1_S:   {halves: []int{0}, e8m0: -1},
	gguf.TypeIQ1_M:   {halves: []int{48, 50, 52, 54}, e8m0: -1},
	gguf.TypeNVFP4:   {e8m0: -1},
	gguf.TypeQ1_0:    {halves: []int{0}, e8m0: -1},
	gguf.TypeQ2_0:    {halves: []int{0}, e8m0: -1},
}

// randomBlocks returns n random blocks of typ with scales between about 2^-10 and 2^-5.
func randomBlocks(r *rand.Rand, typ gguf.Type, n int) []byte {
	bb, sc := typ.BlockBytes(), blockScales[typ]
	out := make([]byte, n*bb)
	for i := range out {
		out[i] = byte(r.Uint32())
	}
	for b := 0; b < n; b++ {
		blk := out[b*bb : (b+1)*bb]
		for _, at := range sc.halves {
			binary.LittleEndian.PutUint16(blk[at:], gguf.F32ToF16(float32(r.Float64()*0.03+0.001)))
		}
		if sc.e8m0 >= 0 {
			blk[sc.e8m0] = byte(118 + r.IntN(5))
		}
	}
	return out
}

// TestTypesWithoutKernels runs models whose matrices (embedding and head included) are of the
// types the kernels have no code for, which the engine multiplies by the contract's definition
// (each row dequantized, then DotF32): the logits of every position must be those of the same
// model with the dequantized values stored as F32, bit for bit, on one thread and on three.
func TestTypesWithoutKernels(t *testing.T) {
	// Hidden and expert width 256, so that every block size divides the rows.
	src := modelgentest.TestModel(t, tinyConfig(modelgen.Uniform(gguf.TypeQ4_K)))
	prompt := matrixPrompt(testVocab)[:24]
	for typ := range blockScales {
		r := rand.New(rand.NewPCG(uint64(typ), 5))
		blocks := map[string][]byte{}
		edit := func(asF32 bool) func(ti gguf.TensorInfo, data []byte) (gguf.TensorInfo, []byte, bool) {
			return func(ti gguf.TensorInfo, data []byte) (gguf.TensorInfo, []byte, bool) {
				if ti.Type == gguf.TypeF32 || len(ti.Dims) < 2 || ti.Dims[0]%uint64(typ.BlockElems()) != 0 {
					return ti, data, true
				}
				b, ok := blocks[ti.Name]
				if !ok {
					b = randomBlocks(r, typ, int(ti.Elems())/typ.BlockElems())
					blocks[ti.Name] = b
				}
				if !asF32 {
					ti.Type = typ
					return ti, b, true
				}
				vals := make([]float32, ti.Elems())
				if err := quant.Dequantize(typ, b, vals); err != nil {
					t.Fatal(err)
				}
				out := make([]byte, 4*len(vals))
				for i, v := range vals {
					binary.LittleEndian.PutUint32(out[4*i:], math.Float32bits(v))
				}
				ti.Type = gguf.TypeF32
				return ti, out, true
			}
		}
		typed := rewrite(t, src, nil, edit(false))
		plain := rewrite(t, src, nil, edit(true))
		want := allLogits(t, plain, Options{Threads: 1}, prompt)
		for i, v := range want {
			if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
				t.Fatalf("%v: logit %d is %v: the random blocks make no model to compare", typ, i, v)
			}
		}
		for _, threads := range []int{1, 3} {
			got := allLogits(t, typed, Options{Threads: threads}, prompt)
			if i := firstDifference(got, want); i >= 0 {
				t.Fatalf("%v, %d threads: logit %d is %v, the F32 model's %v", typ, threads, i, got[i], want[i])
			}
		}
		t.Logf("%v: %d matrices, %d logits identical to the F32 model's", typ, len(blocks), len(want))
	}
}

// allLogits loads path and returns the logits of every position of prompt.
func allLogits(t *testing.T, path string, opts Options, prompt []int32) []float32 {
	t.Helper()
	m, err := Load(context.Background(), path, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	s := newTestSession(t, m, 0)
	defer s.Close()
	out := make([]float32, len(prompt)*m.Config().Vocab)
	if err := s.EvalAll(context.Background(), prompt, out); err != nil {
		t.Fatal(err)
	}
	return out
}
