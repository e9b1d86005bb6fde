package machine

import "golang.org/x/sys/unix"

// osCores asks the kernel's sysctls; either count is 0 when it does not say.
func osCores() (physical, logical int) {
	p, err1 := unix.SysctlUint32("hw.physicalcpu")
	l, err2 := unix.SysctlUint32("hw.logicalcpu")
	if err1 != nil {
		p = 0
	}
	if err2 != nil {
		l = 0
	}
	return int(p), int(l)
}
