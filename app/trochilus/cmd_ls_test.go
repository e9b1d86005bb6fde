package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/trochilus-llm/trochilus/engine"
	"github.com/trochilus-llm/trochilus/engine/download"
	"github.com/trochilus-llm/trochilus/engine/library"
)

// ls lists a model in the models folder, one opened from elsewhere, a junk file with its
// error and an unfinished download with its share; rm deletes by name or unique prefix, with
// the partial files, and refuses paths and ambiguous prefixes.
func TestLsAndRm(t *testing.T) {
	hub := newFakeHub(t, "org/repo")
	data := pullTestModelBytes(t)
	hub.add("half-Q4_K_M.gguf", data)
	models := modelsDir(t)

	// An unfinished download, cut at a known byte.
	cut := int64(len(data) / 4)
	pullInterrupted(t, "org/repo", cut)
	for name, contents := range map[string][]byte{
		"tiny-Q4_K_M.gguf": data,
		"tiny-copy.gguf":   data,
		"junk.gguf":        []byte("this is not a model"),
		"notes.txt":        []byte("not listed"),
	} {
		if err := os.WriteFile(filepath.Join(models, name), contents, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	elsewhere := filepath.Join(t.TempDir(), "opened.gguf")
	if err := os.WriteFile(elsewhere, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := library.DirsAt(os.Getenv(library.HomeEnv)).AddOpened(elsewhere); err != nil {
		t.Fatal(err)
	}

	code, stdout, stderr := runCLI("ls")
	if code != 0 {
		t.Fatalf("ls: exit %d\n%s%s", code, stdout, stderr)
	}
	t.Logf("ls:\n%s", stdout)
	lines := strings.Split(strings.TrimRight(stdout, "\n"), "\n")
	if len(lines) != 7 || lines[0] != "models folder: "+models || !strings.HasPrefix(lines[1], "NAME ") {
		t.Fatalf("ls printed %d lines, want the folder, a header and 5 models:\n%s", len(lines), stdout)
	}
	row := func(name string) string {
		for _, l := range lines[2:] {
			if strings.HasPrefix(l, name+" ") {
				return l
			}
		}
		t.Fatalf("ls does not list %s:\n%s", name, stdout)
		return ""
	}
	model := row("tiny-Q4_K_M.gguf")
	for _, want := range []string{"2.31 MiB", "olmoe", "Q4_K, Q6_K, F32"} {
		if !strings.Contains(model, want) {
			t.Errorf("model row lacks %q: %s", want, model)
		}
	}
	if !strings.HasSuffix(model, "  fits") && !regexp.MustCompile(`  fits with experts from disk, \d+ of \d+ experts in RAM$`).MatchString(model) && !strings.HasSuffix(model, "won't fit") {
		t.Errorf("model row has no verdict: %s", model)
	}
	// The context a load opens: the tiny model's 4096 positions are under the default.
	ctx := "4096"
	if strings.HasSuffix(model, "won't fit") {
		ctx = "-"
	}
	// Aligned: every column starts where its heading does.
	for _, col := range []struct{ head, cell string }{{"SIZE", "2.31 MiB"}, {"ARCH", "olmoe"}, {"TYPES", "Q4_K, Q6_K"}, {"CONTEXT", ctx + "  "}} {
		if h, c := strings.Index(lines[1], col.head), strings.Index(model, col.cell); h != c {
			t.Errorf("column %s starts at %d, its cell at %d", col.head, h, c)
		}
	}
	if junk := row("junk.gguf"); !strings.Contains(junk, "error: ") || !strings.Contains(junk, "not a GGUF") {
		t.Errorf("junk row: %s", junk)
	}
	pct := fmt.Sprintf("unfinished download, %.0f%%", 100*float64(cut)/float64(len(data)))
	if part := row("half-Q4_K_M.gguf"); !strings.Contains(part, pct) {
		t.Errorf("partial row lacks %q: %s", pct, part)
	}
	if opened := row(elsewhere); !strings.Contains(opened, "olmoe") {
		t.Errorf("opened row: %s", opened)
	}
	if strings.Contains(stdout, "notes.txt") {
		t.Error("a file that is not a model is listed")
	}

	// rm refuses paths, ambiguous prefixes and unknown names, deleting nothing.
	for _, c := range []struct {
		arg  string
		code int
		want string
	}{
		{"../x", 2, "not a file name in the models folder"},
		{"/etc/passwd", 2, "not a file name"},
		{"..", 2, "not a file name"},
		{"tiny", 2, "is the start of 2 models"},
		{"missing", 1, "no model \"missing\""},
	} {
		code, _, stderr := runCLI("rm", c.arg)
		if code != c.code || !strings.Contains(stderr, c.want) {
			t.Errorf("rm %s: exit %d, %q; want exit %d with %q", c.arg, code, stderr, c.code, c.want)
		}
	}
	// A bad name among good ones deletes nothing.
	if code, _, _ := runCLI("rm", "junk.gguf", "../x"); code != 2 {
		t.Errorf("rm with a bad name: exit %d", code)
	}
	folderHolds(t, "half-Q4_K_M.gguf.part", "half-Q4_K_M.gguf.part.json", "junk.gguf", "notes.txt",
		"tiny-Q4_K_M.gguf", "tiny-copy.gguf")

	code, stdout, stderr = runCLI("rm", "tiny-q4", "junk", "half-Q4_K_M.gguf")
	if code != 0 {
		t.Fatalf("rm: exit %d\n%s%s", code, stdout, stderr)
	}
	t.Logf("rm:\n%s", stdout)
	if !strings.Contains(stdout, "deleted tiny-Q4_K_M.gguf") || !strings.Contains(stdout, "deleted the unfinished download of half-Q4_K_M.gguf") {
		t.Errorf("rm output:\n%s", stdout)
	}
	folderHolds(t, "notes.txt", "tiny-copy.gguf")
	if download.Partial(filepath.Join(models, "half-Q4_K_M.gguf")) != 0 {
		t.Error("the partial file survived rm")
	}
	if _, err := os.Stat(elsewhere); err != nil {
		t.Errorf("rm touched a file outside the models folder: %v", err)
	}
}

// An empty models folder says how to fill it.
func TestLsEmpty(t *testing.T) {
	t.Setenv(library.HomeEnv, t.TempDir())
	code, stdout, stderr := runCLI("ls")
	if code != 0 || !strings.Contains(stdout, "trochilus pull") {
		t.Fatalf("ls: exit %d\n%s%s", code, stdout, stderr)
	}
	if code, _, _ := runCLI("ls", "extra"); code != 2 {
		t.Errorf("ls with an argument: exit %d, want 2", code)
	}
}

// ls's verdict names the share of the experts a streamed load keeps in RAM: the planner's
// slots, at most one a unit (the store opens no more).
func TestLsFit(t *testing.T) {
	m, err := library.Describe(tinyModel(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		budget int64
		want   string
	}{
		{engine.ExpertBudgetMin, "fits with experts from disk, 10 of 16 experts in RAM"},
		{1 << 20, "fits with experts from disk, 16 of 16 experts in RAM"},
	} {
		p, err := engine.PlanMemory(engine.PlanRequest{Config: m.Config, Footprint: m.Footprint, ExpertBudget: c.budget})
		if err != nil {
			t.Fatal(err)
		}
		if got := lsFit(p); got != c.want {
			t.Errorf("budget %d: %q, want %q", c.budget, got, c.want)
		}
	}
	// 1 GiB of RAM keeps its 2 GiB reserve: nothing is usable.
	p, _ := engine.PlanMemory(engine.PlanRequest{Config: m.Config, Footprint: m.Footprint, RAMTotal: 1 << 30, RAMAvailable: 1 << 30})
	if got := lsFit(p); got != "won't fit" {
		t.Errorf("1 GiB: %q", got)
	}
	p, _ = engine.PlanMemory(engine.PlanRequest{Config: m.Config, Footprint: m.Footprint, RAMTotal: 64 << 30, RAMAvailable: 32 << 30})
	if got := lsFit(p); got != "fits" {
		t.Errorf("32 GiB: %q", got)
	}
}
