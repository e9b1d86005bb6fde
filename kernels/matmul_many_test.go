package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/trochilus-llm/trochilus/gguf"
)

// manyCase is a set of products over parts of shared batches, as the engine makes them: q, k
// and v over one batch, the experts' gate and up over the rows each expert sees.
type manyCase struct {
	jobs  []MatMulJob
	wants [][]float32
}

// newManyCase makes products of every supported type over parts of a 6-token batch of 512
// columns and of a 3-token batch of 256, with 0 to 37 rows each (odd counts included, so runs
// end inside a pair of rows).
func newManyCase(rng *rand.Rand) (*manyCase, []*Batch, error) {
	a, b := new(Batch), new(Batch)
	if err := a.Set(randFloats(rng, 6*512, false, false), 6, 512); err != nil {
		return nil, nil, err
	}
	if err := b.Set(randFloats(rng, 3*256, false, false), 3, 256); err != nil {
		return nil, nil, err
	}
	views := []struct {
		src    *Batch
		lo, hi int
	}{{a, 0, 6}, {a, 0, 2}, {a, 2, 3}, {a, 3, 6}, {a, 5, 5}, {b, 0, 3}, {b, 1, 2}}
	batches := []*Batch{a, b}
	c := &manyCase{}
	for i, typ := range append(supportedTypes, supportedTypes...) {
		v := views[i%len(views)]
		in := v.src
		if v.lo != 0 || v.hi != v.src.Ntok {
			in = new(Batch)
			if err := in.SetRows(v.src, v.lo, v.hi); err != nil {
				return nil, nil, err
			}
			batches = append(batches, in)
		}
		rows := []int{37, 1, 16, 0, 9, 33, 2}[i%7]
		m := randMatrix(rng, typ, rows, in.Cols)
		c.jobs = append(c.jobs, MatMulJob{Dst: make([]float32, in.Ntok*rows), M: m, In: in})
		c.wants = append(c.wants, refMatMul(m, in.X, in.Ntok))
	}
	return c, batches, nil
}

// TestMatMulManyEqualsDefinition runs one MatMulMany over products of every type, over whole
// batches and rows of them, on every tier, with 1, 2, 3 and 8 threads and blocks of 1 byte,
// 700 bytes and 256 KiB, and compares every output with the row definitions.
func TestMatMulManyEqualsDefinition(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 1))
	checked, calls := 0, 0
	for _, tier := range Tiers() {
		for _, threads := range []int{1, 2, 3, 8} {
			for _, minRun := range []int64{1, 700, minRunBytes} {
				p := newPool(threads, poolOptions{minRun: minRun})
				c, _, err := newManyCase(rng)
				if err != nil {
					t.Fatal(err)
				}
				for i := range c.jobs {
					for k := range c.jobs[i].Dst {
						c.jobs[i].Dst[k] = float32(math.NaN())
					}
				}
				if err := tier.MatMulMany(p, c.jobs); err != nil {
					t.Fatalf("%s, %d threads, runs of %d: %v", tier.Name, threads, minRun, err)
				}
				calls++
				for i, j := range c.jobs {
					for k, got := range j.Dst {
						checked++
						if !sameBits(got, c.wants[i][k]) {
							t.Fatalf("%s, %d threads, runs of %d: product %d (%v %d×%d, %d tokens) output %d = %g, definition %g",
								tier.Name, threads, minRun, i, j.M.Type, j.M.Rows, j.M.Cols, j.In.Ntok, k, got, c.wants[i][k])
						}
					}
				}
				p.Close()
			}
		}
	}
	t.Logf("%d MatMulMany calls of 14 products: %d outputs equal to the row definitions", calls, checked)
	if checked == 0 {
		t.Fatal("no output checked")
	}
}

