package gpu

import (
	"errors"
	"math"
	"math/rand/v2"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/trochilus-llm/trochilus/kernels"
)

// attentionCase is one head's data, its keys and values as CPU cache rows, and what
// kernels.Attend computes from them.
type attentionCase struct {
	npos, dim, stride int
	scale             float32
	q, keys, values   []float32
	scores            []float32 // float32(DotF32(q, key_t)·scale)
	weights           []float32 // their softmax
	out               []float32 // kernels.Attend's output
}

// value draws a float: usually normal, sometimes a special one (±0, subnormal, huge, ±Inf).
func value(rng *rand.Rand, special bool) float32 {
	if special && rng.IntN(40) == 0 {
		return []float32{0, float32(math.Copysign(0, -1)), 1e-40, -3e-39, 3e30, -2e31,
			float32(math.Inf(1)), float32(math.Inf(-1))}[rng.IntN(8)]
	}
	return float32(rng.NormFloat64())
}

func newAttentionCase(rng *rand.Rand, npos, dim int, special bool) *attentionCase {
	c := &attentionCase{npos: npos, dim: dim, stride: dim + rng.IntN(3), scale: float32(1 / math.Sqrt(float64(dim)))}
	c.q = make([]float32, dim)
	for i := range c.q {
		c.q[i] = value(rng, special)
	}
	c.keys = make([]float32, npos*c.stride)
	c.values = make([]float32, npos*c.stride)
	for i := range c.keys {
		c.keys[i], c.values[i] = value(rng, special), value(rng, special)
	}
	c.scores = make([]float32, npos)
	for t := range npos {
		c.scores[t] = float32(kernels.DotF32(c.q, c.keys[t*c.stride:t*c.stride+dim]) * c.scale)
	}
	c.weights = make([]float32, npos)
	c.out = make([]float32, dim)
	kernels.Attend(c.out, c.q, c.keys, c.values, npos, c.stride, c.scale, c.weights)
	return c
}

// layouts returns the case's keys and values in the CPU's rows and position-minor, with the
// layout of each.
func (c *attentionCase) layouts() (rows, minor Layout, keysMinor, valuesMinor []float32) {
	capacity := (c.npos + 127) &^ 127
	keysMinor = make([]float32, capacity*c.dim)
	valuesMinor = make([]float32, capacity*c.dim)
	for t := range c.npos {
		for k := range c.dim {
			keysMinor[k*capacity+t] = c.keys[t*c.stride+k]
			valuesMinor[k*capacity+t] = c.values[t*c.stride+k]
		}
	}
	return Layout{Pos: c.stride, Dim: 1}, Layout{Pos: 1, Dim: capacity}, keysMinor, valuesMinor
}

// same compares float bits; any NaN equals any NaN (a GPU writes its own NaN payload: the
// contract fixes which results are NaN, not their payloads).
func same(t *testing.T, what string, got, want []float32) {
	t.Helper()
	for i := range want {
		g, w := got[i], want[i]
		if math.Float32bits(g) != math.Float32bits(w) && !(g != g && w != w) {
			t.Fatalf("%s[%d] = %g (%#08x), the CPU gives %g (%#08x)", what, i, g, math.Float32bits(g), w, math.Float32bits(w))
		}
	}
}

// TestAttentionPTXSimulated runs the kernels' PTX in the simulator against kernels.Attend.
func TestAttentionPTXSimulated(t *testing.T) {
	module := attentionPTX()
	rng := rand.New(rand.NewPCG(5, 6))
	for _, shape := range [][2]int{{1, 1}, {15, 17}, {16, 16}, {33, 128}, {130, 64}, {17, 3}} {
		for _, special := range []bool{false, true} {
			c := newAttentionCase(rng, shape[0], shape[1], special)
			rows, minor, km, vm := c.layouts()
			for _, l := range []struct {
				layout       Layout
				keys, values []float32
			}{{rows, c.keys, c.values}, {minor, km, vm}} {
				d := &simDevice{mem: make([]byte, 4*(len(l.keys)+len(l.values)+3*c.npos+3*c.dim)+8192)}
				q, keys, values := d.put(c.q), d.put(l.keys), d.put(l.values)
				scores, w, out := d.alloc(c.npos), d.put(c.weights), d.alloc(c.dim)
				simLaunch(t, d, module, "scores", blocks(c.npos), scores, q, keys, uint64(c.npos), uint64(c.dim),
					uint64(l.layout.Pos), uint64(l.layout.Dim), bits(c.scale))
				same(t, "scores", d.get(scores, c.npos), c.scores)
				simLaunch(t, d, module, "values", blocks(c.dim), out, values, w, uint64(c.npos), uint64(c.dim),
					uint64(l.layout.Pos), uint64(l.layout.Dim))
				same(t, "out", d.get(out, c.dim), c.out)
			}
		}
	}
}

