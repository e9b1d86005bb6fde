package machine

import (
	"context"
	"fmt"
	"unsafe"

	"golang.org/x/sys/windows"
)

// memoryStatusEx is Windows' MEMORYSTATUSEX.
type memoryStatusEx struct {
	length               uint32
	memoryLoad           uint32
	totalPhys            uint64
	availPhys            uint64
	totalPageFile        uint64
	availPageFile        uint64
	totalVirtual         uint64
	availVirtual         uint64
	availExtendedVirtual uint64
}

// ram calls GlobalMemoryStatusEx directly: gopsutil's Windows code needs modules (WMI) this
// project does not carry, and this one call is all the profile needs.
func ram(ctx context.Context) (total, available uint64, err error) {
	proc := windows.NewLazySystemDLL("kernel32.dll").NewProc("GlobalMemoryStatusEx")
	if err := proc.Find(); err != nil {
		return 0, 0, err
	}
	st := memoryStatusEx{length: uint32(unsafe.Sizeof(memoryStatusEx{}))}
	ok, _, callErr := proc.Call(uintptr(unsafe.Pointer(&st)))
	if ok == 0 {
		return 0, 0, fmt.Errorf("GlobalMemoryStatusEx: %w", callErr)
	}
	return st.totalPhys, st.availPhys, nil
}
