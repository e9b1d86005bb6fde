//go:build !amd64

package kernels

// simdTiers lists no SIMD tiers off amd64: the scalar definitions run everywhere else.
func simdTiers() []*simdTier { return nil }
