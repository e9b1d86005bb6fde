package kernels

import (
	"fmt"

	"github.com/trochilus-llm/trochilus/gguf"
)

// minRunBytes is the shortest contiguous run of weight bytes a thread is handed at a time:
// shorter runs cost the hardware prefetchers their stream (the C engine measured 64-row
// claims, ggml's way, 3-7% slower than runs of at least 256 KiB).
const minRunBytes = 256 << 10

// MatMulJob is one product of a MatMulMany call: Dst[t·M.Rows + r] = dot(row r of M, row t of
// In) for every weight row r and input row t.
type MatMulJob struct {
	Dst []float32
	M   *Matrix
	In  *Batch

	// The call's plan, filled in by MatMulMany: the products' rows laid end to end in one
	// range, each row weighted by its cost, the bytes of the row times the input rows.
	kernel  rowsKernel
	m       Matrix // a copy of *M with its row size worked out, for the kernels
	rowCost int64  // 0 for a product without outputs
	start   int64  // the cost of all rows of the products before this one
	grain   int64  // runs start on a multiple of this many rows (see runGrain)
}

// runGrain returns the row multiple a run of a product over ntok input rows starts on: pairs
// for short passes (the decode kernels take rows two or four at a time), and for prompt
// batches whole runs of promptRunRows, so that the 16-row panel kernels get whole panels and
// interleave a batch's inputs once for many rows rather than once for a few.
func runGrain(ntok int) int64 {
	if ntok >= panelMinTokens {
		return promptRunRows
	}
	return 2
}

// promptRunRows is the row multiple of a prompt batch's runs: a multiple of 16 (the panels), at
// least panelMinRows, and few enough runs a matrix (an expert's 1024 rows make 4) that two
// threads still share the tail of a call.
const promptRunRows = 256

// end returns the cost of all rows up to the end of this product.
func (j *MatMulJob) end() int64 { return j.start + j.rowCost*int64(j.M.Rows) }

// rowAt returns the first row of the product at or after cost c, rounded up to a multiple of
// the product's grain and clamped to the rows. It never decreases as c grows, so consecutive
// cost ranges map to consecutive, disjoint row ranges (some of them empty).
func (j *MatMulJob) rowAt(c int64) int {
	if c <= j.start {
		return 0
	}
	r := (c - j.start + j.rowCost - 1) / j.rowCost
	r = (r + j.grain - 1) / j.grain * j.grain
	return int(min(r, int64(j.M.Rows)))
}

// MatMulMany computes the products of jobs as one parallel loop over all their weight rows
// laid end to end: each thread takes one contiguous run of rows across the matrices, cut in
// blocks of at least 256 KiB that a thread done early may take over, instead of one wake-up
// and join of the pool per matrix. Products may share an input batch (prepared once); no
// product's Dst may overlap another's. Each output element is computed by one call of its
// type's kernel exactly as MatMul would, so the results equal MatMul's, bit for bit, for any
// number of threads. It checks every product first and computes none if one is wrong. It
// records its plan in jobs and allocates nothing.
func (t *Tier) MatMulMany(p *Pool, jobs []MatMulJob) error {
	return t.matMulMany(p, jobs)
}

func (t *Tier) matMulMany(p *Pool, jobs []MatMulJob) error {
	var total int64
	for i := range jobs {
		j := &jobs[i]
		if err := t.plan(j); err != nil {
			if len(jobs) == 1 {
				return err
			}
			return fmt.Errorf("product %d of %d: %w", i, len(jobs), err)
		}
		j.start = total
		total = j.end()
	}
	for i := range jobs {
		if j := &jobs[i]; (j.M.Type == gguf.TypeQ4_K || j.M.Type == gguf.TypeQ6_K) && j.rowCost > 0 {
			if err := j.In.prepareWith(p, t.prepQ4K); err != nil {
				return err
			}
		}
	}
	if total == 0 {
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.products.jobs = jobs
	p.forBalanced(total, p.minRun, p.productsRun)
	p.products.jobs = nil
	return nil
}

// plan checks one product and fills in its kernel and row cost.
func (t *Tier) plan(j *MatMulJob) error {
	m, in := j.M, j.In
	if m == nil || in == nil {
		return fmt.Errorf("kernels: product without a matrix or an input")
	}
	if err := m.Validate(); err != nil {
		return err
	}
	if in.Cols != m.Cols {
		return fmt.Errorf("kernels: %v matrix of %d columns times input rows of %d floats", m.Type, m.Cols, in.Cols)
	}
	if len(j.Dst) < in.Ntok*m.Rows {
		return fmt.Errorf("kernels: output of %d floats for %d×%d results", len(j.Dst), in.Ntok, m.Rows)
	}
	k, err := t.kernel(m.Type)
	if err != nil {
		return err
	}
	// A row of no bytes (no columns) still has outputs to write: count it as one byte.
	j.kernel, j.rowCost = k, int64(max(m.RowBytes(), 1))*int64(in.Ntok)
	j.grain = runGrain(in.Ntok)
	j.m = *m
	j.m.rowBytes = m.RowBytes()
	return nil
}

// productsJob is the MatMulMany call in flight, as the pool's balanced loop sees it.
type productsJob struct {
	jobs []MatMulJob
}

// run computes the rows that the cost range [lo, hi) covers, in every product it touches.
func (pj *productsJob) run(lo, hi int64) {
	jobs := pj.jobs
	// The first product that ends after lo (ends never decrease).
	i, k := 0, len(jobs)
	for i < k {
		h := int(uint(i+k) >> 1)
		if jobs[h].end() <= lo {
			i = h + 1
		} else {
			k = h
		}
	}
	for ; i < len(jobs) && jobs[i].start < hi; i++ {
		j := &jobs[i]
		if j.rowCost == 0 {
			continue
		}
		if r0, r1 := j.rowAt(lo), j.rowAt(hi); r0 < r1 {
			j.kernel(j.Dst, &j.m, j.In, r0, r1)
		}
	}
}
