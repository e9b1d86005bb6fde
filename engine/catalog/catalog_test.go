package catalog

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/trochilus-llm/trochilus/engine/machine"
	"github.com/trochilus-llm/trochilus/gguf"
	"github.com/trochilus-llm/trochilus/internal/modelgen"
	"github.com/trochilus-llm/trochilus/internal/modelgen/modelgentest"
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
		m.KVWidth != cfg.KVHeads*cfg.HeadDim() || m.ExpertFFN != cfg.ExpertFFN || m.Vocab != cfg.Vocab {
		t.Fatalf("described %+v from config %+v", m, cfg)
	}
	fi, _ := os.Stat(path)
	if m.Size != fi.Size() {
		t.Fatalf("size %d, file has %d", m.Size, fi.Size())
	}
	// Three stacked expert matrices per layer (gate, up: hidden→ffn; down: ffn→hidden), Q8_0:
	// 34 bytes per 32 weights.
	wantExperts := int64(3*cfg.Layers*cfg.Experts*cfg.Hidden*cfg.ExpertFFN) * 34 / 32
	if m.ExpertBytes != wantExperts {
		t.Fatalf("expert bytes %d, want %d", m.ExpertBytes, wantExperts)
	}
	if m.ExpertUnitBytes() != wantExperts/int64(cfg.Layers*cfg.Experts) {
		t.Fatalf("unit bytes %d", m.ExpertUnitBytes())
	}
	var typed int64
	for _, s := range m.Types {
		typed += s.Bytes
	}
	if typed != m.DenseBytes+m.ExpertBytes || m.DenseBytes+m.ExpertBytes > m.Size {
		t.Fatalf("type shares %d, dense+experts %d, file %d", typed, m.DenseBytes+m.ExpertBytes, m.Size)
	}
	if len(m.Types) != 2 || m.Types[0].Type != gguf.TypeQ8_0 || m.Types[1].Type != gguf.TypeF32 {
		t.Fatalf("types %+v, want Q8_0 then F32", m.Types)
	}
	t.Logf("%s: %s, %d params, dense %d B, experts %d B, types %s", m.Name, machine.Bytes(uint64(m.Size)), m.Params, m.DenseBytes, m.ExpertBytes, m.TypesText())
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
	return Model{Arch: "olmoe", Layers: 16, Experts: 64, ExpertsUsed: 8, Context: 4096, Hidden: 2048,
		KVWidth: 2048, ExpertFFN: 1024, Vocab: 50304, DenseBytes: 500 << 20, ExpertBytes: 3584 << 20}
}

func TestSessionBytes(t *testing.T) {
	m := olmoe()
	// KV: 2·16·4096·2048 floats; pass of 512 tokens: 512·(3·2048 + 2·2048 + 2·2048 + 64) +
	// 512·8·(2·2048 + 2·1024) + 50304 floats (the engine's buffers, olmoe_forward.go).
	const want = 4 * (2*16*4096*2048 + 512*14400 + 512*8*6144 + 50304)
	if got := m.SessionBytes(0); got != want {
		t.Fatalf("session bytes %d, want %d", got, want)
	}
	if m.SessionBytes(1024) >= m.SessionBytes(4096) {
		t.Fatal("a shorter context does not take less")
	}
}

func TestPlanFor(t *testing.T) {
	m := olmoe()
	unit := m.ExpertUnitBytes() // 3.5 MiB
	session := m.SessionBytes(0)
	gib := uint64(1 << 30)
	cases := []struct {
		name         string
		total, avail uint64
		verdict      Verdict
		reserve      uint64
		units        int
	}{
		{"big machine", 64 * gib, 40 * gib, Fits, 6554 * gib / 1024, 1024},
		{"8 GiB, 7.5 free", 8 * gib, 7*gib + gib/2, Fits, 2 * gib, 1024},
		// room = 4 GiB − 2 GiB; dense 500 MiB + session ≈ 1.12 GiB leave ≈ 412 MiB: 117 units.
		{"8 GiB, 4 free", 8 * gib, 4 * gib, FitsExpertsFromDisk, 2 * gib, int((int64(2*gib) - m.DenseBytes - session) / unit)},
		{"8 GiB, 3 free", 8 * gib, 3 * gib, WontFit, 2 * gib, 0},
		{"reserve eats all", 4 * gib, 2 * gib, WontFit, 2 * gib, 0},
	}
	for _, c := range cases {
		pl := m.PlanFor(machine.Profile{RAMTotal: c.total, RAMAvailable: c.avail}, 0)
		if pl.Verdict != c.verdict || pl.Reserve/gib != c.reserve/gib || pl.UnitsInRAM != c.units {
			t.Errorf("%s: %v, reserve %d, %d units; want %v, %d, %d (%s)", c.name, pl.Verdict, pl.Reserve, pl.UnitsInRAM,
				c.verdict, c.reserve, c.units, pl.Text())
			continue
		}
		if pl.MinUnits != 72 || pl.Units != 1024 {
			t.Errorf("%s: min units %d of %d, want 72 of 1024", c.name, pl.MinUnits, pl.Units)
		}
		t.Logf("%s: %s", c.name, pl.Text())
	}
	// Just below and just above the least it can run in.
	need := uint64(m.DenseBytes + session + 72*unit)
	for _, c := range []struct {
		avail uint64
		want  Verdict
	}{{2*gib + need - 1, WontFit}, {2*gib + need, FitsExpertsFromDisk}} {
		if pl := m.PlanFor(machine.Profile{RAMTotal: 8 * gib, RAMAvailable: c.avail}, 0); pl.Verdict != c.want || pl.NeedAtLeast != int64(need) {
			t.Errorf("available %d: %v (need %d), want %v (need %d)", c.avail, pl.Verdict, pl.NeedAtLeast, c.want, need)
		}
	}
	if Reserve(100*gib) != 10*gib || Reserve(4*gib) != 2*gib {
		t.Fatal("reserve is not max(2 GiB, 10%)")
	}
}

