package machine

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// osCores counts the online CPUs Linux lists in sysfs and the distinct (package, core) pairs
// among them. Either is 0 when sysfs does not say.
func osCores() (physical, logical int) {
	online, err := os.ReadFile("/sys/devices/system/cpu/online")
	if err != nil {
		return 0, 0
	}
	cpus, ok := parseCPUList(strings.TrimSpace(string(online)))
	if !ok {
		return 0, 0
	}
	type core struct{ pkg, id string }
	seen := make(map[core]bool)
	for _, c := range cpus {
		dir := filepath.Join("/sys/devices/system/cpu", "cpu"+strconv.Itoa(c), "topology")
		pkg, err1 := os.ReadFile(filepath.Join(dir, "physical_package_id"))
		id, err2 := os.ReadFile(filepath.Join(dir, "core_id"))
		if err1 != nil || err2 != nil {
			return 0, len(cpus)
		}
		seen[core{strings.TrimSpace(string(pkg)), strings.TrimSpace(string(id))}] = true
	}
	return len(seen), len(cpus)
}

// parseCPUList reads the kernel's CPU list format ("0-3,8,10-11"). It refuses anything else,
// and lists of more than a million CPUs, rather than guess.
func parseCPUList(s string) ([]int, bool) {
	const limit = 1 << 20
	var cpus []int
	for _, part := range strings.Split(s, ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := strconv.Atoi(lo)
		if err != nil || a < 0 {
			return nil, false
		}
		b := a
		if isRange {
			if b, err = strconv.Atoi(hi); err != nil || b < a {
				return nil, false
			}
		}
		if b-a >= limit-len(cpus) {
			return nil, false
		}
		for c := a; c <= b; c++ {
			cpus = append(cpus, c)
		}
	}
	return cpus, len(cpus) > 0
}
