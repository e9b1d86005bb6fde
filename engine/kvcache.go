package engine

import (
	"errors"
	"fmt"
	"math"
	"runtime"
	"unsafe"

	"github.com/trochilus-llm/trochilus/internal/osmem"
	"github.com/trochilus-llm/trochilus/kernels"
)

// kvCache is a session's keys (after RoPE) and values, each laid out [layer][KV head]
// [position][head width] so that one head's attention reads its positions in one run. Every
// decode token reads it up to its position, the larger part of a token's bytes in a long
// context, so it lives in 2 MiB pages where the platform gives them (see allocWeights) and on
// the Go heap elsewhere. Its memory goes back to the system at free (Session.Close), or else
// when the cache becomes unreachable.
type kvCache struct {
	keys, values []float32
	kvHeads      int
	positions    int
	headDim      int
	frees        [2]func() error
}

// newKVCache allocates the cache of a session of positions positions for c's model: floats
// floats each for keys and values, as sessionSizes counts them for the planner.
func newKVCache(c *Config, positions int, floats int64) (*kvCache, error) {
	if floats >= maxElems || floats > math.MaxInt/8 {
		return nil, fmt.Errorf("KV cache of %d floats is too large", floats)
	}
	kv := &kvCache{kvHeads: c.KVHeads, positions: positions, headDim: c.HeadDim}
	var err error
	if kv.keys, kv.frees[0], err = cacheFloats(kv, floats); err != nil {
		return nil, err
	}
	if kv.values, kv.frees[1], err = cacheFloats(kv, floats); err != nil {
		kv.frees[0]()
		return nil, err
	}
	return kv, nil
}

// offset returns where (layer, KV head, position) starts in keys and values.
func (kv *kvCache) offset(layer, head, pos int) int {
	return ((layer*kv.kvHeads+head)*kv.positions + pos) * kv.headDim
}

// put stores the keys k and values v of position pos of a layer, every KV head's row.
func (kv *kvCache) put(layer, pos int, k, v []float32) {
	d := kv.headDim
	for j := range kv.kvHeads {
		at := kv.offset(layer, j, pos)
		copy(kv.keys[at:at+d], k[j*d:(j+1)*d])
		copy(kv.values[at:at+d], v[j*d:(j+1)*d])
	}
}

// head returns the keys and values of one KV head of a layer, from position 0 on.
func (kv *kvCache) head(layer, head int) (keys, values []float32) {
	at := kv.offset(layer, head, 0)
	return kv.keys[at:], kv.values[at:]
}

// free gives the memory back now; the cache must not be used afterwards. A second call does
// nothing.
func (kv *kvCache) free() error {
	err := errors.Join(kv.frees[0](), kv.frees[1]())
	kv.keys, kv.values = nil, nil
	return err
}

// cacheFloats returns n zeroed floats for one half of a KV cache: mapped memory in ordinary
// pages where the platform maps memory itself (osmem), on the Go heap elsewhere. Not huge
// pages: the cache is laid out head by head, so a session's first position touches every
// (layer, head) block, and with 2 MiB pages the kernel faulted in and zeroed the whole cache
// at once — on the full OLMoE shape with 4,096 positions, 1 GiB before the first token, a
// fifth of a 512-token prompt's time (MEASUREMENTS session 11). In 4 KiB pages a session's
// memory grows with the positions it holds. The memory goes back to
// the system when free is called (the floats must not be used after it; further calls do
// nothing) or else when owner becomes unreachable.
func cacheFloats[T any](owner *T, n int64) (floats []float32, free func() error, err error) {
	none := func() error { return nil } // heap memory: the collector takes it with owner
	if n == 0 {
		return nil, none, nil
	}
	if !osmem.HugePagesSupported {
		return make([]float32, n), none, nil
	}
	r, err := osmem.Alloc(4*n, osmem.HugePage, false)
	if err != nil {
		return nil, nil, fmt.Errorf("KV cache: %w", err)
	}
	osmem.AdviseSmallPages(r.Data)
	m := &mapping{data: r.Data, resident: true, unmap: r.Free}
	c := runtime.AddCleanup(owner, func(m *mapping) { m.close() }, m)
	free = func() error {
		// Stopped first, so that the cleanup cannot unmap at the same time; mapping.close
		// makes a second free a no-op.
		c.Stop()
		if err := m.close(); err != nil {
			return fmt.Errorf("KV cache of %d floats: %w", n, err)
		}
		return nil
	}
	return unsafe.Slice((*float32)(unsafe.Pointer(unsafe.SliceData(m.data))), n), free, nil
}

