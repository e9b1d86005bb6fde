package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/trochilus-llm/trochilus/gguf"
)

func randMatrix(rng *rand.Rand, typ gguf.Type, rows, cols int) *Matrix {
	return randMatrixOf(rng, typ, rows, cols, false)
}

// randMatrixOf is randMatrix with special values in the rows where special is set.
func randMatrixOf(rng *rand.Rand, typ gguf.Type, rows, cols int, special bool) *Matrix {
	m := &Matrix{Type: typ, Rows: rows, Cols: cols}
	for range rows {
		m.Data = append(m.Data, randRow(rng, typ, cols, special)...)
	}
	return m
}

// refMatMul computes every output by the row definitions directly.
func refMatMul(m *Matrix, x []float32, ntok int) []float32 {
	out := make([]float32, ntok*m.Rows)
	for t := range ntok {
		xt := x[t*m.Cols : (t+1)*m.Cols]
		var in q4KInput
		prepared, ok := preparedDots[m.Type]
		if ok {
			if err := prepareQ4K(&in, xt); err != nil {
				panic(err)
			}
		}
		for r := range m.Rows {
			if ok {
				out[t*m.Rows+r] = prepared(m.Row(r), &in)
			} else {
				out[t*m.Rows+r] = rowDots[m.Type](m.Row(r), xt)
			}
		}
	}
	return out
}

// checkMatMul multiplies a matrix of every type by a batch of tokens with tier and pools of
// 1, 2, 3 and 8 threads, comparing every output with the row definitions; it returns counts.
func checkMatMul(tier *Tier) (checked, bad int, first string) {
	var c counts
	rng := rand.New(rand.NewPCG(5, 5))
	for _, n := range []int{1, 2, 3, 8} {
		p := NewPool(n)
		defer p.Close()
		for _, typ := range supportedTypes {
			const rows, cols, ntok = 37, 512, 5
			m := randMatrix(rng, typ, rows, cols)
			x := randFloats(rng, ntok*cols, false, false)
			want := refMatMul(m, x, ntok)
			var b Batch
			if err := b.Set(x, ntok, cols); err != nil {
				return c.checked, c.bad + 1, err.Error()
			}
			dst := make([]float32, ntok*rows)
			if err := tier.MatMul(p, dst, m, &b); err != nil {
				return c.checked, c.bad + 1, err.Error()
			}
			for i := range dst {
				c.note(dst[i], want[i], func() string {
					return fmt.Sprintf("%v, %d threads: output %d = %g, definition %g", typ, n, i, dst[i], want[i])
				})
			}
		}
	}
	return c.result()
}

// TestMatMulThreadIndependent: every output of MatMul equals the row definition, whatever the
// number of threads.
func TestMatMulThreadIndependent(t *testing.T) {
	checked, bad, first := checkMatMul(Scalar())
	expectAgree(t, checked, bad, first, "MatMul: 7 types × 37 rows × 5 tokens × threads 1, 2, 3, 8 = %d outputs against the row definitions, %d differ", "MatMul differs on %d of %d outputs; first: %s")
}

// mutantRowsSplitColumns computes each Q8_0 output as two half-row dots added together, as a
// kernel splitting a reduction over threads would.
func mutantRowsSplitColumns(dst []float32, m *Matrix, in *Batch, r0, r1 int) {
	h := m.Cols / 2
	hb := h / 32 * 34
	for r := r0; r < r1; r++ {
		row := m.Row(r)
		for t := range in.Ntok {
			x := in.X[t*in.Cols : (t+1)*in.Cols]
			dst[t*m.Rows+r] = dotRowQ8_0(row[:hb], x[:h]) + dotRowQ8_0(row[hb:], x[h:])
		}
	}
}

// TestMatMulSharedQ4KInput checks that one batch prepared once serves several Q4_K matrices,
// and that Set invalidates the preparation.
func TestMatMulSharedQ4KInput(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	p := testPool(t, 2)
	tier := Scalar()
	a := randMatrix(rng, gguf.TypeQ4_K, 9, 256)
	c := randMatrix(rng, gguf.TypeQ4_K, 4, 256)
	x := randFloats(rng, 2*256, false, false)
	var b Batch
	if err := b.Set(x, 2, 256); err != nil {
		t.Fatal(err)
	}
	da, dc := make([]float32, 18), make([]float32, 8)
	if err := tier.MatMul(p, da, a, &b); err != nil {
		t.Fatal(err)
	}
	expectMatMul(t, "second matrix", tier, p, dc, c, &b, x)
	x2 := randFloats(rng, 2*256, false, false)
	if err := b.Set(x2, 2, 256); err != nil {
		t.Fatal(err)
	}
	expectMatMul(t, "after Set (stale preparation?)", tier, p, da, a, &b, x2)
}

