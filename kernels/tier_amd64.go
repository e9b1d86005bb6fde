package kernels

import "github.com/klauspost/cpuid/v2"

// simdTiers lists the amd64 tiers, slowest first. cpuid checks the OS's saved register state
// (XGETBV) as well as the CPUID bits, so a tier is usable only where its registers work.
func simdTiers() []*simdTier {
	avx2 := asmKernels{
		f32: lanesF32AVX2, f16: lanesF16AVX2, bf16: lanesBF16AVX2,
		q8_0: lanesQ8_0AVX2, q6K: lanesQ6KAVX2,
		sum: sumLanesAVX2, q4K: q4KBlocksAVX2,
	}
	avx512 := asmKernels{
		f32: lanesF32AVX512, f16: lanesF16AVX512, bf16: lanesBF16AVX512,
		q8_0: lanesQ8_0AVX512, q6K: lanesQ6KAVX512,
		sum: sumLanesAVX512, q4K: q4KBlocksAVX512,
	}
	vnni := avx512
	vnni.q4K = q4KBlocksAVX512VNNI
	hasAVX2 := func() bool { return cpuid.CPU.Supports(cpuid.AVX2, cpuid.F16C) }
	hasAVX512 := func() bool {
		return hasAVX2() && cpuid.CPU.Supports(cpuid.AVX512F, cpuid.AVX512BW, cpuid.AVX512VL, cpuid.AVX512DQ)
	}
	return []*simdTier{
		{name: "avx2", usable: hasAVX2, asm: avx2},
		{name: "avx512", usable: hasAVX512, asm: avx512},
		{name: "avx512vnni", usable: func() bool {
			return hasAVX512() && cpuid.CPU.Supports(cpuid.AVX512VNNI, cpuid.AVX512VBMI)
		}, asm: vnni},
	}
}
