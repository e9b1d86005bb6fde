package ui

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/canvas"
	"fyne.io/fyne/v2/test"
	"fyne.io/fyne/v2/widget"

	"github.com/trochilus-llm/trochilus/tokenizer/chat"
	"github.com/trochilus-llm/trochilus/ui/conversation"
)

// roles returns the roles of turns, in order.
func roles(turns []chat.Message) []string {
	var out []string
	for _, t := range turns {
		out = append(out, t.Role)
	}
	return out
}

// dividers returns the indexes of the messages shown below the rolled-out divider.
func dividers(u *UI) []int {
	var out []int
	for i, v := range u.chat.views {
		if v.divider != nil {
			out = append(out, i)
		}
	}
	return out
}

// A conversation that outgrows the context drops its oldest turns after the system prompt,
// whole and oldest first, never the newest question, leaving room for the turns to come; the
// model reads the rest, the chat keeps everything (shown, with a divider above the first
// message the model reads, and saved), and a reopened chat shows the divider where it was.
func TestContextRollsWholeTurns(t *testing.T) {
	// fakeCount: the system prompt 6 tokens, a question 10, an answer 6. With room for an
	// answer of 8 in 60, the system prompt, two turns and a question fit (48 + 8); three turns
	// do not (64 + 8). A roll leaves a quarter of the context free besides: 37 + 8 at most.
	be := &fakeBackend{prof: bigMachine(), answer: []string{"Answer ", "here."}, ctxLen: 60}
	u, dirs := newTestUI(t, be, Options{MaxAnswer: 8})
	pickAndLoad(t, u, tinyModelFile(t, dirs.Models, "tiny.gguf"))
	m := be.last()
	u.chat.system.SetText("Be brief.")
	question := func(i int) string { return fmt.Sprintf("Tell me about topic %d please", i) }
	for i := 1; i <= 3; i++ {
		say(t, u, question(i))
		if turns := m.lastTurns(); len(turns) != 2*i || u.chat.conv.Rolled != 0 || len(dividers(u)) != 0 {
			t.Fatalf("turn %d: the model read %d turns, rolled %d, dividers %v", i, len(turns), u.chat.conv.Rolled, dividers(u))
		}
	}
	// The fourth question does not fit with the three turns before it: dropping the oldest
	// would fit but leave no room to spare, so the two oldest go.
	say(t, u, question(4))
	c := u.chat.conv
	turns := m.lastTurns()
	if c.Rolled != 4 || len(turns) != 4 || turns[0].Content != "Be brief." || turns[1].Content != question(3) ||
		turns[3].Content != question(4) || fakeCount(turns) != 32 {
		t.Fatalf("rolled %d; the model read %d tokens: %v %q", c.Rolled, fakeCount(turns), roles(turns), turns)
	}
	if !slices.Equal(roles(turns), []string{"system", "user", "assistant", "user"}) {
		t.Fatalf("the model read %v: not whole turns", roles(turns))
	}
	if len(c.Messages) != 8 || len(shownTexts(u)) != 8 || !slices.Equal(dividers(u), []int{4}) {
		t.Fatalf("the chat shows %d of %d messages, dividers above %v", len(shownTexts(u)), len(c.Messages), dividers(u))
	}
	if !strings.Contains(texts(u.chat.views[4].divider), rolledNote) {
		t.Fatal("the divider does not say the older messages are outside the model's context")
	}
	// The next turn fits as the model reads the chat now: no roll, the prefix kept.
	say(t, u, question(5))
	if turns := m.lastTurns(); u.chat.conv.Rolled != 4 || turns[1].Content != question(3) || len(turns) != 6 {
		t.Fatalf("rolled %d, the model read %d turns from %q", u.chat.conv.Rolled, len(turns), turns[1].Content)
	}
	// The one after rolls on.
	say(t, u, question(6))
	if turns := m.lastTurns(); u.chat.conv.Rolled != 8 || turns[1].Content != question(5) {
		t.Fatalf("rolled %d, the model read from %q", u.chat.conv.Rolled, turns[1].Content)
	}

	// Nothing is lost: the saved chat has every message and where the model's view begins.
	id := u.chat.conv.ID
	saved, err := conversation.Store{Dir: dirs.Chats}.Load(id)
	if err != nil || len(saved.Messages) != 12 || saved.Rolled != 8 || saved.Messages[0].Content != question(1) {
		t.Fatalf("saved %+v, %v", saved, err)
	}
	u.chat.newChat()
	u.chat.open(id)
	if !slices.Equal(dividers(u), []int{8}) || len(u.chat.views) != 12 {
		t.Fatalf("reopened: dividers above %v of %d messages", dividers(u), len(u.chat.views))
	}
	// Regenerating the last answer keeps the roll: the model reads what it read.
	u.chat.regenerate()
	u.Wait()
	if turns := m.lastTurns(); turns[1].Content != question(5) || !slices.Equal(dividers(u), []int{8}) {
		t.Fatalf("regenerated from %q, dividers %v", turns[1].Content, dividers(u))
	}
}

// texts returns the text o shows, its labels' and texts' lines (a widget's through its
// renderer).
func texts(o fyne.CanvasObject) string {
	var b strings.Builder
	var walk func(fyne.CanvasObject)
	walk = func(o fyne.CanvasObject) {
		switch x := o.(type) {
		case *canvas.Text:
			b.WriteString(x.Text + "\n")
		case *widget.Label:
			b.WriteString(x.Text + "\n")
		case *fyne.Container:
			for _, c := range x.Objects {
				walk(c)
			}
		case fyne.Widget:
			for _, c := range test.WidgetRenderer(x).Objects() {
				walk(c)
			}
		}
	}
	if o != nil {
		walk(o)
	}
	return b.String()
}