// expectMatMul runs tier's MatMul of m on b (the batch of x) into dst and fails t, naming the
// check what, unless every output has the bits of refMatMul.
func expectMatMul(t *testing.T, what string, tier *Tier, p *Pool, dst []float32, m *Matrix, b *Batch, x []float32) {
	t.Helper()
	if err := tier.MatMul(p, dst, m, b); err != nil {
		t.Fatal(err)
	}
	for i, v := range refMatMul(m, x, b.Ntok) {
		if !sameBits(v, dst[i]) {
			t.Fatalf("%s: output %d = %g, want %g", what, i, dst[i], v)
		}
	}
}

func TestMatMulErrors(t *testing.T) {
	p := NewPool(1)
	defer p.Close()
	tier := Scalar()
	var b Batch
	if err := b.Set(make([]float32, 64), 1, 64); err != nil {
		t.Fatal(err)
	}
	cases := map[string]struct {
		m   *Matrix
		dst int
	}{
		"unsupported type": {&Matrix{Type: gguf.TypeQ4_0, Rows: 1, Cols: 64, Data: make([]byte, 36)}, 1},
		"ragged columns":   {&Matrix{Type: gguf.TypeQ8_0, Rows: 1, Cols: 63, Data: make([]byte, 68)}, 1},
		"short data":       {&Matrix{Type: gguf.TypeQ8_0, Rows: 2, Cols: 64, Data: make([]byte, 68)}, 2},
		"long data":        {&Matrix{Type: gguf.TypeQ8_0, Rows: 1, Cols: 64, Data: make([]byte, 69)}, 1},
		"negative rows":    {&Matrix{Type: gguf.TypeF32, Rows: -1, Cols: 64}, 1},
		"width mismatch":   {&Matrix{Type: gguf.TypeF32, Rows: 1, Cols: 32, Data: make([]byte, 128)}, 1},
		"short output":     {&Matrix{Type: gguf.TypeF32, Rows: 3, Cols: 64, Data: make([]byte, 768)}, 2},
		"Q4_K of 64":       {&Matrix{Type: gguf.TypeQ4_K, Rows: 1, Cols: 64, Data: make([]byte, 36)}, 1},
		"unknown type":     {&Matrix{Type: gguf.Type(99), Rows: 1, Cols: 64, Data: make([]byte, 64)}, 1},
	}
	for name, c := range cases {
		if err := tier.MatMul(p, make([]float32, c.dst), c.m, &b); err == nil {
			t.Errorf("%s: no error", name)
		} else {
			t.Logf("%s: %v", name, err)
		}
	}
	if err := b.Set(make([]float32, 10), 1, 64); err == nil {
		t.Error("Batch.Set of 10 floats as 64: no error")
	}
}

// TestMatMulNoAllocs checks that a steady MatMul (pool, batch and output reused) allocates
// nothing, for a float type and for Q4_K (whose inputs are prepared inside).
func TestMatMulNoAllocs(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 7))
	p := testPool(t, 2)
	tier := Scalar()
	for _, typ := range []gguf.Type{gguf.TypeQ8_0, gguf.TypeQ4_K} {
		m := randMatrix(rng, typ, 16, 512)
		x := randFloats(rng, 3*512, false, false)
		var b Batch
		dst := make([]float32, 3*16)
		run := func() {
			if err := b.Set(x, 3, 512); err != nil {
				t.Fatal(err)
			}
			if err := tier.MatMul(p, dst, m, &b); err != nil {
				t.Fatal(err)
			}
		}
		run()
		if a := testing.AllocsPerRun(50, run); a != 0 {
			t.Errorf("%v MatMul: %.1f allocations a call, want 0", typ, a)
		}
	}
	var in q4KInput
	x := randFloats(rng, 1024, false, false)
	_ = prepareQ4K(&in, x)
	if a := testing.AllocsPerRun(50, func() { _ = prepareQ4K(&in, x) }); a != 0 {
		t.Errorf("prepareQ4K into a prepared input: %.1f allocations, want 0", a)
	}
	row := randRow(rng, gguf.TypeQ6_K, 1024, false)
	if a := testing.AllocsPerRun(50, func() { _ = dotQ6K(row, &in) }); a != 0 {
		t.Errorf("dotQ6K: %.1f allocations, want 0", a)
	}
	_ = math.Pi
}