func TestPlanForDenseModel(t *testing.T) {
	m := Model{Layers: 2, Hidden: 64, KVWidth: 64, Context: 128, Vocab: 100, DenseBytes: 1 << 30}
	gib := uint64(1 << 30)
	if pl := m.PlanFor(machine.Profile{RAMTotal: 8 * gib, RAMAvailable: 4 * gib}, 0); pl.Verdict != Fits {
		t.Fatalf("dense 1 GiB in 2 GiB of room: %v", pl.Verdict)
	}
	if pl := m.PlanFor(machine.Profile{RAMTotal: 8 * gib, RAMAvailable: 3 * gib}, 0); pl.Verdict != WontFit {
		t.Fatalf("dense 1 GiB in 1 GiB of room less the session: %v", pl.Verdict)
	}
}

func TestBuiltinEntries(t *testing.T) {
	list := Builtin()
	if len(list) != 2 || list[0].Quant != "Q4_K_M" || list[1].Quant != "Q8_0" {
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
	if err != nil || json.Unmarshal(data, &onDisk) != nil || len(onDisk) != 2 {
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

// hubServer plays Hugging Face's tree API: two pages for the repository root, one for a
// subfolder.
func hubServer(t *testing.T) *httptest.Server {
	digest := strings.Repeat("0123456789abcdef", 4)
	mux := http.NewServeMux()
	mux.HandleFunc("/api/models/org/repo/tree/main", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("cursor") == "" {
			w.Header().Set("Link", `</api/models/org/repo/tree/main?cursor=p2>; rel="next"`)
			fmt.Fprint(w, `[{"type":"file","oid":"1111","size":1500,"path":"README.md"},
			{"type":"directory","oid":"2222","size":0,"path":"sub"}]`)
			return
		}
		fmt.Fprintf(w, `[{"type":"file","oid":"3333","size":134,"path":"m-Q4_K_M.gguf",
			"lfs":{"oid":"%s","size":4212345678,"pointerSize":134}}]`, strings.ToUpper(digest))
	})
	mux.HandleFunc("/api/models/org/repo/tree/main/sub", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, `[{"type":"file","oid":"4444","size":134,"path":"sub/x.gguf","lfs":{"oid":"%s","size":99}}]`, digest)
	})
	ts := httptest.NewServer(mux)
	t.Cleanup(ts.Close)
	return ts
}

func TestLookupFile(t *testing.T) {
	ts := hubServer(t)
	ctx := context.Background()
	digest := strings.Repeat("0123456789abcdef", 4)
	fi, err := LookupFile(ctx, ts.Client(), ts.URL, "org/repo", "m-Q4_K_M.gguf")
	if err != nil {
		t.Fatal(err)
	}
	if fi.Size != 4212345678 || fi.SHA256 != digest {
		t.Fatalf("found %+v", fi)
	}
	if fi, err := LookupFile(ctx, ts.Client(), ts.URL+"/", "org/repo", "sub/x.gguf"); err != nil || fi.Size != 99 {
		t.Fatalf("subfolder: %+v %v", fi, err)
	}
	for file, want := range map[string]string{
		"README.md":   "not stored with LFS",
		"absent.gguf": "not in the main branch",
	} {
		if _, err := LookupFile(ctx, ts.Client(), ts.URL, "org/repo", file); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", file, err, want)
		}
	}
	if _, err := LookupFile(ctx, ts.Client(), ts.URL, "org/other", "m.gguf"); err == nil || !strings.Contains(err.Error(), "404") {
		t.Errorf("missing repository: %v", err)
	}
}

func TestMeasureReadSpeed(t *testing.T) {
	dir := t.TempDir()
	touch(t, filepath.Join(dir, "small.gguf")) // too small to measure with: a probe is written
	s, err := MeasureReadSpeed(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	if s.Bytes != probeSize || s.BytesPerSec <= 0 || !strings.HasPrefix(filepath.Base(s.File), ".read-speed-") {
		t.Fatalf("measured %+v", s)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Fatalf("probe file left behind: %d entries", len(entries))
	}
	t.Logf("%s: %v", dir, s)

	if _, err := MeasureReadSpeed(context.Background(), filepath.Join(dir, "missing")); err == nil {
		t.Fatal("missing folder measured")
	}
}
