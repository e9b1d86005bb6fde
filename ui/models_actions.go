package ui

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/dialog"
	"fyne.io/fyne/v2/storage"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"

	"github.com/trochilus-llm/trochilus/engine/library"
	"github.com/trochilus-llm/trochilus/internal/units"
)

// unload closes the loaded model, giving its memory back; the chat keeps its conversation.
func (s *modelsScreen) unload() {
	if s.u.loaded == nil || s.loading != "" || s.u.chat.busy() {
		return
	}
	name := filepath.Base(s.u.loadedPath())
	s.u.setLoaded(nil)
	s.status.SetText(name + " is unloaded; its memory is free.")
	s.showDetail()
}

// showInFolder shows the selected file in the system's file manager.
func (s *modelsScreen) showInFolder() {
	if r := s.selectedRow(); r != nil {
		s.u.showError(s.u.opts.OpenFolder(r.path))
	}
}

// openFolder is the default Options.OpenFolder: the file manager's command for this system
// (library.FolderCommand), started and left to run.
func openFolder(path string) error {
	name, args := library.FolderCommand(runtime.GOOS, path)
	cmd := exec.Command(name, args...)
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("showing %s in the file manager (%s): %w", path, name, err)
	}
	// Reaped when it ends, whatever its status: Explorer exits with 1 even when it worked.
	go cmd.Wait()
	return nil
}

// removeFromList forgets a file opened from outside the models folder; the file stays.
func (s *modelsScreen) removeFromList() {
	r := s.selectedRow()
	if r == nil || !r.file.Opened {
		return
	}
	if err := s.u.dirs.RemoveOpened(r.path); err != nil {
		s.u.showError(err)
		return
	}
	s.status.SetText(r.file.FileName() + " is no longer listed; the file is still at " + r.path + ".")
	s.selected = ""
	s.refresh()
}

// askDelete asks before deleting the selected file of the models folder: a model is
// gigabytes that take an hour to download again.
func (s *modelsScreen) askDelete() {
	r := s.selectedRow()
	if r == nil || !s.u.dirs.InModels(r.path) {
		return
	}
	path, name := r.path, r.file.FileName()
	text := fmt.Sprintf("Delete %s (%s) from the models folder? This cannot be undone.", name, units.Bytes(r.file.Size))
	if r.file.Link {
		text = fmt.Sprintf("Remove the link %s from the models folder? The file it points to stays.", name)
	}
	if path == s.u.loadedPath() {
		text += " It is loaded: it will be unloaded first."
	}
	msg := widget.NewLabel(text)
	msg.Wrapping = fyne.TextWrapWord
	s.confirm = s.u.keys.newDialog(s.u.win, dialogSpec{title: "Delete a model", icon: theme.DeleteIcon(), content: msg,
		confirm: "Delete", importance: widget.DangerImportance, dismiss: "Keep",
		onConfirm: func() error { return s.delete(path) }})
	s.confirm.show(nil)
}

// delete removes the file at path from the models folder, unloading it first when it is the
// loaded model (Windows cannot delete a mapped file, and a model whose file is gone cannot
// stream its experts).
func (s *modelsScreen) delete(path string) error {
	if path == s.u.loadedPath() {
		if s.u.chat.busy() || s.loading != "" {
			return errors.New("stop the answer being generated first: the model is in use")
		}
		s.u.setLoaded(nil)
	}
	if err := s.u.dirs.Delete(path); err != nil {
		return err
	}
	s.status.SetText(filepath.Base(path) + " is deleted.")
	s.selected = ""
	s.refresh()
	return nil
}

// newFirstRunPanel builds what the screen shows instead of an empty list: on a first run, the
// way to a model (the catalog's first download, or a file the user has); when the filter hides
// every file, says so.
func (s *modelsScreen) newFirstRunPanel() *fyne.Container {
	s.emptyMsg = widget.NewLabel("")
	s.emptyMsg.Wrapping = fyne.TextWrapWord
	s.emptyMsg.Alignment = fyne.TextAlignCenter
	buttons := []fyne.CanvasObject{}
	if items := s.downloads.items; len(items) > 0 {
		it := items[0]
		label := "Download " + it.entry.Name
		if it.entry.Size > 0 {
			label += " (about " + units.Bytes(it.entry.Size) + ")"
		}
		dl := widget.NewButton(label, func() {
			it.begin()
		})
		dl.Importance = widget.HighImportance
		buttons = append(buttons, dl)
	}
	buttons = append(buttons, widget.NewButton("Open a GGUF file…", s.openDialog))
	s.emptyBtn = container.NewVBox(buttons...)
	return container.NewCenter(container.NewVBox(s.emptyMsg, container.NewCenter(s.emptyBtn)))
}

