//go:build !windows

package machine

import (
	"context"

	"github.com/shirou/gopsutil/v4/mem"
)

// ram returns the total and available physical memory as gopsutil reads them (on Linux,
// /proc/meminfo's MemTotal and MemAvailable).
func ram(ctx context.Context) (total, available uint64, err error) {
	vm, err := mem.VirtualMemoryWithContext(ctx)
	if err != nil {
		return 0, 0, err
	}
	return vm.Total, vm.Available, nil
}
