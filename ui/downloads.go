package ui

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"

	"github.com/trochilus-llm/trochilus/engine/download"
	"github.com/trochilus-llm/trochilus/engine/hub"
	"github.com/trochilus-llm/trochilus/engine/library"
	"github.com/trochilus-llm/trochilus/internal/units"
)

// downloadsView shows the catalog's models with a download control each.
type downloadsView struct {
	u       *UI
	content *fyne.Container
	items   []*downloadItem
}

// downloadItem is one catalog entry and its download.
type downloadItem struct {
	u     *UI
	entry library.Entry
	path  string // where the file goes in the models folder

	status *widget.Label
	note   *widget.Label // what a user should know beyond the phase: a restart from zero
	bar    *widget.ProgressBar
	line   download.Line  // the bar's value and words
	start  *widget.Button // Download / Resume / Retry
	pause  *widget.Button
	cancel *widget.Button

	stop     context.CancelFunc // ends the running download; nil when none runs
	discard  bool               // the running download was cancelled for good
	verified bool               // this session downloaded the file and checked its digest
	prog     download.Progress
	confirm  *keyDialog // the Cancel confirmation, while open
}

func newDownloadsView(u *UI) *downloadsView {
	v := &downloadsView{u: u, content: container.NewVBox()}
	head := widget.NewLabelWithStyle("Download a model", fyne.TextAlignLeading, fyne.TextStyle{Bold: true})
	v.content.Add(head)
	entries, err := u.dirs.Entries()
	if err != nil {
		msg := widget.NewLabel(err.Error() + "\nFix or delete " + u.dirs.CatalogFile() + " and restart.")
		msg.Wrapping = fyne.TextWrapWord
		v.content.Add(msg)
		return v
	}
	note := widget.NewLabel("The list comes from " + u.dirs.CatalogFile() + " (edit it to add or fix models). " +
		"Files are checked against the SHA-256 Hugging Face publishes before they are offered.")
	note.Wrapping = fyne.TextWrapWord
	v.content.Add(note)
	for _, e := range entries {
		it := newDownloadItem(u, e)
		v.items = append(v.items, it)
		v.content.Add(it.view())
	}
	v.refresh()
	return v
}

// refresh updates every item that is not running from what the models folder holds.
func (v *downloadsView) refresh() {
	for _, it := range v.items {
		if it.stop == nil {
			it.showIdle()
		}
	}
}

// item returns the item of the entry downloading to name, or nil.
func (v *downloadsView) item(name string) *downloadItem {
	for _, it := range v.items {
		if it.entry.LocalName() == name {
			return it
		}
	}
	return nil
}

func newDownloadItem(u *UI, e library.Entry) *downloadItem {
	it := &downloadItem{u: u, entry: e, path: filepath.Join(u.dirs.Models, e.LocalName())}
	it.status = widget.NewLabel("")
	it.status.Wrapping = fyne.TextWrapWord
	it.note = widget.NewLabel("")
	it.note.Wrapping = fyne.TextWrapWord
	it.note.Importance = widget.WarningImportance
	it.note.Hide()
	it.bar = widget.NewProgressBar()
	it.bar.TextFormatter = it.barText
	it.start = widget.NewButton("Download", it.begin)
	it.pause = widget.NewButton("Pause", it.pauseDownload)
	it.cancel = widget.NewButton("Cancel", it.cancelDownload)
	return it
}

func (it *downloadItem) view() fyne.CanvasObject {
	size := "size unknown"
	if it.entry.Size > 0 {
		size = "about " + units.Bytes(it.entry.Size)
	}
	title := widget.NewLabelWithStyle(it.entry.Name, fyne.TextAlignLeading, fyne.TextStyle{Bold: true})
	where := widget.NewLabel(fmt.Sprintf("%s/%s · %s", it.entry.Repo, it.entry.File, size))
	where.Truncation = fyne.TextTruncateEllipsis
	buttons := container.NewHBox(it.start, it.pause, it.cancel)
	return container.NewVBox(widget.NewSeparator(), title, where, container.NewBorder(nil, nil, nil, buttons, it.bar), it.status, it.note)
}

// barText is the progress bar's words, from the same figures as its value.
func (it *downloadItem) barText() string { return it.line.Text }

// showLine sets the bar's value and words together.
func (it *downloadItem) showLine(l download.Line) {
	it.line = l
	it.bar.SetValue(l.Fraction)
	it.bar.Refresh() // the words change even when the value does not
}

// setNote shows text under the status, or hides the note when text is "".
func (it *downloadItem) setNote(text string) {
	it.note.SetText(text)
	if text == "" {
		it.note.Hide()
	} else {
		it.note.Show()
	}
}

// showIdle shows what the models folder holds for this entry: the file, a partial file, or
// nothing.
func (it *downloadItem) showIdle() {
	it.pause.Disable()
	it.showLine(download.IdleLine(it.path, it.entry.Size))
	if _, err := os.Stat(it.path); err == nil {
		if it.verified {
			it.status.SetText("Downloaded and verified (SHA-256): " + it.path)
		} else {
			it.status.SetText("In the models folder: " + it.path)
		}
		it.start.SetText("Download")
		it.start.Disable()
		it.cancel.Disable()
		return
	}
	it.verified = false
	it.start.Enable()
	if kept := download.Partial(it.path); kept > 0 {
		it.status.SetText(fmt.Sprintf("Paused: %s kept. Resume continues where it stopped.", units.Bytes(kept)))
		it.start.SetText("Resume")
		it.cancel.Enable()
		return
	}
	it.status.SetText("Not downloaded.")
	it.start.SetText("Download")
	it.cancel.Disable()
}

