package ui

import (
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/layout"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"

	"github.com/trochilus-llm/trochilus/engine"
	"github.com/trochilus-llm/trochilus/ui/conversation"
)

// chatScreen is a conversation with the loaded model, the saved conversations beside it. It
// keeps the conventions of the chat apps people know (LM Studio, Jan, Ollama, ChatGPT): Enter
// sends and Shift+Enter starts a new line, Esc stops the answer, Ctrl+N (Cmd+N) starts a new
// chat; answers are Markdown; regenerating keeps every version.
type chatScreen struct {
	u       *UI
	store   conversation.Store
	content fyne.CanvasObject
	main    *fyne.Container // the conversation's column, laid out again when the input grows

	conv *conversation.Conversation
	lib  *chatLibrary

	modelLabel *widget.Label
	system     *keyEntry
	messages   *fyne.Container
	views      []*messageView // messages' views, in order (the answer being made last)
	scroll     *container.Scroll
	follow     bool // the view is at its end and follows a growing answer
	input      *keyEntry
	inputRows  int
	sendBtn    *keyButton
	stopBtn    *keyButton
	regenBtn   *keyButton
	editBtn    *keyButton
	answers    *keySelect // how answers are chosen: answerModes
	length     *keySelect // the most tokens an answer may take: lengthOptions
	status     *chatStatus

	turn    *turn // the answer being generated; nil when idle
	editing bool  // Send replaces the last user message
	// saveEvery spaces the saves of an answer being generated: a crash loses at most about
	// that much of it.
	saveEvery time.Duration
}

// The ways an answer can be chosen. Exact takes the most likely token each time (the default:
// the same answer every time); Varied samples with a fresh seed each answer, recorded with it.
const (
	answersExact  = "Exact"
	answersVaried = "Varied"
)

// variedSampling returns what Varied answers sample with, for a seed.
func variedSampling(seed uint64) engine.Sampling {
	return engine.Sampling{Temperature: 0.7, TopP: 0.9, Seed: seed}
}

// prefAnswerLength is the preference holding the answer length chosen (untilEnd: none).
const prefAnswerLength = "chat.answerLength"

// inputMaxRows is the most rows the message input grows to; past them it scrolls.
const inputMaxRows = 6

func newChatScreen(u *UI, store conversation.Store) *chatScreen {
	k := u.keys
	s := &chatScreen{u: u, store: store, conv: conversation.New(u.opts.Now()), follow: true, saveEvery: time.Second}
	s.lib = newChatLibrary(s)

	s.modelLabel = widget.NewLabel("")
	s.modelLabel.Truncation = fyne.TextTruncateEllipsis
	s.system = newKeyEntry(k, false)
	s.system.SetPlaceHolder("System prompt (optional)")
	top := container.NewVBox(s.modelLabel, s.system)

	s.messages = container.NewVBox()
	s.scroll = container.NewVScroll(s.messages)
	s.scroll.OnScrolled = func(fyne.Position) { s.follow = s.atEnd() }

	s.input = newKeyEntry(k, true)
	s.input.SetPlaceHolder("Message (Enter sends, Shift+Enter starts a new line)")
	s.input.onEnter = s.send
	s.input.OnChanged = func(string) { s.fitInput() }
	s.inputRows = 1
	s.input.SetMinRowsVisible(1)
	s.sendBtn = newKeyButton(k, "Send", theme.MailSendIcon(), s.send)
	s.sendBtn.Importance = widget.HighImportance
	s.stopBtn = newKeyButton(k, "Stop", theme.MediaStopIcon(), s.stop)
	s.regenBtn = newKeyButton(k, "Regenerate", theme.ViewRefreshIcon(), s.regenerate)
	s.editBtn = newKeyButton(k, "Edit last", theme.DocumentCreateIcon(), s.editLast)
	s.answers = newKeySelect(k, []string{answersExact, answersVaried}, func(string) { s.updateButtons() })
	s.answers.SetSelected(answersExact)
	// The answer length is remembered between runs, as a setting; the app's default
	// (Options.MaxAnswer) until one is chosen.
	prefs := u.app.Preferences()
	length := prefs.IntWithFallback(prefAnswerLength, u.opts.MaxAnswer)
	if length < 0 {
		length = u.opts.MaxAnswer
	}
	s.length = newKeySelect(k, lengthOptions(length), func(l string) { prefs.SetInt(prefAnswerLength, parseLength(l)) })
	s.length.SetSelected(lengthLabel(length))
	s.status = newChatStatus()
	actions := container.NewBorder(nil, nil,
		container.NewHBox(s.sendBtn, s.stopBtn, s.regenBtn, s.editBtn),
		container.NewHBox(widget.NewLabel("Answers"), s.answers, widget.NewLabel("Length"), s.length))
	bottom := container.NewVBox(s.input, actions, s.status.obj)

	// The objects' order is the focus order (Tab): the chat's settings, the conversation, the
	// input and its buttons.
	s.main = container.New(layout.NewBorderLayout(top, bottom, nil, nil), top, s.scroll, bottom)
	split := container.NewHSplit(s.lib.obj, s.main)
	split.Offset = 0.22
	s.content = split

	s.lib.reload()
	s.render()
	s.modelChanged()
	return s
}

