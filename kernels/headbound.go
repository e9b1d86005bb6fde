package kernels

import (
	"fmt"
	"math"
	"sync/atomic"

	"github.com/trochilus-llm/trochilus/gguf"
)

// The output head's argmax by a bound: greedy decoding needs only the index Argmax would pick
// from the head's logits, not the logits. Trained models' hidden states carry most of their
// weight in a few dimensions, the same from token to token, so a HeadBound keeps, for a set P
// of headDims dimensions (the largest |x_k| of the input it is built with), every row's weights
// there as float32 and the Euclidean norm of the rest of the row. For an input x,
//
//	U_r = Σ_{k∈P} w_k·x_k + Σ_{k∈P} |w_k|·δ_k + N_r·X_rest + ρ·(Σ_{k∈P} |w_k|·x'_k + N_r·X_rest) + s_r·X + α
//
// bounds the value the row's kernel computes (the exact part on P, Cauchy–Schwarz on the rest,
// widened by the kernel's rounding; see headBoundProof). A HeadSearch computes exactly, with the
// tier's own kernel and so the bits MatMul gives, the rows whose bound reaches the best value
// found so far, and skips the rest: a skipped row's value cannot beat the answer. The set P is
// a guess and only speed depends on it: with other heavy dimensions the bound is loose and the
// search computes the whole head.
//
// headBoundProof: why U_r bounds the kernel's result R_r, for every finite x.
//
// Q8_0. The weights w_k = d·q_k are exact float32s; R is the 16-lane sum of float32(w_k·x_k).
// Each product errs by at most u·|w_k·x_k| + 2^-150 (u = 2^-24; the absolute part where it
// underflows), each lane adds at most ⌈n/16⌉ terms in order and the join tree four levels, each
// addition erring by at most u times its exact result (an addition never errs below the normal
// range). So R ≤ D + γ·S + n·2^-150 with D = Σ w_k·x_k, S = Σ|w_k·x_k| and γ ≤ (n/16+6)·u·(1+ε).
// D ≤ Σ_P w_k·x_k + N·‖x_rest‖₂ and S ≤ Σ_P |w_k·x_k| + N·‖x_rest‖₂ (Cauchy–Schwarz off P); δ_k = 0.
//
// Q4_K, Q6_K. The kernel rounds x to X_k = round(x_k·2^sh) per block of 256 (q4KInput), so
// X_k·2^-sh = x_k + e_k with |e_k| ≤ 2^(-sh-1) ≤ m·2^-30, m the block's largest |x_k| (sh is the
// largest shift keeping m·2^sh ≤ XMAX < 2^31); the bound takes δ_k = m·2^-29 and x'_k = |x_k| +
// δ_k, so the exact dot of the weights with the rounded input is at most Σ_P w_k·x_k +
// Σ_P |w_k|·δ_k + N·X_rest with X_rest = ‖x_rest‖₂ + ‖δ_rest‖₂ ≥ ‖x'_rest‖₂. Inside a block every
// sum is an exact integer; Q6_K's v = fl64(d·T) errs by 2^-53·|d·T|, within ρ·S'; Q4_K's v =
// fl64(fl64(d·T) − fl64(dmin·M)) errs by at most 2^-53·(|d·T| + |dmin·M|) + 2^-53·|v|, the first
// part at most 2^-53·Σ A_k·x'_k ≤ 2^-53·‖A‖₂·‖x'‖₂ with A_k = |d·sc·q_k| + |dmin·m|: s_r =
// 2^-51·‖A‖₂ (0 for the other types) and X = ‖x‖₂ + ‖δ‖₂. The float64 sum over the blocks and
// the final rounding to float32 add a relative 2^-24 + nb·2^-53 and, for a subnormal result,
// 2^-150.
//
// The table's float32 weights err by 2^-24 relative (Q6_K's and Q4_K's need 25 bits), N_r and
// s_r are rounded up. So R ≤ U_r with ρ = (n/16+16)·2^-23 — twice what the worst type needs,
// which also covers the float32 weights and the float64 roundings of the bound's own evaluation
// (a few hundred operations at 2^-53 each) — and α = 2^-100 ≥ n·2^-150 for any n allowed (cols
// ≤ 2^24). Bounds at or above 2^100 are not used (the head is then computed whole), so no sum
// can overflow below them.
const (
	headDims     = 32      // the dimensions whose weights the table keeps
	headSeeds    = 8       // rows computed first: the largest bounds
	headChunk    = 128     // rows gathered into the first exact product after the seeds
	headChunkMax = 2048    // the most rows one exact product gathers: each chunk doubles up to this
	headMaxCol   = 1 << 24 // the widest row the margins are proven for
	headAlpha    = 0x1p-100
	headLimit    = 0x1p100 // a bound at or above this (or NaN) sends the search to the full head
)

