package engine

import (
	"fmt"

	"github.com/trochilus-llm/trochilus/gguf/quant"
	"github.com/trochilus-llm/trochilus/kernels"
)

// multiplier runs a session's matrix products over the model's pool: through the kernel tier
// for the types it has kernels for, and for the types only package quant decodes (Q4_0, Q2_K,
// Q3_K until the kernels grow them) by the contract's own definition: each row dequantized
// exactly as ggml does, then DotF32 of that row with each input row. Either way the work is
// split by weight rows, so the thread count changes no bit.
type multiplier struct {
	tier    *kernels.Tier
	pool    *kernels.Pool
	threads int

	rows [][]float32 // per worker: one dequantized row

	// The product in flight, for the workers; fn is work, made once.
	dst []float32
	m   *kernels.Matrix
	in  *kernels.Batch
	err []error // per worker
	fn  func(lo, hi int)
}

func newMultiplier(tier *kernels.Tier, pool *kernels.Pool, maxCols int) *multiplier {
	mu := &multiplier{tier: tier, pool: pool, threads: pool.Threads()}
	mu.rows = make([][]float32, mu.threads)
	for i := range mu.rows {
		mu.rows[i] = make([]float32, maxCols)
	}
	mu.err = make([]error, mu.threads)
	mu.fn = mu.work
	return mu
}

// matmulMany computes the products of jobs: in one pass of the pool when the kernels multiply
// every matrix of them, else one product after another.
func (mu *multiplier) matmulMany(jobs []kernels.MatMulJob) error {
	all := true
	for _, j := range jobs {
		all = all && kernels.Supported(j.M.Type)
	}
	if all {
		return mu.tier.MatMulMany(mu.pool, jobs)
	}
	for _, j := range jobs {
		if err := mu.matmul(j.Dst, j.M, j.In); err != nil {
			return err
		}
	}
	return nil
}

// matmul computes dst[t·m.Rows + r] = dot(row r of m, row t of in) for every row of m and of in.
func (mu *multiplier) matmul(dst []float32, m *kernels.Matrix, in *kernels.Batch) error {
	if kernels.Supported(m.Type) {
		return mu.tier.MatMul(mu.pool, dst, m, in)
	}
	if !quant.Supported(m.Type) {
		return fmt.Errorf("matrix type %v cannot be multiplied", m.Type)
	}
	rb, err := m.Type.RowBytes(int64(m.Cols))
	if err != nil || int64(m.Rows)*rb != int64(len(m.Data)) {
		return fmt.Errorf("%v matrix %d×%d does not match its %d bytes", m.Type, m.Rows, m.Cols, len(m.Data))
	}
	if in.Cols != m.Cols || len(dst) < in.Ntok*m.Rows || m.Cols > len(mu.rows[0]) {
		return fmt.Errorf("%v matrix of %d×%d times %d rows of %d floats into %d floats", m.Type, m.Rows, m.Cols, in.Ntok, in.Cols, len(dst))
	}
	mu.dst, mu.m, mu.in = dst, m, in
	mu.pool.For(mu.threads, mu.fn)
	mu.dst, mu.m, mu.in = nil, nil, nil
	for i, e := range mu.err {
		if e != nil {
			mu.err[i] = nil
			return e
		}
	}
	return nil
}

// work runs worker slots [lo, hi) of the product in flight: slot w takes weight rows
// [w·R/W, (w+1)·R/W) and decodes each into its own scratch row.
func (mu *multiplier) work(lo, hi int) {
	m, in := mu.m, mu.in
	rb := m.RowBytes()
	for w := lo; w < hi; w++ {
		row := mu.rows[w][:m.Cols]
		r0, r1 := w*m.Rows/mu.threads, (w+1)*m.Rows/mu.threads
		for r := r0; r < r1; r++ {
			if err := quant.Dequantize(m.Type, m.Data[r*rb:(r+1)*rb], row); err != nil {
				mu.err[w] = err
				return
			}
			for t := range in.Ntok {
				mu.dst[t*m.Rows+r] = mu.tier.DotF32(row, in.X[t*in.Cols:(t+1)*in.Cols])
			}
		}
	}
}
