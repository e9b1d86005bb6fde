package ui

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/driver/desktop"
	"fyne.io/fyne/v2/test"
	"fyne.io/fyne/v2/theme"

	"github.com/trochilus-llm/trochilus/ui/conversation"
)

// press delivers a key to the window as Fyne's desktop driver does (glfw's processKeyPressed):
// to the focused widget, Shift's KeyDown before it and KeyUp after when shift, or to the
// window's canvas when nothing has the focus.
func press(u *UI, name fyne.KeyName, shift bool) {
	c := u.win.Canvas()
	ev := &fyne.KeyEvent{Name: name}
	f := c.Focused()
	if f == nil {
		c.OnTypedKey()(ev)
		return
	}
	k, _ := f.(desktop.Keyable)
	if shift && k != nil {
		k.KeyDown(&fyne.KeyEvent{Name: desktop.KeyShiftLeft})
	}
	f.TypedKey(ev)
	if shift && k != nil {
		k.KeyUp(&fyne.KeyEvent{Name: desktop.KeyShiftLeft})
	}
}

// shortcut delivers s as the desktop driver does: to the focused widget when it takes
// shortcuts, otherwise to the window's canvas.
func shortcut(u *UI, s fyne.Shortcut) {
	c := u.win.Canvas()
	if f, ok := c.Focused().(fyne.Shortcutable); ok {
		f.TypedShortcut(s)
		return
	}
	c.(fyne.Shortcutable).TypedShortcut(s)
}

// typeInto focuses e on the window's canvas and types text into it.
func typeInto(u *UI, e fyne.Focusable, text string) {
	u.win.Canvas().Focus(e)
	test.Type(e, text)
}

// Enter sends; Shift+Enter (Shift's KeyDown then Enter, as Fyne delivers it, or a Shift+Enter
// shortcut, should a driver make one) starts a new line; the keypad's Enter sends too; an empty
// input sends nothing; the input keeps the focus for the next message.
func TestEnterSendsShiftEnterNewLine(t *testing.T) {
	be := &fakeBackend{prof: bigMachine(), answer: []string{"Hi."}}
	u := newLoadedUI(t, be)
	in := u.chat.input
	press(u, fyne.KeyReturn, false) // nothing focused, nothing typed
	typeInto(u, in, "line one")
	press(u, fyne.KeyReturn, true)
	test.Type(in, "line two")
	shortcut(u, &desktop.CustomShortcut{KeyName: fyne.KeyReturn, Modifier: fyne.KeyModifierShift})
	test.Type(in, "three")
	if in.Text != "line one\nline two\nthree" || len(u.chat.conv.Messages) != 0 {
		t.Fatalf("after Shift+Enter twice: input %q, %d messages", in.Text, len(u.chat.conv.Messages))
	}
	press(u, fyne.KeyReturn, false)
	u.Wait()
	msgs := u.chat.conv.Messages
	if len(msgs) != 2 || msgs[0].Content != "line one\nline two\nthree" || msgs[1].Content != "Hi." || in.Text != "" {
		t.Fatalf("after Enter: %+v, input %q", msgs, in.Text)
	}
	if u.win.Canvas().Focused() != in {
		t.Fatalf("focus on %T after sending, want the input", u.win.Canvas().Focused())
	}
	press(u, fyne.KeyReturn, false) // an empty input
	test.Type(in, "   ")
	press(u, fyne.KeyEnter, false)
	u.Wait()
	test.Type(in, "keypad")
	press(u, fyne.KeyEnter, false)
	u.Wait()
	if msgs := u.chat.conv.Messages; len(msgs) != 4 || msgs[2].Content != "keypad" {
		t.Fatalf("after blank Enters and the keypad's: %+v", msgs)
	}
}

// Esc stops the answer being generated wherever the focus is: the input, a button, nothing.
func TestEscStops(t *testing.T) {
	be := &fakeBackend{prof: bigMachine(), answer: []string{"one ", "two ", "three"}, gated: true}
	u := newLoadedUI(t, be)
	m := be.last()
	c := u.win.Canvas()
	for i, focus := range []func(){
		func() {},                          // the input, which sent
		func() { c.Focus(u.chat.stopBtn) }, // the Stop button
		func() { c.Focus(u.chat.answers) },
		func() { c.Unfocus() },
	} {
		typeInto(u, u.chat.input, "Count.")
		press(u, fyne.KeyReturn, false)
		waitPieces(t, m, 1)
		focus()
		press(u, fyne.KeyEscape, false)
		u.Wait()
		msgs := u.chat.conv.Messages
		if last := msgs[len(msgs)-1]; u.chat.busy() || len(msgs) != 2*(i+1) || last.Content != "one " || !last.Stopped {
			t.Fatalf("focus %d: after Esc busy %v, %+v", i, u.chat.busy(), msgs)
		}
	}
	// Esc while idle does nothing, and the input takes it as it would.
	typeInto(u, u.chat.input, "kept")
	press(u, fyne.KeyEscape, false)
	if u.chat.input.Text != "kept" || u.chat.busy() {
		t.Fatalf("Esc while idle: input %q", u.chat.input.Text)
	}
}