// showEmpty shows the first-run panel when no file is known, a note when the filter hides
// every file, and the list otherwise.
func (s *modelsScreen) showEmpty() {
	switch {
	case len(s.all) == 0:
		s.emptyMsg.SetText("No models yet.\nDownload one (the list is on the right), or open a GGUF file you already have.\n" +
			"Files put in " + s.u.dirs.Models + " appear here too.")
		s.emptyBtn.Show()
	case len(s.rows) == 0:
		s.emptyMsg.SetText(fmt.Sprintf("No model matches %q.", strings.TrimSpace(s.filter.Text)))
		s.emptyBtn.Hide()
	default:
		s.list.Show()
		s.empty.Hide()
		return
	}
	s.list.Hide()
	s.empty.Show()
}

// openDialog asks for a model file: its path typed or pasted (a folder's path browses that
// folder), or picked by browsing.
func (s *modelsScreen) openDialog() {
	s.openPath = widget.NewEntry()
	s.openPath.SetPlaceHolder(filepath.Join(s.u.dirs.Models, "model.gguf"))
	hint := widget.NewLabel("Type or paste the path of a GGUF file, or of a folder to browse it.")
	hint.Wrapping = fyne.TextWrapWord
	browse := widget.NewButton("Browse…", func() {
		dir := s.openPath.Text
		s.openDlg.close()
		s.browse(dir)
	})
	content := container.NewVBox(hint, container.NewBorder(nil, nil, nil, browse, s.openPath))
	s.openDlg = s.u.keys.newDialog(s.u.win, dialogSpec{title: "Open a model file", content: content, confirm: "Open",
		importance: widget.HighImportance, dismiss: "Cancel", onConfirm: func() error { return s.openTyped(s.openPath.Text) }})
	s.openDlg.show(s.openPath)
}

// openTyped opens the file at the path typed; a folder is browsed instead. An error keeps the
// dialog open, saying what is wrong with the path.
func (s *modelsScreen) openTyped(text string) error {
	p := typedPath(text)
	if p == "" {
		return errors.New("type the path of a .gguf file")
	}
	fi, err := os.Stat(p)
	if err != nil {
		return fmt.Errorf("%s: no such file or folder", p)
	}
	if fi.IsDir() {
		s.browse(p)
		return nil
	}
	if !strings.EqualFold(filepath.Ext(p), library.Extension) {
		return fmt.Errorf("%s is not a %s file", p, library.Extension)
	}
	s.open(p)
	return nil
}

// typedPath cleans a typed or pasted path: spaces and quotes around it (a file manager's
// "Copy path" adds them) and a leading ~ for the home folder.
func typedPath(text string) string {
	p := strings.TrimSpace(text)
	if len(p) >= 2 && (p[0] == '"' || p[0] == '\'') && p[len(p)-1] == p[0] {
		p = p[1 : len(p)-1]
	}
	if p == "~" || strings.HasPrefix(p, "~/") || strings.HasPrefix(p, `~\`) {
		if home, err := os.UserHomeDir(); err == nil {
			p = filepath.Join(home, p[1:])
		}
	}
	return p
}

// browse shows the toolkit's file picker, in dir when it is a folder (else the folder of the
// file it names, else the models folder).
func (s *modelsScreen) browse(dir string) {
	d := dialog.NewFileOpen(func(rc fyne.URIReadCloser, err error) {
		if err != nil {
			s.u.showError(err)
			return
		}
		if rc == nil {
			return // cancelled
		}
		path := rc.URI().Path()
		rc.Close()
		s.open(path)
	}, s.u.win)
	d.SetFilter(storage.NewExtensionFileFilter([]string{library.Extension}))
	for _, c := range []string{typedPath(dir), filepath.Dir(typedPath(dir)), s.u.dirs.Models} {
		if fi, err := os.Stat(c); c != "" && err == nil && fi.IsDir() {
			if l, err := storage.ListerForURI(storage.NewFileURI(c)); err == nil {
				d.SetLocation(l)
				break
			}
		}
	}
	d.Show()
}

// open adds a file to the known models and selects it.
func (s *modelsScreen) open(path string) {
	if err := s.u.dirs.AddOpened(path); err != nil {
		s.u.showError(err)
		return
	}
	abs, _ := filepath.Abs(path)
	s.selected = abs
	if s.filter.Text != "" {
		s.filter.SetText("") // the file opened must be seen
	}
	s.refresh()
}