// busy reports whether an answer is being generated.
func (s *chatScreen) busy() bool { return s.turn != nil }

// modelChanged shows the loaded model and enables what it allows.
func (s *chatScreen) modelChanged() {
	if m := s.u.loaded; m != nil {
		s.modelLabel.SetText(fmt.Sprintf("Model: %s (context %d)", filepath.Base(m.Path()), m.Context()))
	} else {
		s.modelLabel.SetText("No model loaded: pick one on the Models screen.")
	}
	s.updateButtons()
}

func (s *chatScreen) updateButtons() {
	ready := s.u.loaded != nil && !s.busy()
	hasUser := s.conv.LastUser() >= 0
	enable(&s.sendBtn.Button, ready)
	enable(&s.stopBtn.Button, s.busy())
	enable(&s.regenBtn.Button, ready && hasUser)
	enable(&s.editBtn.Button, !s.busy() && hasUser)
	enable(&s.lib.newBtn.Button, !s.busy())
	// Exact answers are the same every time: a regenerated one is sampled (Varied), and the
	// button says so. A turn that has no answer yet (an error) is answered as the mode says.
	label := "Regenerate"
	if s.answers.Selected == answersExact && s.conv.LastAnswer() >= 0 {
		label = "Regenerate (varied)"
	}
	if s.regenBtn.Text != label {
		s.regenBtn.SetText(label)
	}
	if s.u.models != nil && s.u.chat == s {
		s.u.models.showDetail() // Load is refused while answering
	}
}

func enable(b *widget.Button, on bool) {
	if on {
		b.Enable()
	} else {
		b.Disable()
	}
}

// modeSampling returns how a new answer is chosen: nil (greedy) for Exact, a fresh seed for
// Varied.
func (s *chatScreen) modeSampling() *engine.Sampling {
	if s.answers.Selected != answersVaried {
		return nil
	}
	sp := variedSampling(engine.NewSeed())
	return &sp
}

// send posts the input as a user message (replacing the last one when editing) and asks for
// the answer.
func (s *chatScreen) send() {
	text := strings.TrimSpace(s.input.Text)
	if text == "" || s.u.loaded == nil || s.busy() {
		return
	}
	now := s.u.opts.Now()
	if s.editing {
		if i := s.conv.LastUser(); i >= 0 {
			s.conv.Messages = s.conv.Messages[:i]
		}
		s.editing = false
	}
	s.conv.Add(conversation.Message{Role: conversation.User, Content: text}, now)
	s.input.SetText("")
	s.focusInput()
	s.startTurn(nil, false, s.modeSampling())
}

// regenerate answers the last user message again, keeping the answers it had as versions. In
// Exact mode the new one is sampled: a greedy answer would be the one already there.
func (s *chatScreen) regenerate() {
	if s.u.loaded == nil || s.busy() || s.conv.LastUser() < 0 {
		return
	}
	var prev *conversation.Message
	sampling := s.modeSampling()
	if i := s.conv.LastAnswer(); i >= 0 {
		m := s.conv.Messages[i]
		prev = &m
		if sampling == nil {
			sp := variedSampling(engine.NewSeed())
			sampling = &sp
		}
	}
	s.conv.DropAfterLastUser(s.u.opts.Now())
	s.startTurn(prev, false, sampling)
}

// canContinue reports whether the last answer can be continued: it took all the tokens it
// could, and the model is there and idle.
func (s *chatScreen) canContinue() bool {
	i := s.conv.LastAnswer()
	return i >= 0 && s.conv.Messages[i].Length && s.u.loaded != nil && !s.busy()
}