// HeadBoundSupported reports whether NewHeadBound builds bounds for matrices of type t.
func HeadBoundSupported(t gguf.Type) bool {
	return t == gguf.TypeQ8_0 || t == gguf.TypeQ4_K || t == gguf.TypeQ6_K
}

// HeadBound is the per-row information a HeadSearch bounds the rows of one matrix by (see
// above): each row's weights on the dimensions P, the norm of the rest, and for Q4_K the
// kernel's float64 slack. It takes 4·(len(P)+2) bytes a row on the Go heap and is read-only
// once built, so any number of searches may share it.
type HeadBound struct {
	typ          gguf.Type
	rows, cols   int
	dims         []int     // P, increasing
	in           []bool    // cols: in P
	w            []float32 // rows × len(P): the weights on P
	rest         []float32 // rows: N_r, rounded up
	slack        []float32 // rows: s_r, rounded up; nil but for Q4_K
	scale, alpha float64   // 1+ρ and α of headBoundProof
}

// NewHeadBound reads every row of m (one pass, split over p) and returns its bounds on the
// headDims dimensions of largest |x_k| (the lowest among equals). It fails for a type
// HeadBoundSupported refuses, a malformed matrix, rows wider than 2^24 elements or of an x of
// another width, and for weights whose scales are not finite or so large that the bounds would
// not be (the head is then always computed whole).
func NewHeadBound(p *Pool, m *Matrix, x []float32) (*HeadBound, error) {
	if !HeadBoundSupported(m.Type) {
		return nil, fmt.Errorf("kernels: no head bound for %v matrices", m.Type)
	}
	if err := m.Validate(); err != nil {
		return nil, err
	}
	if m.Cols > headMaxCol || len(x) != m.Cols {
		return nil, fmt.Errorf("kernels: no head bound for rows of %d elements from %d inputs", m.Cols, len(x))
	}
	k := min(headDims, m.Cols)
	hb := &HeadBound{typ: m.Type, rows: m.Rows, cols: m.Cols, in: make([]bool, m.Cols),
		w: make([]float32, m.Rows*k), rest: make([]float32, m.Rows),
		scale: 1 + float64(m.Cols/16+16)*0x1p-23, alpha: headAlpha}
	if m.Type == gguf.TypeQ4_K {
		hb.slack = make([]float32, m.Rows)
	}
	for range k { // k passes of a selection: k is small and this runs once
		best := -1
		for i, v := range x {
			if !hb.in[i] && (best < 0 || abs32(v) > abs32(x[best]) || abs32(x[best]) != abs32(x[best])) {
				best = i
			}
		}
		hb.in[best] = true
	}
	for i, in := range hb.in {
		if in {
			hb.dims = append(hb.dims, i)
		}
	}
	var bad atomic.Bool
	p.For(m.Rows, func(lo, hi int) {
		w, a := make([]float64, m.Cols), make([]float64, m.Cols) // once per worker
		for r := lo; r < hi; r++ {
			if !hb.buildRow(m.Row(r), r, w, a) {
				bad.Store(true)
				return
			}
		}
	})
	if bad.Load() {
		return nil, fmt.Errorf("kernels: %v head has scales too large or not finite for a bound", m.Type)
	}
	return hb, nil
}

