// Package machine describes the computer the engine runs on: the processor (brand, cores, the
// SIMD features the kernels can use, caches) and the memory (total and available RAM).
//
// A Profile is a snapshot taken by Probe. The engine reads it to size its thread pool and its
// RAM plan; `trochilus cpu` prints it. The kernels choose their own tier from CPUID; the
// feature list here is for people and for plans, not for dispatch.
package machine

import (
	"context"
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"

	"github.com/trochilus-llm/trochilus/gpu"
	"github.com/trochilus-llm/trochilus/internal/units"

	"github.com/klauspost/cpuid/v2"
)

// Profile is what Probe found. Sizes are in bytes; a count or size that could not be learned
// is 0.
type Profile struct {
	OS   string // runtime.GOOS
	Arch string // runtime.GOARCH

	CPU           string // the brand string the processor reports
	Vendor        string // e.g. "AMD", "Intel", "ARM"
	PhysicalCores int    // cores, not counting SMT siblings
	LogicalCores  int    // hardware threads the machine has
	UsableCPUs    int    // logical CPUs this process may run on (affinity, cgroups)
	Hypervisor    string // the hypervisor the processor reports, "" on bare metal
	BaseHz        int64  // base clock, if the processor reports it
	BoostHz       int64  // highest clock, if the processor reports it

	L1D, L2, L3 int // data cache sizes as the processor reports them

	Features Features

	RAMTotal     uint64 // physical memory
	RAMAvailable uint64 // memory that can be had without swapping (Linux MemAvailable)
	// RAMCgroup: a memory cgroup holds this process to less than the machine has, and the
	// two figures above are its limit and what is left under it (see RAM).
	RAMCgroup bool

	GPUs      []gpu.Device // NVIDIA GPUs the CUDA driver sees
	CUDA      string       // the CUDA version the driver supports, "" without one
	GPUStatus string       // why there is no GPU, when there is none ("no CUDA driver: ...")
}

// Features are the instruction-set extensions relevant to the kernels. On x86 the AVX-512
// flags matter only where the operating system saves the wide registers, which cpuid checks.
type Features struct {
	// x86
	AVX2       bool
	FMA        bool // FMA3
	F16C       bool
	AVX512F    bool
	AVX512BW   bool
	AVX512VL   bool
	AVX512DQ   bool
	AVX512VNNI bool
	AVX512VBMI bool
	AVX512BF16 bool
	AVXVNNI    bool // the VEX-encoded VNNI of processors without AVX-512

	// arm64
	ASIMD   bool // NEON
	ASIMDHP bool // half-precision arithmetic
	ASIMDDP bool // int8 dot product (SDOT/UDOT)
	SVE     bool
}

// Names lists the features present, in a fixed order, by their usual names.
func (f Features) Names() []string {
	all := []struct {
		on   bool
		name string
	}{
		{f.AVX2, "AVX2"}, {f.FMA, "FMA"}, {f.F16C, "F16C"},
		{f.AVX512F, "AVX512F"}, {f.AVX512BW, "AVX512BW"}, {f.AVX512VL, "AVX512VL"},
		{f.AVX512DQ, "AVX512DQ"}, {f.AVX512VNNI, "AVX512VNNI"}, {f.AVX512VBMI, "AVX512VBMI"},
		{f.AVX512BF16, "AVX512BF16"}, {f.AVXVNNI, "AVXVNNI"},
		{f.ASIMD, "ASIMD"}, {f.ASIMDHP, "ASIMDHP"}, {f.ASIMDDP, "ASIMDDP"}, {f.SVE, "SVE"},
	}
	var names []string
	for _, x := range all {
		if x.on {
			names = append(names, x.name)
		}
	}
	return names
}

