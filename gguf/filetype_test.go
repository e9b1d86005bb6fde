package gguf

import "testing"

func TestFileTypeName(t *testing.T) {
	for v, want := range map[uint64]string{0: "ALL_F32", 7: "MOSTLY_Q8_0", 15: "MOSTLY_Q4_K_M", 30: "MOSTLY_IQ4_XS",
		32: "MOSTLY_BF16", 38: "MOSTLY_MXFP4_MOE", 41: "MOSTLY_Q2_0", 4: "", 33: "", 1024: ""} {
		if got := FileTypeName(v); got != want {
			t.Errorf("FileTypeName(%d) = %q, want %q", v, got, want)
		}
	}
}
