package ui

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/test"
	"fyne.io/fyne/v2/widget"

	"github.com/trochilus-llm/trochilus/engine/library"
	"github.com/trochilus-llm/trochilus/gguf"
	"github.com/trochilus-llm/trochilus/internal/modelgen"
	"github.com/trochilus-llm/trochilus/internal/modelgen/modelgentest"
)

// objectTexts returns the words of o's labels, and of its buttons when buttons is set, in the
// order they stand in its containers.
func objectTexts(o fyne.CanvasObject, buttons bool) []string {
	switch w := o.(type) {
	case *widget.Label:
		return []string{w.Text}
	case *widget.Button:
		if buttons {
			return []string{w.Text}
		}
	case *fyne.Container:
		var out []string
		for _, c := range w.Objects {
			out = append(out, objectTexts(c, buttons)...)
		}
		return out
	}
	return nil
}

// dialogText returns the words of a dialog's labels.
func dialogText(d *keyDialog) string {
	return strings.Join(append(objectTexts(d.content, false), objectTexts(d.problem, false)...), "\n")
}

// modelFile writes the tiny model of weights w to dir/name, all under one general.name as
// llama-quantize leaves two quantizations of a model.
func modelFile(t *testing.T, w modelgen.Weights, dir, name string) string {
	t.Helper()
	cfg := modelgen.Tiny(w)
	cfg.Name = "OLMoE tiny"
	data, err := os.ReadFile(modelgentest.TestModel(t, cfg))
	if err != nil {
		t.Fatal(err)
	}
	os.MkdirAll(dir, 0o755)
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// twoQuantsUI is the window over a models folder holding a Q4_K_M and a Q8_0 of one model.
func twoQuantsUI(t *testing.T, opts Options) (*UI, library.Dirs, string, string) {
	t.Helper()
	test.NewTempApp(t)
	dirs := library.DirsAt(t.TempDir())
	q4 := modelFile(t, modelgen.Q4KM(), dirs.Models, "OLMoE-tiny-Q4_K_M.gguf")
	q8 := modelFile(t, modelgen.Uniform(gguf.TypeQ8_0), dirs.Models, "OLMoE-tiny-Q8_0.gguf")
	os.MkdirAll(dirs.Chats, 0o755)
	return startUI(t, &fakeBackend{prof: bigMachine()}, dirs, opts), dirs, q4, q8
}

func rowTitles(u *UI) []string {
	var out []string
	for _, r := range u.models.rows {
		out = append(out, r.title(""))
	}
	return out
}

// Two quantizations of one model look different (file name, weight mix, size); the list sorts
// by name, size or date and filters by words.
func TestModelsNamesSortFilter(t *testing.T) {
	u, _, q4, q8 := twoQuantsUI(t, Options{})
	s := u.models
	if got := rowTitles(u); !slices.Equal(got, []string{"OLMoE-tiny-Q4_K_M.gguf", "OLMoE-tiny-Q8_0.gguf"}) {
		t.Fatalf("titles %q", got)
	}
	a, b := s.rows[0].summary(), s.rows[1].summary()
	if !strings.HasPrefix(a, "Q4_K_M · ") || !strings.HasPrefix(b, "Q8_0 · ") || a == b || !strings.Contains(a, " · OLMoE tiny · ") {
		t.Fatalf("summaries %q / %q", a, b)
	}
	s.sortBy.SetSelected("Size")
	if s.rows[0].file.Size <= s.rows[1].file.Size {
		t.Fatalf("by size: %q, %d then %d bytes", rowTitles(u), s.rows[0].file.Size, s.rows[1].file.Size)
	}
	now := s.rows[0].file.ModTime
	os.Chtimes(q4, now.Add(3600e9), now.Add(3600e9))
	u.models.refresh()
	u.Wait()
	s.sortBy.SetSelected("Newest")
	if got := rowTitles(u); got[0] != "OLMoE-tiny-Q4_K_M.gguf" {
		t.Fatalf("newest first: %q", got)
	}

	s.list.Select(s.index(q8))
	test.Type(s.filter, "q4")
	if got := rowTitles(u); !slices.Equal(got, []string{"OLMoE-tiny-Q4_K_M.gguf"}) || s.selected != "" {
		t.Fatalf("filter q4: %q, selected %q", got, s.selected)
	}
	s.filter.SetText("no such thing")
	if len(s.rows) != 0 || s.list.Visible() || !s.empty.Visible() || !strings.Contains(s.emptyMsg.Text, `No model matches "no such thing"`) || s.emptyBtn.Visible() {
		t.Fatalf("filtered out: rows %d, list %v, panel %q", len(s.rows), s.list.Visible(), s.emptyMsg.Text)
	}
	s.filter.SetText("")
	if len(s.rows) != 2 || !s.list.Visible() || s.empty.Visible() {
		t.Fatalf("filter cleared: %q", rowTitles(u))
	}
	t.Logf("%q / %q", a, b)
}

// The list takes the screen's height: a dozen rows at the default size, not two.
func TestModelsListIsTall(t *testing.T) {
	u, _, _, _ := twoQuantsUI(t, Options{})
	u.win.Resize(fyne.NewSize(defaultWidth, defaultHeight))
	row := u.models.list.CreateItem().MinSize().Height
	if h := u.models.list.Size().Height; h < 10*row {
		t.Fatalf("the list is %.0f px tall, %.1f rows of %.0f px", h, h/row, row)
	}
	u.win.Resize(fyne.NewSize(1000, 700))
	if got := u.win.Canvas().Size(); got.Width > 1000 || got.Height > 700 {
		t.Fatalf("the screen needs %v", got)
	}
	if h := u.models.list.Size().Height; h < 7*row {
		t.Fatalf("at 1000×700 the list is %.1f rows", h/row)
	}
}

// A link in the models folder is listed under its name and deleting it leaves its target.
func TestModelsSymlinkAndDelete(t *testing.T) {
	test.NewTempApp(t)
	dirs := library.DirsAt(t.TempDir())
	target := modelFile(t, modelgen.Uniform(gguf.TypeQ8_0), t.TempDir(), "real.gguf")
	os.MkdirAll(dirs.Models, 0o755)
	link := filepath.Join(dirs.Models, "linked.gguf")
	if err := os.Symlink(target, link); err != nil {
		t.Skipf("no symbolic links: %v", err)
	}
	own := modelFile(t, modelgen.Uniform(gguf.TypeQ8_0), dirs.Models, "own.gguf")
	be := &fakeBackend{prof: bigMachine()}
	u := startUI(t, be, dirs, Options{})
	if got := rowTitles(u); !slices.Equal(got, []string{"linked.gguf", "own.gguf"}) {
		t.Fatalf("titles %q", got)
	}
	s := u.models
	s.list.Select(s.index(link))
	if !strings.Contains(s.detail.Text, "a link to "+target) || s.deleteBtn.Disabled() || !s.removeBtn.Disabled() {
		t.Fatalf("link detail %q, delete disabled %v", s.detail.Text, s.deleteBtn.Disabled())
	}
	test.Tap(s.deleteBtn)
	if s.confirm == nil || !strings.Contains(dialogText(s.confirm), "The file it points to stays") {
		t.Fatal("no confirmation naming a link")
	}
	test.Tap(s.confirm.buttons[1])
	u.Wait()
	if _, err := os.Lstat(link); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("link still there")
	}
	if _, err := os.Stat(target); err != nil {
		t.Fatalf("the link's target was deleted: %v", err)
	}

	// Deleting the loaded model asks, Keep keeps it, Delete unloads it first.
	pickAndLoad(t, u, own)
	m := be.last()
	s.list.Select(s.index(own))
	test.Tap(s.deleteBtn)
	if !strings.Contains(dialogText(s.confirm), "It is loaded: it will be unloaded first") {
		t.Fatalf("dialog %q", dialogText(s.confirm))
	}
	test.Tap(s.confirm.buttons[0]) // Keep
	if _, err := os.Stat(own); err != nil || u.loaded == nil {
		t.Fatal("Keep deleted or unloaded")
	}
	test.Tap(s.deleteBtn)
	test.Tap(s.confirm.buttons[1]) // Delete
	u.Wait()
	if _, err := os.Stat(own); !errors.Is(err, os.ErrNotExist) || u.loaded != nil || !m.closed {
		t.Fatalf("after delete: %v, loaded %v, closed %v", err, u.loaded != nil, m.closed)
	}
	if len(s.all) != 0 || !s.empty.Visible() || !s.emptyBtn.Visible() {
		t.Fatalf("rows %q after deleting every file; first-run panel %v", rowTitles(u), s.empty.Visible())
	}
}

