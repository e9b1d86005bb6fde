package ui

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/dialog"
	"fyne.io/fyne/v2/storage"
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
	rows     []modelRow
	selected string // path of the selected row, "" for none
	detail   *widget.Label
	loadBtn  *widget.Button
	status   *widget.Label
	loading  string // path being loaded, "" when none

	downloads *downloadsView
}

// modelRow is one file of the list.
type modelRow struct {
	path    string
	desc    library.Model
	err     error // the file is not a model the app can describe
	plan    engine.Plan
	hasPlan bool
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
	s.loadBtn.Disable()
	s.status = widget.NewLabel("")
	s.status.Wrapping = fyne.TextWrapWord

	openBtn := widget.NewButton("Open file…", s.openDialog)
	refreshBtn := widget.NewButton("Refresh", s.refresh)
	folder := widget.NewLabel("Models folder: " + u.dirs.Models)
	folder.Truncation = fyne.TextTruncateEllipsis
	top := container.NewBorder(nil, nil, nil, container.NewHBox(openBtn, refreshBtn), folder)
	bottom := container.NewVBox(widget.NewSeparator(), s.detail, container.NewHBox(s.loadBtn), s.status)
	local := container.NewBorder(top, bottom, nil, nil, s.list)

	s.downloads = newDownloadsView(u)
	split := container.NewVSplit(local, container.NewVScroll(s.downloads.content))
	split.Offset = 0.55
	s.content = split
	return s
}

func (r *modelRow) title(loaded string) string {
	name := r.desc.Name
	if r.err != nil {
		name = filepath.Base(r.path)
	}
	if r.path == loaded {
		name += "  (loaded)"
	}
	return name
}

// summary is the row's second line: architecture, size, weight types, verdict.
func (r *modelRow) summary() string {
	if r.err != nil {
		return "not usable: " + r.err.Error()
	}
	parts := []string{r.desc.Arch, units.Bytes(r.desc.Size), r.desc.TypesText()}
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
		paths, err := s.u.dirs.ModelFiles()
		rows := make([]modelRow, 0, len(paths))
		for _, p := range paths {
			if ctx.Err() != nil {
				return
			}
			d, derr := library.Describe(p)
			rows = append(rows, modelRow{path: p, desc: d, err: derr})
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
	s.rows = rows
	s.refreshVerdicts()
	s.list.UnselectAll()
	if i := s.index(s.selected); i >= 0 {
		s.list.Select(i)
	} else {
		s.selected = ""
	}
	s.list.Refresh()
	s.showDetail()
	s.downloads.refresh()
}

func (s *modelsScreen) index(path string) int {
	if path == "" {
		return -1
	}
	return slices.IndexFunc(s.rows, func(r modelRow) bool { return r.path == path })
}

// refreshVerdicts works out each model's plan on the machine measured.
func (s *modelsScreen) refreshVerdicts() {
	m := s.u.machine
	for i := range s.rows {
		r := &s.rows[i]
		if r.err == nil && m != nil {
			// At the context a load opens by default: the plan the load will follow.
			r.plan, r.hasPlan = r.desc.PlanFor(m.Profile, 0), true
		}
	}
	s.list.Refresh()
	s.showDetail()
	s.u.mach.refresh()
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

// showDetail describes the selected model and enables Load when it can be loaded.
func (s *modelsScreen) showDetail() {
	r := s.selectedRow()
	why := s.cannotLoad(r)
	if why == "" {
		s.loadBtn.Enable()
	} else {
		s.loadBtn.Disable()
	}
	if r == nil {
		s.detail.SetText("Pick a model to see how it fits this machine.")
		return
	}
	if r.err != nil {
		s.detail.SetText(r.path + "\n" + r.err.Error())
		return
	}
	d := &r.desc
	text := fmt.Sprintf("%s\n%s, %s, %d layers, %d experts (%d used per token), context %d.\nWeights: %s.",
		r.path, d.Arch, units.Bytes(d.Size), d.Layers, d.Experts, d.ExpertsUsed, d.Context, d.TypesText())
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
	path, name := r.path, r.desc.Name
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

// openDialog lets the user pick a GGUF file from anywhere.
func (s *modelsScreen) openDialog() {
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
	s.refresh()
}
