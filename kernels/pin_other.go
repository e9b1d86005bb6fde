//go:build !linux

package kernels

// coreBinder binds nothing off Linux: the workers run where the scheduler puts them.
func coreBinder() func(id int) { return nil }
