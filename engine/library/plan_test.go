package library

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/trochilus-llm/trochilus/engine"
	"github.com/trochilus-llm/trochilus/engine/machine"
	"github.com/trochilus-llm/trochilus/gguf"
	"github.com/trochilus-llm/trochilus/internal/modelgen"
	"github.com/trochilus-llm/trochilus/internal/units"
)

// errEnough stops modelgen once the header is written.
var errEnough = errors.New("header captured")

// headWriter keeps the first limit bytes written to it, then refuses the rest.
type headWriter struct {
	buf   bytes.Buffer
	limit int
}

func (w *headWriter) Write(p []byte) (int, error) {
	if w.buf.Len()+len(p) > w.limit {
		return 0, errEnough
	}
	return w.buf.Write(p)
}

// zeroTail reads a header's bytes, then zeros up to the file's size: the parser reads the
// header alone, but may read ahead past it.
type zeroTail struct{ head []byte }

func (z zeroTail) ReadAt(p []byte, off int64) (int, error) {
	clear(p)
	if off < int64(len(z.head)) {
		copy(p, z.head[off:])
	}
	return len(p), nil
}

// header parses the header of the file modelgen writes for cfg without writing the file: the
// generator stops after the first MiB, well into the first tensor's data.
func header(t *testing.T, cfg modelgen.Config) *gguf.File {
	t.Helper()
	w := &headWriter{limit: 1 << 20}
	if _, err := modelgen.WriteTo(context.Background(), w, cfg); !errors.Is(err, errEnough) {
		t.Fatalf("writing the header: %v", err)
	}
	r := zeroTail{w.buf.Bytes()}
	f, err := gguf.Read(r, 1<<50)
	if err != nil {
		t.Fatal(err)
	}
	// The file ends where its last tensor does, padded to the alignment.
	var end int64
	for _, ti := range f.Tensors {
		end = max(end, ti.Offset+ti.Size)
	}
	end = (end + f.Alignment - 1) / f.Alignment * f.Alignment
	if f, err = gguf.Read(r, end); err != nil {
		t.Fatal(err)
	}
	return f
}

// TestQwen3FullContextVerdict plans Qwen3-30B-A3B in Q4_K_M (the header of modelgen's
// qwen3-full preset, about 17 GB, never written) on machines of given memory, at its full
// context of 40,960 positions and by default: the library's verdict and the loader's plan are
// the same plan, sentence and numbers, and the KV cache is 48 layers × 2 × 4 KV heads × 128 ×
// 40,960 positions × 4 bytes (float32).
func TestQwen3FullContextVerdict(t *testing.T) {
	cfg := modelgen.FullQwen3(modelgen.Q4KM())
	f := header(t, cfg)
	d, err := engine.Describe(f)
	if err != nil {
		t.Fatal(err)
	}
	m := Model{Size: f.Size(), Description: d}
	if m.Unsupported != nil || m.Context != 40960 || m.Heads*m.HeadDim != 4096 || m.Hidden != 2048 {
		t.Fatalf("described %+v (%v)", m.Config, m.Unsupported)
	}
	const gib = 1 << 30
	const fullKV = 48 * 2 * 4 * 128 * 40960 * 4 // 7.5 GiB
	for _, c := range []struct {
		name         string
		total, avail uint64
		context      int
		want         engine.Placement
		planned, kv  int
	}{
		{"64 GiB, full context", 64 * gib, 60 * gib, 40960, engine.InMemory, 40960, fullKV},
		{"64 GiB, default", 64 * gib, 60 * gib, 0, engine.InMemory, 8192, fullKV / 5},
		{"32 GiB, full context", 32 * gib, 24 * gib, 40960, engine.ExpertsStreamed, 40960, fullKV},
		{"16 GiB, full context", 16 * gib, 10 * gib, 40960, engine.Refused, 40960, fullKV},
		{"16 GiB, default", 16 * gib, 10 * gib, 0, engine.ExpertsStreamed, 8192, fullKV / 5},
		// 4 GiB free: 8192 and 4096 positions do not fit beside the dense weights and the
		// fewest experts, 2048 do.
		{"8 GiB, default", 8 * gib, 4 * gib, 0, engine.ExpertsStreamed, 2048, fullKV / 20},
	} {
		verdict := m.PlanFor(machine.Profile{RAMTotal: c.total, RAMAvailable: c.avail}, c.context)
		load, err := engine.PlanLoad(f, engine.Options{Context: c.context}, c.total, c.avail)
		if (err != nil) != (c.want == engine.Refused) {
			t.Errorf("%s: loader plan error %v", c.name, err)
		}
		if verdict.Placement != c.want || verdict.Context != c.planned || verdict.KV != uint64(c.kv) {
			t.Errorf("%s: %v at context %d with KV %d bytes, want %v at %d with %d", c.name,
				verdict.Placement, verdict.Context, verdict.KV, c.want, c.planned, c.kv)
		}
		if !samePlan(verdict, load) {
			t.Errorf("%s: the verdict's plan\n%+v\nis not the loader's\n%+v", c.name, verdict, load)
		}
		if verdict.Text() != load.Text() || !strings.Contains(verdict.Text(), units.Bytes(uint64(c.kv))) {
			t.Errorf("%s: verdict %q, loader %q", c.name, verdict.Text(), load.Text())
		}
		t.Logf("%s: %s", c.name, verdict.Text())
	}
}

// samePlan reports whether two plans have the same numbers (every exported field) and the
// same refusal.
func samePlan(a, b engine.Plan) bool {
	va, vb := reflect.ValueOf(a), reflect.ValueOf(b)
	for i := range va.NumField() {
		if va.Type().Field(i).IsExported() && !va.Field(i).Equal(vb.Field(i)) {
			return false
		}
	}
	return fmt.Sprint(a.Err()) == fmt.Sprint(b.Err())
}
