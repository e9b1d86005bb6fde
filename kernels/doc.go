// Package kernels holds the numeric kernels: the scalar definitions that fix every output bit,
// the dispatch table (Tier) whose SIMD tiers (avx2, avx512, avx512vnni) reproduce them bit for
// bit, chosen once at start by Best from the CPU's features (capped by TROCHILUS_CPU_MAX), and
// the worker pool that splits matrix products over cores.
//
// # The contract
//
// The scalar functions in this package are the definition of every number the engine
// computes; docs/NUMERICS.md explains each one. In short:
//
//   - Every reduction (dot product, sum of squares, softmax sum, attention output) runs 16
//     float32 accumulators: element k goes to lane k mod 16, lanes start at +0 and take their
//     elements in increasing k, and the lanes are joined by the fixed tree
//     ((l0+l1)+(l2+l3))+((l4+l5)+(l6+l7)) + ((l8+l9)+(l10+l11))+((l12+l13)+(l14+l15)).
//   - A quantized weight is first dequantized to its own float32 value; then lane += w·x with the
//     product rounded to float32 before the add (never a fused multiply-add).
//   - Q4_K rows are not float dots: they follow the exact-integer definition of dotQ4K.
//   - Work is split over threads by output rows (or tokens), never inside a reduction, so the
//     thread count never changes a bit.
//   - Exp is the correctly rounded float32 exponential.
//
// Go may fuse x*y+z into one FMA instruction (arm64, amd64 at GOAMD64=v3). Every product in
// this package that must round on its own is written float32(x*y) (or float64(x*y)), which the
// language forbids fusing.
//
// # Preconditions
//
// Kernels do not validate shapes in their inner loops: a weight row is a whole number of blocks
// and an input row holds as many floats as the weight row has elements. Matrix.Validate and
// Tier.MatMul check this once per call, and the engine checks tensor shapes at load time, so a
// malformed file is an error there, never a panic here.
package kernels
