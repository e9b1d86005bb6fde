package kernels

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/trochilus-llm/trochilus/gguf"
	"github.com/trochilus-llm/trochilus/gguf/quant"
)

// refLaneSum is the contract written out plainly: element k of the products (or values) into
// lane k mod 16, lanes joined by the tree.
func refLaneSum(n int, term func(k int) float32) float32 {
	var l [16]float32
	for k := range n {
		l[k%16] = l[k%16] + term(k)
	}
	lo := ((l[0] + l[1]) + (l[2] + l[3])) + ((l[4] + l[5]) + (l[6] + l[7]))
	hi := ((l[8] + l[9]) + (l[10] + l[11])) + ((l[12] + l[13]) + (l[14] + l[15]))
	return lo + hi
}

// refDot is the reference contract dot of w and x[:len(w)].
func refDot(w, x []float32) float32 {
	return refLaneSum(len(w), func(k int) float32 { return float32(w[k] * x[k]) })
}

// specials are the values the corpora mix in: signed zeros, subnormals, extremes, infinities.
var specials = []float32{
	0, float32(math.Copysign(0, -1)), 1, -1,
	math.Float32frombits(1), -math.Float32frombits(1), math.Float32frombits(0x007fffff),
	math.SmallestNonzeroFloat32 * 3, 0x1p-126, -0x1p-126,
	math.MaxFloat32, -math.MaxFloat32, 0x1p100, -0x1p100, 0x1p-100, 3e38, -3e38,
	float32(math.Inf(1)), float32(math.Inf(-1)),
}

// randFloats returns n floats, mostly normal-sized with a spread of magnitudes; with special
// set, about one in eight is taken from specials (NaN included when nan is set).
func randFloats(rng *rand.Rand, n int, special, nan bool) []float32 {
	x := make([]float32, n)
	for i := range x {
		switch {
		case special && rng.IntN(8) == 0:
			x[i] = specials[rng.IntN(len(specials))]
		case nan && rng.IntN(64) == 0:
			x[i] = float32(math.NaN())
		default:
			x[i] = float32(rng.NormFloat64() * math.Exp2(float64(rng.IntN(12)-6)))
		}
	}
	return x
}

// supportedTypes are the weight types with a row dot, in a fixed order.
var supportedTypes = []gguf.Type{gguf.TypeF32, gguf.TypeF16, gguf.TypeBF16, gguf.TypeQ8_0, gguf.TypeQ4_K, gguf.TypeQ5_K, gguf.TypeQ6_K}

// randRow returns a row of typ holding n elements. Float rows are random values (with
// specials when special is set). Quantized rows are either quant.Quantize of random weights
// (where quant encodes the type) or random bytes with the scale fields set to random finite
// halves, so every bit pattern of the quants and scales occurs; with special set, scale fields
// sometimes hold a zero, a subnormal, an infinity or a NaN.
func randRow(rng *rand.Rand, typ gguf.Type, n int, special bool) []byte {
	rb, err := typ.RowBytes(int64(n))
	if err != nil {
		panic(err)
	}
	row := make([]byte, rb)
	switch typ {
	case gguf.TypeF32:
		for i, v := range randFloats(rng, n, special, special) {
			binary.LittleEndian.PutUint32(row[4*i:], math.Float32bits(v))
		}
		return row
	case gguf.TypeF16, gguf.TypeBF16:
		for i := range n {
			h := uint16(rng.Uint32())
			if !special { // keep finite: exponent field below all-ones
				for isNonFinite16(typ, h) {
					h = uint16(rng.Uint32())
				}
			}
			binary.LittleEndian.PutUint16(row[2*i:], h)
		}
		return row
	}
	if quant.QuantizeSupported(typ) && rng.IntN(2) == 0 {
		w := randFloats(rng, n, false, false)
		if err := quant.Quantize(typ, w, row); err != nil {
			panic(err)
		}
		return row
	}
	for i := range row {
		row[i] = byte(rng.Uint32())
	}
	bs := typ.BlockBytes()
	for b := 0; b < len(row); b += bs {
		for _, off := range scaleOffsets(typ) {
			binary.LittleEndian.PutUint16(row[b+off:], randHalf(rng, special))
		}
	}
	return row
}

func isNonFinite16(typ gguf.Type, h uint16) bool {
	if typ == gguf.TypeF16 {
		return h&0x7c00 == 0x7c00
	}
	return h&0x7f80 == 0x7f80
}

