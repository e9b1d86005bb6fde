package kernels

import (
	"fmt"

	"github.com/trochilus-llm/trochilus/gguf"
)

// Matrix is a weight matrix as a GGUF file stores it: Rows rows of Cols elements of Type, each
// row RowBytes() bytes, rows contiguous in Data.
type Matrix struct {
	Type       gguf.Type
	Rows, Cols int
	Data       []byte

	// rowBytes, when not 0, is RowBytes() worked out once: MatMulMany hands the kernels a
	// private copy of each matrix with it set, so that Row does not divide for every row.
	rowBytes int
}

// Supported reports whether the kernels can multiply a matrix of type t.
func Supported(t gguf.Type) bool {
	switch t {
	case gguf.TypeF32, gguf.TypeF16, gguf.TypeBF16, gguf.TypeQ8_0, gguf.TypeQ4_K, gguf.TypeQ5_K, gguf.TypeQ6_K:
		return true
	}
	return false
}

// RowBytes returns the size of one row in bytes (0 for an unknown type). Cols is assumed to be
// a whole number of blocks, as Validate checks.
func (m *Matrix) RowBytes() int {
	if m.rowBytes != 0 {
		return m.rowBytes
	}
	if m.Type.BlockElems() == 0 {
		return 0
	}
	return m.Cols / m.Type.BlockElems() * m.Type.BlockBytes()
}

// Row returns the bytes of row r.
func (m *Matrix) Row(r int) []byte {
	rb := m.RowBytes()
	return m.Data[r*rb : (r+1)*rb : (r+1)*rb]
}

// Validate checks that the kernels can multiply m: a supported type, Cols a whole number of
// blocks (of 256 for Q4_K, whose inputs are prepared per 256), and Data exactly Rows rows.
func (m *Matrix) Validate() error {
	if !Supported(m.Type) {
		return fmt.Errorf("kernels: matrix type %v is not supported", m.Type)
	}
	if m.Rows < 0 || m.Cols < 0 {
		return fmt.Errorf("kernels: %v matrix has negative shape %d×%d", m.Type, m.Rows, m.Cols)
	}
	rb, err := m.Type.RowBytes(int64(m.Cols))
	if err != nil {
		return fmt.Errorf("kernels: matrix row: %w", err)
	}
	if m.Rows > 0 && rb > int64(len(m.Data))/int64(m.Rows) || int64(m.Rows)*rb != int64(len(m.Data)) {
		return fmt.Errorf("kernels: %v matrix %d×%d needs %d bytes a row, data holds %d bytes", m.Type, m.Rows, m.Cols, rb, len(m.Data))
	}
	return nil
}

// Batch is the input of matrix products: Ntok rows of Cols floats in X, row t at
// X[t·Cols:(t+1)·Cols]. The Q4_K preparation of each row is made the first time a Q4_K matrix
// meets the batch and shared by every later one until Set is called again, so Set the batch
// anew whenever X changes. A Batch is used by one goroutine at a time; its memory is reused
// across Sets, so a batch of steady shape allocates nothing.
type Batch struct {
	X          []float32
	Ntok, Cols int

	q4k      []q4KInput
	q4kReady bool

	// A batch made by SetRows follows rows [off, off+Ntok) of src while src.sets == srcSets.
	src     *Batch
	srcSets uint64
	off     int
	sets    uint64 // counts Set and SetRows calls, so that a batch following this one sees a change

	one     [1]MatMulJob     // MatMul's product, kept here so that a call allocates nothing
	prepJob func(lo, hi int) // b.prepare, made once
	prep    q4KPrepKernel    // the preparation kernel of the tier preparing the batch
}

// Set points the batch at ntok rows of cols floats held in x.
func (b *Batch) Set(x []float32, ntok, cols int) error {
	if ntok < 0 || cols < 0 || len(x) < ntok*cols {
		return fmt.Errorf("kernels: batch of %d rows of %d floats from %d floats", ntok, cols, len(x))
	}
	if b.src != nil {
		// The preparation memory was src's; a batch of its own prepares into its own.
		b.src, b.q4k = nil, nil
	}
	b.X, b.Ntok, b.Cols = x[:ntok*cols], ntok, cols
	b.q4kReady = false
	b.sets++
	return nil
}