func abs32(v float32) float32 { return math.Float32frombits(math.Float32bits(v) &^ (1 << 31)) }

// buildRow fills row r's entries from its bytes, decoded into w (and Q4_K's A_k into a); false
// when one is not below headLimit.
func (hb *HeadBound) buildRow(row []byte, r int, w, a []float64) bool {
	switch hb.typ {
	case gguf.TypeQ8_0:
		decodeQ8_0(row, w)
	case gguf.TypeQ4_K:
		decodeQ4K(row, w, a)
	default:
		decodeQ6K(row, w)
	}
	k := len(hb.dims)
	ok := true
	for j, i := range hb.dims {
		hb.w[r*k+j] = float32(w[i])
		ok = ok && math.Abs(w[i]) < headLimit
	}
	var sq, asq float64
	for i, v := range w {
		if !hb.in[i] {
			sq += float64(v * v)
		}
	}
	hb.rest[r] = up32(normUp(sq))
	ok = ok && hb.rest[r] < headLimit
	if hb.slack != nil {
		for _, v := range a {
			asq += float64(v * v)
		}
		hb.slack[r] = up32(normUp(asq) * 0x1p-51)
	}
	return ok
}

// up32 returns the least float32 not below v (v finite or +Inf).
func up32(v float64) float32 {
	f := float32(v)
	if float64(f) < v {
		f = math.Nextafter32(f, float32(math.Inf(1)))
	}
	return f
}

// normUp widens a float64 sum of squares (relative error below 2^-45 for any row allowed) to
// an upper bound of its square root.
func normUp(sq float64) float64 { return math.Sqrt(sq) * (1 + 0x1p-40) }

// decodeQ8_0 writes a Q8_0 row's weights d·q (exact) into w; a NaN or infinite d stays so.
func decodeQ8_0(row []byte, w []float64) {
	for b := 0; b < len(w)/q8_0Elems; b++ {
		blk := row[b*q8_0Bytes : (b+1)*q8_0Bytes]
		d := float64(half(blk))
		for l, v := range blk[2:] {
			w[q8_0Elems*b+l] = float64(d * float64(int8(v)))
		}
	}
}

// decodeQ4K writes a Q4_K row's weights d·sc·q − dmin·m (the products exact, the difference
// rounded once in float64) into w, and A = |d·sc·q| + |dmin·m| into a.
func decodeQ4K(row []byte, w, a []float64) {
	for b := 0; b < len(w)/kElems; b++ {
		blk := row[b*q4KBytes : (b+1)*q4KBytes]
		d, dmin := float64(half(blk[0:])), float64(half(blk[2:]))
		scales := (*[12]byte)(blk[4:16])
		for j := range 8 {
			sc, mn := gguf.ScaleMinK4(j, scales)
			ds, dm := float64(d*float64(sc)), float64(dmin*float64(mn))
			qs := blk[16+32*(j/2) : 16+32*(j/2)+32]
			shift := 4 * uint(j%2)
			for l, v := range qs {
				t := float64(ds * float64(v>>shift&15))
				w[kElems*b+32*j+l] = t - dm
				a[kElems*b+32*j+l] = math.Abs(t) + math.Abs(dm)
			}
		}
	}
}

// decodeQ6K writes a Q6_K row's weights d·sc·(q−32) (exact: an f16, an int8 and six bits) into
// w, in the element order of q6KBlock.
func decodeQ6K(row []byte, w []float64) {
	for b := 0; b < len(w)/kElems; b++ {
		blk := row[b*q6KBytes : (b+1)*q6KBytes]
		ql, qh, sc := blk[0:128], blk[128:192], blk[192:208]
		d := float64(half(blk[208:]))
		for k := range kElems {
			h, c, l := k/128, k%128/32, k%32
			q := (int64(ql[64*h+32*(c&1)+l]>>(4*(c>>1))&15) | int64(qh[32*h+l]>>(2*c)&3)<<4) - 32
			w[kElems*b+k] = float64(float64(d*float64(int8(sc[k/16]))) * float64(q))
		}
	}
}

