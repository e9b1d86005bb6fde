package kernels

import (
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// The kernels of a tier may use only the instructions of the CPU features that the tier's
// usable check (simdTiers) asks for: an instruction beyond them dies with SIGILL on a CPU that
// passes the check without having it. The tiers are told apart by the function names' suffix:
//
//	AVX2        AVX2, FMA, F16C, BMI1/2: VEX encodings only (no zmm, no opmask, no register
//	            above 15, no EVEX-only instruction)
//	AVX512      the above and AVX-512 F, BW, VL, DQ, CD: Skylake-X to Cooper Lake have these
//	            and none of the later extensions (VBMI's VPERMB above all)
//	AVX512VNNI  the above and AVX-512 VBMI and VNNI, which the avx512vnni tier checks
//
// The x86-64 baseline (CMOV, SSE, SSE2, the prefetches) is allowed everywhere.

// asmInst is one instruction line of a TEXT block: its line number in the file, its mnemonic
// (with any Go suffix such as .Z or .BCST) and the whole line.
type asmInst struct {
	line int
	op   string
	text string
}

// asmFunc is one TEXT block of an assembly file, from its TEXT line up to the next: the
// function's name, the extensions avo's "// Requires:" comment above it lists and its
// instructions.
type asmFunc struct {
	name     string
	requires []string
	insts    []asmInst
}

// parseAsmFuncs splits Go assembly into its TEXT blocks. Comments, labels and the directives
// before the first TEXT (DATA, GLOBL, #include) are not instructions.
func parseAsmFuncs(src string) []asmFunc {
	var funcs []asmFunc
	var requires []string // from the comment above the next TEXT
	label := regexp.MustCompile(`^\w+:$`)
	for i, line := range strings.Split(src, "\n") {
		text := strings.TrimSpace(line)
		if r, ok := strings.CutPrefix(text, "// Requires:"); ok {
			requires = strings.Split(strings.ReplaceAll(r, " ", ""), ",")
			continue
		}
		if rest, ok := strings.CutPrefix(text, "TEXT "); ok {
			name, _, _ := strings.Cut(rest, "(SB)")
			funcs = append(funcs, asmFunc{name: strings.TrimPrefix(name, "·"), requires: requires})
			requires = nil
			continue
		}
		if len(funcs) == 0 || text == "" || strings.HasPrefix(text, "//") || label.MatchString(text) {
			continue
		}
		op, _, _ := strings.Cut(text, " ")
		op, _, _ = strings.Cut(op, "\t")
		f := &funcs[len(funcs)-1]
		f.insts = append(f.insts, asmInst{line: i + 1, op: op, text: text})
	}
	return funcs
}

// asmExtensions names the extensions beyond AVX-512 F/BW/VL/DQ/CD (and AVX2, FMA, F16C, BMI)
// by the mnemonics that need them, in avo's names where avo has one; the first match counts.
// It is not every instruction there is: the Requires check below, which takes avo's own
// instruction tables, backs it for whatever it misses.
var asmExtensions = []struct {
	ext string
	re  *regexp.Regexp
}{
	{"AVX512VBMI", regexp.MustCompile(`^(VPERMB|VPERMI2B|VPERMT2B|VPMULTISHIFTQB)$`)},
	{"AVX512VBMI2", regexp.MustCompile(`^(VP(COMPRESS|EXPAND)[BW]|VPSH[LR]DV?[WDQ])$`)},
	{"AVX512_VNNI", regexp.MustCompile(`^VPDP(BUSD|WSSD)S?$`)},
	{"AVX-VNNI-INT8/INT16", regexp.MustCompile(`^VPDP(B[SU][SU]|W[SU][SU])DS?$`)},
	{"AVX512BITALG", regexp.MustCompile(`^(VPOPCNT[BW]|VPSHUFBITQMB)$`)},
	{"AVX512VPOPCNTDQ", regexp.MustCompile(`^VPOPCNT[DQ]$`)},
	{"AVX512IFMA", regexp.MustCompile(`^VPMADD52[LH]UQ$`)},
	{"AVX512_BF16", regexp.MustCompile(`BF16`)},
	{"AVX512_VP2INTERSECT", regexp.MustCompile(`^VP2INTERSECT[DQ]$`)},
	{"GFNI", regexp.MustCompile(`GF2P8`)},
	{"AES/VAES", regexp.MustCompile(`^V?AES`)},
	{"PCLMULQDQ/VPCLMULQDQ", regexp.MustCompile(`^V?PCLMULQDQ$`)},
	{"SHA", regexp.MustCompile(`^SHA(1|256)`)},
	{"AVX512ER/PF", regexp.MustCompile(`^(VEXP2P[SD]|VRCP28|VRSQRT28|VGATHERPF|VSCATTERPF)`)},
	{"AVX512_4FMAPS/4VNNIW", regexp.MustCompile(`^(V4FN?MADD|VP4DPWSSD)`)},
	{"AMX", regexp.MustCompile(`^(LDTILECFG|STTILECFG|TILE|TDP)`)},
	{"FMA4", regexp.MustCompile(`^VFN?M(ADD|SUB|ADDSUB|SUBADD)[PS][SD]$`)},
	{"XOP", regexp.MustCompile(`^(VPPERM|VPCMOV|VPROT[BWDQ]|VPSH[AL][BWDQ]|VPHADDU?(BW|BD|BQ|WD|WQ|DQ)|VPHSUB(BW|WD|DQ)|VPCOMU?[BWDQ]|VPMA[CD]CS\w*|VFRCZ\w*|VPERMIL2P[SD])$`)},
}

// asmExtension returns the extension of asmExtensions that the mnemonic op needs, or "".
func asmExtension(op string) string {
	op, _, _ = strings.Cut(op, ".") // VPERMB.Z is VPERMB
	// AVX512-FP16's half-precision arithmetic; F16C's two converts are not part of it.
	if op != "VCVTPS2PH" && op != "VCVTPH2PS" && regexp.MustCompile(`^V(\w+(PH|SH)X?|CVTPH2\w+)$`).MatchString(op) {
		return "AVX512_FP16"
	}
	for _, e := range asmExtensions {
		if e.re.MatchString(op) {
			return e.ext
		}
	}
	return ""
}

// evexOnly matches the AVX-512 F/BW/VL/DQ/CD mnemonics that have no VEX encoding, which an
// AVX2 kernel cannot use even on xmm and ymm registers.
var evexOnly = regexp.MustCompile(`^(` + strings.Join([]string{
	`VP(AND|ANDN|OR|XOR)[DQ]`, // VEX has VPAND, VPANDN, VPOR and VPXOR only
	`VMOVDQ[AU](8|16|32|64)`,
	`VPTERNLOG[DQ]`,
	`VPERM(W|[IT]2(W|D|Q|PS|PD))`,
	`VPMOV(U?S)?(DB|DW|QB|QW|QD|WB)`, `VPMOV(M2[BWDQ]|[BWDQ]2M)`,
	`VPCMPU?[BWDQ]`, `VPTESTN?M[BWDQ]`,
	`VPRO[LR]V?[DQ]`, `VPS(LL|RL|RA)VW`, `VPSRAV?Q`,
	`VP(ABS|MAXS|MAXU|MINS|MINU|MULL)Q`,
	`VCVTT?(P[SD]2U?QQ|P[SD]2UDQ|U?QQ2P[SD]|UDQ2P[SD]|S[SD]2USI|USI2S[SD])`,
	`V(RNDSCALE|GETEXP|GETMANT|SCALEF|FIXUPIMM|RANGE|REDUCE|FPCLASS|RCP14|RSQRT14)\w*`,
	`VALIGN[DQ]`, `VP?BLENDM\w+`,
	`V(EXTRACT|INSERT|SHUF|BROADCAST)[IF](32|64)X[248]`,
	`VP(CONFLICT|LZCNT)[DQ]`, `VPBROADCASTM\w+`,
	`VP?(COMPRESS|EXPAND)\w+`, `VDBPSADBW`, `VP?SCATTER\w+`,
	`K(MOV|AND|ANDN|OR|XOR|XNOR|NOT|SHIFTL|SHIFTR|UNPCK|ADD|TEST|ORTEST)\w*`,
}, "|") + `)$`)

// evexSuffix matches the Go assembler's suffixes of EVEX-only forms: zeroing, embedded
// broadcast, rounding and suppressed exceptions.
var evexSuffix = regexp.MustCompile(`\.(Z|BCST|SAE|RN_SAE|RD_SAE|RU_SAE|RZ_SAE)\b`)

// evexRegister matches the registers only EVEX encodings reach: zmm, the opmasks and the
// vector registers 16-31.
var evexRegister = regexp.MustCompile(`\b(Z([0-9]|[12][0-9]|3[01])|K[0-7]|[XY](1[6-9]|2[0-9]|3[01]))\b`)

// asmTier is what the functions of one name suffix may use.
type asmTier struct {
	name     string
	suffix   string
	evex     bool            // EVEX encodings (zmm, opmasks, EVEX-only forms)
	allowed  map[string]bool // the extensions of asmExtensions allowed
	requires map[string]bool // the extensions avo's Requires comment may list
}

func asmTiers() []asmTier {
	set := func(names ...string) map[string]bool {
		m := map[string]bool{}
		for _, n := range names {
			m[n] = true
		}
		return m
	}
	avx2 := []string{"CMOV", "SSE", "SSE2", "MMX+", "AVX", "AVX2", "FMA3", "F16C", "BMI", "BMI2"}
	avx512 := append(slices.Clone(avx2), "AVX512F", "AVX512BW", "AVX512VL", "AVX512DQ", "AVX512CD")
	vnni := append(slices.Clone(avx512), "AVX512VBMI", "AVX512_VNNI")
	// The VNNI suffix first: the others are suffixes of it.
	return []asmTier{
		{name: "avx512vnni", suffix: "AVX512VNNI", evex: true, allowed: set("AVX512VBMI", "AVX512_VNNI"), requires: set(vnni...)},
		{name: "avx512", suffix: "AVX512", evex: true, allowed: set(), requires: set(avx512...)},
		{name: "avx2", suffix: "AVX2", allowed: set(), requires: set(avx2...)},
	}
}

// asmTierOf returns the tier of the function name, or false if its name has no tier suffix.
func asmTierOf(name string) (asmTier, bool) {
	for _, t := range asmTiers() {
		if strings.HasSuffix(name, t.suffix) {
			return t, true
		}
	}
	return asmTier{}, false
}

// checkAsmISA returns what the function f uses beyond its tier, one line each, naming the
// function, the instruction and its extension.
func checkAsmISA(f asmFunc, t asmTier) []string {
	var bad []string
	for _, in := range f.insts {
		if ext := asmExtension(in.op); ext != "" && !t.allowed[ext] {
			bad = append(bad, fmt.Sprintf("%s: line %d: %s needs %s: %q", f.name, in.line, in.op, ext, in.text))
		}
		if t.evex {
			continue
		}
		base, _, _ := strings.Cut(in.op, ".")
		switch {
		case evexOnly.MatchString(base):
			bad = append(bad, fmt.Sprintf("%s: line %d: %s has no VEX encoding: %q", f.name, in.line, in.op, in.text))
		case evexSuffix.MatchString(in.op):
			bad = append(bad, fmt.Sprintf("%s: line %d: %s is an EVEX form: %q", f.name, in.line, in.op, in.text))
		}
		if _, operands, _ := strings.Cut(in.text, " "); evexRegister.MatchString(operands) {
			bad = append(bad, fmt.Sprintf("%s: line %d: %s uses %s, which only EVEX encodes: %q",
				f.name, in.line, in.op, evexRegister.FindString(operands), in.text))
		}
	}
	for _, r := range f.requires {
		if !t.requires[r] {
			bad = append(bad, fmt.Sprintf("%s: avo lists %s among the extensions it requires", f.name, r))
		}
	}
	return bad
}

// TestAsmISA scans every function of kernels_amd64.s for instructions beyond its tier's CPU
// features (see asmTiers): the avx512 tier runs on AVX-512 CPUs without VBMI or VNNI, the
// avx2 tier on CPUs without AVX-512.
func TestAsmISA(t *testing.T) {
	src, err := os.ReadFile("kernels_amd64.s")
	if err != nil {
		t.Fatal(err)
	}
	funcs := parseAsmFuncs(string(src))
	if want := strings.Count(string(src), "\nTEXT "); len(funcs) != want {
		t.Fatalf("parsed %d functions, the file has %d TEXT lines", len(funcs), want)
	}
	type count struct{ funcs, insts int }
	counts := map[string]*count{}
	used := map[string]int{} // the avx512vnni tier's instructions of its own extensions
	for _, f := range funcs {
		tier, ok := asmTierOf(f.name)
		if !ok {
			t.Errorf("%s has no tier suffix (AVX2, AVX512, AVX512VNNI), so nothing says which CPUs it may run on", f.name)
			continue
		}
		c := counts[tier.name]
		if c == nil {
			c = &count{}
			counts[tier.name] = c
		}
		c.funcs++
		c.insts += len(f.insts)
		for _, b := range checkAsmISA(f, tier) {
			t.Error(b)
		}
		for _, in := range f.insts {
			if e := asmExtension(in.op); e != "" {
				used[tier.name+" "+e]++
			}
		}
	}
	for _, tier := range asmTiers() {
		c := counts[tier.name]
		if c == nil || c.funcs == 0 {
			t.Errorf("no %s functions found", tier.name)
			continue
		}
		t.Logf("%-10s %3d functions, %5d instructions scanned", tier.name, c.funcs, c.insts)
	}
	t.Logf("instructions of the later extensions by tier: %v", used)
	// The scan must see the avx512vnni tier's VPERMB and VPDPWSSD, or its silence about the
	// other tiers would prove nothing.
	for _, e := range []string{"AVX512VBMI", "AVX512_VNNI"} {
		if used["avx512vnni "+e] == 0 {
			t.Errorf("the scan found no %s instruction in the avx512vnni tier", e)
		}
	}
}

// TestAsmISAScanner runs the scan of TestAsmISA on a small synthetic file with one
// instruction too many in each tier, and one clean function of each, and checks that it
// reports exactly those.
func TestAsmISAScanner(t *testing.T) {
	const src = `#include "textflag.h"

DATA t<>+0(SB)/4, $0x00000003
GLOBL t<>(SB), RODATA|NOPTR, $4

// func cleanAVX512(x []byte)
// Requires: AVX, AVX512BW, AVX512F
TEXT ·cleanAVX512(SB), NOSPLIT, $0-24
	VPSHUFB      Z1, Z2, Z3
	VPERMQ       Z2, Z4, Z5
	VPMULLD.BCST 16(AX), Z1, Z1
	KMOVQ        BX, K1
	VPERMW       Z1, Z2, Z3
loop:
	// VPERMB in a comment
	PREFETCHT0   (AX)
	RET

// func badAVX512(x []byte)
// Requires: AVX, AVX512BW, AVX512F, AVX512VBMI
TEXT ·badAVX512(SB), NOSPLIT, $0-24
	VPSHUFB  Z1, Z2, Z3
	VPERMB.Z Z1, Z2, K1, Z3
	VPDPWSSD Z1, Z2, Z3
	RET

// func cleanAVX512VNNI(x []byte)
// Requires: AVX512F, AVX512VBMI, AVX512_VNNI
TEXT ·cleanAVX512VNNI(SB), NOSPLIT, $0-24
	VPERMB.Z      Z1, Z2, K1, Z3
	VPDPWSSD.BCST (AX), Z2, Z3
	RET

// func badAVX512VNNI(x []byte)
// Requires: AVX512F, AVX512VBMI2
TEXT ·badAVX512VNNI(SB), NOSPLIT, $0-24
	VPSHLDW $0x04, Z1, Z2, Z3
	RET

// func cleanAVX2(x []byte)
// Requires: AVX, AVX2, F16C
TEXT ·cleanAVX2(SB), NOSPLIT, $0-24
	VPAND       Y1, Y2, Y15
	VPERMQ      $0x08, Y1, Y2
	VCVTPH2PS   X1, Y1
	VEXTRACTI128 $0x01, Y1, X1
	RET

// func badAVX2(x []byte)
// Requires: AVX, AVX2, AVX512F
TEXT ·badAVX2(SB), NOSPLIT, $0-24
	VPANDD       Y1, Y2, Y3
	VPADDD       Z1, Z2, Z3
	VMULPS.BCST  (AX), Y1, Y1
	VPADDD       Y16, Y1, Y1
	RET

TEXT ·noTier(SB), NOSPLIT, $0-24
	RET
`
	funcs := parseAsmFuncs(src)
	var names []string
	var got []string
	for _, f := range funcs {
		names = append(names, fmt.Sprintf("%s:%d", f.name, len(f.insts)))
		if tier, ok := asmTierOf(f.name); ok {
			got = append(got, checkAsmISA(f, tier)...)
		}
	}
	wantNames := []string{"cleanAVX512:7", "badAVX512:4", "cleanAVX512VNNI:3", "badAVX512VNNI:2", "cleanAVX2:5", "badAVX2:5", "noTier:1"}
	if !slices.Equal(names, wantNames) {
		t.Errorf("parsed functions:instructions %v, want %v", names, wantNames)
	}
	want := []string{
		`badAVX512: line 23: VPERMB.Z needs AVX512VBMI: "VPERMB.Z Z1, Z2, K1, Z3"`,
		`badAVX512: line 24: VPDPWSSD needs AVX512_VNNI: "VPDPWSSD Z1, Z2, Z3"`,
		`badAVX512: avo lists AVX512VBMI among the extensions it requires`,
		`badAVX512VNNI: line 37: VPSHLDW needs AVX512VBMI2: "VPSHLDW $0x04, Z1, Z2, Z3"`,
		`badAVX512VNNI: avo lists AVX512VBMI2 among the extensions it requires`,
		`badAVX2: line 52: VPANDD has no VEX encoding: "VPANDD       Y1, Y2, Y3"`,
		`badAVX2: line 53: VPADDD uses Z1, which only EVEX encodes: "VPADDD       Z1, Z2, Z3"`,
		`badAVX2: line 54: VMULPS.BCST is an EVEX form: "VMULPS.BCST  (AX), Y1, Y1"`,
		`badAVX2: line 55: VPADDD uses Y16, which only EVEX encodes: "VPADDD       Y16, Y1, Y1"`,
		`badAVX2: avo lists AVX512F among the extensions it requires`,
	}
	if !slices.Equal(got, want) {
		t.Errorf("the scan reported\n\t%s\nwant\n\t%s", strings.Join(got, "\n\t"), strings.Join(want, "\n\t"))
	}
	if len(got) > 0 {
		t.Logf("synthetic file: %d functions, %d findings (want %d), the first: %s", len(funcs), len(got), len(want), got[0])
	}
	for op, ext := range map[string]string{
		"VPERMI2B": "AVX512VBMI", "VPMULTISHIFTQB": "AVX512VBMI", "VPCOMPRESSB": "AVX512VBMI2", "VPEXPANDW": "AVX512VBMI2",
		"VPSHRDVQ": "AVX512VBMI2", "VPDPBUSDS": "AVX512_VNNI", "VPOPCNTB": "AVX512BITALG", "VPOPCNTQ": "AVX512VPOPCNTDQ",
		"VPMADD52LUQ": "AVX512IFMA", "VDPBF16PS": "AVX512_BF16", "VP2INTERSECTD": "AVX512_VP2INTERSECT",
		"VGF2P8AFFINEQB": "GFNI", "VAESENC": "AES/VAES", "VPCLMULQDQ": "PCLMULQDQ/VPCLMULQDQ", "VADDPH": "AVX512_FP16",
		"VCVTPH2PSX": "AVX512_FP16", "VCVTPH2PS": "", "VCVTPS2PH": "", "VPERMW": "", "VPERMQ": "", "VPSHUFB": "",
		"VPMADDWD": "", "VFMADD231PD": "", "VPUNPCKHBW": "", "VPSHLD": "XOP",
	} {
		if got := asmExtension(op); got != ext {
			t.Errorf("asmExtension(%s) = %q, want %q", op, got, ext)
		}
	}
}
