package ui

import (
	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/driver/desktop"
	"fyne.io/fyne/v2/widget"
)

// keyRouter sends the app's keys where they belong whatever has the focus. Fyne hands a key to
// the focused widget alone (the window hears it only when nothing is focused), and an entry
// swallows every shortcut it does not know, so the app's widgets (keyEntry, keyButton,
// keySelect, keyList) pass Esc, Enter and the app's shortcuts here first.
type keyRouter struct {
	shortcuts map[string]func() // the app's, by fyne.Shortcut.ShortcutName
	modals    []*keyDialog      // the dialogs open, the top one last
	escape    func() bool       // Esc outside a dialog; reports whether it did something
}

// newShortcut is Ctrl+N (Cmd+N on macOS): a new chat.
func newShortcut() *desktop.CustomShortcut {
	return &desktop.CustomShortcut{KeyName: fyne.KeyN, Modifier: fyne.KeyModifierShortcutDefault}
}

// install makes the window's canvas hear the app's keys when no widget of ours has the focus.
func (k *keyRouter) install(c fyne.Canvas, shortcuts map[fyne.Shortcut]func()) {
	k.shortcuts = make(map[string]func(), len(shortcuts))
	for s, fn := range shortcuts {
		k.shortcuts[s.ShortcutName()] = fn
		c.AddShortcut(s, func(fyne.Shortcut) {
			if len(k.modals) == 0 {
				fn()
			}
		})
	}
	c.SetOnTypedKey(func(ev *fyne.KeyEvent) { k.key(ev) })
}

// shortcut runs the app's shortcut s, unless a dialog is open; it reports whether s is one.
func (k *keyRouter) shortcut(s fyne.Shortcut) bool {
	fn, ok := k.shortcuts[s.ShortcutName()]
	if ok && len(k.modals) == 0 {
		fn()
	}
	return ok
}

// key answers Enter and Esc for the dialog on top (confirm, dismiss) and Esc outside dialogs;
// it reports whether the key was used.
func (k *keyRouter) key(ev *fyne.KeyEvent) bool {
	if n := len(k.modals); n > 0 {
		top := k.modals[n-1]
		switch ev.Name {
		case fyne.KeyEscape:
			top.dismiss()
			return true
		case fyne.KeyReturn, fyne.KeyEnter:
			top.confirm()
			return true
		}
		return false
	}
	return ev.Name == fyne.KeyEscape && k.escape != nil && k.escape()
}

// keyEntry is an entry that sends on Enter and takes Shift+Enter for a new line (as chat apps
// do; Fyne's multi-line entry does the reverse), leaves Tab to move the focus, and passes Esc
// and the app's shortcuts to its keyRouter.
type keyEntry struct {
	widget.Entry
	keys *keyRouter
	// onEnter runs on Enter without Shift; nil leaves Enter to the entry (a new line when
	// multi-line).
	onEnter func()
	shift   bool // a Shift key is down, as KeyDown and KeyUp told
}

func newKeyEntry(keys *keyRouter, multiLine bool) *keyEntry {
	e := &keyEntry{keys: keys}
	e.MultiLine = multiLine
	if multiLine {
		e.Wrapping = fyne.TextWrapWord
	}
	e.ExtendBaseWidget(e)
	return e
}

// AcceptsTab is false: Tab moves the focus on, as everywhere else in the window.
func (e *keyEntry) AcceptsTab() bool { return false }

// KeyDown notes Shift: Fyne delivers Shift+Enter as Shift's KeyDown and then Enter's TypedKey
// (no shortcut: a Shift-only chord never makes one).
func (e *keyEntry) KeyDown(ev *fyne.KeyEvent) {
	if ev.Name == desktop.KeyShiftLeft || ev.Name == desktop.KeyShiftRight {
		e.shift = true
	}
	e.Entry.KeyDown(ev)
}

func (e *keyEntry) KeyUp(ev *fyne.KeyEvent) {
	if ev.Name == desktop.KeyShiftLeft || ev.Name == desktop.KeyShiftRight {
		e.shift = false
	}
	e.Entry.KeyUp(ev)
}

// FocusLost forgets Shift, whose KeyUp goes to whatever has the focus by then.
func (e *keyEntry) FocusLost() {
	e.shift = false
	e.Entry.FocusLost()
}