// continueAnswer generates more of the last answer, which stopped at the answer length (or
// the context's end), appended to it: greedy or sampled, it goes on exactly as it would have
// without the limit (assistant.Chat.Continue resumes from the answer's own tokens and its
// seed's stream), or, where the chat cannot (reopened, rolled), says the continuation is
// inexact.
func (s *chatScreen) continueAnswer() {
	if !s.canContinue() {
		return
	}
	i := s.conv.LastAnswer()
	prev := s.conv.Messages[i]
	var sampling *engine.Sampling
	if prev.Seed != nil {
		sp := variedSampling(*prev.Seed)
		sampling = &sp
	}
	s.conv.Messages = s.conv.Messages[:i]
	s.startTurn(&prev, true, sampling)
}

// maxAnswer returns the most tokens an answer may take, as the setting says (untilEnd: as
// many as fit).
func (s *chatScreen) maxAnswer() int { return parseLength(s.length.Selected) }

// editLast puts the last user message back in the input; Send then replaces it and drops
// what followed.
func (s *chatScreen) editLast() {
	i := s.conv.LastUser()
	if i < 0 || s.busy() {
		return
	}
	s.input.SetText(s.conv.Messages[i].Content)
	s.editing = true
	s.status.setNote("Editing your last message: Send replaces it and the answer after it.")
	s.focusInput()
}

// stop ends the answer being generated; what was generated is kept.
func (s *chatScreen) stop() {
	if s.turn != nil {
		s.status.setNote("Stopping…")
		s.turn.stop()
	}
}

// showVersion shows version v of the answer at message i (the last answer only: what follows
// an earlier one was said to the version it shows).
func (s *chatScreen) showVersion(i, v int) {
	if s.busy() || i != s.conv.LastAnswer() || !s.conv.Messages[i].Show(v) {
		return
	}
	s.save()
	s.render()
	s.updateButtons()
}

// save writes the conversation when it has messages.
func (s *chatScreen) save() { s.saveAs(s.conv) }

// saveAs writes c, the conversation or a copy of it, when it has messages.
func (s *chatScreen) saveAs(c *conversation.Conversation) {
	if len(c.Messages) == 0 {
		return
	}
	if err := s.store.Save(c); err != nil {
		s.status.setNote("Saving the chat failed: " + err.Error())
		return
	}
	s.lib.saved(c)
}

// newChat saves the current conversation and starts an empty one (the system prompt stays).
func (s *chatScreen) newChat() {
	if s.busy() {
		s.status.setNote("Stop the answer (Esc) before starting a new chat.")
		return
	}
	s.save()
	s.reset()
}

// reset shows a new, empty conversation.
func (s *chatScreen) reset() {
	s.conv = conversation.New(s.u.opts.Now())
	s.editing = false
	s.input.SetText("")
	s.status.clear()
	s.follow = true
	s.render()
	s.updateButtons()
	s.lib.list.Refresh()
}

// open shows a saved conversation, scrolled to its end.
func (s *chatScreen) open(id string) {
	if s.busy() || id == s.conv.ID {
		return
	}
	c, err := s.store.Load(id)
	if err != nil {
		s.u.showError(err)
		return
	}
	s.save()
	s.conv = c
	s.editing = false
	s.system.SetText(c.System)
	s.status.clear()
	s.follow = true // a chat opens at its end
	s.render()
	s.updateButtons()
	s.lib.list.Refresh()
}

// focusInput gives the message input the keyboard (after Send, Edit or a new chat, as chat
// apps do), when the window shows it.
func (s *chatScreen) focusInput() {
	if s.u.tabs != nil && s.u.tabs.Selected() != nil && s.u.tabs.Selected().Content == s.content {
		s.u.win.Canvas().Focus(s.input)
	}
}

// fitInput grows the input with its text up to inputMaxRows rows, and shrinks it back.
func (s *chatScreen) fitInput() {
	width := s.input.Size().Width - 2*theme.Padding() - 2*theme.InnerPadding()
	rows := min(max(visualRows(s.input.Text, width), 1), inputMaxRows)
	if rows == s.inputRows {
		return
	}
	s.inputRows = rows
	s.input.SetMinRowsVisible(rows)
	s.main.Refresh()
}

// visualRows estimates the rows text takes in an entry width wide, wrapped at words.
func visualRows(text string, width float32) int {
	rows := 0
	for _, line := range strings.Split(text, "\n") {
		n := 1
		if width > 0 {
			if w := fyne.MeasureText(line, theme.TextSize(), fyne.TextStyle{}).Width; w > width {
				n = int(w/width) + 1
			}
		}
		rows += n
	}
	return rows
}
