package ui

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/widget"

	"github.com/trochilus-llm/trochilus/engine"
	"github.com/trochilus-llm/trochilus/engine/library"
	"github.com/trochilus-llm/trochilus/internal/units"
)

// modelsScreen lists the model files the app knows with their fit on this machine, loads the
// one picked, and offers the catalog's downloads.
type modelsScreen struct {
	u       *UI
	content fyne.CanvasObject

	list     *widget.List
	all      []modelRow // every known file, in the chosen order
	rows     []modelRow // those the filter lets through: the list's rows
	order    library.Order
	filter   *widget.Entry
	sortBy   *widget.Select
	empty    *fyne.Container // the first-run panel, shown instead of an empty list
	emptyMsg *widget.Label
	emptyBtn *fyne.Container // the first run's Download and Open buttons
	selected string          // path of the selected row, "" for none
	detail   *widget.Label
	status   *widget.Label
	loading  string // path being loaded, "" when none

	loadBtn, unloadBtn, folderBtn, removeBtn, deleteBtn *widget.Button

	confirm  *keyDialog    // the delete confirmation, while open
	openDlg  *keyDialog    // the open dialog, while open
	openPath *widget.Entry // its path field

	downloads *downloadsView
}

// modelRow is one file of the list: what the library found, and its plan on this machine.
type modelRow struct {
	file    library.Listed
	path    string
	desc    library.Model
	err     error // the file is not a model the app can describe
	plan    engine.Plan
	hasPlan bool
}

func newModelRow(l library.Listed) modelRow {
	return modelRow{file: l, path: l.Path, desc: l.Model, err: l.Err}
}

// newRowLabels returns the labels of a list's row, the models' and the chats': a bold title
// over a line of detail, each cut short with an ellipsis rather than widening the list.
func newRowLabels() (title, sub *widget.Label) {
	title = widget.NewLabelWithStyle("", fyne.TextAlignLeading, fyne.TextStyle{Bold: true})
	title.Truncation = fyne.TextTruncateEllipsis
	sub = widget.NewLabel("")
	sub.Truncation = fyne.TextTruncateEllipsis
	return title, sub
}

func newModelsScreen(u *UI) *modelsScreen {
	s := &modelsScreen{u: u}
	s.list = widget.NewList(
		func() int { return len(s.rows) },
		func() fyne.CanvasObject {
			title, sub := newRowLabels()
			return container.NewVBox(title, sub)
		},
		func(i widget.ListItemID, o fyne.CanvasObject) {
			if i < 0 || i >= len(s.rows) {
				return
			}
			box := o.(*fyne.Container)
			title, sub := box.Objects[0].(*widget.Label), box.Objects[1].(*widget.Label)
			title.SetText(s.rows[i].title(s.u.loadedPath()))
			sub.SetText(s.rows[i].summary())
		})
	s.list.OnSelected = func(i widget.ListItemID) {
		if i >= 0 && i < len(s.rows) {
			s.selected = s.rows[i].path
		}
		s.showDetail()
		s.u.mach.refresh()
	}
	s.detail = widget.NewLabel("Pick a model to see how it fits this machine.")
	s.detail.Wrapping = fyne.TextWrapWord
	s.loadBtn = widget.NewButton("Load", s.load)
	s.loadBtn.Importance = widget.HighImportance
	s.unloadBtn = widget.NewButton("Unload", s.unload)
	s.folderBtn = widget.NewButton("Show in folder", s.showInFolder)
	s.removeBtn = widget.NewButton("Remove from list", s.removeFromList)
	s.deleteBtn = widget.NewButton("Delete…", s.askDelete)
	s.deleteBtn.Importance = widget.DangerImportance
	for _, b := range []*widget.Button{s.loadBtn, s.unloadBtn, s.folderBtn, s.removeBtn, s.deleteBtn} {
		b.Disable()
	}
	s.status = widget.NewLabel("")
	s.status.Wrapping = fyne.TextWrapWord

	s.filter = widget.NewEntry()
	s.filter.SetPlaceHolder("Filter: name, quant, architecture")
	s.filter.OnChanged = func(string) { s.applyFilter() }
	var orders []string
	for _, o := range library.Orders() {
		orders = append(orders, o.String())
	}
	s.sortBy = widget.NewSelect(orders, func(name string) {
		for _, o := range library.Orders() {
			if o.String() == name && o != s.order {
				s.order = o
				s.sortRows()
			}
		}
	})
	s.sortBy.SetSelected(s.order.String())

	s.downloads = newDownloadsView(u)
	s.empty = s.newFirstRunPanel()

	openBtn := widget.NewButton("Open file…", s.openDialog)
	refreshBtn := widget.NewButton("Refresh", s.refresh)
	folder := widget.NewLabel("Models folder: " + u.dirs.Models)
	folder.Truncation = fyne.TextTruncateEllipsis
	tools := container.NewBorder(nil, nil, nil, container.NewHBox(s.sortBy, openBtn, refreshBtn), s.filter)
	// The list has the left half's whole height (a dozen files at the default size); the
	// selected file's detail and the downloads share the right half.
	left := container.NewBorder(tools, folder, nil, nil, container.NewStack(s.list, s.empty))
	actions := container.NewHBox(s.loadBtn, s.unloadBtn, s.folderBtn, s.removeBtn, s.deleteBtn)
	detail := container.NewBorder(nil, container.NewVBox(actions, s.status), nil, nil, container.NewVScroll(s.detail))
	right := container.NewVSplit(detail, container.NewVScroll(s.downloads.content))
	right.Offset = 0.45
	split := container.NewHSplit(left, right)
	split.Offset = 0.45
	s.content = split
	s.showEmpty()
	return s
}