// Rows returns the number of rows the bound covers.
func (hb *HeadBound) Rows() int { return hb.rows }

// HeadSearch is one caller's state for Argmax over a HeadBound's matrix: the bounds of the
// input in flight and the scratch of the exact products, sized once, so that a search
// allocates nothing. A HeadSearch is used by one goroutine at a time.
type HeadSearch struct {
	hb      *HeadBound
	tier    *Tier
	pool    *Pool
	threads int

	xp, dp, ap  []float64  // on P: x_k, δ_k and x'_k (see headBoundProof)
	xRest, xAll float64    // X_rest and X
	u           []float64  // per row: its bound; NaN once the row is computed
	seeds       []headSeed // per worker slot: its rows of largest bound, largest first
	peak        []float64  // per worker slot: its largest bound (+Inf for one past headLimit)
	rows        []byte     // the gathered rows of an exact product
	ids         []int32    // their indices
	vals        []float32  // their values
	sub         Matrix
	fn          func(lo, hi int)

	// The result so far: the best value and its row, once have.
	have bool
	best float32
	at   int
}

type headSeed struct {
	u float64
	r int
}

// NewHeadSearch makes a search over hb's matrix that multiplies through t on p.
func NewHeadSearch(t *Tier, p *Pool, hb *HeadBound) *HeadSearch {
	n := p.Threads()
	s := &HeadSearch{hb: hb, tier: t, pool: p, threads: n,
		xp: make([]float64, len(hb.dims)), dp: make([]float64, len(hb.dims)), ap: make([]float64, len(hb.dims)),
		u:     make([]float64, hb.rows),
		seeds: make([]headSeed, n*headSeeds), peak: make([]float64, n),
		ids: make([]int32, 0, headChunkMax), vals: make([]float32, headChunkMax)}
	s.fn = s.bounds
	return s
}

// HeadChoice is what HeadSearch.Argmax found.
type HeadChoice struct {
	Index int  // Argmax of the row's logits
	Exact int  // rows computed exactly (all of them when Full)
	Full  bool // the whole head was computed: logits holds every row's value
}

// Argmax returns Argmax of the logits MatMul(dst, m, in) would write for the one input row of
// in (m the matrix hb was built from), the same index bit for bit, computing exactly only the
// rows whose bound reaches the best value found: first the rows of largest bound, then, in
// index order, every row whose bound is above the best so far or equal to it with a lower
// index (Argmax takes the lowest index among equal values). A NaN or infinite input, a bound
// not below 2^100 or a search that would compute more than half the rows computes the whole
// head into logits (m.Rows floats) instead; otherwise logits is left as it was.
func (s *HeadSearch) Argmax(m *Matrix, in *Batch, logits []float32) (HeadChoice, error) {
	hb := s.hb
	if m.Type != hb.typ || m.Rows != hb.rows || m.Cols != hb.cols || in.Ntok != 1 || in.Cols != m.Cols || len(logits) < m.Rows {
		return HeadChoice{}, fmt.Errorf("kernels: head search of a %v %d×%d bound over a %v %d×%d matrix, %d input rows of %d, %d logits",
			hb.typ, hb.rows, hb.cols, m.Type, m.Rows, m.Cols, in.Ntok, in.Cols, len(logits))
	}
	if !s.boundAll(in.X) {
		return s.full(m, in, logits)
	}
	// The rows of largest bound first: a good best early prunes the most.
	s.have = false
	ids := s.ids[:0]
	for range headSeeds {
		w := -1
		for i := range s.threads {
			if sd := s.seeds[i*headSeeds]; sd.r >= 0 && (w < 0 || sd.u > s.seeds[w*headSeeds].u) {
				w = i
			}
		}
		if w < 0 {
			break
		}
		slot := s.seeds[w*headSeeds : (w+1)*headSeeds]
		ids = append(ids, int32(slot[0].r))
		copy(slot, slot[1:])
		slot[headSeeds-1] = headSeed{r: -1}
	}
	exact := len(ids)
	if err := s.exact(m, in, ids); err != nil {
		return HeadChoice{}, err
	}
	n := 0
	for r, u := range s.u {
		if s.keep(u, r) {
			if n++; n > m.Rows/2 {
				return s.full(m, in, logits)
			}
		}
	}
	// The chunks double: a small first one lets the best improve early, larger ones later
	// spare the pool's passes (each costs its threads' wake-up and join: with chunks of 128
	// rows, 114 passes a token on the trained tiny model's head cost more than its rows).
	ids = s.ids[:0]
	chunk := headChunk
	for r, u := range s.u {
		if !s.keep(u, r) {
			continue
		}
		if ids = append(ids, int32(r)); len(ids) == chunk {
			if err := s.exact(m, in, ids); err != nil {
				return HeadChoice{}, err
			}
			exact, ids = exact+len(ids), ids[:0]
			chunk = min(2*chunk, headChunkMax)
		}
	}
	if err := s.exact(m, in, ids); err != nil {
		return HeadChoice{}, err
	}
	exact += len(ids)
	if !s.have { // every row was computed (nothing bounds a row without a best) and is NaN
		return HeadChoice{Index: 0, Exact: exact}, nil
	}
	return HeadChoice{Index: s.at, Exact: exact}, nil
}