// Ctrl+N (Cmd+N on macOS) starts a new chat from the input, from another screen with nothing
// focused, but not while a dialog is open; the previous chat is saved.
func TestNewChatShortcut(t *testing.T) {
	be := &fakeBackend{prof: bigMachine(), answer: []string{"Hi."}}
	u := newLoadedUI(t, be)
	if s := newShortcut(); s.Modifier != fyne.KeyModifierShortcutDefault || s.KeyName != fyne.KeyN {
		t.Fatalf("shortcut %s", s.ShortcutName())
	}
	typeInto(u, u.chat.input, "First")
	press(u, fyne.KeyReturn, false)
	u.Wait()
	first := u.chat.conv.ID
	test.Type(u.chat.input, "draft")
	shortcut(u, newShortcut())
	if u.chat.conv.ID == first || len(u.chat.conv.Messages) != 0 || u.chat.input.Text != "" {
		t.Fatalf("Ctrl+N in the input: chat %s with %d messages, input %q", u.chat.conv.ID, len(u.chat.conv.Messages), u.chat.input.Text)
	}
	if _, err := u.chat.store.Load(first); err != nil {
		t.Fatalf("the first chat was not saved: %v", err)
	}

	typeInto(u, u.chat.input, "Second")
	press(u, fyne.KeyReturn, false)
	u.Wait()
	second := u.chat.conv.ID
	u.tabs.SelectIndex(0)
	u.win.Canvas().Unfocus()
	shortcut(u, newShortcut())
	if u.tabs.SelectedIndex() != 1 || u.chat.conv.ID == second || u.win.Canvas().Focused() != u.chat.input {
		t.Fatalf("Ctrl+N from Models: tab %d, chat %s, focus %T", u.tabs.SelectedIndex(), u.chat.conv.ID, u.win.Canvas().Focused())
	}

	say(t, u, "Third")
	third := u.chat.conv.ID
	u.showError(errors.New("something"))
	shortcut(u, newShortcut())
	if u.chat.conv.ID != third {
		t.Fatal("Ctrl+N acted under a dialog")
	}
	press(u, fyne.KeyEscape, false)
	if len(u.keys.modals) != 0 {
		t.Fatal("Esc left the error dialog open")
	}
}

// focusCycle returns what Tab reaches from the focused object until it comes back round.
func focusCycle(t *testing.T, c fyne.Canvas) map[fyne.Focusable]bool {
	t.Helper()
	start := c.Focused()
	seen := map[fyne.Focusable]bool{start: true}
	for range 500 {
		test.FocusNext(c)
		f := c.Focused()
		if f == start {
			return seen
		}
		seen[f] = true
	}
	t.Fatal("Tab never came back to where it started")
	return nil
}

// Tab reaches every control of the chat screen, the input passing it on (not typing it), and
// Stop while an answer is generated.
func TestTabReachesEveryControl(t *testing.T) {
	be := &fakeBackend{prof: bigMachine(), answer: []string{"Like this:\n\n```sh\nls -l\n```\n"}, bySeed: true}
	u := newLoadedUI(t, be)
	say(t, u, "How do I list files?")
	say(t, u, "And again?")
	u.chat.regenerate() // versions: ‹ 2/2 ›
	u.Wait()
	c := u.win.Canvas()
	c.Focus(u.chat.input)
	if u.chat.input.AcceptsTab() {
		t.Fatal("the input takes Tab")
	}
	press(u, fyne.KeyTab, false) // a driver that delivers Tab anyway
	if u.chat.input.Text != "" || c.Focused() == u.chat.input {
		t.Fatalf("Tab in the input: text %q, focus stayed", u.chat.input.Text)
	}
	c.Focus(u.chat.input)
	seen := focusCycle(t, c)
	s := u.chat
	want := map[string]fyne.Focusable{
		"input": s.input, "Send": s.sendBtn, "Regenerate": s.regenBtn, "Edit last": s.editBtn, "Answers": s.answers, "Length": s.length,
		"system prompt": s.system, "search": s.lib.search, "New chat": s.lib.newBtn, "chat list": s.lib.list,
	}
	for i, v := range s.views {
		want["copy of message "+string(rune('0'+i))] = v.copyBtn
	}
	last := s.views[len(s.views)-1]
	want["previous version"] = last.prevBtn
	want["code Copy"] = s.views[1].body.blocks[1].copyBtn
	for name, f := range want {
		if !seen[f] {
			t.Errorf("Tab never reaches %s", name)
		}
	}
	rowButtons := 0
	for f := range seen {
		if b, ok := f.(*keyButton); ok && (b.Icon == theme.DeleteIcon() || b.Icon == theme.DocumentCreateIcon()) && b != s.editBtn {
			rowButtons++
		}
	}
	if rowButtons < 2 {
		t.Errorf("Tab reaches %d of the chat list's rename and delete buttons", rowButtons)
	}

	// While answering, Stop is in the cycle.
	gated := &fakeBackend{prof: bigMachine(), answer: []string{"a", "b"}, gated: true}
	u2 := newLoadedUI(t, gated)
	typeInto(u2, u2.chat.input, "Go")
	press(u2, fyne.KeyReturn, false)
	waitPieces(t, gated.last(), 1)
	if !focusCycle(t, u2.win.Canvas())[u2.chat.stopBtn] {
		t.Error("Tab never reaches Stop while answering")
	}
	press(u2, fyne.KeyEscape, false)
	u2.Wait()
}