// TestAttentionPTXText checks what the exactness argument rests on: every float operation
// rounds to nearest (.rn), nothing is fused or flushed, and the order the simulator checked
// is the text the driver gets.
func TestAttentionPTXText(t *testing.T) {
	module := attentionPTX()
	for _, bad := range []string{"fma", ".ftz", ".approx", "mad.f32", "mad.rn.f32"} {
		if strings.Contains(module, bad) {
			t.Errorf("the PTX has %q", bad)
		}
	}
	for _, l := range strings.Split(module, "\n") {
		l = strings.TrimSpace(l)
		if (strings.HasPrefix(l, "mul.") || strings.HasPrefix(l, "add.") || strings.HasPrefix(l, "sub.")) && strings.Contains(l, ".f32") && !strings.Contains(l, ".rn.") {
			t.Errorf("float operation without .rn: %s", l)
		}
	}
}

// openDevice returns a context on the first GPU, skipping when this machine has none;
// TROCHILUS_REQUIRE_GPU=1 (set where a GPU is lent) makes that a failure.
func openDevice(t *testing.T) (*Driver, *Context) {
	t.Helper()
	d, err := Open()
	if err == nil {
		var devs []Device
		if devs, err = d.Devices(); err == nil && len(devs) == 0 {
			err = errors.New("the driver sees no GPU")
		}
	}
	if err != nil {
		if os.Getenv("TROCHILUS_REQUIRE_GPU") == "1" {
			t.Fatalf("TROCHILUS_REQUIRE_GPU=1: %v", err)
		}
		t.Skipf("no GPU: %v", err)
	}
	c, err := d.NewContext(0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return d, c
}

func TestDevices(t *testing.T) {
	d, c := openDevice(t)
	devs, err := d.Devices()
	if err != nil {
		t.Fatal(err)
	}
	free, total, err := c.MemInfo()
	if err != nil || total == 0 || free > total {
		t.Fatalf("memory: free %d of %d, %v", free, total, err)
	}
	for _, g := range devs {
		if g.Name == "" || g.Memory == 0 || g.Major < 1 || g.SMs < 1 {
			t.Fatalf("device %+v", g)
		}
		t.Logf("%s: %v, driver %s (%s), %.1f of %.1f GiB free", d.Library(), g, d.Version(), d.Library(), float64(free)/(1<<30), float64(total)/(1<<30))
	}
}

// TestAttentionOnDevice runs the kernels on the GPU against kernels.Attend, bit for bit.
func TestAttentionOnDevice(t *testing.T) {
	_, ctx := openDevice(t)
	a, err := NewAttention(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	rng := rand.New(rand.NewPCG(7, 8))
	upload := func(v []float32) *Buffer {
		b, err := ctx.Alloc(4 * max(len(v), 1))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { b.Free() })
		if err := b.WriteFloats(0, v); err != nil {
			t.Fatal(err)
		}
		return b
	}
	cases := 0
	for _, npos := range []int{1, 15, 16, 17, 200, 576, 2049, 4096} {
		for _, dim := range []int{1, 7, 64, 128} {
			for _, special := range []bool{false, true} {
				c := newAttentionCase(rng, npos, dim, special)
				rows, minor, km, vm := c.layouts()
				for _, l := range []struct {
					layout       Layout
					keys, values []float32
				}{{rows, c.keys, c.values}, {minor, km, vm}} {
					q, keys, values := upload(c.q), upload(l.keys), upload(l.values)
					scores, w, out := upload(make([]float32, npos)), upload(c.weights), upload(make([]float32, dim))
					if err := a.Scores(scores, q, keys, npos, dim, l.layout, c.scale); err != nil {
						t.Fatal(err)
					}
					got := make([]float32, npos)
					if err := scores.ReadFloats(got, 0); err != nil {
						t.Fatal(err)
					}
					same(t, "scores", got, c.scores)
					// The softmax on the host, then the weighted sum on the GPU.
					kernels.Softmax(got)
					if err := w.WriteFloats(0, got); err != nil {
						t.Fatal(err)
					}
					if err := a.Values(out, values, w, npos, dim, l.layout); err != nil {
						t.Fatal(err)
					}
					res := make([]float32, dim)
					if err := out.ReadFloats(res, 0); err != nil {
						t.Fatal(err)
					}
					same(t, "out", res, c.out)
					cases++
				}
			}
		}
	}
	// Arguments past a buffer are refused before any launch.
	small := upload(make([]float32, 4))
	if err := a.Scores(small, small, small, 8, 4, Layout{Pos: 4, Dim: 1}, 1); err == nil {
		t.Fatal("scores past the end of the buffers launched")
	}
	t.Logf("%d cases bit-identical to kernels.Attend", cases)

	// What one call costs at a decode's depth (launch, run, wait), for planning the engine's use.
	c := newAttentionCase(rng, 576, 128, false)
	q, keys, scores := upload(c.q), upload(c.keys), upload(make([]float32, 576))
	const calls = 200
	start := time.Now()
	for range calls {
		if err := a.Scores(scores, q, keys, 576, 128, Layout{Pos: c.stride, Dim: 1}, c.scale); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("scores of 576 positions × 128 (one head, row layout): %.1f µs a call, launch and wait included",
		float64(time.Since(start).Microseconds())/calls)
}