// keep reports whether row r of bound u may still be the answer: not yet computed, and either
// no best value yet or u above it, or equal to it at a lower index than the best's.
func (s *HeadSearch) keep(u float64, r int) bool {
	return u == u && (!s.have || u > float64(s.best) || u == float64(s.best) && r < s.at)
}

// full computes the whole head into logits and takes its Argmax.
func (s *HeadSearch) full(m *Matrix, in *Batch, logits []float32) (HeadChoice, error) {
	if err := s.tier.MatMul(s.pool, logits[:m.Rows], m, in); err != nil {
		return HeadChoice{}, err
	}
	return HeadChoice{Index: Argmax(logits[:m.Rows]), Exact: m.Rows, Full: true}, nil
}

// exact computes rows ids exactly (gathered into one matrix: each value is the bits MatMul
// gives the row in the whole matrix, whatever rows share the product), marks them computed and
// folds their values into the best as Argmax would: NaN never wins, the lowest index wins a tie.
func (s *HeadSearch) exact(m *Matrix, in *Batch, ids []int32) error {
	if len(ids) == 0 {
		return nil
	}
	rb := m.RowBytes()
	if len(s.rows) < len(ids)*rb {
		s.rows = make([]byte, headChunkMax*rb) // once: the row size is the bound's
	}
	for i, r := range ids {
		copy(s.rows[i*rb:(i+1)*rb], m.Data[int(r)*rb:(int(r)+1)*rb])
	}
	s.sub = Matrix{Type: m.Type, Rows: len(ids), Cols: m.Cols, Data: s.rows[:len(ids)*rb]}
	vals := s.vals[:len(ids)]
	if err := s.tier.MatMul(s.pool, vals, &s.sub, in); err != nil {
		return err
	}
	for i, r := range ids {
		s.u[r] = math.NaN()
		v := vals[i]
		if v != v {
			continue
		}
		if !s.have || v > s.best || v == s.best && int(r) < s.at {
			s.have, s.best, s.at = true, v, int(r)
		}
	}
	return nil
}

// boundAll computes every row's bound for input x into s.u and each worker slot's rows of
// largest bound; false when x is not finite or some bound is not below headLimit.
func (s *HeadSearch) boundAll(x []float32) bool {
	if !s.prepare(x) {
		return false
	}
	s.pool.For(s.threads, s.fn)
	for _, p := range s.peak {
		if !(p < headLimit) {
			return false
		}
	}
	return true
}

