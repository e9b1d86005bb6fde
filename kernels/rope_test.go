package kernels

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/big"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/trochilus-llm/trochilus/internal/oracle"
	"github.com/trochilus-llm/trochilus/kernels/internal/bigmath"
)

// refRope rotates one head by the definition, reading cos/sin from the table.
func refRope(rt *RopeTable, x []float32, p int) []float32 {
	half := rt.HeadDim() / 2
	cos, sin := rt.CosSin(p)
	out := make([]float32, len(x))
	for i := range half {
		a, b := x[i], x[i+half]
		ac := float32(a * cos[i])
		bs := float32(b * sin[i])
		bc := float32(b * cos[i])
		as := float32(a * sin[i])
		out[i] = ac - bs
		out[i+half] = bc + as
	}
	return out
}

type ropeFunc func(rt *RopeTable, x []float32, p int) error

func checkRope(rt *RopeTable, apply ropeFunc) (checked, bad int, first string) {
	var c counts
	rng := rand.New(rand.NewPCG(6, 6))
	hd := rt.HeadDim()
	for _, p := range []int{0, 1, 2, 7, 100, rt.positions - 1} {
		x := randFloats(rng, 3*hd, p == 7, false)
		want := make([]float32, 0, len(x))
		for h := range 3 {
			want = append(want, refRope(rt, x[h*hd:(h+1)*hd], p)...)
		}
		got := append([]float32(nil), x...)
		if err := apply(rt, got, p); err != nil {
			return c.checked, c.bad + 1, err.Error()
		}
		c.noteSlices(got, want, func(i int) string {
			return fmt.Sprintf("position %d element %d: got %g, want %g", p, i, got[i], want[i])
		})
	}
	return c.result()
}

func TestRopeApply(t *testing.T) {
	rt, err := NewRopeTable(10000, 128, 512)
	if err != nil {
		t.Fatal(err)
	}
	checked, bad, first := checkRope(rt, (*RopeTable).Apply)
	t.Logf("RoPE Apply: %d positions × 3 heads against the written-out rotation, %d differ", checked, bad)
	if bad != 0 {
		t.Errorf("RoPE differs: %s", first)
	}
	// Position 0 is the identity.
	x := []float32{1, 2, 3, 4}
	small, _ := NewRopeTable(10000, 4, 2)
	if err := small.Apply(x, 0); err != nil || x[0] != 1 || x[1] != 2 || x[2] != 3 || x[3] != 4 {
		t.Errorf("RoPE at position 0 = %v, %v", x, err)
	}
	// Position 1, frequency 0 (angle 1 rad) mixes x0 with x2 and x1 with x3 (angle 1/100).
	if err := small.Apply(x, 1); err != nil {
		t.Fatal(err)
	}
	c, s := float32(math.Cos(1)), float32(math.Sin(1))
	if x[0] != float32(1*c)-float32(3*s) || x[2] != float32(3*c)+float32(1*s) {
		t.Errorf("RoPE at position 1 = %v", x)
	}
	if err := rt.Apply(make([]float32, 128), 512); err == nil {
		t.Error("position past the table: no error")
	}
	if err := rt.Apply(make([]float32, 100), 0); err == nil {
		t.Error("a partial head: no error")
	}
	for _, bad := range []struct {
		theta     float64
		dim, npos int
	}{{1, 128, 10}, {10000, 127, 10}, {10000, 0, 10}, {10000, 128, 0}, {math.NaN(), 128, 1}, {10000.5e30, 128, 1}} {
		if _, err := NewRopeTable(bad.theta, bad.dim, bad.npos); err == nil {
			t.Errorf("NewRopeTable(%g, %d, %d): no error", bad.theta, bad.dim, bad.npos)
		}
	}
}

// TestRopeTableCorrectlyRounded checks table entries against high-precision evaluations of the
// definition: inv_i as the float32 steps, then cos and sin of the float32 angle, correctly
// rounded. It samples OLMoE's table (theta 10000) and a Qwen3-like one (theta 10^6).
func TestRopeTableCorrectlyRounded(t *testing.T) {
	for _, theta := range []float64{10000, 1e6} {
		const hd, npos = 128, 4096
		rt, err := NewRopeTable(theta, hd, npos)
		if err != nil {
			t.Fatal(err)
		}
		checked, undecided := 0, 0
		for i := range hd / 2 {
			e := float32(2*i) / float32(hd)
			pw := bigmath.Pow(big.NewFloat(theta), new(big.Float).SetFloat64(float64(e)), 200)
			pf, ok := bigmath.RoundFloat32(pw, new(big.Float).SetMantExp(new(big.Float).Abs(pw), -190))
			if !ok {
				t.Fatalf("theta^%g undecided at 200 bits", e)
			}
			inv := 1 / pf
			for p := 0; p < npos; p += 1 + (p*7+i)%241 {
				angle := inv * float32(p)
				if angle == 0 {
					gc, gs := rt.CosSin(p)
					if gc[i] != 1 || math.Float32bits(gs[i]) != 0 {
						t.Fatalf("angle 0: cos %g sin %g", gc[i], gs[i])
					}
					continue
				}
				if _, ok1 := decide32(math.Cos(float64(angle))); !ok1 {
					undecided++
				}
				c, s := bigmath.CosSin(new(big.Float).SetFloat64(float64(angle)), 200)
				eps := new(big.Float).SetMantExp(big.NewFloat(1), -190)
				cw, ok1 := bigmath.RoundFloat32(c, eps)
				sw, ok2 := bigmath.RoundFloat32(s, eps)
				if !ok1 || !ok2 {
					t.Fatalf("cos/sin(%g) undecided at 200 bits", angle)
				}
				gc, gs := rt.CosSin(p)
				checked++
				if !sameBits(gc[i], cw) || !sameBits(gs[i], sw) {
					t.Fatalf("theta %g position %d freq %d: table (%g, %g), correctly rounded (%g, %g)", theta, p, i, gc[i], gs[i], cw, sw)
				}
			}
		}
		t.Logf("RoPE theta %g: %d sampled entries equal the correctly rounded cos and sin; %d of them needed the high-precision fallback for cos", theta, checked, undecided)
	}
}