// sessionSizes is the length, in elements, of every buffer a session of a moe model (moeRunner)
// allocates. newRunner makes its slices with these lengths and the planner (PlanMemory) counts
// their bytes with bytes, so that what a plan holds room for and what a session takes cannot
// drift apart: a buffer added to the runner is added here, or TestSessionBytesMatchAllocation
// fails.
type sessionSizes struct {
	cache int64 // floats in each of the K and V caches: layers × positions × KV width
	rope  int64 // floats of the RoPE table: cos and sin, positions × head width/2 each

	hidden     int64 // x, h, tmp: pass × hidden
	q          int64 // q, att: pass × heads × head width
	kv         int64 // k, v: pass × KV width
	router     int64 // pass × experts
	pairs      int64 // sel, selW, order, where: pass × experts used
	pairHidden int64 // xe, ye: pairs × hidden
	pairFFN    int64 // ge, ue: pairs × expert width
	experts    int64 // fill, expertIn, expertOut (offsets has one more); with a store, its lists
	jobs       int64 // the products of one pool pass: q, k, v, or two per expert
	steps      int64 // stepErr: pass

	threads int64 // workers of the model's pool, each with:
	scores  int64 // the attention scores of one query: positions
	row     int64 // one dequantized matrix row (the multiplier's): the widest row

	logits int64 // the session's logits: vocab
}

// maxElems caps each size, so that a corrupt header's shape gives a plan refused for its
// absurd bytes rather than sums that wrap around; no machine holds 2^50 floats.
const maxElems = 1 << 50

// mul returns the product of non-negative factors, at most maxElems.
func mul(fs ...int) int64 {
	p := int64(1)
	for _, f := range fs {
		if f <= 0 {
			return 0
		}
		if p > maxElems/int64(f) {
			return maxElems
		}
		p *= int64(f)
	}
	return p
}

// widestRow is the widest row of any matrix of c's model: the multiplier's dequantized-row
// scratch.
func widestRow(c *Config) int { return max(c.Hidden, c.Heads*c.HeadDim, c.ExpertFFN) }

// newSessionSizes returns the buffers of a session of ctxLen positions evaluating at most pass
// tokens at a time (pass ≤ ctxLen, as NewSession makes it) on a pool of threads workers.
func newSessionSizes(c *Config, ctxLen, pass, threads int) sessionSizes {
	n, k := pass, c.ExpertsUsed
	qDim, kvDim := c.Heads*c.HeadDim, c.KVHeads*c.HeadDim
	return sessionSizes{
		cache: mul(c.Layers, ctxLen, kvDim),
		rope:  2 * mul(ctxLen, c.HeadDim/2),

		hidden:     mul(n, c.Hidden),
		q:          mul(n, qDim),
		kv:         mul(n, kvDim),
		router:     mul(n, c.Experts),
		pairs:      mul(n, k),
		pairHidden: mul(n, k, c.Hidden),
		pairFFN:    mul(n, k, c.ExpertFFN),
		experts:    int64(max(c.Experts, 0)),
		jobs:       int64(max(3, 2*min(c.Experts, n*k))),
		steps:      int64(max(n, 0)),

		threads: int64(max(threads, 0)),
		scores:  int64(max(ctxLen, 0)),
		row:     int64(max(widestRow(c), 0)),

		logits: int64(max(c.Vocab, 0)),
	}
}

// Element sizes of the buffers, as the compiler lays them out.
const (
	sizeF32    = 4
	sizeInt32  = 4
	sizeInt    = int64(unsafe.Sizeof(int(0)))
	sizeErr    = int64(unsafe.Sizeof(error(nil)))
	sizeSlice  = int64(unsafe.Sizeof([]float32(nil)))
	sizeBatch  = int64(unsafe.Sizeof(kernels.Batch{}))
	sizeJob    = int64(unsafe.Sizeof(kernels.MatMulJob{}))
	sizeMatrix = int64(unsafe.Sizeof(kernels.Matrix{}))
)

// bytes returns the session's memory: kv, its float32 KV cache (keys and values), and pass,
// everything else it allocates (RoPE table, pass buffers, per-worker scratch, logits), with
// store the part of pass only a session over an expert store allocates. Not counted: the
// Q4_K/Q6_K preparation of a product's input rows, which package kernels grows inside each
// kernels.Batch on the first product that needs it.
func (z *sessionSizes) bytes() (kv, pass, store uint64) {
	kv = uint64(2 * z.cache * sizeF32)
	p := z.rope*sizeF32 +
		3*z.hidden*sizeF32 + 2*z.q*sizeF32 + 2*z.kv*sizeF32 + z.router*sizeF32 +
		z.pairs*(sizeInt+sizeF32+2*sizeInt32) + 2*z.pairHidden*sizeF32 + 2*z.pairFFN*sizeF32 +
		(2*z.experts+1)*sizeInt + 2*z.experts*sizeBatch + z.jobs*sizeJob + z.steps*sizeErr +
		2*z.threads*sizeSlice + z.threads*(z.scores*sizeF32+z.row*sizeF32+sizeErr) +
		z.logits*sizeF32
	// named and counts (capacity experts), acquired (three matrices an expert), and the
	// gate, up and down matrices by expert id.
	s := 2*z.experts*sizeInt + 6*z.experts*sizeMatrix
	return kv, uint64(p), uint64(s)
}
