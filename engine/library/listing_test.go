package library

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/trochilus-llm/trochilus/gguf"
	"github.com/trochilus-llm/trochilus/internal/modelgen"
	"github.com/trochilus-llm/trochilus/internal/modelgen/modelgentest"
)

// copyModel writes the generated model of cfg to dir/name.
func copyModel(t *testing.T, cfg modelgen.Config, dir, name string) string {
	t.Helper()
	data, err := os.ReadFile(modelgentest.TestModel(t, cfg))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// A Q4_K_M and a Q8_0 of one model share general.name; the file name and the weight mix tell
// them apart. Links in the models folder are followed; broken ones and links to folders are not
// models.
func TestListTwoQuantsAndLinks(t *testing.T) {
	d := DirsAt(t.TempDir())
	// Both quantizations under one general.name, as llama-quantize leaves it.
	cfg8, cfg4 := modelgen.Tiny(modelgen.Uniform(gguf.TypeQ8_0)), modelgen.Tiny(modelgen.Q4KM())
	cfg8.Name, cfg4.Name = "OLMoE tiny", "OLMoE tiny"
	copyModel(t, cfg8, d.Models, "tiny-Q8_0.gguf")
	elsewhere := t.TempDir()
	q4 := copyModel(t, cfg4, elsewhere, "tiny-Q4_K_M.gguf")
	link := filepath.Join(d.Models, "linked-Q4_K_M.gguf")
	if err := os.Symlink(q4, link); err != nil {
		t.Skipf("no symbolic links here: %v", err)
	}
	if err := os.Symlink(filepath.Join(elsewhere, "gone.gguf"), filepath.Join(d.Models, "broken.gguf")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(elsewhere, filepath.Join(d.Models, "folder.gguf")); err != nil {
		t.Fatal(err)
	}
	opened := copyModel(t, modelgen.Tiny(modelgen.Uniform(gguf.TypeQ8_0)), t.TempDir(), "opened.gguf")
	if err := d.AddOpened(opened); err != nil {
		t.Fatal(err)
	}
	ls, err := d.List(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, l := range ls {
		names = append(names, l.FileName())
	}
	slices.Sort(names)
	if want := []string{"linked-Q4_K_M.gguf", "opened.gguf", "tiny-Q8_0.gguf"}; !slices.Equal(names, want) {
		t.Fatalf("listed %q, want %q", names, want)
	}
	byName := map[string]Listed{}
	for _, l := range ls {
		if l.Err != nil {
			t.Fatalf("%s: %v", l.Path, l.Err)
		}
		byName[l.FileName()] = l
	}
	a, b := byName["linked-Q4_K_M.gguf"], byName["tiny-Q8_0.gguf"]
	if a.Model.Name != b.Model.Name {
		t.Fatalf("the two quantizations are named %q and %q: the test wants one general.name", a.Model.Name, b.Model.Name)
	}
	if a.Quant() != "Q4_K_M" || b.Quant() != "Q8_0" || !a.Link || b.Link || a.Size == b.Size {
		t.Fatalf("Q4_K_M row %q link %v size %d; Q8_0 row %q link %v size %d", a.Quant(), a.Link, a.Size, b.Quant(), b.Link, b.Size)
	}
	if fi, _ := os.Stat(q4); a.Size != fi.Size() || a.Path != link {
		t.Fatalf("link row: %s, %d bytes; target has %d", a.Path, a.Size, fi.Size())
	}
	if o := byName["opened.gguf"]; !o.Opened || a.Opened || b.Opened {
		t.Fatalf("opened flags: opened %v, link %v, file %v", o.Opened, a.Opened, b.Opened)
	}
	if b.SameName() || !sameName("/m/OLMoE Tiny.gguf", "olmoe tiny") {
		t.Fatal("SameName: a name the file's does not say, or the file's own in another case")
	}
	t.Logf("%s: %s %d; %s: %s %d (model %q)", a.FileName(), a.Quant(), a.Size, b.FileName(), b.Quant(), b.Size, a.Model.Name)

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := d.List(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("a cancelled List: %v", err)
	}
}

func TestSortAndFilter(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	mk := func(name, quant string, size int64, age int) Listed {
		return Listed{Path: "/m/" + name, Size: size, ModTime: t0.Add(-time.Duration(age) * time.Hour),
			Model: Model{Quant: quant}}
	}
	ls := []Listed{
		mk("qwen3-Q8_0.gguf", "Q8_0", 32, 3),
		mk("OLMoE-Q4_K_M.gguf", "Q4_K_M", 4, 1),
		mk("broken.gguf", "", 9, 2),
		mk("olmoe-Q8_0.gguf", "Q8_0", 7, 5),
	}
	ls[0].Model.Arch, ls[1].Model.Arch, ls[3].Model.Arch = "qwen3moe", "olmoe", "olmoe"
	ls[2].Err = errors.New("not a GGUF")
	order := func() string {
		var s []string
		for _, l := range ls {
			s = append(s, l.FileName())
		}
		return strings.Join(s, " ")
	}
	for _, c := range []struct {
		o    Order
		want string
	}{
		{ByName, "broken.gguf OLMoE-Q4_K_M.gguf olmoe-Q8_0.gguf qwen3-Q8_0.gguf"},
		{BySize, "qwen3-Q8_0.gguf broken.gguf olmoe-Q8_0.gguf OLMoE-Q4_K_M.gguf"},
		{ByNewest, "OLMoE-Q4_K_M.gguf broken.gguf qwen3-Q8_0.gguf olmoe-Q8_0.gguf"},
		{Order(99), "broken.gguf OLMoE-Q4_K_M.gguf olmoe-Q8_0.gguf qwen3-Q8_0.gguf"},
	} {
		Sort(ls, c.o)
		if got := order(); got != c.want {
			t.Errorf("%v: %s, want %s", c.o, got, c.want)
		}
	}
	if names := fmt.Sprint(Orders()); names != "[Name Size Newest]" {
		t.Errorf("orders %s", names)
	}
	Sort(ls, ByName)
	for _, c := range []struct {
		filter string
		want   string
	}{
		{"", "broken.gguf OLMoE-Q4_K_M.gguf olmoe-Q8_0.gguf qwen3-Q8_0.gguf"},
		{"q8", "olmoe-Q8_0.gguf qwen3-Q8_0.gguf"},
		{"  OLMOE   q8_0 ", "olmoe-Q8_0.gguf"},
		{"qwen3moe", "qwen3-Q8_0.gguf"},
		{"nothing", ""},
	} {
		var got []string
		for i := range ls {
			if ls[i].Matches(c.filter) {
				got = append(got, ls[i].FileName())
			}
		}
		if strings.Join(got, " ") != c.want {
			t.Errorf("filter %q: %q, want %q", c.filter, got, c.want)
		}
	}
}

// Delete removes files of the models folder only: a link, not its target; never a file
// elsewhere or a partial download.
func TestDelete(t *testing.T) {
	d := DirsAt(t.TempDir())
	in := filepath.Join(d.Models, "a.gguf")
	touch(t, in)
	target := filepath.Join(t.TempDir(), "target.gguf")
	touch(t, target)
	link := filepath.Join(d.Models, "link.gguf")
	if err := os.Symlink(target, link); err != nil {
		t.Skipf("no symbolic links here: %v", err)
	}
	if err := d.AddOpened(in); err != nil {
		t.Fatal(err)
	}
	if err := d.Delete(in); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(in); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("deleted file still there: %v", err)
	}
	if opened, _ := d.Opened(); len(opened) != 0 {
		t.Fatalf("a deleted file is still in the opened list: %q", opened)
	}
	if err := d.Delete(link); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(link); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("link still there")
	}
	if _, err := os.Stat(target); err != nil {
		t.Fatalf("deleting a link removed its target: %v", err)
	}
	// Elsewhere, in a subfolder, a partial download: refused, left alone.
	sub := filepath.Join(d.Models, "sub", "b.gguf")
	part := filepath.Join(d.Models, "c.gguf.part")
	touch(t, sub)
	touch(t, part)
	for _, p := range []string{target, sub, part} {
		if err := d.Delete(p); err == nil {
			t.Errorf("Delete(%s) succeeded", p)
		}
		if _, err := os.Stat(p); err != nil {
			t.Errorf("%s removed: %v", p, err)
		}
	}
	if err := d.Delete(filepath.Join(d.Models, "gone.gguf")); err != nil {
		t.Fatalf("deleting a file already gone: %v", err)
	}
}

func TestFolderCommand(t *testing.T) {
	for _, c := range []struct{ goos, path, want string }{
		{"linux", "/home/u/m/a.gguf", "xdg-open [/home/u/m]"},
		{"freebsd", "/m/a.gguf", "xdg-open [/m]"},
		{"darwin", "/Users/u/a.gguf", "open [-R /Users/u/a.gguf]"},
		{"windows", `C:\m\a.gguf`, `explorer [/select, C:\m\a.gguf]`},
		{"windows", `C:\Users\John Smith\a.gguf`, `explorer [/select, C:\Users\John Smith\a.gguf]`},
	} {
		name, args := FolderCommand(c.goos, c.path)
		if got := fmt.Sprint(name, " ", args); got != c.want {
			t.Errorf("%s: %s, want %s", c.goos, got, c.want)
		}
	}
}

// One instance per data folder: a second Lock is refused with the holder's process id until
// the first is released; the lock file stays, holding no stale lock.
func TestInstanceLock(t *testing.T) {
	d := DirsAt(filepath.Join(t.TempDir(), "data"))
	first, err := d.Lock()
	if err != nil {
		t.Fatal(err)
	}
	_, err = d.Lock()
	var le *LockedError
	if !errors.Is(err, ErrLocked) || !errors.As(err, &le) || le.PID != os.Getpid() || le.Data != d.Data {
		t.Fatalf("second lock: %v", err)
	}
	msg := err.Error()
	if !strings.Contains(msg, fmt.Sprintf("(process %d)", os.Getpid())) || !strings.Contains(msg, d.Data) || !strings.Contains(msg, "$"+HomeEnv) {
		t.Fatalf("message %q", msg)
	}
	if err := first.Release(); err != nil {
		t.Fatal(err)
	}
	if err := first.Release(); err != nil {
		t.Fatalf("second release: %v", err)
	}
	again, err := d.Lock()
	if err != nil {
		t.Fatalf("lock after release: %v", err)
	}
	defer again.Release()
	// Another folder is another lock.
	other, err := DirsAt(t.TempDir()).Lock()
	if err != nil {
		t.Fatalf("another folder: %v", err)
	}
	other.Release()
	// A lock file whose holder wrote no process id still refuses, in words without one.
	if err := os.WriteFile(d.lockFile(), []byte("junk"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = d.Lock()
	if !errors.As(err, &le) || le.PID != 0 || strings.Contains(err.Error(), "process") {
		t.Fatalf("lock file without a pid: %v", err)
	}
	t.Logf("second instance: %v", err)
}

func sameName(path, name string) bool {
	l := Listed{Path: path}
	l.Model.Name = name
	return l.SameName()
}