// SetRows points the batch at rows [lo, hi) of src: the same floats and, once src is prepared
// for Q4_K (by the first Q4_K product over src or over any batch following it), the same
// preparation, so that products over several parts of one batch prepare it once. The batch
// follows src until src is Set again; a Q4_K product over it after that is an error.
func (b *Batch) SetRows(src *Batch, lo, hi int) error {
	if lo < 0 || hi < lo || hi > src.Ntok {
		return fmt.Errorf("kernels: rows [%d, %d) of a batch of %d rows", lo, hi, src.Ntok)
	}
	if src == b {
		return fmt.Errorf("kernels: a batch cannot follow rows of itself")
	}
	b.X, b.Ntok, b.Cols = src.X[lo*src.Cols:hi*src.Cols], hi-lo, src.Cols
	b.src, b.srcSets, b.off = src, src.sets, lo
	b.q4k, b.q4kReady = nil, false
	b.sets++
	return nil
}

// prepare prepares rows [lo, hi) of the batch for Q4_K.
func (b *Batch) prepare(lo, hi int) {
	for t := lo; t < hi; t++ {
		// The length was checked by MatMul (Cols a multiple of 256), so this cannot fail.
		_ = prepareQ4KWith(&b.q4k[t], b.X[t*b.Cols:(t+1)*b.Cols], b.prep)
	}
}

// prepareAll prepares every row of the batch over p through prepareQ4K unless that has been
// done since the last Set.
func (b *Batch) prepareAll(p *Pool) error { return b.prepareWith(p, nil) }

// prepareWith is prepareAll through the preparation kernel prep (nil: prepareQ4K); every
// kernel gives the same bits.
func (b *Batch) prepareWith(p *Pool, prep q4KPrepKernel) error {
	if b.q4kReady {
		return nil
	}
	if b.src != nil {
		if b.src.sets != b.srcSets {
			return fmt.Errorf("kernels: batch follows rows of a batch that has been set anew since")
		}
		if err := b.src.prepareWith(p, prep); err != nil {
			return err
		}
		b.q4k = b.src.q4k[b.off : b.off+b.Ntok : b.off+b.Ntok]
		b.q4kReady = true
		return nil
	}
	if b.Cols%kElems != 0 {
		return fmt.Errorf("kernels: Q4_K input rows of %d floats are not whole %d-element blocks", b.Cols, kElems)
	}
	if len(b.q4k) < b.Ntok {
		b.q4k = append(b.q4k, make([]q4KInput, b.Ntok-len(b.q4k))...)
	}
	if b.prepJob == nil {
		b.prepJob = b.prepare
	}
	b.prep = prep
	p.For(b.Ntok, b.prepJob)
	b.q4kReady = true
	return nil
}

// rowsKernel computes dst[t·m.Rows + r] = dot(row r of m, row t of in) for r in [r0, r1) and
// every row t of in. A tier holds one per weight type; whatever order or width it works in,
// each element must equal the scalar definition bit for bit.
type rowsKernel func(dst []float32, m *Matrix, in *Batch, r0, r1 int)

// Tier is a set of kernel implementations: the scalar one (the definition) or a SIMD tier that
// reproduces it. Tiers are built once at start; a SIMD tier starts as a copy of Scalar() and
// replaces what it accelerates. Its kernels sit in unexported fields, so that only this package
// chooses them (every tier must give the scalar bits); other packages call them through the
// methods, each a one-line call the compiler inlines.
type Tier struct {
	Name string

	// dotF32 is the contract dot of two float32 vectors (attention scores, norms).
	dotF32 func(a, b []float32) float32

	// The vector operations (see the package functions DotF32, rmsNorm, Softmax, swiGLU and
	// Attend).
	rmsNorm func(dst, x, w []float32, eps float32)
	softmax func(x []float32)
	expOf   func(dst, src []float32, shift float32)
	swiGLU  func(dst, gate, up []float32)
	attend  func(out, q, keys, values []float32, npos, stride int, scale float32, scores []float32)

	// Matrix-times-batch kernels per weight type (see kernel).
	f32, f16, bf16, q8_0, q4K, q5K, q6K rowsKernel

	prepQ4K q4KPrepKernel // the Batch's Q4_K/Q6_K preparation (see prepareQ4KWith); nil: prepareQ4K
}

