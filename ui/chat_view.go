package ui

import (
	"fmt"
	"image/color"
	"strings"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/canvas"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/layout"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"

	"github.com/trochilus-llm/trochilus/ui/conversation"
)

// userInset is how far a user message stands in from the left: the two voices of the
// conversation apart at a glance, as chat apps set them.
const userInset = 64

// messageView is one message as shown: who said it and how, the text (an answer's as
// Markdown), a Copy button and, for an answer with versions, ‹ n/m › to flip between them.
type messageView struct {
	obj     fyne.CanvasObject
	msg     conversation.Message
	bg      *canvas.Rectangle
	head    *widget.Label
	body    *markdownView // an answer's
	plain   *widget.Label // a user message's, as typed
	copyBtn *keyButton
	contBtn *keyButton        // Continue, on the last answer when it took all the tokens it could; nil otherwise
	divider fyne.CanvasObject // above the first message the model reads, when older ones rolled out; nil otherwise

	version          *widget.Label // "2/3"; nil without versions
	prevBtn, nextBtn *keyButton
}

// userColor tints the user's messages: the theme's primary colour, faint.
func userColor() color.Color {
	r, g, b, _ := theme.Color(theme.ColorNamePrimary).RGBA()
	return color.NRGBA{R: uint8(r >> 8), G: uint8(g >> 8), B: uint8(b >> 8), A: 0x30}
}

// render rebuilds the conversation view (and the answer being generated, kept as it is),
// scrolled to its end when it follows it, otherwise left where the reader is.
func (s *chatScreen) render() {
	offset := s.scroll.Offset
	s.views = nil
	objs := make([]fyne.CanvasObject, len(s.conv.Messages), len(s.conv.Messages)+1)
	for i, m := range s.conv.Messages {
		objs[i] = s.newView(m, i, 0).obj
	}
	if s.turn != nil {
		s.views = append(s.views, s.turn.view)
		objs = append(objs, s.turn.view.obj)
	}
	s.messages.Objects = objs // at once: an Add each would lay the column out each time
	s.messages.Refresh()
	if s.follow {
		s.scrollToEnd()
		return
	}
	s.layOut()
	s.scroll.ScrollToOffset(offset)
}

// newView makes the view of m, message i of the conversation, and appends it to views;
// versions, when not 0, is the number of versions to show (an answer being generated is the
// newest of them).
func (s *chatScreen) newView(m conversation.Message, i, versions int) *messageView {
	v := &messageView{msg: m, bg: canvas.NewRectangle(color.Transparent)}
	v.bg.CornerRadius = theme.Size(theme.SizeNameInputRadius)
	v.head = widget.NewLabelWithStyle(whoLine(m), fyne.TextAlignLeading, fyne.TextStyle{Bold: true})
	v.head.Truncation = fyne.TextTruncateEllipsis
	v.copyBtn = newKeyButton(s.u.keys, "", theme.ContentCopyIcon(), func() { s.u.app.Clipboard().SetContent(v.text()) })
	v.copyBtn.Importance = widget.LowImportance
	tools := container.NewHBox()

	var body fyne.CanvasObject
	if m.Role == conversation.User {
		v.bg.FillColor = userColor()
		v.plain = widget.NewLabel(m.Content)
		v.plain.Wrapping = fyne.TextWrapWord
		body = v.plain
	} else {
		v.body = newMarkdownView(s.u.keys, s.u.app.Clipboard().SetContent)
		v.body.SetText(m.Content)
		body = v.body.box
		n, shown := versions, versions-1
		if n == 0 {
			n, shown = len(m.AllVersions()), m.Shown
		}
		if n > 1 {
			v.version = widget.NewLabel(fmt.Sprintf("%d/%d", shown+1, n))
			v.prevBtn = newKeyButton(s.u.keys, "‹", nil, func() { s.showVersion(i, shown-1) })
			v.nextBtn = newKeyButton(s.u.keys, "›", nil, func() { s.showVersion(i, shown+1) })
			v.prevBtn.Importance, v.nextBtn.Importance = widget.LowImportance, widget.LowImportance
			last := versions == 0 && i == s.conv.LastAnswer() && !s.busy()
			enable(&v.prevBtn.Button, last && shown > 0)
			enable(&v.nextBtn.Button, last && shown < n-1)
			tools.Add(v.prevBtn)
			tools.Add(v.version)
			tools.Add(v.nextBtn)
		}
	}
	if m.Role == conversation.Assistant && m.Length && versions == 0 && i == s.conv.LastAnswer() {
		v.contBtn = newKeyButton(s.u.keys, "Continue", theme.MediaPlayIcon(), s.continueAnswer)
		enable(&v.contBtn.Button, s.canContinue())
		tools.Add(v.contBtn)
	}
	tools.Add(v.copyBtn)
	// An answer's tools come after it, where the reader's eye is when it ends (as chat apps
	// set them); a user message's beside who said it.
	var column fyne.CanvasObject
	if m.Role == conversation.User {
		column = container.NewVBox(container.NewBorder(nil, nil, nil, tools, v.head), body)
	} else {
		column = container.NewVBox(v.head, body, container.NewBorder(nil, nil, tools, nil))
	}
	card := container.NewStack(v.bg, container.NewPadded(column))
	v.obj = card
	if m.Role == conversation.User {
		v.obj = container.New(layout.NewCustomPaddedLayout(0, 0, userInset, 0), card)
	}
	if i == s.conv.Rolled && i > 0 && versions == 0 {
		// Part of the message's view, so that the views stay one to a message.
		v.divider = newRolledDivider()
		v.obj = container.NewVBox(v.divider, v.obj)
	}
	s.views = append(s.views, v)
	return v
}

// text returns the message as written (an answer's Markdown source).
func (v *messageView) text() string {
	if v.body != nil {
		return v.body.text
	}
	return v.plain.Text
}

// whoLine is a message's heading: who, and for an answer how it was made.
func whoLine(m conversation.Message) string {
	if m.Role == conversation.User {
		return "You"
	}
	parts := []string{"Model"}
	if m.Tokens > 0 {
		parts = append(parts, fmt.Sprintf("%d tokens, %.1f tok/s", m.Tokens, m.Rate))
	}
	if m.Seed != nil {
		parts = append(parts, fmt.Sprintf("seed %d", *m.Seed))
	}
	switch {
	case m.Length:
		parts = append(parts, "at the length limit")
	case m.Stopped:
		parts = append(parts, "cut short")
	}
	return strings.Join(parts, "  ·  ")
}

// scrollToEnd lays the conversation out (wrapped text is only as tall as its width makes it,
// which a new widget does not know yet) and scrolls to its end.
func (s *chatScreen) scrollToEnd() {
	s.layOut()
	s.scroll.ScrollToBottom()
	s.follow = true
}

// layOut lays the conversation out at the view's width, until its wrapped text's height
// settles.
func (s *chatScreen) layOut() {
	w := s.scroll.Size().Width
	if w <= 0 {
		return
	}
	for range 3 {
		h := s.messages.MinSize().Height
		s.messages.Resize(fyne.NewSize(w, h))
		if s.messages.MinSize().Height == h {
			return
		}
	}
}

// atEnd reports whether the view shows the conversation's end (within a line): a growing
// answer is followed only then, so that reading back up is not interrupted.
func (s *chatScreen) atEnd() bool {
	slack := 2 * theme.TextSize()
	return s.scroll.Offset.Y+s.scroll.Size().Height >= s.messages.MinSize().Height-slack
}