// TestSinCosFallback checks angles whose cos lies too near a float32 rounding boundary for the
// float64 evaluation to decide (near π/2 and 3π/2 the value is tiny and its float32 spacing
// finer than the float64 margin): the high-precision fallback answers.
func TestSinCosFallback(t *testing.T) {
	fallbacks := 0
	for _, a := range []float32{float32(math.Pi / 2), float32(3 * math.Pi / 2), float32(-math.Pi / 2), float32(1001 * math.Pi / 2)} {
		if _, ok := decide32(math.Cos(float64(a))); !ok {
			fallbacks++
		}
		c, s := sincos32(a)
		bc, bs := bigmath.CosSin(new(big.Float).SetFloat64(float64(a)), 200)
		eps := new(big.Float).SetMantExp(big.NewFloat(1), -190)
		wc, _ := bigmath.RoundFloat32(bc, eps)
		ws, _ := bigmath.RoundFloat32(bs, eps)
		if !sameBits(c, wc) || !sameBits(s, ws) {
			t.Errorf("sincos32(%g) = (%g, %g), want (%g, %g)", a, c, s, wc, ws)
		}
	}
	if fallbacks == 0 {
		t.Error("no angle took the fallback; the test no longer covers it")
	}
	t.Logf("%d of 4 angles near cos roots took the high-precision fallback", fallbacks)
}

// TestRopeMatchesTorchLong builds transformers' cos/sin table in float32 torch (the way
// OlmoeRotaryEmbedding does) and compares it with the RopeTable: entries equal except where
// torch's float32 pow or cos/sin is not correctly rounded, and then by one ulp. (Long only
// because importing torch takes several seconds.)
func TestRopeMatchesTorchLong(t *testing.T) {
	if os.Getenv("TROCHILUS_LONG") != "1" {
		t.Skip("torch comparison runs with TROCHILUS_LONG=1")
	}
	py := oracle.Python(t, "torch")
	const hd, npos = 128, 4096
	out := filepath.Join(t.TempDir(), "rope.bin")
	script := fmt.Sprintf(`
import torch, sys
dim, npos, base = %d, %d, 10000.0
inv_freq = 1.0 / (base ** (torch.arange(0, dim, 2, dtype=torch.int64).to(dtype=torch.float) / dim))
pos = torch.arange(npos, dtype=torch.int64)[None, :].float()
freqs = (inv_freq[None, :, None].float() @ pos[:, None, :]).transpose(1, 2)[0]
emb = freqs  # cat((freqs, freqs)) repeats the same halves
with open(sys.argv[1], "wb") as f:
    f.write(inv_freq.numpy().astype("<f4").tobytes())
    f.write(emb.cos().numpy().astype("<f4").tobytes())
    f.write(emb.sin().numpy().astype("<f4").tobytes())
`, hd, npos)
	cmd := exec.Command(py, "-c", script, out)
	if msg, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("torch: %v\n%s", err, msg)
	}
	raw, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	half := hd / 2
	if len(raw) != 4*(half+2*npos*half) {
		t.Fatalf("torch wrote %d bytes", len(raw))
	}
	f := func(i int) float32 { return math.Float32frombits(binary.LittleEndian.Uint32(raw[4*i:])) }
	rt, err := NewRopeTable(10000, hd, npos)
	if err != nil {
		t.Fatal(err)
	}
	invSame := 0
	for i := range half {
		e := float32(2*i) / float32(hd)
		if inv := 1 / pow32(10000, e); inv == f(i) {
			invSame++
		} else if ulps32(inv, f(i)) > 1 {
			t.Errorf("inv_freq[%d]: ours %g, torch %g", i, inv, f(i))
		}
	}
	same, worst := 0, 0
	for p := range npos {
		c, s := rt.CosSin(p)
		for i := range half {
			tc, ts := f(half+p*half+i), f(half+npos*half+p*half+i)
			if c[i] == tc && s[i] == ts {
				same++
			}
			worst = max(worst, ulps32(c[i], tc), ulps32(s[i], ts))
		}
	}
	total := npos * half
	t.Logf("RoPE vs torch %d positions: inv_freq %d of %d identical; cos/sin pairs %d of %d (%.3f%%) identical, worst %d ulp",
		npos, invSame, half, same, total, 100*float64(same)/float64(total), worst)
	// torch's float32 cos and sin are within one ulp but not correctly rounded (about 10%
	// of entries differ by that ulp); ours are correctly rounded (see
	// TestRopeTableCorrectlyRounded), so one ulp is the whole allowed difference.
	if worst > 1 {
		t.Errorf("cos/sin differ from torch by up to %d ulp, want at most 1", worst)
	}
	if same < total*8/10 {
		t.Errorf("only %d of %d entries identical to torch", same, total)
	}
}

// ulps32 returns how many float32 steps apart a and b are (for finite values of one sign or
// zero).
func ulps32(a, b float32) int {
	ia, ib := int64(math.Float32bits(a)), int64(math.Float32bits(b))
	if ia&(1<<31) != 0 {
		ia = -(ia &^ (1 << 31))
	}
	if ib&(1<<31) != 0 {
		ib = -(ib &^ (1 << 31))
	}
	d := ia - ib
	if d < 0 {
		d = -d
	}
	return int(d)
}