// prepare computes the input's side of the bounds (headBoundProof): x_k, δ_k and x'_k on P,
// X_rest and X, with δ_k = m·2^-29 for the K-quants (m the largest |x_k| of its block of 256)
// and 0 for Q8_0. Every float32 square is exact in float64 and each sum rounds at 2^-53; false
// when x is not finite.
func (s *HeadSearch) prepare(x []float32) bool {
	hb := s.hb
	per := hb.cols // elements sharing one fixed-point scale
	if hb.typ != gguf.TypeQ8_0 {
		per = kElems
	}
	var sq, dsq, sqAll, dsqAll, total float64
	j := 0
	for b0 := 0; b0 < hb.cols; b0 += per {
		var m float64
		for _, v := range x[b0 : b0+per] {
			m = max(m, math.Abs(float64(v)))
		}
		total += m
		delta := 0.0
		if per == kElems {
			delta = m * 0x1p-29
		}
		for i := b0; i < b0+per; i++ {
			v := float64(x[i])
			sqAll += float64(v * v)
			if hb.in[i] {
				s.xp[j], s.dp[j], s.ap[j] = v, delta, math.Abs(v)+delta
				j++
			} else {
				sq += float64(v * v)
			}
		}
		dsqAll += float64(float64(float64(per)*delta) * delta)
	}
	// δ on P is counted in the rest's share too: a bound, and simpler than subtracting it.
	dsq = dsqAll
	s.xRest = math.Sqrt(sq) + math.Sqrt(dsq)
	s.xAll = math.Sqrt(sqAll) + math.Sqrt(dsqAll)
	return total < math.Inf(1) // false for a NaN or an infinity anywhere (max keeps a NaN)
}

// bounds computes the bounds of worker slots [lo, hi): slot w takes rows [w·R/W, (w+1)·R/W),
// keeping its headSeeds rows of largest bound and its largest bound.
func (s *HeadSearch) bounds(lo, hi int) {
	hb := s.hb
	k := len(hb.dims)
	rho := hb.scale - 1
	for w := lo; w < hi; w++ {
		seeds := s.seeds[w*headSeeds : (w+1)*headSeeds]
		for i := range seeds {
			seeds[i] = headSeed{u: math.Inf(-1), r: -1}
		}
		peak := math.Inf(-1)
		r0, r1 := w*hb.rows/s.threads, (w+1)*hb.rows/s.threads
		for r := r0; r < r1; r++ {
			dot, shift, mag := partial(hb.w[r*k:(r+1)*k], s.xp, s.dp, s.ap)
			rest := float64(float64(hb.rest[r]) * s.xRest)
			u := dot + float64(hb.scale*(shift+rest)) + float64(rho*mag) + hb.alpha
			if hb.slack != nil {
				u += float64(float64(hb.slack[r]) * s.xAll)
			}
			s.u[r] = u
			if !(u < headLimit) {
				peak = math.Inf(1)
			} else {
				peak = max(peak, u)
			}
			if u > seeds[headSeeds-1].u {
				i := headSeeds - 1
				for ; i > 0 && u > seeds[i-1].u; i-- {
					seeds[i] = seeds[i-1]
				}
				seeds[i] = headSeed{u: u, r: r}
			}
		}
		s.peak[w] = peak
	}
}

// partial returns Σ w_k·x_k, Σ |w_k|·δ_k and Σ |w_k|·x'_k over P in float64 (the products of
// float32 weights and inputs are exact; the sums' roundings are the bound's own, covered by its
// margin). It is the bound's cost: at hidden 256 its scalar float64 work over 32 dimensions a
// row costs more than the head rows it spares (four interleaved sums did not help: it is bound
// by the operations, not their latency; MEASUREMENTS session 11).
func partial(w []float32, x, d, a []float64) (dot, shift, mag float64) {
	x, d, a = x[:len(w)], d[:len(w)], a[:len(w)]
	for j, v := range w {
		wv := float64(v)
		aw := math.Abs(wv)
		dot += float64(wv * x[j])
		shift += float64(aw * d[j])
		mag += float64(aw * a[j])
	}
	return dot, shift, mag
}
