package kernels

import "github.com/klauspost/cpuid/v2"

// simdTiers lists the amd64 tiers, slowest first. cpuid checks the OS's saved register state
// (XGETBV) as well as the CPUID bits, so a tier is usable only where its registers work.
func simdTiers() []*simdTier {
	avx2 := asmKernels{
		f32: lanesF32AVX2, f16: lanesF16AVX2, bf16: lanesBF16AVX2, q8_0: lanesQ8_0AVX2,
		sum: sumLanesAVX2, q4K: q4KDot2AVX2, q4K4: q4KDot4AVX2,
		f32x2: lanes2F32AVX2, f16x2: lanes2F16AVX2, bf16x2: lanes2BF16AVX2, q8_0x2: lanes2Q8_0AVX2,
		f32x4: lanes4F32AVX2, f16x4: lanes4F16AVX2, bf16x4: lanes4BF16AVX2, q8_0x4: lanes4Q8_0AVX2,
	}
	avx512 := asmKernels{
		f32: lanesF32AVX512, f16: lanesF16AVX512, bf16: lanesBF16AVX512, q8_0: lanesQ8_0AVX512,
		sum: sumLanesAVX512, q4K: q4KDot2AVX512, q4K4: q4KDot4AVX512, q4K8: q4KDot8AVX512,
		f32x2: lanes2F32AVX512, f16x2: lanes2F16AVX512, bf16x2: lanes2BF16AVX512,
		q8_0x2: lanes2Q8_0AVX512,
		f32x4:  lanes4F32AVX512, f16x4: lanes4F16AVX512, bf16x4: lanes4BF16AVX512,
		q8_0x4: lanes4Q8_0AVX512,
		f32r4:  lanesRows4F32AVX512, f16r4: lanesRows4F16AVX512, bf16r4: lanesRows4BF16AVX512,
		q8_0r4: lanesRows4Q8_0AVX512,
		q4Kr4:  q4KRows4AVX512,
		panel: &panelTiles{
			panelTile1AVX512, panelTile2AVX512, panelTile3AVX512, panelTile4AVX512,
			panelTile5AVX512, panelTile6AVX512, panelTile7AVX512, panelTile8AVX512,
			panelTile9AVX512, panelTile10AVX512, panelTile11AVX512, panelTile12AVX512,
			panelTile13AVX512, panelTile14AVX512, panelTile15AVX512, panelTile16AVX512,
			panelTile17AVX512, panelTile18AVX512, panelTile19AVX512, panelTile20AVX512,
			panelTile21AVX512, panelTile22AVX512, panelTile23AVX512, panelTile24AVX512,
		},
		panelF32: panelRowF32AVX512, panelF16: panelRowF16AVX512, panelBF16: panelRowBF16AVX512,
		panelQ8_0: panelRowQ8_0AVX512, panelPack: panelPackAVX512,
	}
	avx2.q4KPrep, avx512.q4KPrep = q4KPrepAVX2, q4KPrepAVX512
	avx2.q6KPair, avx2.q6KTile4 = q6KPairAVX2, q6KTile4AVX2
	avx2.attendV, avx2.attendW = attendValuesAVX2, 8
	avx512.attendV, avx512.attendW = attendValuesAVX512, 16
	avx2.scores, avx512.scores = attendScoresAVX2, attendScoresAVX512
	for _, a := range []*asmKernels{&avx2, &avx512} {
		a.expShift, a.swiGLU, a.expTab = expShiftAVX2, swiGLUAVX2, expTable()
		a.q6KMemory = newQ6KMemory()
	}
	avx512.q6KTile4, avx512.q6KTile8 = q6KTile4AVX512, q6KTile8AVX512
	avx512.q6KPair, avx512.q6KQuad = q6KPairAVX512, q6KRows4AVX512
	vnni := avx512
	vnni.q6KPair, vnni.q6KQuad = q6KPairAVX512VNNI, q6KRows4AVX512VNNI
	vnni.q6KTile4, vnni.q6KTile8 = q6KTile4AVX512VNNI, q6KTile8AVX512VNNI
	vnni.q6KPanelBuild, vnni.q6KPanel4 = q6KPanelBuildAVX512VNNI, q6KPanel4AVX512VNNI
	vnni.q4K, vnni.q4K4, vnni.q4K8 = q4KDot2AVX512VNNI, q4KDot4AVX512VNNI, q4KDot8AVX512VNNI
	vnni.q4Kr4 = q4KRows4AVX512VNNI
	vnni.q4KPanelBuild, vnni.q4KPanel4, vnni.q4KPanels = q4KPanelBuildAVX512VNNI, q4KPanel4AVX512VNNI, newQ4KPanels()
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
