package modelgen

import (
	"encoding/binary"
	"math"
	"sort"
	"testing"

	"github.com/trochilus-llm/trochilus/gguf"
	"github.com/trochilus-llm/trochilus/gguf/quant"
)

// decode fills blocks of t with weights meant to have root mean square 1 and dequantizes them
// with package quant, which reproduces ggml.
func decode(t *testing.T, typ gguf.Type, blocks int, seed uint64) (raw []byte, w []float32) {
	t.Helper()
	f := fillers[typ]
	raw = make([]byte, blocks*typ.BlockBytes())
	r := newRNG(seed)
	f.fill(&r, raw, float32(1/f.rms))
	w = make([]float32, blocks*typ.BlockElems())
	if err := quant.Dequantize(typ, raw, w); err != nil {
		t.Fatalf("%v: %v", typ, err)
	}
	return raw, w
}

// TestFillersMagnitude checks that every type's random blocks decode (through ggml's
// dequantization) to finite weights of the magnitude asked for: root mean square within 3% of
// the target and mean near zero, over 16384 weights, with per-block scales that differ.
func TestFillersMagnitude(t *testing.T) {
	types := make([]gguf.Type, 0, len(fillers))
	for typ := range fillers {
		types = append(types, typ)
	}
	sort.Slice(types, func(i, j int) bool { return types[i] < types[j] })
	if len(types) != 10 {
		t.Errorf("%d types can be written, want the 10 package quant decodes", len(types))
	}
	for _, typ := range types {
		if !quant.Supported(typ) {
			t.Errorf("%v: written but not decodable", typ)
			continue
		}
		_, w := decode(t, typ, 16384/typ.BlockElems(), 42)
		var sum, sq float64
		for i, v := range w {
			if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
				t.Fatalf("%v: weight %d is %v", typ, i, v)
			}
			sum += float64(v)
			sq += float64(v) * float64(v)
		}
		n := float64(len(w))
		mean, rms := sum/n, math.Sqrt(sq/n)
		t.Logf("%-5v %d weights: rms %.4f, mean %+.4f", typ, len(w), rms, mean)
		if math.Abs(rms-1) > 0.03 {
			t.Errorf("%v: rms %.4f, want 1 ± 0.03", typ, rms)
		}
		if math.Abs(mean) > 0.03 {
			t.Errorf("%v: mean %+.4f, want within ±0.03", typ, mean)
		}
	}
}

