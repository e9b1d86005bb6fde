package engine

import (
	"context"
	"fmt"
	"math"

	"github.com/trochilus-llm/trochilus/experts"
	"github.com/trochilus-llm/trochilus/kernels"
)

// moeRunner is one session's state for a moe model (OLMoE, Qwen3-MoE): the KV cache and the
// buffers of a pass. Every buffer is sized once for the largest pass, so a forward pass
// allocates nothing.
//
// A pass of n tokens runs layer by layer; within a layer each step is split over the pool by
// what it owns: matrix products by weight rows, per-token steps (norms, RoPE, routing, the
// expert sum) by tokens, attention by (head, token) items. Nothing a token computes depends on
// the other tokens of its pass.
type moeRunner struct {
	w    *moe
	c    *Config
	mul  *multiplier
	pool *kernels.Pool
	tier *kernels.Tier
	rope *kernels.RopeTable

	ctxLen, passMax int
	qDim, kvDim     int
	scale           float32 // 1/√head_dim

	kv *kvCache

	// Pass buffers: rows of the pass's tokens.
	x, h, tmp []float32 // hidden
	q, att    []float32 // qDim
	k, v      []float32 // kvDim
	router    []float32 // experts: logits, then probabilities
	sel       []int     // experts used: chosen expert ids, increasing
	selW      []float32 // experts used: their weights, in sel's order

	// Expert grouping: the pass's (token, slot) pairs p = t·K + j sorted by expert.
	offsets []int   // experts+1: group e is sorted rows [offsets[e], offsets[e+1])
	fill    []int   // experts: the next free sorted row of each group, while sorting
	order   []int32 // sorted row -> pair
	where   []int32 // pair -> sorted row
	xe      []float32
	ge, ue  []float32 // sorted rows × expert FFN
	ye      []float32 // sorted rows × hidden

	scores [][]float32 // per worker: attention scores of one query

	in, inE, inA kernels.Batch       // inputs of dense, expert gate/up and expert down products
	expertIn     []kernels.Batch     // experts: the rows of inE (or in) each expert sees
	expertOut    []kernels.Batch     // experts: the rows of inA each expert's down sees
	jobs         []kernels.MatMulJob // the products of one pool pass: q, k, v, or every expert's

	// With experts streamed (store non-nil): the experts a layer's pass names, their routed
	// counts, what the store hands out for them, and those matrices by expert id; holding
	// while the store keeps them pinned for this runner (see releaseExperts).
	store             *experts.Store
	named, counts     []int
	acquired          []kernels.Matrix
	gateS, upS, downS []kernels.Matrix
	holding           bool

	head runnerHead // a greedy pass's choice by the head's bound (headbound.go)

	// tracing is the route trace the pass in flight records into (nil: none), and traceIDs
	// its routings, layer by layer (layers × tokens × used): made on the first traced pass.
	tracing  *experts.TraceWriter
	traceIDs []int

	// splitProducts, set only by benchmarks, runs the products of a pass one pool pass each,
	// as the engine did before MatMulMany: the baseline BenchmarkDecode measures against.
	splitProducts bool

	// rowKV and rowPos, set for a pass of several sessions' next tokens (Model.Step), are
	// each row's KV cache and position; nil for a pass of one session's consecutive tokens.
	rowKV  []*kvCache
	rowPos []int
	stepKV []*kvCache // rowKV's storage, kept between steps

	// The step in flight, for the pool; the funcs are made once.
	step       stepKind
	n, pos     int
	layer      *moeLayer
	layerIndex int
	tokens     []int32
	stepErr    []error // per token: what its step failed with; checked after each step
	tokenFn    func(lo, hi int)
	itemFn     func(lo, hi int)
}

type stepKind int

const (
	stepEmbed    stepKind = iota // x = embedding rows
	stepAttnNorm                 // h = RMSNorm(x, attn_norm)
	stepQK                       // q, k norms, clip, RoPE; k and v into the cache
	stepFFNNorm                  // x += attention output; h = RMSNorm(x, ffn_norm)
	stepRoute                    // softmax, top-k, weights, sorted by expert id
	stepGather                   // xe = h rows of the sorted pairs
	stepSwiGLU                   // ge = SwiGLU(ge, ue) over sorted rows
	stepCombine                  // x += Σ_j w_j·y_j in increasing expert id
	stepOutNorm                  // h = RMSNorm(x, output_norm)
)