// scaleOffsets are the byte offsets of a block's f16 scale fields.
func scaleOffsets(typ gguf.Type) []int {
	switch typ {
	case gguf.TypeQ8_0:
		return []int{0}
	case gguf.TypeQ4_K, gguf.TypeQ5_K:
		return []int{0, 2}
	case gguf.TypeQ6_K:
		return []int{208}
	}
	return nil
}

// randHalf returns a random f16 scale: a positive normal of modest size, or with special set
// sometimes zero, a subnormal, a negative value, an infinity or a NaN.
func randHalf(rng *rand.Rand, special bool) uint16 {
	if special && rng.IntN(6) == 0 {
		return []uint16{0, 0x8000, 0x0001, 0x03ff, 0xbc00, 0x7c00, 0xfc00, 0x7e00, 0x7bff}[rng.IntN(9)]
	}
	// exponent 5..20 (2^-10 .. 2^5), random mantissa, positive
	return uint16(5+rng.IntN(16))<<10 | uint16(rng.IntN(1024))
}

// dequantRow dequantizes a row with package quant, the reference decoder checked against ggml.
func dequantRow(typ gguf.Type, row []byte, n int) []float32 {
	w := make([]float32, n)
	if err := quant.Dequantize(typ, row, w); err != nil {
		panic(err)
	}
	return w
}

// rowDots are the row dots under test, by type (Q4_K and Q6_K excepted: their definitions are
// not float dots; see preparedDots).
var rowDots = map[gguf.Type]func(row []byte, x []float32) float32{
	gguf.TypeF32:  dotRowF32,
	gguf.TypeF16:  dotRowF16,
	gguf.TypeBF16: dotRowBF16,
	gguf.TypeQ8_0: dotRowQ8_0,
	gguf.TypeQ5_K: dotRowQ5K,
}

// preparedDots are the definitions in exact integers, on a prepared input, by type.
var preparedDots = map[gguf.Type]func(row []byte, in *q4KInput) float32{
	gguf.TypeQ4_K: dotQ4K,
	gguf.TypeQ6_K: dotQ6K,
}

// counts gathers the results of a check: how many it compared, how many differ, and the first
// difference.
type counts struct {
	checked, bad int
	first        string
}

// add adds the results of another check.
func (c *counts) add(checked, bad int, first string) {
	c.checked += checked
	if c.bad == 0 && bad > 0 {
		c.first = first
	}
	c.bad += bad
}

// note counts one comparison of got with want, bit for bit; describe gives the text of the
// first difference.
func (c *counts) note(got, want float32, describe func() string) {
	c.checked++
	if !sameBits(got, want) {
		if c.bad == 0 {
			c.first = describe()
		}
		c.bad++
	}
}

// noteSlices counts one comparison of the vectors got and want, element by element, bit for bit:
// a difference anywhere is one difference; describe(i) gives the text of the first, at
// element i.
func (c *counts) noteSlices(got, want []float32, describe func(i int) string) {
	c.checked++
	for i := range got {
		if !sameBits(got[i], want[i]) {
			if c.bad == 0 {
				c.first = describe(i)
			}
			c.bad++
			return
		}
	}
}

// result returns the counts as a check returns them.
func (c *counts) result() (checked, bad int, first string) { return c.checked, c.bad, c.first }

// testPool returns a pool of threads workers, closed when tb's test ends.
func testPool(tb testing.TB, threads int) *Pool {
	p := NewPool(threads)
	tb.Cleanup(p.Close)
	return p
}

// expectAgree logs how many results a check compared and how many differ (logFormat takes
// checked and bad), and fails t where any differ (failFormat takes bad, checked and first).
func expectAgree(t *testing.T, checked, bad int, first, logFormat, failFormat string) {
	t.Helper()
	t.Logf(logFormat, checked, bad)
	if bad != 0 {
		t.Errorf(failFormat, bad, checked, first)
	}
}

// compareOutputs compares got, a rows kernel's outputs of rows rows for ntok tokens (dst's
// layout), with want(r, t) bit for bit, token by token; the first difference reads where(r, t)
// and then ": got <g>, <ref> <want>".
func compareOutputs(c *counts, got []float32, rows, ntok int, want func(r, t int) float32, ref string, where func(r, t int) string) {
	for t := range ntok {
		for r := range rows {
			g, w := got[t*rows+r], want(r, t)
			c.note(g, w, func() string { return fmt.Sprintf("%s: got %g, %s %g", where(r, t), g, ref, w) })
		}
	}
}

