package kernels

//go:generate go run ./internal/asmgen -out kernels_amd64.s -stubs kernels_stubs_amd64.go -pkg kernels

import (
	"fmt"
	"os"
	"strings"
)

// CPUMaxEnv names the environment variable that caps the tier Best hands out: one of
// TierNames. Tests and benchmarks use it to run a slower tier on a faster CPU.
const CPUMaxEnv = "TROCHILUS_CPU_MAX"

// TierNames lists the tiers from slowest to fastest. A tier needs every CPU feature of the ones
// before it and more:
//
//	scalar      the portable definitions (every CPU and architecture)
//	avx2        amd64 with AVX2 and F16C
//	avx512      amd64 with AVX-512 F, BW, VL and DQ (and AVX2, F16C)
//	avx512vnni  avx512 with VNNI and VBMI: the Q4_K dot takes VPDPWSSD
func TierNames() []string { return []string{"scalar", "avx2", "avx512", "avx512vnni"} }

// tierLevel returns the position of a tier name in TierNames, or -1.
func tierLevel(name string) int {
	for i, n := range TierNames() {
		if n == name {
			return i
		}
	}
	return -1
}

// Tiers returns the tiers this CPU can run, slowest (scalar) first, fastest last, each built
// afresh. It ignores the cap.
func Tiers() []*Tier {
	tiers := []*Tier{Scalar()}
	for _, s := range simdTiers() {
		if s.usable() {
			tiers = append(tiers, s.tier())
		}
	}
	return tiers
}

// Best returns the fastest tier this CPU can run, capped by the environment variable
// TROCHILUS_CPU_MAX when it is set. An unknown value is an error, never ignored.
func Best() (*Tier, error) {
	t, err := BestUpTo(os.Getenv(CPUMaxEnv))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", CPUMaxEnv, err)
	}
	return t, nil
}

// BestUpTo returns the fastest tier this CPU can run that is not above the named one (""
// means no cap). Naming a tier the CPU lacks gives the best one below it.
func BestUpTo(limit string) (*Tier, error) {
	tiers := Tiers()
	if limit == "" {
		return tiers[len(tiers)-1], nil
	}
	lvl := tierLevel(limit)
	if lvl < 0 {
		return nil, fmt.Errorf("kernels: unknown tier %q (want one of %s)", limit, strings.Join(TierNames(), ", "))
	}
	best := tiers[0]
	for _, t := range tiers {
		if tierLevel(t.Name) <= lvl {
			best = t
		}
	}
	return best, nil
}

// simdTier describes one SIMD tier: its name, whether the CPU can run it, and the vector
// kernels (asmKernels) everything it accelerates goes through.
type simdTier struct {
	name   string
	usable func() bool
	asm    asmKernels
}

// asmKernels are the vector inner loops of a tier. The lanes kernels continue the 16 contract
// lanes l over the whole units of a weight row w (a group of 16 floats or halves, a Q8_0 or Q6_K
// block) against x; sum adds whole groups of 16 values; q4K writes the exact integer T of each
// Q4_K block (see DotQ4K) given the unpacked sub-block scales, 8 per block. Each must leave bits
// exactly where the scalar definition does; the Go around them handles tails and the join.
type asmKernels struct {
	f32, f16, bf16, q8_0, q6K func(l *[16]float32, w []byte, x []float32)
	sum                       func(l *[16]float32, v []float32)
	q4K                       func(t []int64, w []byte, x []int32, sc []uint32)
}

// tier builds the dispatch table of s. Every entry a SIMD tier accelerates routes through
// s.asm; TestTierKernelsCount checks that by counting the products the asm kernels compute.
func (s *simdTier) tier() *Tier {
	a := &s.asm
	return &Tier{
		Name:    s.name,
		DotF32:  a.dotF32,
		RMSNorm: a.rmsNorm,
		Softmax: a.softmax,
		SwiGLU:  SwiGLU, // not vectorized yet: it is bound by Exp
		Attend:  a.attend,
		F32:     floatRows(a.dotRowF32),
		F16:     floatRows(a.dotRowF16),
		BF16:    floatRows(a.dotRowBF16),
		Q8_0:    floatRows(a.dotRowQ8_0),
		Q4K:     q4KRowsBy(a.dotQ4K),
		Q5K:     floatRows(a.dotRowQ5K),
		Q6K:     floatRows(a.dotRowQ6K),
	}
}

// q4KRowsBy makes a Q4_K rows kernel from a row dot on the batch's prepared rows.
func q4KRowsBy(dot func(row []byte, in *Q4KInput) float32) RowsKernel {
	return func(dst []float32, m *Matrix, in *Batch, r0, r1 int) {
		for r := r0; r < r1; r++ {
			row := m.Row(r)
			for t := range in.Ntok {
				dst[t*m.Rows+r] = dot(row, &in.q4k[t])
			}
		}
	}
}