// Unload frees the model; the chat says none is loaded.
func TestModelsUnload(t *testing.T) {
	be := &fakeBackend{prof: bigMachine()}
	u := newLoadedUI(t, be)
	u.tabs.SelectIndex(0)
	m := be.last()
	if u.models.unloadBtn.Disabled() {
		t.Fatal("Unload disabled with a model loaded")
	}
	test.Tap(u.models.unloadBtn)
	if u.loaded != nil || !m.closed || !u.models.unloadBtn.Disabled() || !strings.Contains(u.chat.modelLabel.Text, "No model loaded") {
		t.Fatalf("after unload: loaded %v, closed %v, chat %q", u.loaded != nil, m.closed, u.chat.modelLabel.Text)
	}
	if !strings.Contains(u.models.status.Text, "tiny.gguf is unloaded") || strings.Contains(u.models.rows[0].title(u.loadedPath()), "loaded)") {
		t.Fatalf("status %q, row %q", u.models.status.Text, u.models.rows[0].title(u.loadedPath()))
	}
}

// "Show in folder" goes through Options.OpenFolder; an opened file can be removed from the
// list (the file stays) but not deleted.
func TestModelsShowInFolderAndRemove(t *testing.T) {
	var shown []string
	opener := func(p string) error { shown = append(shown, p); return nil }
	u, dirs, q4, _ := twoQuantsUI(t, Options{OpenFolder: opener})
	elsewhere := modelFile(t, modelgen.Uniform(gguf.TypeQ8_0), t.TempDir(), "elsewhere.gguf")
	u.models.open(elsewhere)
	u.Wait()
	s := u.models
	if s.selected != elsewhere || s.removeBtn.Disabled() || !s.deleteBtn.Disabled() {
		t.Fatalf("opened file: selected %q, remove disabled %v, delete disabled %v", s.selected, s.removeBtn.Disabled(), s.deleteBtn.Disabled())
	}
	test.Tap(s.folderBtn)
	test.Tap(s.removeBtn)
	u.Wait()
	if s.index(elsewhere) >= 0 || len(s.rows) != 2 {
		t.Fatalf("removed file still listed: %q", rowTitles(u))
	}
	if _, err := os.Stat(elsewhere); err != nil {
		t.Fatalf("Remove from list deleted the file: %v", err)
	}
	if opened, _ := dirs.Opened(); len(opened) != 0 {
		t.Fatalf("opened list %q", opened)
	}
	s.list.Select(s.index(q4))
	if !s.removeBtn.Disabled() {
		t.Fatal("Remove from list offered for a file of the models folder")
	}
	test.Tap(s.folderBtn)
	if !slices.Equal(shown, []string{elsewhere, q4}) {
		t.Fatalf("shown %q", shown)
	}
	// A failing opener says why.
	u.opts.OpenFolder = func(string) error { return errors.New("no file manager") }
	test.Tap(s.folderBtn)
	if n := len(u.keys.modals); n != 1 || !strings.Contains(dialogText(u.keys.modals[0]), "no file manager") {
		t.Fatalf("%d dialogs after a failed opener", n)
	}
}