func (r *modelRow) title(loaded string) string {
	name := r.file.FileName()
	if r.path == loaded {
		name += "  (loaded)"
	}
	return name
}

// summary is the row's second line: weight mix, size, architecture, the model's name when the
// file's does not say it, verdict. Two quantizations of one model differ in the first two.
func (r *modelRow) summary() string {
	if r.err != nil {
		return "not usable: " + r.err.Error()
	}
	var parts []string
	if q := r.file.Quant(); q != "" {
		parts = append(parts, q)
	}
	parts = append(parts, units.Bytes(r.file.Size), r.desc.Arch)
	if !r.file.SameName() {
		parts = append(parts, r.desc.Name)
	}
	if r.hasPlan {
		parts = append(parts, r.plan.Placement.String())
	} else {
		parts = append(parts, "measuring the machine…")
	}
	return strings.Join(parts, " · ")
}

// refresh lists the model files again, describing each off the UI goroutine.
func (s *modelsScreen) refresh() {
	s.u.run(func(ctx context.Context) {
		listed, err := s.u.dirs.List(ctx)
		if ctx.Err() != nil {
			return
		}
		rows := make([]modelRow, 0, len(listed))
		for _, l := range listed {
			rows = append(rows, newModelRow(l))
		}
		s.u.later(func() {
			if err != nil {
				s.status.SetText(err.Error())
			}
			s.setRows(rows)
		})
	})
}

// setRows replaces the list, keeping the selection when its file is still there.
func (s *modelsScreen) setRows(rows []modelRow) {
	s.all = rows
	s.computePlans()
	s.sortRows()
	s.downloads.refresh()
}

// sortRows puts every row in the chosen order and shows those the filter lets through.
func (s *modelsScreen) sortRows() {
	files := make([]library.Listed, len(s.all))
	byPath := make(map[string]modelRow, len(s.all))
	for i, r := range s.all {
		files[i], byPath[r.path] = r.file, r
	}
	library.Sort(files, s.order)
	for i, f := range files {
		s.all[i] = byPath[f.Path]
	}
	s.applyFilter()
}

// applyFilter shows the rows the filter box lets through, keeping the selection when its row
// is still shown.
func (s *modelsScreen) applyFilter() {
	s.rows = s.rows[:0:0]
	for _, r := range s.all {
		if r.file.Matches(s.filter.Text) {
			s.rows = append(s.rows, r)
		}
	}
	s.list.UnselectAll()
	if i := s.index(s.selected); i >= 0 {
		s.list.Select(i)
	} else {
		s.selected = ""
	}
	s.list.Refresh()
	s.showEmpty()
	s.showDetail()
	s.u.mach.refresh()
}

func (s *modelsScreen) index(path string) int {
	if path == "" {
		return -1
	}
	return slices.IndexFunc(s.rows, func(r modelRow) bool { return r.path == path })
}

