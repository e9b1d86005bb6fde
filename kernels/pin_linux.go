package kernels

import (
	"fmt"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// coreBinder returns a function that binds the calling OS thread of worker id to the id-th
// physical core (all its SMT siblings) among the CPUs this process may run on, or nil when the
// topology cannot be read. Worker 0, the caller, is never bound: core 0 is left to it.
func coreBinder() func(id int) {
	cores, err := physicalCores()
	if err != nil || len(cores) < 2 {
		return nil
	}
	return func(id int) {
		var set unix.CPUSet
		for _, cpu := range cores[id%len(cores)] {
			set.Set(cpu)
		}
		// A failure leaves the thread where the scheduler put it: slower at worst, never wrong.
		_ = unix.SchedSetaffinity(0, &set)
	}
}

// physicalCores groups the CPUs of the process's affinity mask by physical core (package and
// core id from sysfs), cores in the order of their lowest CPU.
func physicalCores() ([][]int, error) {
	var allowed unix.CPUSet
	if err := unix.SchedGetaffinity(0, &allowed); err != nil {
		return nil, fmt.Errorf("kernels: reading the CPU affinity: %w", err)
	}
	index := map[[2]int]int{}
	var cores [][]int
	for cpu := range 1024 {
		if !allowed.IsSet(cpu) {
			continue
		}
		pkg, err := readTopology(cpu, "physical_package_id")
		if err != nil {
			return nil, err
		}
		core, err := readTopology(cpu, "core_id")
		if err != nil {
			return nil, err
		}
		key := [2]int{pkg, core}
		i, ok := index[key]
		if !ok {
			i = len(cores)
			index[key] = i
			cores = append(cores, nil)
		}
		cores[i] = append(cores[i], cpu)
	}
	return cores, nil
}

func readTopology(cpu int, name string) (int, error) {
	path := fmt.Sprintf("/sys/devices/system/cpu/cpu%d/topology/%s", cpu, name)
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, fmt.Errorf("kernels: CPU topology: %w", err)
	}
	v, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		return 0, fmt.Errorf("kernels: CPU topology %s: %w", path, err)
	}
	return v, nil
}