func (w *moe) newRunner(m *Model, ctxLen, pass int) (runner, error) {
	c := &w.cfg
	rope, err := kernels.NewRopeTable(float64(c.RopeTheta), c.HeadDim, ctxLen)
	if err != nil {
		return nil, err
	}
	r := &moeRunner{
		w: w, c: c, pool: m.pool, tier: m.tier, rope: rope, ctxLen: ctxLen, passMax: pass,
		qDim: c.Heads * c.HeadDim, kvDim: c.KVHeads * c.HeadDim,
		scale: float32(1 / math.Sqrt(float64(c.HeadDim))),
	}
	r.mul = newMultiplier(m.tier, m.pool, w.maxCols())
	// Every buffer's length comes from sessionSizes, whose bytes the memory planner counts.
	sz := newSessionSizes(c, ctxLen, pass, r.mul.threads)
	if r.kv, err = newKVCache(c, ctxLen, sz.cache); err != nil {
		return nil, err
	}
	r.x, r.h, r.tmp = make([]float32, sz.hidden), make([]float32, sz.hidden), make([]float32, sz.hidden)
	r.q, r.att = make([]float32, sz.q), make([]float32, sz.q)
	r.k, r.v = make([]float32, sz.kv), make([]float32, sz.kv)
	r.router = make([]float32, sz.router)
	r.sel, r.selW = make([]int, sz.pairs), make([]float32, sz.pairs)
	r.offsets, r.fill = make([]int, sz.experts+1), make([]int, sz.experts)
	r.order, r.where = make([]int32, sz.pairs), make([]int32, sz.pairs)
	r.xe = make([]float32, sz.pairHidden)
	r.ge, r.ue = make([]float32, sz.pairFFN), make([]float32, sz.pairFFN)
	r.ye = make([]float32, sz.pairHidden)
	r.scores = make([][]float32, sz.threads)
	for i := range r.scores {
		r.scores[i] = make([]float32, sz.scores)
	}
	r.stepErr = make([]error, sz.steps)
	r.expertIn, r.expertOut = make([]kernels.Batch, sz.experts), make([]kernels.Batch, sz.experts)
	r.jobs = make([]kernels.MatMulJob, sz.jobs)
	r.tokenFn, r.itemFn = r.tokenStep, r.attendItems
	if r.store = m.store; r.store != nil {
		r.named, r.counts = make([]int, 0, sz.experts), make([]int, 0, sz.experts)
		r.acquired = make([]kernels.Matrix, 3*sz.experts)
		r.gateS, r.upS, r.downS = make([]kernels.Matrix, sz.experts), make([]kernels.Matrix, sz.experts), make([]kernels.Matrix, sz.experts)
	}
	return r, nil
}

// close gives the KV cache's memory back to the system now rather than when the runner is
// collected; the runner must not run afterwards. A second call does nothing.
func (r *moeRunner) close() error { return r.kv.free() }