// computePlans works out each model's plan on the machine measured.
func (s *modelsScreen) computePlans() {
	m := s.u.machine
	for i := range s.all {
		r := &s.all[i]
		if r.err == nil && m != nil {
			// At the context a load opens by default: the plan the load will follow.
			r.plan, r.hasPlan = r.desc.PlanFor(m.Profile, 0), true
		}
	}
}

// refreshVerdicts works out each model's plan on the machine measured.
func (s *modelsScreen) refreshVerdicts() {
	s.computePlans()
	s.applyFilter()
}

// refreshLoaded marks the loaded model.
func (s *modelsScreen) refreshLoaded() {
	s.list.Refresh()
	s.showDetail()
}

// selectedRow returns the selected row, or nil.
func (s *modelsScreen) selectedRow() *modelRow {
	if i := s.index(s.selected); i >= 0 {
		return &s.rows[i]
	}
	return nil
}

// showDetail describes the selected model and enables the actions it allows.
func (s *modelsScreen) showDetail() {
	r := s.selectedRow()
	why := s.cannotLoad(r)
	enable(s.loadBtn, why == "")
	enable(s.unloadBtn, s.u.loaded != nil && s.loading == "" && !s.u.chat.busy())
	enable(s.folderBtn, r != nil)
	enable(s.removeBtn, r != nil && r.file.Opened)
	enable(s.deleteBtn, r != nil && s.u.dirs.InModels(r.path))
	if r == nil {
		s.detail.SetText("Pick a model to see how it fits this machine.")
		return
	}
	where := r.path
	if r.file.Link {
		if target, err := filepath.EvalSymlinks(r.path); err == nil {
			where += " (a link to " + target + ")"
		}
	}
	if r.file.Opened {
		where += "\nOpened from outside the models folder: Remove from list forgets it, the file stays."
	}
	if r.err != nil {
		s.detail.SetText(where + "\n" + r.err.Error())
		return
	}
	d := &r.desc
	text := fmt.Sprintf("%s\n%s: %s %s, %s, %d layers, %d experts (%d used per token), context %d.\nWeights: %s.",
		where, d.Name, r.file.Quant(), d.Arch, units.Bytes(r.file.Size), d.Layers, d.Experts, d.ExpertsUsed, d.Context, d.TypesText())
	if r.hasPlan {
		text += "\n" + r.plan.Text()
	}
	if why != "" && why != "loaded" {
		text += "\nCannot load: " + why + "."
	}
	s.detail.SetText(text)
}

// cannotLoad says why the row cannot be loaded now, or "".
func (s *modelsScreen) cannotLoad(r *modelRow) string {
	switch {
	case r == nil:
		return "nothing selected"
	case r.err != nil:
		return "the file is not a usable GGUF"
	case !slices.Contains(s.u.be.Architectures(), r.desc.Arch):
		return fmt.Sprintf("architecture %q is not supported (supported: %s)", r.desc.Arch, strings.Join(s.u.be.Architectures(), ", "))
	case !r.hasPlan:
		return "the machine is still being measured"
	case r.plan.Placement == engine.Refused:
		return "it does not fit this machine's RAM"
	case s.loading != "":
		return "another model is loading"
	case s.u.chat.busy():
		return "an answer is being generated"
	case r.path == s.u.loadedPath():
		return "loaded"
	}
	return ""
}

// load loads the selected model off the UI goroutine.
func (s *modelsScreen) load() {
	r := s.selectedRow()
	if s.cannotLoad(r) != "" {
		return
	}
	path, name := r.path, r.file.FileName()
	s.loading = path
	s.status.SetText("Loading " + name + "…")
	s.showDetail()
	s.u.run(func(ctx context.Context) {
		m, err := s.u.be.Load(ctx, path)
		s.u.later(func() {
			s.loading = ""
			if err != nil {
				s.status.SetText("Loading " + name + " failed: " + err.Error())
				s.showDetail()
				s.u.showError(err)
				return
			}
			if s.u.closing {
				m.Close()
				return
			}
			s.status.SetText(name + " is loaded.")
			s.u.setLoaded(m)
			s.u.tabs.SelectIndex(1)
		})
	})
}