// begin starts or resumes the download off the UI goroutine.
func (it *downloadItem) begin() {
	if it.stop != nil {
		return
	}
	ctx, stop := context.WithCancel(it.u.ctx)
	it.stop, it.discard = stop, false
	it.setNote("")
	it.start.Disable()
	it.pause.Enable()
	it.cancel.Enable()
	it.status.SetText("Asking Hugging Face for the file's size and SHA-256…")
	it.u.run(func(context.Context) {
		defer stop()
		err := it.fetch(ctx)
		it.u.later(func() { it.finished(err) })
	})
}

// fetch learns the digest, then downloads; it runs off the UI goroutine.
func (it *downloadItem) fetch(ctx context.Context) error {
	e := it.entry
	// The catalog's size is a rounded figure: a hint for the disk check and the bar, never
	// enforced. The file list's size is exact, and so is enforced; the digest is, always.
	req := download.Request{URL: e.DownloadURL(it.u.opts.Hub), Path: it.path, SHA256: e.SHA256, SizeHint: e.Size}
	if e.SHA256 == "" {
		fi, err := hub.LookupFile(ctx, it.u.opts.Client, it.u.opts.Hub, e.Repo, e.File)
		if err != nil {
			return err
		}
		req.SHA256, req.Size = fi.SHA256, fi.Size
	}
	opts := download.Options{
		Client:    it.u.opts.Client,
		FreeSpace: it.u.opts.FreeSpace,
		OnProgress: func(p download.Progress) {
			it.u.later(func() { it.progress(p) })
		},
	}
	return download.Fetch(ctx, req, opts)
}

// progress shows a report from the running download.
func (it *downloadItem) progress(p download.Progress) {
	if it.stop == nil {
		return // a late report of a download already finished
	}
	it.prog = p
	switch p.Phase {
	case download.Waiting:
		it.status.SetText(fmt.Sprintf("Connection trouble (%v): retrying…", p.Err))
	case download.Checking:
		it.status.SetText("Checking the partial file to resume it…")
	case download.Verifying:
		it.status.SetText("Verifying the SHA-256…")
	default:
		it.status.SetText(p.Phase.String() + "…")
	}
	if p.Discarded > 0 {
		it.setNote(fmt.Sprintf("The server sent the whole file instead of the rest (it does not resume downloads, "+
			"or the file changed): the download started again from zero, and the %s received before were discarded.",
			units.Bytes(p.Discarded)))
	}
	it.showLine(download.RunningLine(p))
}

// finished shows how the download ended.
func (it *downloadItem) finished(err error) {
	it.stop = nil
	if it.discard {
		if derr := download.Discard(it.path); derr != nil {
			it.u.showError(derr)
		}
		it.showIdle()
		it.status.SetText("Cancelled; the partial file was deleted.")
		return
	}
	switch {
	case err == nil:
		it.verified = true
		it.showIdle()
		it.u.models.refresh()
	case errors.Is(err, context.Canceled):
		it.showIdle()
	default:
		it.showIdle()
		it.status.SetText(failureText(err))
		if download.Partial(it.path) > 0 {
			it.start.SetText("Resume")
		} else {
			it.start.SetText("Retry")
		}
	}
}

// failureText explains a failed download in words a user can act on.
func failureText(err error) string {
	switch {
	case errors.Is(err, download.ErrChecksum):
		return "The file received is not the published one (SHA-256 mismatch) and was deleted. " + err.Error()
	case errors.Is(err, download.ErrNoSpace):
		return "Not enough disk space: " + err.Error()
	}
	return "Download failed: " + err.Error()
}

// pauseDownload stops the running download, keeping the partial file.
func (it *downloadItem) pauseDownload() {
	if it.stop != nil {
		it.status.SetText("Pausing…")
		it.stop()
	}
}

// cancelDownload asks before deleting what the download received: Pause keeps it, and a
// multi-gigabyte partial file is an hour of someone's connection.
func (it *downloadItem) cancelDownload() {
	kept := download.Partial(it.path)
	if it.stop == nil && kept == 0 {
		it.showIdle()
		return
	}
	text := fmt.Sprintf("Stop downloading %s and delete the %s received so far? Pause keeps it, to resume later.",
		it.entry.Name, units.Bytes(kept))
	if it.stop == nil {
		text = fmt.Sprintf("Delete the %s of %s downloaded so far? It cannot be resumed afterwards.", units.Bytes(kept), it.entry.Name)
	}
	msg := widget.NewLabel(text)
	msg.Wrapping = fyne.TextWrapWord
	it.confirm = it.u.keys.newDialog(it.u.win, dialogSpec{title: "Cancel the download", icon: theme.DeleteIcon(), content: msg,
		confirm: "Delete", importance: widget.DangerImportance, dismiss: "Keep", onConfirm: it.discardDownload})
	it.confirm.show(nil)
}

// discardDownload stops the download and deletes what it received (never a finished file).
func (it *downloadItem) discardDownload() error {
	if it.stop != nil {
		it.discard = true
		it.status.SetText("Cancelling…")
		it.stop()
		return nil
	}
	if err := download.Discard(it.path); err != nil {
		return err
	}
	it.showIdle()
	it.status.SetText("Cancelled; the partial file was deleted.")
	return nil
}