// Probe takes a snapshot of this machine. The processor's brand, features and caches come from
// CPUID; core counts and memory come from the operating system. Failing to read the memory size
// is an error, since the engine's RAM guard cannot work without it.
func Probe(ctx context.Context) (Profile, error) {
	id := cpuid.CPU
	p := Profile{
		OS:         runtime.GOOS,
		Arch:       runtime.GOARCH,
		CPU:        strings.TrimSpace(id.BrandName),
		Vendor:     id.VendorID.String(),
		UsableCPUs: runtime.NumCPU(),
		BaseHz:     id.Hz,
		BoostHz:    id.BoostFreq,
		L1D:        max(id.Cache.L1D, 0),
		L2:         max(id.Cache.L2, 0),
		L3:         max(id.Cache.L3, 0),
		Features:   features(id),
	}
	if id.HypervisorVendorID != cpuid.VendorUnknown {
		p.Hypervisor = id.HypervisorVendorID.String()
	} else if id.Supports(cpuid.HYPERVISOR) {
		p.Hypervisor = "unknown"
	}
	if p.Vendor == cpuid.VendorUnknown.String() {
		p.Vendor = ""
	}

	// The operating system's counts are the authority on what exists; CPUID's topology is often
	// wrong under a hypervisor (a 2-core virtual machine can report 254 cores), so it is only
	// the fallback.
	phys, logical := osCores()
	p.PhysicalCores, p.LogicalCores = phys, logical
	if p.LogicalCores <= 0 {
		p.LogicalCores = min(max(id.LogicalCores, 0), p.UsableCPUs)
	}
	if p.LogicalCores < p.UsableCPUs {
		p.LogicalCores = p.UsableCPUs
	}
	if p.PhysicalCores <= 0 {
		p.PhysicalCores = max(id.PhysicalCores, 0)
		if tpc := id.ThreadsPerCore; tpc > 1 && p.LogicalCores/tpc < p.PhysicalCores {
			p.PhysicalCores = p.LogicalCores / tpc
		}
	}
	if p.PhysicalCores <= 0 || p.PhysicalCores > p.LogicalCores {
		p.PhysicalCores = p.LogicalCores
	}

	mem, err := ReadMemory(ctx)
	if err != nil {
		return p, err
	}
	p.RAMTotal, p.RAMAvailable, p.RAMCgroup = mem.Total, mem.Available, mem.Cgroup

	// A missing or broken driver is a fact about the machine, not a failure to probe it.
	if p.GPUs, p.CUDA, err = gpu.Probe(); err != nil {
		p.GPUs, p.GPUStatus = nil, err.Error()
	} else if len(p.GPUs) == 0 {
		p.GPUStatus = "the CUDA driver sees no GPU"
	}
	return p, nil
}

func features(id cpuid.CPUInfo) Features {
	return Features{
		AVX2:       id.Supports(cpuid.AVX2),
		FMA:        id.Supports(cpuid.FMA3),
		F16C:       id.Supports(cpuid.F16C),
		AVX512F:    id.Supports(cpuid.AVX512F),
		AVX512BW:   id.Supports(cpuid.AVX512BW),
		AVX512VL:   id.Supports(cpuid.AVX512VL),
		AVX512DQ:   id.Supports(cpuid.AVX512DQ),
		AVX512VNNI: id.Supports(cpuid.AVX512VNNI),
		AVX512VBMI: id.Supports(cpuid.AVX512VBMI),
		AVX512BF16: id.Supports(cpuid.AVX512BF16),
		AVXVNNI:    id.Supports(cpuid.AVXVNNI),
		ASIMD:      id.Supports(cpuid.ASIMD),
		ASIMDHP:    id.Supports(cpuid.ASIMDHP),
		ASIMDDP:    id.Supports(cpuid.ASIMDDP),
		SVE:        id.Supports(cpuid.SVE),
	}
}

// Write prints the profile as aligned "label: value" lines, for people.
func (p Profile) Write(w io.Writer) error {
	cpuName := p.CPU
	if cpuName == "" {
		cpuName = "unknown"
	}
	if p.Vendor != "" && !strings.Contains(strings.ToLower(cpuName), strings.ToLower(p.Vendor)) {
		cpuName += " (" + p.Vendor + ")"
	}
	feats := strings.Join(p.Features.Names(), " ")
	if feats == "" {
		feats = "none of interest"
	}
	lines := [][2]string{
		{"system", p.OS + "/" + p.Arch},
		{"cpu", cpuName},
		{"cores", fmt.Sprintf("%d physical, %d logical, %d usable by this process", p.PhysicalCores, p.LogicalCores, p.UsableCPUs)},
	}
	if p.BaseHz > 0 || p.BoostHz > 0 {
		lines = append(lines, [2]string{"clock", fmt.Sprintf("base %s, boost %s", hz(p.BaseHz), hz(p.BoostHz))})
	}
	var caches []string
	for _, c := range []struct {
		name string
		size int
	}{{"L1d", p.L1D}, {"L2", p.L2}, {"L3", p.L3}} {
		if c.size > 0 {
			caches = append(caches, c.name+" "+units.Bytes(c.size))
		}
	}
	if len(caches) > 0 {
		lines = append(lines, [2]string{"caches", strings.Join(caches, ", ")})
	}
	lines = append(lines, [2]string{"simd", feats})
	if p.Hypervisor != "" {
		lines = append(lines, [2]string{"hypervisor", p.Hypervisor})
	}
	ramLine := fmt.Sprintf("%s total, %s available", units.Bytes(p.RAMTotal), units.Bytes(p.RAMAvailable))
	if p.RAMCgroup {
		ramLine += " (the limit of this process's memory cgroup)"
	}
	lines = append(lines, [2]string{"ram", ramLine})
	for _, g := range p.GPUs {
		lines = append(lines, [2]string{"gpu", fmt.Sprintf("%v, CUDA %s", g, p.CUDA)})
	}
	if len(p.GPUs) == 0 {
		none := "none"
		if p.GPUStatus != "" {
			none += " (" + p.GPUStatus + ")"
		}
		lines = append(lines, [2]string{"gpu", none})
	}
	for _, l := range lines {
		if _, err := fmt.Fprintf(w, "%-11s %s\n", l[0]+":", l[1]); err != nil {
			return err
		}
	}
	return nil
}