// When even the system prompt and the newest message leave no room for the answer, the chat
// says so with the numbers, asks the model nothing, and keeps the message.
func TestContextTooLongSaysTheNumbers(t *testing.T) {
	be := &fakeBackend{prof: bigMachine(), answer: []string{"Never."}, ctxLen: 60}
	u, dirs := newTestUI(t, be, Options{MaxAnswer: 8})
	pickAndLoad(t, u, tinyModelFile(t, dirs.Models, "tiny.gguf"))
	u.chat.system.SetText("Be brief.")
	say(t, u, strings.TrimSpace(strings.Repeat("word ", 48))) // 6 + 52 tokens, and 8 for the answer
	want := "the system prompt and your last message take 58 tokens and the answer needs room for 8 more, 66 in all, but the context holds 60"
	if note := u.chat.status.note.Text; !strings.Contains(strings.ToLower(note), want) {
		t.Fatalf("status %q, want it to say %q", note, want)
	}
	if n := len(be.last().turns); n != 0 {
		t.Fatalf("the model was asked %d times", n)
	}
	if msgs := u.chat.conv.Messages; len(msgs) != 1 || msgs[0].Role != conversation.User || u.chat.busy() {
		t.Fatalf("after the refusal: %+v", msgs)
	}
	// The error dialog names the same numbers.
	if ov := u.win.Canvas().Overlays().Top(); ov == nil || !strings.Contains(texts(ov), "66 in all") {
		t.Fatal("no dialog with the numbers")
	}
}

// The answer length is a setting, remembered; an answer that reaches it shows Continue, which
// goes on with the same answer, appended to the same message, until the model ends it.
func TestAnswerLengthAndContinue(t *testing.T) {
	be := &fakeBackend{prof: bigMachine(), answer: []string{"one ", "two ", "three ", "four ", "five."}}
	u, dirs := newTestUI(t, be, Options{MaxAnswer: 2})
	pickAndLoad(t, u, tinyModelFile(t, dirs.Models, "tiny.gguf"))
	m := be.last()
	s := u.chat
	if s.length.Selected != "2 tokens" || !slices.Contains(s.length.Options, lengthLabel(untilEnd)) {
		t.Fatalf("length %q of %q", s.length.Selected, s.length.Options)
	}
	say(t, u, "Count to five.")
	a := s.conv.Messages[1]
	v := s.views[1]
	if a.Content != "one two " || !a.Length || !a.Stopped || v.contBtn == nil || v.contBtn.Disabled() ||
		!strings.Contains(v.head.Text, "at the length limit") {
		t.Fatalf("answer %+v, heading %q, Continue %v", a, v.head.Text, v.contBtn)
	}
	test.Tap(v.contBtn)
	u.Wait()
	a = s.conv.Messages[1]
	if a.Content != "one two three four " || !a.Length || a.Tokens != 4 || len(s.conv.Messages) != 2 || len(a.Versions) != 0 {
		t.Fatalf("continued once: %+v", s.conv.Messages)
	}
	turns := m.lastTurns()
	if last := turns[len(turns)-1]; last.Role != "assistant" || last.Content != "one two " || !m.conts[1] {
		t.Fatalf("Continue asked the model with %q", turns)
	}
	test.Tap(s.views[1].contBtn)
	u.Wait()
	a = s.conv.Messages[1]
	if a.Content != "one two three four five." || a.Length || a.Stopped || a.Tokens != 6 || s.views[1].contBtn != nil {
		t.Fatalf("continued to the end: %+v (Continue %v)", a, s.views[1].contBtn)
	}
	if got := shownTexts(u)[1]; got != a.Content {
		t.Fatalf("view shows %q", got)
	}
	saved, err := conversation.Store{Dir: dirs.Chats}.Load(s.conv.ID)
	if err != nil || saved.Messages[1].Content != a.Content || saved.Messages[1].Length {
		t.Fatalf("saved %+v, %v", saved, err)
	}

	// "Until the model stops": the whole answer at once, and the choice is remembered.
	s.length.SetSelected(lengthLabel(untilEnd))
	say(t, u, "Again.")
	if a := s.conv.Messages[3]; a.Content != "one two three four five." || a.Length {
		t.Fatalf("unlimited answer %+v", a)
	}
	if got := u.app.Preferences().IntWithFallback(prefAnswerLength, -1); got != untilEnd {
		t.Fatalf("remembered %d", got)
	}
	u2 := startUI(t, be, dirs, Options{MaxAnswer: 2})
	if u2.chat.length.Selected != lengthLabel(untilEnd) {
		t.Fatalf("a new window's length %q", u2.chat.length.Selected)
	}
}

// A continued answer with versions stays the version it was, continued.
func TestContinueKeepsVersions(t *testing.T) {
	be := &fakeBackend{prof: bigMachine(), answer: []string{"a ", "b ", "c."}}
	u, dirs := newTestUI(t, be, Options{MaxAnswer: 1})
	pickAndLoad(t, u, tinyModelFile(t, dirs.Models, "tiny.gguf"))
	say(t, u, "Letters.")
	u.chat.regenerate() // a second version, also cut at one token
	u.Wait()
	u.chat.showVersion(1, 0)
	test.Tap(u.chat.views[1].contBtn)
	u.Wait()
	m := u.chat.conv.Messages[1]
	if vs := m.AllVersions(); len(vs) != 2 || m.Shown != 0 || vs[0].Content != "a b " || vs[1].Content != "a " || m.Content != "a b " {
		t.Fatalf("after continuing version 1: %+v", m)
	}
}