// DotF32 is the tier's DotF32, the contract dot of two float32 vectors.
func (t *Tier) DotF32(a, b []float32) float32 { return t.dotF32(a, b) }

// RMSNorm is the tier's rmsNorm.
func (t *Tier) RMSNorm(dst, x, w []float32, eps float32) { t.rmsNorm(dst, x, w, eps) }

// Softmax is the tier's Softmax.
func (t *Tier) Softmax(x []float32) { t.softmax(x) }

// ExpShifted writes dst[i] = Exp(src[i] − shift), the difference rounded to float32 (the bits
// of the scalar Exp on every tier). dst may be src.
func (t *Tier) ExpShifted(dst, src []float32, shift float32) { t.expOf(dst, src, shift) }

// SwiGLU is the tier's swiGLU.
func (t *Tier) SwiGLU(dst, gate, up []float32) { t.swiGLU(dst, gate, up) }

// Attend is the tier's Attend.
func (t *Tier) Attend(out, q, keys, values []float32, npos, stride int, scale float32, scores []float32) {
	t.attend(out, q, keys, values, npos, stride, scale, scores)
}

// Scalar returns the scalar tier: the portable definitions.
func Scalar() *Tier {
	return &Tier{
		Name:    "scalar",
		dotF32:  DotF32,
		rmsNorm: rmsNorm,
		softmax: Softmax,
		expOf:   expShifted,
		swiGLU:  swiGLU,
		attend:  Attend,
		f32:     floatRows(dotRowF32),
		f16:     floatRows(dotRowF16),
		bf16:    floatRows(dotRowBF16),
		q8_0:    floatRows(dotRowQ8_0),
		q4K:     preparedRows(dotQ4K),
		q5K:     floatRows(dotRowQ5K),
		q6K:     preparedRows(dotQ6K),
	}
}

// floatRows makes the scalar rows kernel of a row dot.
func floatRows(dot func(row []byte, x []float32) float32) rowsKernel {
	return func(dst []float32, m *Matrix, in *Batch, r0, r1 int) {
		for r := r0; r < r1; r++ {
			row := m.Row(r)
			for t := range in.Ntok {
				dst[t*m.Rows+r] = dot(row, in.X[t*in.Cols:(t+1)*in.Cols])
			}
		}
	}
}

// preparedRows makes the scalar rows kernel of a row dot on prepared inputs (dotQ4K, dotQ6K);
// the batch is already prepared.
func preparedRows(dot func(row []byte, in *q4KInput) float32) rowsKernel {
	return func(dst []float32, m *Matrix, in *Batch, r0, r1 int) {
		for r := r0; r < r1; r++ {
			row := m.Row(r)
			for t := range in.Ntok {
				dst[t*m.Rows+r] = dot(row, &in.q4k[t])
			}
		}
	}
}

// kernel returns the tier's rows kernel for weight type typ.
func (t *Tier) kernel(typ gguf.Type) (rowsKernel, error) {
	var k rowsKernel
	switch typ {
	case gguf.TypeF32:
		k = t.f32
	case gguf.TypeF16:
		k = t.f16
	case gguf.TypeBF16:
		k = t.bf16
	case gguf.TypeQ8_0:
		k = t.q8_0
	case gguf.TypeQ4_K:
		k = t.q4K
	case gguf.TypeQ5_K:
		k = t.q5K
	case gguf.TypeQ6_K:
		k = t.q6K
	}
	if k == nil {
		return nil, fmt.Errorf("kernels: tier %s has no kernel for %v", t.Name, typ)
	}
	return k, nil
}

// MatMul computes dst[t·m.Rows + r] = dot(row r of m, row t of in) for every weight row r and
// input row t, splitting the weight rows over the pool as MatMulMany does. The result does not
// depend on the number of threads. It checks shapes and returns an error for a matrix the
// kernels cannot multiply, an input of the wrong width or a dst too short.
func (t *Tier) MatMul(p *Pool, dst []float32, m *Matrix, in *Batch) error {
	in.one[0] = MatMulJob{Dst: dst, M: m, In: in}
	err := t.matMulMany(p, in.one[:])
	in.one[0] = MatMulJob{}
	return err
}