// String returns what Write prints.
func (p Profile) String() string {
	var b strings.Builder
	_ = p.Write(&b) // a strings.Builder does not fail
	return b.String()
}

func hz(v int64) string {
	if v <= 0 {
		return "unknown"
	}
	return fmt.Sprintf("%.2f GHz", float64(v)/1e9)
}

// Memory is the RAM this process has now, as RAM reads it.
type Memory struct {
	Total, Available uint64
	// Cgroup: a memory cgroup holds this process to less than the machine has, and Total and
	// Available are its limit and what is left under it.
	Cgroup bool
}

// Reserve returns what a load must leave free: ReserveFor(m.Total, m.Cgroup).
func (m Memory) Reserve() uint64 { return ReserveFor(m.Total, m.Cgroup) }

// ReadMemory returns the machine's physical memory and the part of it that can be had now
// without swapping (on Linux MemAvailable, which counts the page cache the kernel can drop) —
// and where a memory cgroup holds this process to less (a container, a systemd slice, an
// emulated smaller machine), the cgroup's limit and what is left under it: the machine the
// process really has, past which the kernel kills it.
func ReadMemory(ctx context.Context) (Memory, error) {
	total, available, err := ram(ctx)
	if err != nil {
		return Memory{}, fmt.Errorf("machine: reading memory size: %w", err)
	}
	m := Memory{Total: total, Available: available}
	if limit, left, ok := cgroupMemory(os.DirFS("/")); ok {
		// A limit at or above the machine's RAM holds nothing back: the machine's rule stays.
		m.Cgroup = limit < total
		m.Total, m.Available = min(total, limit), min(available, left)
	}
	return m, nil
}

// RAM returns ReadMemory's total and available bytes.
func RAM(ctx context.Context) (total, available uint64, err error) {
	m, err := ReadMemory(ctx)
	return m.Total, m.Available, err
}

// Reserve returns the RAM a load must leave free on a machine of total bytes for the rest of
// the system (the desktop, a browser, the page cache other programs run from), which shares
// that RAM with the engine: the larger of 2 GiB and a tenth of it.
func Reserve(total uint64) uint64 { return max(2<<30, total/10) }

// CgroupReserve returns the RAM a load must leave free inside a memory cgroup of limit bytes.
// There the rest of the system is outside the limit (whoever set it left room for it), so the
// reserve covers only what this process itself takes beside the plan's weights and sessions:
//   - the binary, the Go runtime and the tokenizer: about 18 MiB (measured: `trochilus
//     generate`'s peak RSS was 32.2 MiB on a 50,304-token model whose plan is 14.5 MiB);
//   - kernels.Batch's preparation of a product's input rows, which the plan does not count:
//     about 110 MiB at a pass of 512 tokens for Qwen3-30B-A3B;
//   - the page tables of the file's mapping, 8 bytes for each 4 KiB page touched: 32 MiB
//     for the whole of a 17.3 GB file mapped;
//   - room for the page cache of buffered reads (where O_DIRECT is refused), which the
//     kernel reclaims under the limit but must have some of to read at all.
//
// Those are about 160 MiB at the largest model the planner serves; cgroupReserveFloor is
// 256 MiB with the rest as margin. On top, a 32nd of the limit: the Go heap's garbage between
// collections (GOGC lets it grow up to the live heap again, and the pass buffers the plan
// counts are live heap) grows with the sessions a larger limit holds.
func CgroupReserve(limit uint64) uint64 { return cgroupReserveFloor + limit/32 }

const cgroupReserveFloor = 256 << 20

// ReserveFor returns what a load must leave free with total bytes of RAM: CgroupReserve when
// total is a memory cgroup's limit (Memory.Cgroup, Profile.RAMCgroup), else Reserve.
func ReserveFor(total uint64, cgroup bool) uint64 {
	if cgroup {
		return CgroupReserve(total)
	}
	return Reserve(total)
}

// ReserveRule says which rule ReserveFor applies, in words for a plan's text: e.g. "kept for
// the system: the larger of 2 GiB and a tenth of RAM".
func ReserveRule(cgroup bool) string {
	if cgroup {
		return "kept for this process beside the plan, inside a memory cgroup: 256 MiB and a 32nd of its limit"
	}
	return "kept for the system: the larger of 2 GiB and a tenth of RAM"
}

// Reserve returns what a load must leave free on this profile's machine (ReserveFor).
func (p Profile) Reserve() uint64 { return ReserveFor(p.RAMTotal, p.RAMCgroup) }