// shiftDown reports whether Shift is held, from the key events or the desktop driver.
func (e *keyEntry) shiftDown() bool {
	if e.shift {
		return true
	}
	if d, ok := fyne.CurrentApp().Driver().(desktop.Driver); ok {
		return d.CurrentKeyModifiers()&fyne.KeyModifierShift != 0
	}
	return false
}

func (e *keyEntry) TypedKey(ev *fyne.KeyEvent) {
	switch ev.Name {
	case fyne.KeyReturn, fyne.KeyEnter:
		if e.onEnter != nil && (!e.MultiLine || !e.shiftDown()) {
			e.onEnter()
			return
		}
	case fyne.KeyEscape:
		if e.keys.key(ev) {
			return
		}
	case fyne.KeyTab:
		// A driver that delivers Tab anyway (Fyne's does not, AcceptsTab being false) moves
		// the focus instead of typing it.
		if c := fyne.CurrentApp().Driver().CanvasForObject(e); c != nil {
			if e.shiftDown() {
				c.FocusPrevious()
			} else {
				c.FocusNext()
			}
		}
		return
	}
	e.Entry.TypedKey(ev)
}

// TypedShortcut gives the app's shortcuts to the app and takes Shift+Enter as a new line,
// should a driver deliver it as a shortcut.
func (e *keyEntry) TypedShortcut(s fyne.Shortcut) {
	if cs, ok := s.(*desktop.CustomShortcut); ok && cs.Modifier == fyne.KeyModifierShift &&
		(cs.KeyName == fyne.KeyReturn || cs.KeyName == fyne.KeyEnter) {
		if e.MultiLine {
			e.shift = true
			e.Entry.TypedKey(&fyne.KeyEvent{Name: fyne.KeyReturn})
			e.shift = false
		}
		return
	}
	if e.keys.shortcut(s) {
		return
	}
	e.Entry.TypedShortcut(s)
}

// keyButton is a button that Enter presses too (Space already does) and that passes Esc to its
// keyRouter.
type keyButton struct {
	widget.Button
	keys *keyRouter
}

func newKeyButton(keys *keyRouter, label string, icon fyne.Resource, tapped func()) *keyButton {
	b := &keyButton{keys: keys}
	b.Text, b.Icon, b.OnTapped = label, icon, tapped
	b.ExtendBaseWidget(b)
	return b
}

func (b *keyButton) TypedKey(ev *fyne.KeyEvent) {
	switch ev.Name {
	case fyne.KeyReturn, fyne.KeyEnter:
		if !b.Disabled() {
			b.Tapped(nil)
		}
	case fyne.KeyEscape:
		b.keys.key(ev)
	default:
		b.Button.TypedKey(ev)
	}
}

// keySelect is a select that passes Esc and Enter to its keyRouter first.
type keySelect struct {
	widget.Select
	keys *keyRouter
}

func newKeySelect(keys *keyRouter, options []string, changed func(string)) *keySelect {
	s := &keySelect{keys: keys}
	s.Options, s.OnChanged = options, changed
	s.ExtendBaseWidget(s)
	return s
}

func (s *keySelect) TypedKey(ev *fyne.KeyEvent) {
	if !s.keys.key(ev) {
		s.Select.TypedKey(ev)
	}
}

// keyList is a list that passes Esc and Enter to its keyRouter first; Enter then picks the
// focused row, as Space does.
type keyList struct {
	widget.List
	keys *keyRouter
}

func newKeyList(keys *keyRouter, length func() int, create func() fyne.CanvasObject, update func(widget.ListItemID, fyne.CanvasObject)) *keyList {
	l := &keyList{keys: keys}
	l.Length, l.CreateItem, l.UpdateItem = length, create, update
	l.ExtendBaseWidget(l)
	return l
}

func (l *keyList) TypedKey(ev *fyne.KeyEvent) {
	if l.keys.key(ev) {
		return
	}
	if ev.Name == fyne.KeyReturn || ev.Name == fyne.KeyEnter {
		ev = &fyne.KeyEvent{Name: fyne.KeySpace, Physical: ev.Physical}
	}
	l.List.TypedKey(ev)
}