// TestMatMulManyErrors: a wrong product anywhere in the list fails the call before any product
// is computed, and names the product.
func TestMatMulManyErrors(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 2))
	p := testPool(t, 2)
	tier := Scalar()
	var in Batch
	if err := in.Set(randFloats(rng, 2*256, false, false), 2, 256); err != nil {
		t.Fatal(err)
	}
	good := randMatrix(rng, gguf.TypeQ8_0, 4, 256)
	wide := randMatrix(rng, gguf.TypeQ8_0, 4, 512)
	for _, c := range []struct {
		name string
		bad  MatMulJob
		want string
	}{
		{"columns", MatMulJob{Dst: make([]float32, 8), M: wide, In: &in}, "512 columns times input rows of 256"},
		{"short output", MatMulJob{Dst: make([]float32, 7), M: good, In: &in}, "output of 7 floats"},
		{"no matrix", MatMulJob{Dst: make([]float32, 8), In: &in}, "without a matrix"},
		{"unsupported", MatMulJob{Dst: make([]float32, 8), M: &Matrix{Type: gguf.TypeQ2_K, Rows: 4, Cols: 256, Data: make([]byte, 4*84)}, In: &in}, "not supported"},
	} {
		first := make([]float32, 8)
		first[0] = 42
		jobs := []MatMulJob{{Dst: first, M: good, In: &in}, c.bad}
		err := tier.MatMulMany(p, jobs)
		if err == nil || !strings.Contains(err.Error(), "product 1 of 2") || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want product 1 of 2 and %q", c.name, err, c.want)
		}
		if first[0] != 42 {
			t.Errorf("%s: the good product was computed before the bad one was found", c.name)
		}
	}
	var rows Batch
	if err := rows.SetRows(&in, 1, 3); err == nil {
		t.Error("SetRows past the end of the batch succeeded")
	}
	if err := rows.SetRows(&in, 0, 1); err != nil {
		t.Fatal(err)
	}
	if err := in.Set(in.X, 2, 256); err != nil {
		t.Fatal(err)
	}
	q := randMatrix(rng, gguf.TypeQ4_K, 2, 256)
	if err := tier.MatMul(p, make([]float32, 2), q, &rows); err == nil || !strings.Contains(err.Error(), "set anew") {
		t.Errorf("Q4_K product over rows of a batch set anew since: %v", err)
	}
}

// TestMatMulManyNoAllocs: a MatMulMany over rows of a re-Set Q4_K batch allocates nothing once
// the batch has been prepared at that size.
func TestMatMulManyNoAllocs(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 3))
	p := testPool(t, 2)
	tier, err := Best()
	if err != nil {
		t.Fatal(err)
	}
	x := randFloats(rng, 4*512, false, false)
	gate, up := randMatrix(rng, gguf.TypeQ4_K, 32, 512), randMatrix(rng, gguf.TypeQ6_K, 32, 512)
	var in Batch
	parts := make([]Batch, 2)
	jobs := make([]MatMulJob, 4)
	dst := make([]float32, 2*4*32)
	run := func() {
		if err := in.Set(x, 4, 512); err != nil {
			t.Fatal(err)
		}
		for i, r := range [][2]int{{0, 1}, {1, 4}} {
			if err := parts[i].SetRows(&in, r[0], r[1]); err != nil {
				t.Fatal(err)
			}
			jobs[2*i] = MatMulJob{Dst: dst[r[0]*32 : r[1]*32], M: gate, In: &parts[i]}
			jobs[2*i+1] = MatMulJob{Dst: dst[128+r[0]*32 : 128+r[1]*32], M: up, In: &parts[i]}
		}
		if err := tier.MatMulMany(p, jobs); err != nil {
			t.Fatal(err)
		}
	}
	run()
	if a := testing.AllocsPerRun(50, run); a != 0 {
		t.Errorf("MatMulMany: %.1f allocations a call, want 0", a)
	}
	for i, want := range [][]float32{refMatMul(gate, x, 4), refMatMul(up, x, 4)} {
		for k, w := range want {
			if got := dst[i*128+k]; !sameBits(got, w) {
				t.Fatalf("matrix %d output %d = %g, definition %g", i, k, got, w)
			}
		}
	}
}

func ExampleTier_MatMulMany() {
	p := NewPool(2)
	defer p.Close()
	var in Batch
	_ = in.Set([]float32{1, 2, 3, 4, 5, 6, 7, 8}, 2, 4)
	// Two 1×4 F32 matrices over the same two input rows, in one pass of the pool.
	f32 := func(v ...float32) *Matrix {
		m := &Matrix{Type: gguf.TypeF32, Rows: 1, Cols: 4}
		for _, f := range v {
			m.Data = append(m.Data, byte(math.Float32bits(f)), byte(math.Float32bits(f)>>8), byte(math.Float32bits(f)>>16), byte(math.Float32bits(f)>>24))
		}
		return m
	}
	a, b := make([]float32, 2), make([]float32, 2)
	err := Scalar().MatMulMany(p, []MatMulJob{{Dst: a, M: f32(1, 0, 0, 0), In: &in}, {Dst: b, M: f32(1, 1, 1, 1), In: &in}})
	fmt.Println(a, b, err)
	// Output: [1 5] [10 26] <nil>
}

