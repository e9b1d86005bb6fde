package library

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/trochilus-llm/trochilus/engine"
	"github.com/trochilus-llm/trochilus/engine/machine"
	"github.com/trochilus-llm/trochilus/gguf"
	"github.com/trochilus-llm/trochilus/internal/modelgen"
	"github.com/trochilus-llm/trochilus/internal/modelgen/modelgentest"
	"github.com/trochilus-llm/trochilus/internal/units"
)

func TestMain(m *testing.M) { os.Exit(modelgentest.RunTests(m)) }

func TestUserDirsFromEnv(t *testing.T) {
	root := filepath.Join(t.TempDir(), "home")
	t.Setenv(HomeEnv, root)
	d, err := UserDirs()
	if err != nil {
		t.Fatal(err)
	}
	if d != DirsAt(root) {
		t.Fatalf("dirs %+v, want those under %s", d, root)
	}
	for _, dir := range []string{d.Data, d.Models, d.Chats} {
		if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
			t.Fatalf("%s not created: %v", dir, err)
		}
	}
}

func touch(t *testing.T, path string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestModelFiles(t *testing.T) {
	d := DirsAt(t.TempDir())
	for _, n := range []string{"b.gguf", "A.GGUF", "c.gguf.part", "c.gguf.part.json", "notes.txt"} {
		touch(t, filepath.Join(d.Models, n))
	}
	if err := os.Mkdir(filepath.Join(d.Models, "dir.gguf"), 0o755); err != nil {
		t.Fatal(err)
	}
	elsewhere := filepath.Join(t.TempDir(), "other.gguf")
	touch(t, elsewhere)
	gone := filepath.Join(t.TempDir(), "gone.gguf")
	for _, p := range []string{elsewhere, gone, elsewhere, filepath.Join(d.Models, "b.gguf")} {
		if err := d.AddOpened(p); err != nil {
			t.Fatal(err)
		}
	}
	opened, err := d.Opened()
	if err != nil || len(opened) != 3 {
		t.Fatalf("opened %q, %v: want 3 distinct paths", opened, err)
	}
	got, err := d.ModelFiles()
	if err != nil {
		t.Fatal(err)
	}
	want := []string{elsewhere, filepath.Join(d.Models, "A.GGUF"), filepath.Join(d.Models, "b.gguf")}
	if fmt.Sprint(got) != fmt.Sprint(sortedCopy(want)) {
		t.Fatalf("model files %q, want %q", got, sortedCopy(want))
	}
	if err := d.RemoveOpened(elsewhere); err != nil {
		t.Fatal(err)
	}
	if got, _ := d.ModelFiles(); len(got) != 2 {
		t.Fatalf("after RemoveOpened: %q", got)
	}

	if err := os.WriteFile(filepath.Join(d.Data, "opened.json"), []byte("{not json"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := d.ModelFiles(); err == nil || !strings.Contains(err.Error(), "opened.json") {
		t.Fatalf("corrupt opened.json: %v, want an error naming it", err)
	}
}

func sortedCopy(s []string) []string {
	c := append([]string(nil), s...)
	for i := range c {
		for j := i + 1; j < len(c); j++ {
			if c[j] < c[i] {
				c[i], c[j] = c[j], c[i]
			}
		}
	}
	return c
}

func TestDescribeTinyModel(t *testing.T) {
	cfg := modelgen.Tiny(modelgen.Uniform(gguf.TypeQ8_0))
	path := modelgentest.TestModel(t, cfg)
	m, err := Describe(path)
	if err != nil {
		t.Fatal(err)
	}
	if m.Arch != "olmoe" || m.Name != cfg.Name || m.Layers != cfg.Layers || m.Experts != cfg.Experts ||
		m.ExpertsUsed != cfg.ExpertsUsed || m.Context != cfg.Context || m.Hidden != cfg.Hidden ||
		m.KVHeads*m.HeadDim != cfg.KVHeads*cfg.HeadDim() || m.ExpertFFN != cfg.ExpertFFN || m.Vocab != cfg.Vocab ||
		m.Unsupported != nil {
		t.Fatalf("described %+v from config %+v", m, cfg)
	}
	fi, _ := os.Stat(path)
	if m.Size != fi.Size() || m.Footprint.FileSize != m.Size {
		t.Fatalf("size %d (footprint %d), file has %d", m.Size, m.Footprint.FileSize, fi.Size())
	}
	// Three stacked expert matrices per layer (gate, up: hidden→ffn; down: ffn→hidden), Q8_0:
	// 34 bytes per 32 weights.
	wantExperts := uint64(3*cfg.Layers*cfg.Experts*cfg.Hidden*cfg.ExpertFFN) * 34 / 32
	fp := m.Footprint
	if fp.Experts != wantExperts || fp.Units != cfg.Layers*cfg.Experts || fp.MinSlots != cfg.Experts+cfg.ExpertsUsed {
		t.Fatalf("footprint %+v, want %d expert bytes", fp, wantExperts)
	}
	if unit := wantExperts / uint64(fp.Units); fp.SlotBytes < unit || fp.SlotBytes > unit+6*4096 {
		t.Fatalf("slot bytes %d for units of %d (each of three parts on whole pages, and one more)", fp.SlotBytes, unit)
	}
	var typed int64
	for _, s := range m.Types {
		typed += s.Bytes
	}
	if typed != m.All.Bytes || uint64(typed) < fp.Experts || typed > m.Size || fp.Dense() != uint64(m.Size)-fp.Experts {
		t.Fatalf("type shares %d, all %d, experts %d, dense %d, file %d", typed, m.All.Bytes, fp.Experts, fp.Dense(), m.Size)
	}
	if len(m.Types) != 2 || m.Types[0].Type != gguf.TypeQ8_0 || m.Types[1].Type != gguf.TypeF32 {
		t.Fatalf("types %+v, want Q8_0 then F32", m.Types)
	}
	t.Logf("%s: %s, %d params, dense %d B, experts %d B, types %s", m.Name, units.Bytes(uint64(m.Size)), m.All.Elems, fp.Dense(), fp.Experts, m.TypesText())
}

// A file of an architecture the engine does not run is described with the reason.
func TestDescribeUnsupported(t *testing.T) {
	src, err := gguf.Open(modelgentest.TestModel(t, modelgen.Tiny(modelgen.Uniform(gguf.TypeQ8_0))))
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	w := gguf.NewWriter()
	for _, kv := range src.KVs {
		key, v := kv.Key, kv.Value
		if key == "general.architecture" {
			v = gguf.String("mixtral")
		}
		key = strings.Replace(key, "olmoe.", "mixtral.", 1)
		if err := w.Set(key, v); err != nil {
			t.Fatal(err)
		}
	}
	for i := range src.Tensors {
		ti := &src.Tensors[i]
		data := make([]byte, ti.Size)
		if err := src.ReadTensor(ti, data); err != nil {
			t.Fatal(err)
		}
		if err := w.AddTensor(ti.Name, ti.Type, ti.Dims, data); err != nil {
			t.Fatal(err)
		}
	}
	path := filepath.Join(t.TempDir(), "mixtral.gguf")
	if err := w.WriteFile(path); err != nil {
		t.Fatal(err)
	}
	m, err := Describe(path)
	if err != nil {
		t.Fatal(err)
	}
	if m.Arch != "mixtral" || m.Unsupported == nil || !strings.Contains(m.Unsupported.Error(), `"mixtral" is not supported`) ||
		m.Layers != 2 || m.Experts != 8 || m.Footprint.Units != 16 {
		t.Fatalf("described %+v", m)
	}
	t.Logf("%s: %v; %s", m.Arch, m.Unsupported, m.PlanFor(machine.Profile{RAMTotal: 16 << 30, RAMAvailable: 8 << 30}, 0).Text())
}

func TestDescribeRejectsNonModels(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.gguf")
	if err := os.WriteFile(bad, []byte("GGUF\x03\x00\x00\x00 truncated"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Describe(bad); err == nil {
		t.Fatal("truncated file described")
	}
	if _, err := Describe(filepath.Join(dir, "missing.gguf")); err == nil {
		t.Fatal("missing file described")
	}
	// A well-formed GGUF without an architecture.
	w := gguf.NewWriter()
	if err := w.Set("general.name", gguf.String("x")); err != nil {
		t.Fatal(err)
	}
	noArch := filepath.Join(dir, "noarch.gguf")
	if err := w.WriteFile(noArch); err != nil {
		t.Fatal(err)
	}
	if _, err := Describe(noArch); err == nil || !strings.Contains(err.Error(), "general.architecture") {
		t.Fatalf("file without architecture: %v", err)
	}
}

// olmoe is OLMoE-1B-7B Q4_K_M as the header describes it (sizes rounded).
func olmoe() Model {
	return Model{Size: 4084 << 20, Description: engine.Description{
		Config: engine.Config{Arch: "olmoe", Layers: 16, Experts: 64, ExpertsUsed: 8, Context: 4096, Hidden: 2048,
			Heads: 16, KVHeads: 16, HeadDim: 128, ExpertFFN: 1024, Vocab: 50304},
		Footprint: engine.Footprint{FileSize: 4084 << 20, Experts: 3584 << 20, SlotBytes: 3584 << 10, Units: 1024, MinSlots: 72}}}
}

func TestPlanFor(t *testing.T) {
	m := olmoe()
	unit := m.Footprint.SlotBytes // 3.5 MiB
	gib := uint64(1 << 30)
	big := m.PlanFor(machine.Profile{RAMTotal: 64 * gib, RAMAvailable: 40 * gib}, 0)
	// KV: 16 layers × 2 × 2048 floats × 4096 positions; the rest is the pass buffers of 512
	// tokens (the engine's sessionSizes).
	if big.KV != 16*2*2048*4096*4 || big.Context != 4096 || big.Pass == 0 || big.Pass > 200<<20 {
		t.Fatalf("session: KV %d, pass %d, context %d", big.KV, big.Pass, big.Context)
	}
	dense := m.Footprint.Dense() // 500 MiB
	cases := []struct {
		name         string
		total, avail uint64
		verdict      engine.Placement
		reserve      uint64
		context      int
	}{
		{"big machine", 64 * gib, 40 * gib, engine.InMemory, 6554 * gib / 1024, 4096},
		{"8 GiB, 7.5 free", 8 * gib, 7*gib + gib/2, engine.InMemory, 2 * gib, 4096},
		// room = 4 GiB − 2 GiB; dense 500 MiB + session ≈ 1.1 GiB leave ≈ 412 MiB: 117 units.
		{"8 GiB, 4 free", 8 * gib, 4 * gib, engine.ExpertsStreamed, 2 * gib, 4096},
		// room 1 GiB: dense 500 MiB, the pass buffers of 512 tokens (124 MiB) and the fewest
		// experts (252 MiB) leave room for the KV cache of 512 positions, not 1024: the
		// default context is halved three times.
		{"8 GiB, 3 free", 8 * gib, 3 * gib, engine.ExpertsStreamed, 2 * gib, 512},
		{"reserve eats all", 4 * gib, 2 * gib, engine.Refused, 2 * gib, 4096},
	}
	for _, c := range cases {
		pl := m.PlanFor(machine.Profile{RAMTotal: c.total, RAMAvailable: c.avail}, 0)
		units := 0
		switch c.verdict {
		case engine.InMemory:
			units = 1024
		case engine.ExpertsStreamed:
			units = int((c.avail - pl.Reserve - dense - pl.Session()) / unit)
		}
		if pl.Placement != c.verdict || pl.Reserve/gib != c.reserve/gib || pl.UnitsInRAM != units || pl.Context != c.context {
			t.Errorf("%s: %v, reserve %d, %d units, context %d; want %v, %d, %d, %d (%s)", c.name, pl.Placement, pl.Reserve, pl.UnitsInRAM,
				pl.Context, c.verdict, c.reserve, units, c.context, pl.Text())
			continue
		}
		if pl.MinUnits != 72 || pl.Units != 1024 {
			t.Errorf("%s: min units %d of %d, want 72 of 1024", c.name, pl.MinUnits, pl.Units)
		}
		t.Logf("%s: %s", c.name, pl.Text())
	}
	// Just below and just above the least it can run in, at the context asked for.
	streamed := m.PlanFor(machine.Profile{RAMTotal: 8 * gib, RAMAvailable: 4 * gib}, 4096)
	need := dense + streamed.Session() + 72*unit
	for _, c := range []struct {
		avail uint64
		want  engine.Placement
	}{{2*gib + need - 1, engine.Refused}, {2*gib + need, engine.ExpertsStreamed}} {
		if pl := m.PlanFor(machine.Profile{RAMTotal: 8 * gib, RAMAvailable: c.avail}, 4096); pl.Placement != c.want || pl.NeedAtLeast != need {
			t.Errorf("available %d: %v (need %d), want %v (need %d)", c.avail, pl.Placement, pl.NeedAtLeast, c.want, need)
		}
	}
	if machine.Reserve(100*gib) != 10*gib || machine.Reserve(4*gib) != 2*gib {
		t.Fatal("reserve is not max(2 GiB, 10%)")
	}
}

func TestPlanForDenseModel(t *testing.T) {
	m := Model{Description: engine.Description{Config: engine.Config{Layers: 2, Hidden: 64, Heads: 1, KVHeads: 1, HeadDim: 64,
		Context: 128, Vocab: 100}, Footprint: engine.Footprint{FileSize: 1 << 30}}}
	gib := uint64(1 << 30)
	if pl := m.PlanFor(machine.Profile{RAMTotal: 8 * gib, RAMAvailable: 4 * gib}, 0); pl.Placement != engine.InMemory {
		t.Fatalf("dense 1 GiB in 2 GiB of room: %v", pl.Placement)
	}
	if pl := m.PlanFor(machine.Profile{RAMTotal: 8 * gib, RAMAvailable: 3 * gib}, 0); pl.Placement != engine.Refused {
		t.Fatalf("dense 1 GiB in 1 GiB of room less the session: %v", pl.Placement)
	}
}

func TestBuiltinEntries(t *testing.T) {
	list := Builtin()
	if len(list) != 4 || list[0].Quant != "Q4_K_M" || list[1].Quant != "Q8_0" || list[2].Repo != "Qwen/Qwen3-30B-A3B-GGUF" {
		t.Fatalf("builtin %+v", list)
	}
	for _, e := range list {
		if err := e.Check(); err != nil {
			t.Error(err)
		}
	}
	want := "https://huggingface.co/allenai/OLMoE-1B-7B-0125-Instruct-GGUF/resolve/main/OLMoE-1B-7B-0125-Instruct-Q4_K_M.gguf"
	if got := list[0].DownloadURL("https://huggingface.co/"); got != want {
		t.Fatalf("URL %s, want %s", got, want)
	}
}

func TestEntriesFile(t *testing.T) {
	d := DirsAt(t.TempDir())
	list, err := d.Entries()
	if err != nil || len(list) != len(Builtin()) {
		t.Fatalf("first read: %v %v", list, err)
	}
	// The built-in list was written for the user to edit; an edit is read back.
	var onDisk []Entry
	data, err := os.ReadFile(d.CatalogFile())
	if err != nil || json.Unmarshal(data, &onDisk) != nil || len(onDisk) != len(Builtin()) {
		t.Fatalf("catalog.json: %s %v", data, err)
	}
	onDisk = onDisk[:1]
	onDisk[0].Name = "edited"
	data, _ = json.Marshal(onDisk)
	os.WriteFile(d.CatalogFile(), data, 0o644)
	if list, err := d.Entries(); err != nil || len(list) != 1 || list[0].Name != "edited" {
		t.Fatalf("edited: %+v %v", list, err)
	}

	for _, bad := range []string{
		`[{"name":"x","repo":"a/b","file":"../../etc/passwd.gguf","quant":"q","size":1}]`,
		`[{"name":"x","repo":"a","file":"m.gguf","quant":"q","size":1}]`,
		`[{"name":"x","repo":"a/b","file":"m.bin","quant":"q","size":1}]`,
		`[{"name":"x","repo":"a/b","file":"m.gguf","quant":"q","size":1,"colour":"red"}]`,
		`[{"name":"x","repo":"a/b","file":"m.gguf","quant":"q","size":1,"sha256":"abc"}]`,
		`[{"name":"x","repo":"a/b","file":"m.gguf","quant":"q","size":1,"url":"file:///etc/passwd"}]`,
		`[{"name":"x","repo":"a/b","file":"m.gguf"},{"name":"y","repo":"c/d","file":"m.gguf"}]`,
		`{"name":"x"}`,
	} {
		os.WriteFile(d.CatalogFile(), []byte(bad), 0o644)
		if _, err := d.Entries(); err == nil || !strings.Contains(err.Error(), "catalog.json") {
			t.Errorf("%s: %v, want an error naming catalog.json", bad, err)
		}
	}
}
