package ui

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/layout"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"

	"github.com/trochilus-llm/trochilus/ui/conversation"
)

// chatLibrary is the column of saved chats beside the conversation: a search by title, New
// chat, and each chat with its date and model, to open, rename or delete.
type chatLibrary struct {
	s      *chatScreen
	obj    fyne.CanvasObject
	search *keyEntry
	newBtn *keyButton
	list   *keyList

	all   []conversation.Summary // as saved, the most recent first
	shown []conversation.Summary // those the search matches
}

func newChatLibrary(s *chatScreen) *chatLibrary {
	k := s.u.keys
	l := &chatLibrary{s: s}
	l.search = newKeyEntry(k, false)
	l.search.SetPlaceHolder("Search chats")
	l.search.OnChanged = func(string) { l.filter() }
	l.newBtn = newKeyButton(k, "New chat", theme.ContentAddIcon(), s.newChat)
	l.list = newKeyList(k,
		func() int { return len(l.shown) },
		func() fyne.CanvasObject {
			title, sub := newRowLabels()
			sub.SizeName = theme.SizeNameCaptionText
			rename := newKeyButton(k, "", theme.DocumentCreateIcon(), nil)
			rename.Importance = widget.LowImportance
			del := newKeyButton(k, "", theme.DeleteIcon(), nil)
			del.Importance = widget.LowImportance
			return container.NewBorder(nil, nil, nil, container.NewHBox(rename, del),
				container.New(layout.NewCustomPaddedVBoxLayout(0), title, sub))
		},
		func(i widget.ListItemID, o fyne.CanvasObject) {
			if i < 0 || i >= len(l.shown) {
				return
			}
			sum := l.shown[i]
			row := o.(*fyne.Container)
			text, buttons := row.Objects[0].(*fyne.Container), row.Objects[1].(*fyne.Container)
			title, sub := text.Objects[0].(*widget.Label), text.Objects[1].(*widget.Label)
			title.SetText(sum.Title)
			title.Importance = widget.MediumImportance
			if sum.ID == s.conv.ID {
				title.Importance = widget.HighImportance // the chat shown
			}
			title.Refresh()
			sub.SetText(l.detail(sum))
			buttons.Objects[0].(*keyButton).OnTapped = func() { l.askRename(sum.ID) }
			buttons.Objects[1].(*keyButton).OnTapped = func() { l.askDelete(sum.ID) }
		})
	l.list.OnSelected = func(i widget.ListItemID) {
		if i >= 0 && i < len(l.shown) {
			s.open(l.shown[i].ID)
		}
		l.list.UnselectAll()
	}
	top := container.NewVBox(l.search, l.newBtn)
	l.obj = container.New(layout.NewBorderLayout(top, nil, nil, nil), top, l.list) // the focus order

	return l
}

// detail is a chat's second line: when it was last changed and the model that answered.
func (l *chatLibrary) detail(sum conversation.Summary) string {
	d := when(sum.Updated, l.s.u.opts.Now())
	if sum.Model != "" {
		d += " · " + strings.TrimSuffix(filepath.Base(sum.Model), ".gguf")
	}
	return d
}

// when says when t was, from now: the time today, "Yesterday", the date this year, the date.
func when(t, now time.Time) string {
	t = t.In(now.Location())
	y, m, d := t.Date()
	ny, nm, nd := now.Date()
	switch {
	case y == ny && m == nm && d == nd:
		return t.Format("15:04")
	case t.Add(24*time.Hour).Format("2006-01-02") == now.Format("2006-01-02"):
		return "Yesterday " + t.Format("15:04")
	case y == ny:
		return t.Format("2 Jan 15:04")
	}
	return t.Format("2 Jan 2006")
}

// reload reads the saved chats' list again.
func (l *chatLibrary) reload() {
	list, err := l.s.store.List()
	l.all = list
	l.filter()
	if err != nil {
		l.s.status.setNote("Some saved chats could not be read: " + err.Error())
	}
}

