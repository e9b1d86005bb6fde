package ui

import (
	"context"
	"image/color"
	"strconv"
	"strings"
	"testing"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/test"
	"fyne.io/fyne/v2/widget"

	"github.com/trochilus-llm/trochilus/engine/assistant"
	"github.com/trochilus-llm/trochilus/tokenizer/chat"
	"github.com/trochilus-llm/trochilus/ui/conversation"
)

// inWindow reports whether o lies wholly inside the window's canvas.
func inWindow(u *UI, o fyne.CanvasObject) bool {
	pos := fyne.CurrentApp().Driver().AbsolutePositionForObject(o)
	c := u.win.Canvas().Size()
	return o.Visible() && pos.X >= 0 && pos.Y >= 0 && pos.X+o.Size().Width <= c.Width && pos.Y+o.Size().Height <= c.Height
}

// The speed, the context used and the seed are shown whole, inside the window, at the
// default window size and at 1000×700.
func TestStatusFitsTheWindow(t *testing.T) {
	be := &fakeBackend{prof: bigMachine(), answer: []string{"Hello."}}
	u := newLoadedUI(t, be)
	u.chat.answers.SetSelected(answersVaried)
	say(t, u, "Hi")
	st := u.chat.status
	if !strings.HasPrefix(st.seed.Text, "seed ") || st.rate.Text != "25.0 tok/s" || st.context.Text != "context 11 / 4096" {
		t.Fatalf("status %q", st)
	}
	for _, size := range []fyne.Size{{Width: defaultWidth, Height: defaultHeight}, {Width: 1000, Height: 700}} {
		u.win.Resize(size)
		if got := u.win.Canvas().Size(); got != size {
			t.Fatalf("the window is %v, asked %v: its content needs more", got, size)
		}
		for _, l := range []*widget.Label{st.rate, st.context, st.seed} {
			if l.Size().Width < l.MinSize().Width || l.Truncation != fyne.TextTruncateOff || !inWindow(u, l) {
				t.Errorf("at %v: %q is %v wide (needs %v) at %v", size, l.Text, l.Size().Width, l.MinSize().Width,
					fyne.CurrentApp().Driver().AbsolutePositionForObject(l))
			}
		}
		if !inWindow(u, st.note) || st.note.Truncation != fyne.TextTruncateOff {
			t.Errorf("at %v: the note is cut", size)
		}
	}
}

// stoppingBackend loads engine models that stop their answer (as Stop does: the context
// cancelled) after a few pieces of text.
type stoppingBackend struct {
	EngineBackend
	after int
}

func (b *stoppingBackend) Load(ctx context.Context, path string) (ChatModel, error) {
	m, err := b.EngineBackend.Load(ctx, path)
	if err != nil {
		return nil, err
	}
	return &stoppingModel{ChatModel: m, after: b.after}, nil
}

type stoppingModel struct {
	ChatModel
	after int
}

func (m *stoppingModel) Reply(ctx context.Context, turns []chat.Message, opts assistant.Options) (Reply, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	n, onText := 0, opts.OnText
	opts.OnText = func(s string) {
		onText(s)
		if n++; n == m.after {
			cancel()
		}
	}
	return m.ChatModel.Reply(ctx, turns, opts)
}

// A stopped answer shows its true speed (the engine times the tokens made before the stop),
// in the status, the answer's heading and the saved chat: not 0.0 tok/s.
func TestStoppedAnswerSpeed(t *testing.T) {
	u, _ := newTinyEngineUI(t, &stoppingBackend{EngineBackend: EngineBackend{Context: chatContext}, after: 4}, Options{MaxAnswer: 40})
	say(t, u, "Count to ten, please.")
	msgs := u.chat.conv.Messages
	if len(msgs) != 2 || !msgs[1].Stopped || msgs[1].Tokens < 4 {
		t.Fatalf("answer %+v (status %q)", msgs, u.chat.status)
	}
	st := u.chat.status
	rate, err := strconv.ParseFloat(strings.TrimSuffix(st.rate.Text, " tok/s"), 64)
	if !strings.HasPrefix(st.note.Text, "Stopped") || err != nil || rate <= 0 {
		t.Fatalf("a stopped answer's status: %q", st)
	}
	if msgs[1].Rate <= 0 || st.rate.Text != strconv.FormatFloat(msgs[1].Rate, 'f', 1, 64)+" tok/s" ||
		!strings.Contains(u.chat.views[1].head.Text, st.rate.Text) {
		t.Fatalf("saved rate %v, status %q, heading %q", msgs[1].Rate, st, u.chat.views[1].head.Text)
	}
	saved, err := conversation.Store{Dir: u.dirs.Chats}.Load(u.chat.conv.ID)
	if err != nil || saved.Messages[1].Rate != msgs[1].Rate {
		t.Fatalf("saved %+v, %v", saved, err)
	}
	t.Logf("stopped after %d tokens: %s", msgs[1].Tokens, st)
}