// The dialogs the chat opens answer Enter (confirm) and Esc (dismiss), whatever has the focus;
// a blank title keeps the rename dialog open, saying why.
func TestDialogKeys(t *testing.T) {
	be := &fakeBackend{prof: bigMachine(), answer: []string{"Hi."}}
	u := newLoadedUI(t, be)
	say(t, u, "Keep me")
	kept := u.chat.conv.ID
	u.chat.newChat()
	say(t, u, "Delete me")
	doomed := u.chat.conv.ID
	path := filepath.Join(u.dirs.Chats, doomed+".json")

	// The row's delete button asks; Esc keeps the chat.
	var del *keyButton
	for _, o := range test.LaidOutObjects(u.chat.lib.list) {
		if b, ok := o.(*keyButton); ok && b.Icon == theme.DeleteIcon() && del == nil {
			del = b // the first row's: the newest chat
		}
	}
	if del == nil {
		t.Fatal("no delete button in the chat list")
	}
	test.Tap(del)
	if len(u.keys.modals) != 1 {
		t.Fatal("delete asked nothing")
	}
	press(u, fyne.KeyEscape, false)
	if _, err := os.Stat(path); err != nil || len(u.keys.modals) != 0 {
		t.Fatalf("after Esc: %v, %d dialogs open", err, len(u.keys.modals))
	}
	// Enter deletes it; the chat shown gives way to a new, empty one.
	test.Tap(del)
	press(u, fyne.KeyReturn, false)
	if _, err := os.Stat(path); !os.IsNotExist(err) || len(u.keys.modals) != 0 {
		t.Fatalf("after Enter: %v, %d dialogs open", err, len(u.keys.modals))
	}
	if u.chat.conv.ID == doomed || len(u.chat.conv.Messages) != 0 || len(u.chat.lib.all) != 1 || u.chat.lib.all[0].ID != kept {
		t.Fatalf("after deleting the chat shown: chat %s, list %+v", u.chat.conv.ID, u.chat.lib.all)
	}

	// Rename: the dialog's entry has the focus; Esc leaves the title, Enter renames.
	u.chat.lib.askRename(kept)
	entry, ok := u.win.Canvas().Focused().(*keyEntry)
	if !ok || entry.Text != "Keep me" {
		t.Fatalf("rename dialog focus %T", u.win.Canvas().Focused())
	}
	entry.SetText("Thrown away")
	press(u, fyne.KeyEscape, false)
	u.chat.lib.askRename(kept)
	entry = u.win.Canvas().Focused().(*keyEntry)
	entry.SetText("   ")
	press(u, fyne.KeyReturn, false)
	d := u.keys.modals[0]
	if len(u.keys.modals) != 1 || !d.problem.Visible() || d.problem.Text != "a chat's title cannot be empty" {
		t.Fatalf("a blank title: %d dialogs, problem %q", len(u.keys.modals), d.problem.Text)
	}
	entry.SetText("Birds")
	press(u, fyne.KeyReturn, false)
	c, err := conversation.Store{Dir: u.dirs.Chats}.Load(kept)
	if err != nil || c.Title != "Birds" || len(u.keys.modals) != 0 || u.chat.lib.shown[0].Title != "Birds" {
		t.Fatalf("after rename: %+v, %v, %d dialogs", c, err, len(u.keys.modals))
	}

	// An error's dialog closes on Enter, and on its button.
	u.showError(errors.New("it broke"))
	press(u, fyne.KeyReturn, false)
	u.showError(errors.New("it broke again"))
	test.Tap(u.keys.modals[0].buttons[0])
	if len(u.keys.modals) != 0 {
		t.Fatal("the error dialog stayed open")
	}
	// A focused button of a dialog: Enter presses it (here Cancel), Esc dismisses.
	u.chat.lib.askDelete(kept)
	u.win.Canvas().Focus(u.keys.modals[0].buttons[0])
	press(u, fyne.KeyReturn, false)
	if _, err := os.Stat(filepath.Join(u.dirs.Chats, kept+".json")); err != nil || len(u.keys.modals) != 0 {
		t.Fatalf("Enter on Cancel: %v, %d dialogs", err, len(u.keys.modals))
	}
}