// saved lists c as just saved, without reading every chat again.
func (l *chatLibrary) saved(c *conversation.Conversation) {
	sum := c.Summary()
	i := slices.IndexFunc(l.all, func(s conversation.Summary) bool { return s.ID == c.ID })
	if i < 0 {
		l.all = append(l.all, sum)
	} else {
		l.all[i] = sum
	}
	conversation.SortSummaries(l.all)
	l.filter()
}

// filter shows the chats whose title holds the search text, in any case.
func (l *chatLibrary) filter() {
	q := strings.ToLower(strings.TrimSpace(l.search.Text))
	l.shown = l.shown[:0]
	for _, sum := range l.all {
		if q == "" || strings.Contains(strings.ToLower(sum.Title), q) {
			l.shown = append(l.shown, sum)
		}
	}
	l.list.Refresh()
}

// summary returns the listed chat id.
func (l *chatLibrary) summary(id string) (conversation.Summary, bool) {
	for _, sum := range l.all {
		if sum.ID == id {
			return sum, true
		}
	}
	return conversation.Summary{}, false
}

// changeable returns the summary of chat id when the chat may be renamed or deleted now: not
// while its answer is being written, which a note then says (doing names the change).
func (l *chatLibrary) changeable(id, doing string) (conversation.Summary, bool) {
	sum, ok := l.summary(id)
	if !ok {
		return sum, false
	}
	if s := l.s; s.busy() && id == s.conv.ID {
		s.status.setNote("Stop the answer (Esc) before " + doing + " its chat.")
		return sum, false
	}
	return sum, true
}

// askRename asks for chat id's new title; Enter renames, Esc leaves it.
func (l *chatLibrary) askRename(id string) {
	sum, ok := l.changeable(id, "renaming")
	if !ok {
		return
	}
	s := l.s
	entry := newKeyEntry(s.u.keys, false)
	entry.SetText(sum.Title)
	d := s.u.keys.newDialog(s.u.win, dialogSpec{title: "Rename chat", content: entry, confirm: "Rename",
		importance: widget.HighImportance, dismiss: "Cancel", onConfirm: func() error { return l.rename(id, entry.Text) }})
	entry.onEnter = d.confirm
	d.show(entry)
}

// rename retitles chat id and saves it.
func (l *chatLibrary) rename(id, title string) error {
	s := l.s
	c := s.conv
	if id != s.conv.ID {
		var err error
		if c, err = s.store.Load(id); err != nil {
			return err
		}
	}
	if err := c.Rename(title); err != nil {
		return err
	}
	if err := s.store.Save(c); err != nil {
		return err
	}
	l.saved(c)
	return nil
}

// askDelete asks whether to delete chat id; Enter deletes, Esc keeps it.
func (l *chatLibrary) askDelete(id string) {
	sum, ok := l.changeable(id, "deleting")
	if !ok {
		return
	}
	s := l.s
	msg := widget.NewLabel(fmt.Sprintf("“%s” and its %d messages will be removed from this computer. This cannot be undone.", sum.Title, sum.Messages))
	msg.Wrapping = fyne.TextWrapWord
	s.u.keys.newDialog(s.u.win, dialogSpec{title: "Delete chat?", icon: theme.DeleteIcon(), content: msg, confirm: "Delete",
		importance: widget.DangerImportance, dismiss: "Cancel", onConfirm: func() error { return l.delete(id) }}).show(nil)
}

// delete removes chat id; the chat shown gives way to a new one.
func (l *chatLibrary) delete(id string) error {
	s := l.s
	if err := s.store.Delete(id); err != nil {
		return err
	}
	l.all = slices.DeleteFunc(l.all, func(sum conversation.Summary) bool { return sum.ID == id })
	if id == s.conv.ID {
		s.reset() // not newChat: that would save the chat just deleted
	}
	l.filter()
	return nil
}
