package ui

import (
	"slices"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/dialog"
	"fyne.io/fyne/v2/layout"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"
)

// keyDialog is a dialog of the app's that answers the keyboard: while it is the top one, Enter
// confirms it and Esc dismisses it, whatever has the focus (Fyne's own dialogs answer neither).
type keyDialog struct {
	keys *keyRouter
	win  fyne.Window
	d    *dialog.CustomDialog
	// onConfirm runs on the confirm button or Enter; an error keeps the dialog open, saying
	// why. nil: a message, which Enter closes as Esc does.
	onConfirm func() error
	problem   *widget.Label // onConfirm's last error
	buttons   []*keyButton  // dismiss, then confirm when there is one
	content   fyne.CanvasObject
	open      bool
}

// dialogWidth is the dialogs' width: a wrapped message reads in a few lines, not in a column.
const dialogWidth = 420

// dialogSpec says what a keyDialog shows.
type dialogSpec struct {
	title      string
	icon       fyne.Resource // nil: none
	content    fyne.CanvasObject
	confirm    string // the confirm button's label; "" for a message with one button
	importance widget.Importance
	dismiss    string // the dismiss button's label
	onConfirm  func() error
}

func (k *keyRouter) newDialog(win fyne.Window, spec dialogSpec) *keyDialog {
	d := &keyDialog{keys: k, win: win, onConfirm: spec.onConfirm, problem: widget.NewLabel(""), content: spec.content}
	d.problem.Wrapping = fyne.TextWrapWord
	d.problem.Importance = widget.DangerImportance
	d.problem.Hide()
	d.d = dialog.NewCustomWithoutButtons(spec.title, container.NewVBox(spec.content, d.problem), win)
	if spec.icon != nil {
		d.d.SetIcon(spec.icon)
	}
	dismiss := newKeyButton(k, spec.dismiss, theme.CancelIcon(), d.dismiss)
	d.buttons = []*keyButton{dismiss}
	objs := []fyne.CanvasObject{dismiss}
	if spec.confirm != "" {
		ok := newKeyButton(k, spec.confirm, theme.ConfirmIcon(), d.confirm)
		ok.Importance = spec.importance
		d.buttons = append(d.buttons, ok)
		objs = append(objs, ok)
	} else {
		dismiss.Icon = theme.ConfirmIcon()
	}
	d.d.SetButtons(objs)
	d.d.Resize(fyne.NewSize(dialogWidth, d.d.MinSize().Height))
	return d
}

// show opens the dialog on top of any other, focusing focus (nil: nothing, so that the keys go
// to the window, which hands them to the dialog).
func (d *keyDialog) show(focus fyne.Focusable) {
	d.open = true
	d.keys.modals = append(d.keys.modals, d)
	d.d.Show()
	if c := d.win.Canvas(); focus != nil {
		c.Focus(focus)
	} else {
		c.Unfocus()
	}
}

// close hides the dialog and forgets it.
func (d *keyDialog) close() {
	if !d.open {
		return
	}
	d.open = false
	d.keys.modals = slices.DeleteFunc(d.keys.modals, func(m *keyDialog) bool { return m == d })
	d.d.Hide()
}

// confirm runs onConfirm and closes the dialog unless it failed.
func (d *keyDialog) confirm() {
	if !d.open {
		return
	}
	if d.onConfirm == nil {
		d.close()
		return
	}
	if err := d.onConfirm(); err != nil {
		d.problem.SetText(err.Error())
		d.problem.Show()
		d.d.Resize(fyne.NewSize(dialogWidth, d.d.MinSize().Height)) // room for the problem
		return
	}
	d.close()
}

func (d *keyDialog) dismiss() { d.close() }

// message shows text in a dialog with one button, which Enter and Esc press too.
func (k *keyRouter) message(win fyne.Window, title, text string, icon fyne.Resource) *keyDialog {
	l := widget.NewLabel(text)
	l.Wrapping = fyne.TextWrapWord
	d := k.newDialog(win, dialogSpec{title: title, icon: icon, content: l, dismiss: "OK"})
	d.show(nil)
	return d
}

// AlreadyRunning builds the window a second instance shows instead of the app when another
// one holds the data folder (library.ErrLocked): err's words and a Quit button, so that a user
// who started the app from a menu, where nobody reads stderr, learns why no app appeared.
// Show it with ShowAndRun; Quit, Enter and Esc end the app.
func AlreadyRunning(app fyne.App, err error) fyne.Window {
	w := app.NewWindow("Trochilus is already running")
	msg := widget.NewLabel(err.Error())
	msg.Wrapping = fyne.TextWrapWord
	quit := widget.NewButtonWithIcon("Quit", theme.CancelIcon(), app.Quit)
	quit.Importance = widget.HighImportance
	w.SetContent(container.NewBorder(nil, container.NewHBox(layout.NewSpacer(), quit), nil, nil, msg))
	w.Canvas().SetOnTypedKey(func(e *fyne.KeyEvent) {
		if e.Name == fyne.KeyReturn || e.Name == fyne.KeyEnter || e.Name == fyne.KeyEscape {
			app.Quit()
		}
	})
	w.Resize(fyne.NewSize(dialogWidth+80, 160))
	return w
}