// preparedBatch returns a batch of the ntok rows of cols floats in x, prepared for Q4_K and
// Q6_K on one thread.
func preparedBatch(tb testing.TB, x []float32, ntok, cols int) *Batch {
	tb.Helper()
	in := new(Batch)
	if err := in.Set(x, ntok, cols); err != nil {
		tb.Fatal(err)
	}
	p := NewPool(1)
	defer p.Close()
	if err := in.prepareAll(p); err != nil {
		tb.Fatal(err)
	}
	return in
}

// needSIMD returns the usable SIMD tiers, and skips the test or benchmark where there are none.
func needSIMD(tb testing.TB) []*simdTier {
	tb.Helper()
	tiers := usableSIMD()
	if len(tiers) == 0 {
		tb.Skip("no SIMD tier on this CPU")
	}
	return tiers
}

// tiersWith returns the usable SIMD tiers that have a kernel (has tells, kernel names it), fails
// the test if an AVX-512 tier lacks it, and skips the test where no tier has it.
func tiersWith(t *testing.T, kernel string, has func(a *asmKernels) bool) []*simdTier {
	var tiers []*simdTier
	for _, st := range usableSIMD() {
		switch {
		case has(&st.asm):
			tiers = append(tiers, st)
		case st.name != "avx2":
			t.Errorf("%s: no %s", st.name, kernel)
		}
	}
	if len(tiers) == 0 {
		t.Skip("no SIMD tier with a " + kernel + " on this CPU")
	}
	return tiers
}

// runPieces hands the pieces 0 to pieces-1 out in order to workers goroutines and waits for
// them: each goroutine runs its pieces through the func newWorker returns it (made once a
// goroutine, so that it can hold the goroutine's own memory).
func runPieces(workers, pieces int, newWorker func() func(piece int)) {
	var mu sync.Mutex
	next := 0
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			run := newWorker()
			for {
				mu.Lock()
				piece := next
				next++
				mu.Unlock()
				if piece >= pieces {
					return
				}
				run(piece)
			}
		})
	}
	wg.Wait()
}

// exhaustiveCheck is what checkEveryFloat32 found.
type exhaustiveCheck struct {
	checked, slow, mismatched uint64
	mismatches                []string // the first ten of each piece
	undecided                 []uint32 // the arguments the fast path leaves to the table, sorted
	workers                   int
	took                      time.Duration
}

// checkEveryFloat32 compares f (called name in its messages) with ref (which also says whether it needed its slow,
// high-precision path) on every non-NaN float32 whose bits lie in [lo, hi), in pieces on all
// cores, and collects the arguments decides says the float64 path cannot round: the exhaustive
// proofs of Exp and Log32.
func checkEveryFloat32(name string, lo, hi uint64, f func(float32) float32, ref func(float32) (float32, bool), decides func(float32) bool) exhaustiveCheck {
	start := time.Now()
	r := exhaustiveCheck{workers: runtime.NumCPU()}
	var mu sync.Mutex
	runPieces(r.workers, pieces, func() func(piece int) {
		return func(piece int) {
			var c, s, m uint64
			var bad []string
			var und []uint32
			plo := lo + uint64(piece)*(hi-lo)/pieces
			phi := lo + uint64(piece+1)*(hi-lo)/pieces
			for b := plo; b < phi; b++ {
				x := math.Float32frombits(uint32(b))
				if x != x {
					continue
				}
				c++
				got := f(x)
				want, isSlow := ref(x)
				if isSlow {
					s++
				}
				if !sameBits(got, want) {
					m++
					if len(bad) < 10 {
						bad = append(bad, fmt.Sprintf("%s(%g [%#08x]) = %#08x, want %#08x", name, x, uint32(b), math.Float32bits(got), math.Float32bits(want)))
					}
				}
				if !decides(x) {
					und = append(und, uint32(b))
				}
			}
			mu.Lock()
			r.checked += c
			r.slow += s
			r.mismatched += m
			r.mismatches = append(r.mismatches, bad...)
			r.undecided = append(r.undecided, und...)
			mu.Unlock()
		}
	})
	slices.Sort(r.undecided)
	r.took = time.Since(start)
	return r
}