// An empty library offers a download and Open; the open dialog takes a typed path, says what
// is wrong with a bad one, browses a folder's.
func TestModelsFirstRunAndOpenPath(t *testing.T) {
	u, _ := newTestUI(t, &fakeBackend{prof: bigMachine()}, Options{Hub: "http://127.0.0.1:1"})
	s := u.models
	if s.list.Visible() || !s.empty.Visible() || !s.emptyBtn.Visible() || !strings.HasPrefix(s.emptyMsg.Text, "No models yet.") {
		t.Fatalf("empty library: list %v, panel %v %q", s.list.Visible(), s.empty.Visible(), s.emptyMsg.Text)
	}
	buttons := s.emptyBtn.Objects
	if len(buttons) != 2 || !strings.HasPrefix(buttons[0].(*widget.Button).Text, "Download OLMoE-1B-7B-0125-Instruct Q4_K_M (about ") {
		t.Fatalf("first-run buttons %v", buttons)
	}
	test.Tap(buttons[1].(*widget.Button))
	if s.openDlg == nil || !s.openDlg.open || u.win.Canvas().Focused() != s.openPath {
		t.Fatal("Open did not show the path dialog with the path field focused")
	}
	dir := t.TempDir()
	path := modelFile(t, modelgen.Uniform(gguf.TypeQ8_0), dir, "my model.gguf")
	notModel := filepath.Join(dir, "notes.txt")
	os.WriteFile(notModel, []byte("x"), 0o644)
	for _, c := range []struct{ typed, want string }{
		{"", "type the path of a .gguf file"},
		{filepath.Join(dir, "missing.gguf"), "no such file or folder"},
		{notModel, "is not a .gguf file"},
	} {
		s.openPath.SetText(c.typed)
		test.Tap(s.openDlg.buttons[1])
		if !s.openDlg.open || !strings.Contains(s.openDlg.problem.Text, c.want) {
			t.Fatalf("typed %q: open %v, problem %q", c.typed, s.openDlg.open, s.openDlg.problem.Text)
		}
	}
	s.openPath.SetText(` "` + path + `" `) // pasted from a file manager, quotes and all
	test.Tap(s.openDlg.buttons[1])
	u.Wait()
	if s.openDlg.open || s.selected != path || !s.list.Visible() || s.empty.Visible() {
		t.Fatalf("after a typed path: dialog open %v, selected %q, rows %q", s.openDlg.open, s.selected, rowTitles(u))
	}
	if typedPath("~/m.gguf") == "~/m.gguf" {
		t.Fatal("~ not expanded")
	}
	// A folder's path closes the dialog and browses the folder instead.
	s.openDialog()
	s.openPath.SetText(dir)
	test.Tap(s.openDlg.buttons[1])
	if s.openDlg.open {
		t.Fatal("a folder's path left the path dialog open")
	}
}

// A second instance on one data folder is told so, in a window of its own.
func TestModelsAlreadyRunning(t *testing.T) {
	a := test.NewTempApp(t)
	dirs := library.DirsAt(t.TempDir())
	lock, err := dirs.Lock()
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Release()
	_, err = dirs.Lock()
	if !errors.Is(err, library.ErrLocked) {
		t.Fatalf("second lock: %v", err)
	}
	w := AlreadyRunning(a, err)
	all := strings.Join(objectTexts(w.Content(), true), "|")
	if !strings.Contains(all, "already uses the data folder "+dirs.Data) || !strings.Contains(all, "Quit") || w.Title() != "Trochilus is already running" {
		t.Fatalf("window %q: %q", w.Title(), all)
	}
}
