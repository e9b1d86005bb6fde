//go:build !linux && !darwin

package machine

// osCores has no operating-system source here; Probe falls back to CPUID and the runtime.
func osCores() (physical, logical int) { return 0, 0 }