// forward implements runner.
func (r *moeRunner) forward(ctx context.Context, tokens []int32, pos int, logits []float32, all bool) error {
	c := r.c
	n := len(tokens)
	if n < 1 || n > r.passMax || pos < 0 || pos+n > r.ctxLen {
		return fmt.Errorf("pass of %d tokens at position %d (at most %d tokens, %d positions)", n, pos, r.passMax, r.ctxLen)
	}
	r.n, r.pos, r.tokens = n, pos, tokens
	defer func() { r.tokens, r.layer = nil, nil }()
	if r.tracing = r.w.trace.Load(); r.tracing != nil && len(r.traceIDs) < len(r.w.layers)*r.passMax*c.ExpertsUsed {
		r.traceIDs = make([]int, len(r.w.layers)*r.passMax*c.ExpertsUsed)
	}
	if err := r.run(stepEmbed); err != nil {
		return err
	}
	for l := range r.w.layers {
		if err := ctx.Err(); err != nil {
			return err
		}
		r.layer = &r.w.layers[l]
		if err := r.attention(l); err != nil {
			return fmt.Errorf("layer %d attention: %w", l, err)
		}
		if err := r.feedForward(); err != nil {
			return fmt.Errorf("layer %d experts: %w", l, err)
		}
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if r.tracing != nil {
		// A pass of several tokens wanting only the last one's logits is a prompt's (Eval);
		// decode passes have one token, verify passes and shared steps want every row's.
		// A trace's write error is the trace's, returned when it stops, not the pass's.
		_ = r.tracing.Pass(n > 1 && !all, n, r.traceIDs[:len(r.w.layers)*n*c.ExpertsUsed])
	}
	// The head: every row, or only the last.
	if err := r.run(stepOutNorm); err != nil {
		return err
	}
	first := n - 1
	if all {
		first = 0
	}
	if err := r.in.Set(r.h[first*c.Hidden:], n-first, c.Hidden); err != nil {
		return err
	}
	if r.head.want && !all {
		return r.headArgmax(logits)
	}
	if err := r.mul.matmul(logits, &r.w.out, &r.in); err != nil {
		return fmt.Errorf("output: %w", err)
	}
	return nil
}

// step implements runner: one pass whose row t is tokens[t] at position pos[t] of rows[t]'s
// KV cache. Every step but attention treats the rows as any pass does; attention reads and
// writes each row's own cache, so that each row computes exactly what its session alone
// would.
func (r *moeRunner) stepRows(ctx context.Context, tokens []int32, rows []runner, pos []int, logits []float32) error {
	kvs := r.stepKV[:0]
	for t, o := range rows {
		m, ok := o.(*moeRunner)
		if !ok || m.w != r.w || m.kv.keys == nil {
			return fmt.Errorf("row %d: not an open session of this model", t)
		}
		if pos[t] < 0 || pos[t] >= m.ctxLen || pos[t] >= r.ctxLen {
			return fmt.Errorf("row %d: position %d outside its context of %d", t, pos[t], m.ctxLen)
		}
		kvs = append(kvs, m.kv)
	}
	r.stepKV = kvs
	r.rowKV, r.rowPos = kvs, pos
	defer func() { r.rowKV, r.rowPos = nil, nil }()
	return r.forward(ctx, tokens, 0, logits, true)
}

// row returns row t's KV cache and position, and the end of the positions it may attend to
// (its own and those before it: the causal mask, which the mutant tests widen to the pass).
func (r *moeRunner) row(t int) (kv *kvCache, pos, end int) {
	if r.rowKV != nil {
		return r.rowKV[t], r.rowPos[t], r.rowPos[t] + 1
	}
	return r.kv, r.pos + t, r.pos + r.n
}

// attention runs the attention half of layer l: x += Wo·attend(RoPE(norm(Wq h)), ...).
func (r *moeRunner) attention(l int) error {
	c, ly, n := r.c, r.layer, r.n
	if err := r.run(stepAttnNorm); err != nil {
		return err
	}
	if err := r.in.Set(r.h, n, c.Hidden); err != nil {
		return err
	}
	jobs := r.jobs[:3]
	jobs[0] = kernels.MatMulJob{Dst: r.q, M: &ly.q, In: &r.in}
	jobs[1] = kernels.MatMulJob{Dst: r.k, M: &ly.k, In: &r.in}
	jobs[2] = kernels.MatMulJob{Dst: r.v, M: &ly.v, In: &r.in}
	if err := r.products(jobs); err != nil {
		return fmt.Errorf("q, k, v: %w", err)
	}
	r.layerIndex = l
	if err := r.run(stepQK); err != nil {
		return err
	}
	r.pool.For(r.mul.threads, r.itemFn)
	if err := r.in.Set(r.att, n, r.qDim); err != nil {
		return err
	}
	return r.mul.matmul(r.tmp, &ly.o, &r.in)
}

// feedForward runs the expert half of the layer: route, group the (token, expert) pairs by expert,
// run each expert once over all its tokens, and add the weighted outputs back per token.
func (r *moeRunner) feedForward() error {
	c, ly, n, k := r.c, r.layer, r.n, r.c.ExpertsUsed
	if err := r.run(stepFFNNorm); err != nil {
		return err
	}
	if err := r.in.Set(r.h, n, c.Hidden); err != nil {
		return err
	}
	if err := r.mul.matmul(r.router, &ly.router, &r.in); err != nil {
		return err
	}
	if err := r.run(stepRoute); err != nil {
		return err
	}
	if r.tracing != nil {
		copy(r.traceIDs[r.layerIndex*n*k:], r.sel[:n*k])
	}
	r.groupByExpert()
	gate, up, down, err := r.expertMatrices()
	if err != nil {
		return err
	}
	// Streamed units stay pinned only while the products read them; on an error too, or
	// the store would wait forever for slots this runner no longer uses.
	defer r.releaseExperts()
	// Each expert's gate and up run over the rows of the tokens it was chosen for; a pass of
	// one token has them in r.in already, a longer one gathers them.
	src := &r.in
	if n > 1 {
		if err := r.runRows(stepGather, n*k); err != nil {
			return err
		}
		if err := r.inE.Set(r.xe[:n*k*c.Hidden], n*k, c.Hidden); err != nil {
			return err
		}
		src = &r.inE
	}
	jobs := r.jobs[:0]
	for e := range c.Experts {
		lo, hi := r.offsets[e], r.offsets[e+1]
		if lo == hi {
			continue
		}
		in := &r.expertIn[e]
		if n == 1 {
			if err := in.SetRows(src, 0, 1); err != nil {
				return err
			}
		} else if err := in.SetRows(src, lo, hi); err != nil {
			return err
		}
		jobs = append(jobs,
			kernels.MatMulJob{Dst: r.ge[lo*c.ExpertFFN : hi*c.ExpertFFN], M: &gate[e], In: in},
			kernels.MatMulJob{Dst: r.ue[lo*c.ExpertFFN : hi*c.ExpertFFN], M: &up[e], In: in})
	}
	if err := r.products(jobs); err != nil {
		return fmt.Errorf("experts' gate and up: %w", err)
	}
	if err := r.runRows(stepSwiGLU, n*k); err != nil {
		return err
	}
	if err := r.inA.Set(r.ge[:n*k*c.ExpertFFN], n*k, c.ExpertFFN); err != nil {
		return err
	}
	jobs = r.jobs[:0]
	for e := range c.Experts {
		lo, hi := r.offsets[e], r.offsets[e+1]
		if lo == hi {
			continue
		}
		in := &r.expertOut[e]
		if err := in.SetRows(&r.inA, lo, hi); err != nil {
			return err
		}
		jobs = append(jobs, kernels.MatMulJob{Dst: r.ye[lo*c.Hidden : hi*c.Hidden], M: &down[e], In: in})
	}
	if err := r.products(jobs); err != nil {
		return fmt.Errorf("experts' down: %w", err)
	}
	r.releaseExperts()
	return r.run(stepCombine)
}

// expertMatrices returns the layer's expert matrices by id: the model's own when its experts
// are in memory, else those the store hands out for the experts this pass names (read from
// disk when absent; the same bytes).
func (r *moeRunner) expertMatrices() (gate, up, down []kernels.Matrix, err error) {
	ly := r.layer
	if r.store == nil {
		return ly.gate, ly.up, ly.down, nil
	}
	r.named, r.counts = r.named[:0], r.counts[:0]
	for e := range r.c.Experts {
		if n := r.offsets[e+1] - r.offsets[e]; n > 0 {
			r.named, r.counts = append(r.named, e), append(r.counts, n)
		}
	}
	if err := r.store.Acquire(r.layerIndex, r.named, r.counts, r.n, r.acquired); err != nil {
		return nil, nil, nil, err
	}
	r.holding = true
	for i, e := range r.named {
		r.gateS[e], r.upS[e], r.downS[e] = r.acquired[3*i], r.acquired[3*i+1], r.acquired[3*i+2]
	}
	return r.gateS, r.upS, r.downS, nil
}

// releaseExperts unpins the units expertMatrices acquired, once, so that other sessions'
// misses may take their slots.
func (r *moeRunner) releaseExperts() {
	if r.holding {
		r.holding = false
		r.store.Release(r.layerIndex, r.named)
	}
}

// products computes jobs in one pass of the pool (or, for a benchmark's baseline, one pass
// each).
func (r *moeRunner) products(jobs []kernels.MatMulJob) error {
	if !r.splitProducts {
		return r.mul.matmulMany(jobs)
	}
	for i := range jobs {
		if err := r.mul.matmulMany(jobs[i : i+1]); err != nil {
			return err
		}
	}
	return nil
}

// groupByExpert counting-sorts the pass's pairs by expert: each expert's rows then sit
// together (in increasing token order), so its weights are read once for all its tokens.
func (r *moeRunner) groupByExpert() {
	k := r.c.ExpertsUsed
	clear(r.offsets)
	for _, e := range r.sel[:r.n*k] {
		r.offsets[e+1]++
	}
	for e := range r.c.Experts {
		r.offsets[e+1] += r.offsets[e]
	}
	copy(r.fill, r.offsets[:r.c.Experts])
	for p, e := range r.sel[:r.n*k] {
		i := r.fill[e]
		r.fill[e]++
		r.order[i], r.where[p] = int32(p), int32(i)
	}
}

// run runs a per-token step over the pass's tokens and returns the first error a token met.
func (r *moeRunner) run(s stepKind) error { return r.runRows(s, r.n) }

// runRows runs step s over rows [0, rows) split over the pool.
func (r *moeRunner) runRows(s stepKind, rows int) error {
	r.step = s
	r.pool.For(rows, r.tokenFn)
	for i, e := range r.stepErr[:min(rows, len(r.stepErr))] {
		if e != nil {
			clear(r.stepErr)
			return fmt.Errorf("token %d: %w", i, e)
		}
	}
	return nil
}