// TestMatMulManyPromptRuns runs prompt-sized batches (panel kernels from panelMinTokens tokens)
// over matrices of ragged row counts, in one call, with tiny cost blocks so the runs' row
// rounding is exercised, and compares every output with the row definitions.
func TestMatMulManyPromptRuns(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 2))
	var in Batch
	const ntok, cols = panelMinTokens + 3, 512
	if err := in.Set(randFloats(rng, ntok*cols, false, false), ntok, cols); err != nil {
		t.Fatal(err)
	}
	for _, tier := range Tiers() {
		for _, threads := range []int{1, 2, 3} {
			p := newPool(threads, poolOptions{minRun: 1})
			var jobs []MatMulJob
			var wants [][]float32
			for i, typ := range supportedTypes {
				rows := []int{promptRunRows + 37, 3, 2*promptRunRows + 16}[i%3]
				m := randMatrix(rng, typ, rows, cols)
				jobs = append(jobs, MatMulJob{Dst: make([]float32, ntok*rows), M: m, In: &in})
				wants = append(wants, refMatMul(m, in.X, ntok))
			}
			if err := tier.MatMulMany(p, jobs); err != nil {
				t.Fatal(err)
			}
			p.Close()
			for i, j := range jobs {
				for k := range j.Dst {
					if !sameBits(j.Dst[k], wants[i][k]) {
						t.Fatalf("%s, %d threads: product %d (%v, %d rows) output %d = %g, want %g", tier.Name, threads, i, j.M.Type, j.M.Rows, k, j.Dst[k], wants[i][k])
					}
				}
			}
		}
	}
}

// TestMatMulManyReachesPanels runs a prompt-sized product through the real scheduler (two
// threads, the default run length) and checks that the panel kernels did the work: the
// scheduler once handed prompt batches runs too short for a panel, and the engine silently kept
// the slower tiles (LESSONS 12).
func TestMatMulManyReachesPanels(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 3))
	const rows, cols, ntok = 1024, 512, 64
	x := randFloats(rng, ntok*cols, false, false)
	p := testPool(t, 2)
	for _, st := range usableSIMD() {
		a := st.asm
		var floatTiles, q4KTiles atomic.Int64
		countPanelTiles(&a, &floatTiles)
		if k := a.q4KPanel4; k != nil {
			a.q4KPanel4 = func(panel []byte, in [12]*byte, nb, rows int) [4][16]float32 {
				q4KTiles.Add(1)
				return k(panel, in, nb, rows)
			}
		}
		tier := (&simdTier{name: st.name, usable: st.usable, asm: a}).tier()
		for _, c := range []struct {
			typ   gguf.Type
			tiles *atomic.Int64
			has   bool
		}{{gguf.TypeQ8_0, &floatTiles, a.panel != nil}, {gguf.TypeQ4_K, &q4KTiles, a.q4KPanel4 != nil}} {
			if !c.has {
				continue
			}
			var in Batch
			if err := in.Set(x, ntok, cols); err != nil {
				t.Fatal(err)
			}
			m := randMatrix(rng, c.typ, rows, cols)
			jobs := []MatMulJob{{Dst: make([]float32, ntok*rows), M: m, In: &in}}
			if err := tier.MatMulMany(p, jobs); err != nil {
				t.Fatal(err)
			}
			if c.tiles.Load() == 0 {
				t.Errorf("%s %v: %d tokens × %d rows through MatMulMany never reached the panel kernels", st.name, c.typ, ntok, rows)
			}
			want := refMatMul(m, x, ntok)
			for k := range want {
				if !sameBits(jobs[0].Dst[k], want[k]) {
					t.Fatalf("%s %v: output %d = %g, want %g", st.name, c.typ, k, jobs[0].Dst[k], want[k])
				}
			}
			t.Logf("%s %v: %d panel tile calls", st.name, c.typ, c.tiles.Load())
		}
	}
}
