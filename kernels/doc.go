// Package kernels holds the numeric kernels: the scalar definitions that fix every output bit, the SIMD tiers that reproduce them, the dispatch table chosen at start and the worker pool.
package kernels
