//go:build !linux

package kernels

// threadCPUTime is not measured off Linux: the benchmark then reports wall time only.
func threadCPUTime() int64 { return 0 }
