package ui

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"

	"github.com/trochilus-llm/trochilus/engine"
	"github.com/trochilus-llm/trochilus/engine/assistant"
	"github.com/trochilus-llm/trochilus/ui/conversation"
)

// chatScreen is a conversation with the loaded model, the saved conversations beside it.
type chatScreen struct {
	u       *UI
	store   conversation.Store
	content fyne.CanvasObject

	conv      *conversation.Conversation
	saved     []conversation.Summary
	savedList *widget.List

	modelLabel *widget.Label
	system     *widget.Entry
	messages   *fyne.Container
	scroll     *container.Scroll
	input      *widget.Entry
	sendBtn    *widget.Button
	stopBtn    *widget.Button
	regenBtn   *widget.Button
	editBtn    *widget.Button
	newBtn     *widget.Button
	status     *widget.Label
	answers    *widget.Select // how answers are chosen: answerModes

	turnStop  context.CancelFunc // ends the answer being generated; nil when idle
	streaming *widget.Label      // the answer being generated, as it grows
	editing   bool               // Send replaces the last user message
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

// streamEvery spaces the updates of a growing answer: often enough to look live, seldom
// enough that a fast model does not flood the UI goroutine.
const streamEvery = 50 * time.Millisecond

func newChatScreen(u *UI, store conversation.Store) *chatScreen {
	s := &chatScreen{u: u, store: store, conv: conversation.New(u.opts.Now())}

	s.savedList = widget.NewList(
		func() int { return len(s.saved) },
		func() fyne.CanvasObject {
			l := widget.NewLabel("")
			l.Truncation = fyne.TextTruncateEllipsis
			return l
		},
		func(i widget.ListItemID, o fyne.CanvasObject) {
			if i >= 0 && i < len(s.saved) {
				o.(*widget.Label).SetText(s.saved[i].Title)
			}
		})
	s.savedList.OnSelected = func(i widget.ListItemID) {
		if i >= 0 && i < len(s.saved) {
			s.open(s.saved[i].ID)
		}
		s.savedList.UnselectAll()
	}
	s.newBtn = widget.NewButtonWithIcon("New chat", theme.ContentAddIcon(), s.newChat)
	side := container.NewBorder(s.newBtn, nil, nil, nil, s.savedList)

	s.modelLabel = widget.NewLabel("")
	s.modelLabel.Truncation = fyne.TextTruncateEllipsis
	s.system = widget.NewEntry()
	s.system.SetPlaceHolder("System prompt (optional)")
	top := container.NewVBox(s.modelLabel, s.system)

	s.messages = container.NewVBox()
	s.scroll = container.NewVScroll(s.messages)

	s.input = widget.NewMultiLineEntry()
	s.input.SetPlaceHolder("Message (Shift+Enter sends)")
	s.input.SetMinRowsVisible(3)
	s.input.OnSubmitted = func(string) { s.send() }
	s.sendBtn = widget.NewButtonWithIcon("Send", theme.MailSendIcon(), s.send)
	s.sendBtn.Importance = widget.HighImportance
	s.stopBtn = widget.NewButtonWithIcon("Stop", theme.MediaStopIcon(), s.stop)
	s.regenBtn = widget.NewButtonWithIcon("Regenerate", theme.ViewRefreshIcon(), s.regenerate)
	s.editBtn = widget.NewButtonWithIcon("Edit last", theme.DocumentCreateIcon(), s.editLast)
	s.status = widget.NewLabel("")
	s.status.Truncation = fyne.TextTruncateEllipsis
	s.answers = widget.NewSelect([]string{answersExact, answersVaried}, nil)
	s.answers.SetSelected(answersExact)
	actions := container.NewHBox(s.sendBtn, s.stopBtn, s.regenBtn, s.editBtn, widget.NewLabel("Answers"), s.answers)
	bottom := container.NewVBox(s.input, container.NewBorder(nil, nil, actions, nil, s.status))

	main := container.NewBorder(top, bottom, nil, nil, s.scroll)
	split := container.NewHSplit(side, main)
	split.Offset = 0.22
	s.content = split

	s.listSaved()
	s.render()
	s.modelChanged()
	return s
}

// busy reports whether an answer is being generated.
func (s *chatScreen) busy() bool { return s.turnStop != nil }

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
	enable(s.sendBtn, ready)
	enable(s.stopBtn, s.busy())
	enable(s.regenBtn, ready && hasUser)
	enable(s.editBtn, !s.busy() && hasUser)
	enable(s.newBtn, !s.busy())
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

// render rebuilds the conversation view.
func (s *chatScreen) render() {
	s.messages.RemoveAll()
	for _, m := range s.conv.Messages {
		s.messages.Add(s.bubble(m))
	}
	s.messages.Refresh()
	s.scroll.ScrollToBottom()
}

// bubble is one message: who, the text (selectable), a copy button and, for answers, the
// speed they came at.
func (s *chatScreen) bubble(m conversation.Message) fyne.CanvasObject {
	who := "You"
	if m.Role == conversation.Assistant {
		who = "Model"
		if m.Tokens > 0 {
			who += fmt.Sprintf("  ·  %d tokens, %.1f tok/s", m.Tokens, m.Rate)
		}
		if m.Stopped {
			who += "  ·  cut short"
		}
	}
	head := widget.NewLabelWithStyle(who, fyne.TextAlignLeading, fyne.TextStyle{Bold: true})
	body := widget.NewLabel(m.Content)
	body.Wrapping = fyne.TextWrapWord
	body.Selectable = true
	copyBtn := widget.NewButtonWithIcon("", theme.ContentCopyIcon(), func() {
		s.u.app.Clipboard().SetContent(body.Text)
	})
	copyBtn.Importance = widget.LowImportance
	return container.NewVBox(container.NewBorder(nil, nil, nil, copyBtn, head), body)
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
	s.startTurn()
}

// regenerate answers the last user message again.
func (s *chatScreen) regenerate() {
	if s.u.loaded == nil || s.busy() || !s.conv.DropAfterLastUser(s.u.opts.Now()) {
		return
	}
	s.startTurn()
}

// editLast puts the last user message back in the input; Send then replaces it and drops
// what followed.
func (s *chatScreen) editLast() {
	i := s.conv.LastUser()
	if i < 0 || s.busy() {
		return
	}
	s.input.SetText(s.conv.Messages[i].Content)
	s.editing = true
	s.status.SetText("Editing your last message: Send replaces it and the answer after it.")
}

// stop ends the answer being generated; what was generated is kept.
func (s *chatScreen) stop() {
	if s.turnStop != nil {
		s.status.SetText("Stopping…")
		s.turnStop()
	}
}

// startTurn shows the conversation with an empty answer and generates it off the UI
// goroutine.
func (s *chatScreen) startTurn() {
	model := s.u.loaded
	s.conv.System = s.system.Text
	s.conv.Model = model.Path()
	s.save()
	s.render()
	s.streaming = widget.NewLabel("…")
	s.streaming.Wrapping = fyne.TextWrapWord
	s.messages.Add(container.NewVBox(widget.NewLabelWithStyle("Model", fyne.TextAlignLeading, fyne.TextStyle{Bold: true}), s.streaming))
	s.scroll.ScrollToBottom()

	ctx, stop := context.WithCancel(s.u.ctx)
	s.turnStop = stop
	s.status.SetText("Reading the conversation…")
	s.updateButtons()
	turns := s.conv.Turns()
	label := s.streaming
	var sampling *engine.Sampling
	if s.answers.Selected == answersVaried {
		sp := variedSampling(engine.NewSeed())
		sampling = &sp
	}
	s.u.run(func(context.Context) {
		defer stop()
		var (
			mu      sync.Mutex
			text    strings.Builder
			shown   time.Time   // when the label was last updated
			trailer *time.Timer // a pending update for text that arrived too soon after the last
			start   = time.Now()
		)
		// show hands the text so far to the label; called with mu held.
		show := func() {
			shown = time.Now()
			snapshot := text.String()
			s.u.later(func() {
				if s.streaming == label {
					label.SetText(snapshot)
					s.status.SetText(fmt.Sprintf("Generating… %.1f s", time.Since(start).Seconds()))
					s.scroll.ScrollToBottom()
				}
			})
		}
		onText := func(piece string) {
			mu.Lock()
			defer mu.Unlock()
			text.WriteString(piece)
			wait := streamEvery - time.Since(shown)
			switch {
			case wait <= 0:
				show()
			case trailer == nil:
				// Too soon: show it a little later, so the last piece before a pause is not
				// held back until the next one.
				trailer = time.AfterFunc(wait, func() {
					mu.Lock()
					defer mu.Unlock()
					trailer = nil
					show()
				})
			}
		}
		r, err := model.Reply(ctx, turns, assistant.Options{MaxTokens: s.u.opts.MaxAnswer, Sampling: sampling, OnText: onText})
		mu.Lock()
		if trailer != nil {
			trailer.Stop()
		}
		mu.Unlock()
		s.u.later(func() { s.turnDone(r, sampling, err) })
	})
}

// turnDone records the answer (whole, stopped or cut by an error), saves the chat and shows
// what the turn cost.
func (s *chatScreen) turnDone(r Reply, sampling *engine.Sampling, err error) {
	s.turnStop, s.streaming = nil, nil
	stopped := errors.Is(err, context.Canceled)
	if r.Text != "" || r.Tokens > 0 {
		m := conversation.Message{Role: conversation.Assistant, Content: r.Text, Tokens: r.Tokens,
			Rate: r.Rate, Stopped: !r.Ended}
		if sampling != nil {
			seed := sampling.Seed
			m.Seed = &seed
		}
		s.conv.Add(m, s.u.opts.Now())
	}
	s.save()
	s.render()
	s.updateButtons()
	stats := fmt.Sprintf("%.1f tok/s · context %d of %d · %d tokens · prompt %d (%d reused) at %.0f tok/s",
		r.Rate, r.Used, r.Context, r.Tokens, r.Prompt, r.Reused, r.PPRate)
	if sampling != nil {
		stats += fmt.Sprintf(" · seed %d", sampling.Seed)
	}
	switch {
	case stopped:
		s.status.SetText("Stopped. " + stats)
	case err != nil:
		s.status.SetText("Error: " + err.Error())
		s.u.showError(err)
	default:
		s.status.SetText(stats)
	}
}

// save writes the conversation when it has messages.
func (s *chatScreen) save() {
	if len(s.conv.Messages) == 0 {
		return
	}
	if err := s.store.Save(s.conv); err != nil {
		s.status.SetText("Saving the chat failed: " + err.Error())
		return
	}
	s.listSaved()
}

// listSaved reads the saved conversations' list.
func (s *chatScreen) listSaved() {
	list, err := s.store.List()
	s.saved = list
	s.savedList.Refresh()
	if err != nil {
		s.status.SetText("Some saved chats could not be read: " + err.Error())
	}
}

// newChat saves the current conversation and starts an empty one (the system prompt stays).
func (s *chatScreen) newChat() {
	if s.busy() {
		return
	}
	s.save()
	s.conv = conversation.New(s.u.opts.Now())
	s.editing = false
	s.input.SetText("")
	s.status.SetText("")
	s.render()
	s.updateButtons()
}

// open shows a saved conversation.
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
	s.status.SetText("")
	s.render()
	s.updateButtons()
}
