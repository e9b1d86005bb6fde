package modelgentest

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/trochilus-llm/trochilus/gguf"
	"github.com/trochilus-llm/trochilus/internal/modelgen"
)

// testDir is the directory TestModel used, for TestMain to check it is gone afterwards.
var testDir struct {
	sync.Mutex
	path string
}

func TestMain(m *testing.M) {
	code := RunTests(m)
	if dir := testDir.path; dir != "" {
		if _, err := os.Stat(dir); !os.IsNotExist(err) {
			fmt.Fprintf(os.Stderr, "RunTests left %s behind (stat: %v)\n", dir, err)
			code = 1
		}
	}
	os.Exit(code)
}

// TestTestModel checks the cache: one file per config, shared by concurrent callers, each a
// readable model of the config asked for.
func TestTestModel(t *testing.T) {
	paths := make([]string, 8)
	t.Run("group", func(t *testing.T) {
		for i := range paths {
			t.Run(fmt.Sprint(i), func(t *testing.T) {
				t.Parallel()
				w := modelgen.Uniform(gguf.TypeQ8_0)
				if i%2 == 1 {
					w = modelgen.Uniform(gguf.TypeQ4_0)
				}
				paths[i] = TestModel(t, mini(w))
			})
		}
	})
	for i := range paths {
		if paths[i] != paths[i%2] {
			t.Errorf("call %d got %s, call %d got %s: want one file per config", i, paths[i], i%2, paths[i%2])
		}
	}
	if paths[0] == paths[1] {
		t.Fatalf("two configs share %s", paths[0])
	}
	testDir.Lock()
	testDir.path = filepath.Dir(paths[0])
	testDir.Unlock()

	f, err := gguf.Open(paths[1])
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if ti, ok := f.Tensor("blk.1.ffn_down_exps.weight"); !ok || ti.Type != gguf.TypeQ4_0 {
		t.Errorf("q4_0 test model: ffn_down_exps %+v", ti)
	}

	tiny := TinyModel(t, modelgen.Q4KM())
	if again := TinyModel(t, modelgen.Q4KM()); again != tiny {
		t.Errorf("TinyModel gave %s then %s", tiny, again)
	}
	g, err := gguf.Open(tiny)
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	if n, err := g.Uint32("olmoe.embedding_length"); err != nil || n != 256 {
		t.Errorf("tiny q4_k_m: hidden %d (%v), want 256", n, err)
	}
	if _, ok := g.Get("tokenizer.ggml.merges"); !ok {
		t.Errorf("tiny q4_k_m has no tokenizer")
	}
}

// mini is a small model with every feature: grouped-query attention, K-quant-sized rows, several
// experts; no tokenizer (its vocabulary is too small for the real one).
func mini(w modelgen.Weights) modelgen.Config {
	return modelgen.Config{Layers: 2, Hidden: 256, Heads: 4, KVHeads: 2, Experts: 4, ExpertsUsed: 2,
		ExpertFFN: 256, Vocab: 512, Context: 128, RopeTheta: 10000, RMSEps: 1e-5, Weights: w, Seed: 9}
}

// TestFile checks File's cache: one call of write per name, its path shared, and a failed
// write's file removed and its error reported to every caller.
func TestFile(t *testing.T) {
	calls := 0
	write := func(path string) error {
		calls++
		return os.WriteFile(path, []byte("made once"), 0o644)
	}
	a, b := File(t, "derived.bin", write), File(t, "derived.bin", write)
	if a != b || calls != 1 {
		t.Errorf("File gave %s then %s after %d writes; want one path, one write", a, b, calls)
	}
	if got, err := os.ReadFile(a); err != nil || string(got) != "made once" {
		t.Errorf("%s holds %q (%v)", a, got, err)
	}
	var failed string
	broken := func(path string) error {
		failed = path
		if err := os.WriteFile(path, []byte("half"), 0o644); err != nil {
			return err
		}
		return fmt.Errorf("deliberate")
	}
	for range 2 {
		f := &fatalTB{TB: t}
		done := make(chan struct{})
		go func() {
			defer close(done)
			File(f, "broken.bin", broken)
			f.msg = "returned"
		}()
		<-done
		if !strings.Contains(f.msg, "deliberate") {
			t.Errorf("File after a failed write: %q, want its error", f.msg)
		}
	}
	if _, err := os.Stat(failed); !os.IsNotExist(err) {
		t.Errorf("the failed write's %s is still there (stat: %v)", failed, err)
	}
}

// fatalTB records a Fatalf and ends its goroutine, as testing's does, without failing the test.
type fatalTB struct {
	testing.TB
	msg string
}

func (f *fatalTB) Helper() {}

func (f *fatalTB) Fatalf(format string, args ...any) {
	f.msg = fmt.Sprintf(format, args...)
	runtime.Goexit()
}