// The input wraps and grows with its text up to inputMaxRows rows, then scrolls; it shrinks
// back once sent.
func TestInputGrows(t *testing.T) {
	be := &fakeBackend{prof: bigMachine(), answer: []string{"Ok."}}
	u := newLoadedUI(t, be)
	u.win.Resize(fyne.NewSize(1000, 700))
	in := u.chat.input
	one := in.Size().Height
	typeInto(u, in, "a")
	for range 2 {
		press(u, fyne.KeyReturn, true)
		test.Type(in, "b")
	}
	three := in.Size().Height
	for range 10 {
		press(u, fyne.KeyReturn, true)
		test.Type(in, "c")
	}
	most := in.Size().Height
	if !(one < three && three < most) || u.chat.inputRows != inputMaxRows {
		t.Fatalf("heights: 1 row %v, 3 rows %v, 13 rows %v (%d rows)", one, three, most, u.chat.inputRows)
	}
	press(u, fyne.KeyReturn, false)
	u.Wait()
	if in.Size().Height != one || u.chat.inputRows != 1 {
		t.Fatalf("after sending: %v high, %d rows", in.Size().Height, u.chat.inputRows)
	}
	// A long line wraps (no horizontal scrolling) and grows the input too.
	test.Type(in, strings.Repeat("word ", 80))
	if in.Wrapping != fyne.TextWrapWord || u.chat.inputRows < 2 || in.Size().Height <= one {
		t.Fatalf("a long line: wrapping %v, %d rows", in.Wrapping, u.chat.inputRows)
	}
}

// The user's turns and the model's look apart: the user's tinted and set in, the model's full
// width on the window's own background.
func TestTurnsLookDistinct(t *testing.T) {
	be := &fakeBackend{prof: bigMachine(), answer: []string{"Hello."}}
	u := newLoadedUI(t, be)
	say(t, u, "Hi")
	user, model := u.chat.views[0], u.chat.views[1]
	_, _, _, ua := user.bg.FillColor.RGBA()
	if ua == 0 || model.bg.FillColor != color.Transparent || user.head.Text != "You" || !strings.HasPrefix(model.head.Text, "Model") {
		t.Fatalf("user %v %q, model %v %q", user.bg.FillColor, user.head.Text, model.bg.FillColor, model.head.Text)
	}
	ux := fyne.CurrentApp().Driver().AbsolutePositionForObject(user.bg).X
	mx := fyne.CurrentApp().Driver().AbsolutePositionForObject(model.bg).X
	if ux-mx != userInset || user.bg.Size().Width >= model.bg.Size().Width {
		t.Fatalf("user at x %v (%v wide), model at %v (%v wide)", ux, user.bg.Size().Width, mx, model.bg.Size().Width)
	}
}

// A chat opened from the list is shown scrolled to its end.
func TestReopenedChatAtItsEnd(t *testing.T) {
	long := strings.Repeat("A line of the answer that goes on for a while, and wraps. ", 30)
	be := &fakeBackend{prof: bigMachine(), answer: []string{long}}
	u := newLoadedUI(t, be)
	u.win.Resize(fyne.NewSize(1000, 700))
	for _, q := range []string{"One", "Two", "Three"} {
		say(t, u, q)
	}
	id := u.chat.conv.ID
	u.chat.newChat()
	u.chat.lib.list.Select(0)
	s := u.chat
	if s.conv.ID != id || len(s.views) != 6 {
		t.Fatalf("opened %s with %d views", s.conv.ID, len(s.views))
	}
	end := s.messages.MinSize().Height - s.scroll.Size().Height
	if end <= 0 || s.scroll.Offset.Y < end-1 || !s.atEnd() {
		t.Fatalf("scrolled to %v of %v", s.scroll.Offset.Y, end)
	}
	// Scrolled back up (the mouse wheel), the view no longer follows the end.
	s.scroll.Scrolled(&fyne.ScrollEvent{Scrolled: fyne.Delta{DY: 10 * end}})
	if s.scroll.Offset.Y != 0 || s.follow || s.atEnd() {
		t.Fatal("scrolled up, the view still follows the end")
	}
}
