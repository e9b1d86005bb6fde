package ui

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/test"
	"fyne.io/fyne/v2/widget"
)

func TestWhen(t *testing.T) {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		t    time.Time
		want string
	}{
		{now.Add(-time.Hour), "11:00"},
		{time.Date(2026, 11, 29, 23, 59, 0, 0, time.UTC), "Yesterday 23:59"},
		{time.Date(2026, 11, 28, 8, 5, 0, 0, time.UTC), "28 Nov 08:05"},
		{time.Date(2025, 12, 31, 8, 5, 0, 0, time.UTC), "31 Dec 2025"},
		{time.Date(2026, 11, 30, 23, 30, 0, 0, time.FixedZone("east", 3600)), "22:30"}, // in now's zone
	} {
		if got := when(c.t, now); got != c.want {
			t.Errorf("%v: %q, want %q", c.t, got, c.want)
		}
	}
}

// rowLabels returns the chat list's rows as shown: each row's title and detail labels.
func rowLabels(u *UI) [][2]*widget.Label {
	var rows [][2]*widget.Label
	for _, o := range test.LaidOutObjects(u.chat.lib.list) {
		box, ok := o.(*fyne.Container)
		if !ok || len(box.Objects) != 2 {
			continue
		}
		title, ok1 := box.Objects[0].(*widget.Label)
		sub, ok2 := box.Objects[1].(*widget.Label)
		if ok1 && ok2 && title.TextStyle.Bold && title.Text != "" {
			rows = append(rows, [2]*widget.Label{title, sub})
		}
	}
	return rows
}

// The chat list shows each chat's title, date and model, the chat shown highlighted; the
// search filters by title in any case; a corrupt file is reported, the others still listed,
// and opening one that broke since is an error in a dialog, never a crash.
func TestChatLibrary(t *testing.T) {
	be := &fakeBackend{prof: bigMachine(), answer: []string{"Yes."}}
	u := newLoadedUI(t, be)
	for _, q := range []string{"Hummingbirds hover", "Swifts never land", "What do HUMMINGBIRDS eat?"} {
		u.chat.newChat()
		say(t, u, q)
	}
	lib := u.chat.lib
	rows := rowLabels(u)
	if len(rows) != 3 || rows[0][0].Text != "What do HUMMINGBIRDS eat?" || rows[0][1].Text != "12:00 · tiny" {
		t.Fatalf("rows %v", rows)
	}
	if rows[0][0].Importance != widget.HighImportance || rows[1][0].Importance == widget.HighImportance {
		t.Fatal("the chat shown is not the one highlighted")
	}

	test.Type(lib.search, "hummingbird")
	if len(lib.shown) != 2 || lib.shown[0].Title != "What do HUMMINGBIRDS eat?" || lib.shown[1].Title != "Hummingbirds hover" {
		t.Fatalf("search: %+v", lib.shown)
	}
	lib.search.SetText("nothing like it")
	if len(lib.shown) != 0 {
		t.Fatalf("search: %+v", lib.shown)
	}
	lib.search.SetText("")
	if len(lib.shown) != 3 {
		t.Fatalf("cleared search: %+v", lib.shown)
	}

	// A corrupt file among them.
	bad := filepath.Join(u.dirs.Chats, "20260101-000000-abcdef.json")
	if err := os.WriteFile(bad, []byte(`{"id":"20260101-000000-abcdef","messages":[{"role":"assistant","content":"x","shown":7}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	lib.reload()
	if note := u.chat.status.note.Text; len(lib.shown) != 3 || !strings.Contains(note, "could not be read") || !strings.Contains(note, bad) {
		t.Fatalf("with a corrupt file: %d listed, note %q", len(lib.shown), note)
	}
	// A listed chat that breaks before it is opened.
	shown, broken := u.chat.conv.ID, lib.shown[2].ID
	if err := os.WriteFile(filepath.Join(u.dirs.Chats, broken+".json"), []byte("{\"id\": tr"), 0o644); err != nil {
		t.Fatal(err)
	}
	lib.list.Select(2)
	if u.chat.conv.ID != shown || len(u.keys.modals) != 1 {
		t.Fatalf("opening a broken chat: shown %s, %d dialogs", u.chat.conv.ID, len(u.keys.modals))
	}
	press(u, fyne.KeyEscape, false)
	if len(u.keys.modals) != 0 {
		t.Fatal("Esc left the error open")
	}
}