// TestFillersFields checks the small fields of each K-quant block against the ranges the
// fillers promise, reading them as ggml lays them out (ScaleMinK4 for Q4_K and Q5_K; Q3_K's
// scales through the dequantized values, so a mispacked bit shows as a scale out of range).
func TestFillersFields(t *testing.T) {
	halfAt := func(b []byte) float32 { return gguf.F16ToF32(binary.LittleEndian.Uint16(b)) }
	for _, typ := range []gguf.Type{gguf.TypeQ4_K, gguf.TypeQ5_K} {
		raw, _ := decode(t, typ, 64, 7)
		bb := typ.BlockBytes()
		for b := 0; b < 64; b++ {
			blk := raw[b*bb:]
			d, dmin := halfAt(blk), halfAt(blk[2:])
			offset := float32(7.5)
			if typ == gguf.TypeQ5_K {
				offset = 15.5
			}
			if !(d > 0) || math.Abs(float64(dmin/d-offset)) > 0.01*float64(offset) {
				t.Fatalf("%v block %d: d %g, dmin %g: want d > 0, dmin = %g·d", typ, b, d, dmin, offset)
			}
			for j := range 8 {
				sc, m := gguf.ScaleMinK4(j, (*[12]byte)(blk[4:16]))
				if sc < 40 || sc > 63 || int(m) < int(sc)-1 || int(m) > int(sc)+1 {
					t.Fatalf("%v block %d sub-block %d: scale %d min %d, want scale in 40..63 and min within 1", typ, b, j, sc, m)
				}
			}
		}
	}

	raw, _ := decode(t, gguf.TypeQ6_K, 64, 7)
	for b := 0; b < 64; b++ {
		for j := range 16 {
			s := int8(raw[b*210+192+j])
			if s < 0 {
				s = -s
			}
			if s < 32 {
				t.Fatalf("Q6_K block %d scale %d is %d, want magnitude in 32..127", b, j, int8(raw[b*210+192+j]))
			}
		}
	}

	raw, _ = decode(t, gguf.TypeQ2_K, 64, 7)
	for b := 0; b < 64; b++ {
		for j := range 16 {
			v := raw[b*84+j]
			sc, m := int(v&15), int(v>>4)
			if sc < 8 || m < sc-1 || m > sc+1 {
				t.Fatalf("Q2_K block %d group %d: scale %d min %d, want scale in 8..15, min within 1", b, j, sc, m)
			}
		}
	}

	// Q3_K: weight = d·s·q with q in −4..3, so in each group of 16 some s with |s| in 16..31
	// must divide every weight/d into such a q.
	raw, w := decode(t, gguf.TypeQ3_K, 64, 7)
	signs := 0
	for b := 0; b < 64; b++ {
		d := halfAt(raw[b*110+108:])
		for g := range 16 {
			group := w[b*256+16*g : b*256+16*g+16]
			found := false
			for s := -31; s <= 31 && !found; s++ {
				if s > -16 && s < 16 {
					continue
				}
				ok := true
				for _, v := range group {
					q := float64(v) / float64(d*float32(s))
					if q != math.Round(q) || q < -4 || q > 3 {
						ok = false
						break
					}
				}
				if ok {
					found = true
					if s < 0 {
						signs++
					}
				}
			}
			if !found {
				t.Fatalf("Q3_K block %d group %d: no scale of magnitude 16..31 fits %v (d %g)", b, g, group, d)
			}
		}
	}
	if signs == 0 || signs == 64*16 {
		t.Errorf("Q3_K: %d of %d group scales negative, want a mix", signs, 64*16)
	}

	raw, _ = decode(t, gguf.TypeQ8_0, 256, 7)
	for b := 0; b < 256; b++ {
		for _, q := range raw[b*34+2 : b*34+34] {
			if q == 0x80 {
				t.Fatalf("Q8_0 block %d holds -128, which ggml's quantizer never writes", b)
			}
		}
	}
}

func TestFillNorm(t *testing.T) {
	buf := make([]byte, 4*4096)
	r := newRNG(3)
	fillNorm(&r, buf)
	var sum float64
	distinct := map[float32]bool{}
	for i := 0; i < len(buf); i += 4 {
		v := math.Float32frombits(binary.LittleEndian.Uint32(buf[i:]))
		if v < 0.875 || v >= 1.125 {
			t.Fatalf("norm weight %d is %v, want in [0.875, 1.125)", i/4, v)
		}
		sum += float64(v)
		distinct[v] = true
	}
	if mean := sum / 4096; math.Abs(mean-1) > 0.01 || len(distinct) < 200 {
		t.Errorf("norm weights: mean %.4f (want 1 ± 0.01), %d distinct values (want ≥ 200)", mean, len(distinct))
	}
}

// TestFillRouter checks the router's weights are bfloat16 values (low 16 bits zero) of about
// the magnitude asked for (within the factor √2 that rounding the scale to a power of two allows).
func TestFillRouter(t *testing.T) {
	for _, sigma := range []float32{0.0442, 0.125, 0.25} {
		buf := make([]byte, 4*8192)
		r := newRNG(5)
		fillRouter(&r, buf, sigma)
		var sq float64
		for i := 0; i < len(buf); i += 4 {
			bits := binary.LittleEndian.Uint32(buf[i:])
			if bits&0xffff != 0 {
				t.Fatalf("sigma %g: router weight %d = %#08x has low bits set", sigma, i/4, bits)
			}
			v := float64(math.Float32frombits(bits))
			sq += v * v
		}
		rms := math.Sqrt(sq / 8192)
		t.Logf("sigma %g: rms %.4f", sigma, rms)
		if rms < float64(sigma)/math.Sqrt2 || rms > float64(sigma)*math.Sqrt2 {
			t.Errorf("sigma %g: rms %.4f, want within a factor √2", sigma, rms)
		}
	}
}
