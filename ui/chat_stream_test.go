package ui

import (
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"fyne.io/fyne/v2"

	"github.com/trochilus-llm/trochilus/ui/conversation"
)

// newStreamingUI loads a window whose model answers n copies of piece, a millisecond apart: a
// fast stream.
func newStreamingUI(t *testing.T, piece string, n int) *UI {
	t.Helper()
	return newLoadedUI(t, &fakeBackend{prof: bigMachine(), answer: slices.Repeat([]string{piece}, n), pause: time.Millisecond})
}

// sendTimed types text into the chat and sends it, waits for the whole answer and returns its
// turn and how long it took.
func sendTimed(u *UI, text string) (*turn, time.Duration) {
	typeInto(u, u.chat.input, text)
	start := time.Now()
	u.chat.send()
	tr := u.chat.turn
	u.Wait()
	return tr, time.Since(start)
}

// A fast stream is shown at most every streamEvery, never a piece at a time, and the whole
// answer at the end.
func TestStreamCoalesces(t *testing.T) {
	const pieces = 200
	u := newStreamingUI(t, "w ", pieces)
	tr, took := sendTimed(u, "Talk.")
	most := int(took/streamEvery) + 1 // updates are at least streamEvery apart
	if tr.shown < 1 || tr.shown > most {
		t.Fatalf("%d pieces in %v shown in %d updates, want 1 to %d", pieces, took, tr.shown, most)
	}
	if got := u.chat.conv.Messages[1].Content; got != strings.Repeat("w ", pieces) {
		t.Fatalf("answer %q", got)
	}
	t.Logf("%d pieces in %v: %d updates", pieces, took, tr.shown)
}

// The answer is saved as it streams (the file always whole: written aside and renamed), marked
// cut short until it ends, so a crash loses at most the last second; then saved whole.
func TestAnswerSavedAsItStreams(t *testing.T) {
	be := &fakeBackend{prof: bigMachine(), answer: []string{"one ", "two ", "three"}, gated: true}
	u := newLoadedUI(t, be)
	u.chat.saveEvery = 0 // every piece, to see each
	m := be.last()
	store := conversation.Store{Dir: u.dirs.Chats}
	onDisk := func() string {
		c, err := store.Load(u.chat.conv.ID)
		if err != nil {
			return ""
		}
		if n := len(c.Messages); n == 2 && c.Messages[1].Stopped {
			return c.Messages[1].Content
		}
		return ""
	}
	sendAndWaitForAPiece(t, u, m, "Count.")
	waitFor(t, func() bool { return onDisk() == "one " })
	m.release <- struct{}{}
	waitPieces(t, m, 1)
	waitFor(t, func() bool { return onDisk() == "one two " })
	m.release <- struct{}{}
	u.Wait()
	c, err := store.Load(u.chat.conv.ID)
	if err != nil || len(c.Messages) != 2 || c.Messages[1].Content != "one two three" || c.Messages[1].Stopped || c.Messages[1].Tokens != 4 {
		t.Fatalf("saved at the end: %+v, %v", c, err)
	}
	entries, _ := os.ReadDir(u.dirs.Chats)
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".tmp") {
			t.Errorf("left behind: %s", e.Name())
		}
	}
}

// Saves while streaming are spaced by saveEvery: a fast answer is not written a piece at a
// time.
func TestStreamSavesSpaced(t *testing.T) {
	const pieces = 150
	u := newStreamingUI(t, "x", pieces)
	u.chat.saveEvery = 40 * time.Millisecond
	tr, took := sendTimed(u, "Go.")
	saves := tr.saves
	if most := int(took/u.chat.saveEvery) + 1; saves < 2 || saves > most {
		t.Fatalf("%d saves in %v, want 2 to %d", saves, took, most)
	}
	t.Logf("%d pieces in %v: %d saves", pieces, took, saves)
}

// A growing answer keeps the view at its end, unless the reader scrolled up: then the view
// stays where they read.
func TestStreamFollowsUnlessScrolledUp(t *testing.T) {
	long := strings.Repeat("A long line of an answer that wraps more than once in the window. ", 40)
	be := &fakeBackend{prof: bigMachine(), answer: []string{long, long, long}, gated: true}
	u := newLoadedUI(t, be)
	u.win.Resize(fyne.NewSize(1000, 700))
	s, m := u.chat, be.last()
	sendAndWaitForAPiece(t, u, m, "Talk.")
	view := s.turn.view.body
	waitFor(t, func() bool { u.flush(); return view.text == long })
	m.release <- struct{}{}
	waitPieces(t, m, 1)
	waitFor(t, func() bool { u.flush(); return view.text == long+long })
	if !s.atEnd() || s.scroll.Offset.Y <= 0 {
		t.Fatalf("the view did not follow the answer: offset %v", s.scroll.Offset.Y)
	}
	s.scroll.Scrolled(&fyne.ScrollEvent{Scrolled: fyne.Delta{DY: 100000}}) // the wheel, up to the top
	m.release <- struct{}{}
	u.Wait() // the last piece, and the answer's end
	if s.scroll.Offset.Y != 0 || s.views[1].text() != long+long+long {
		t.Fatalf("the view moved to %v while the reader was at the top", s.scroll.Offset.Y)
	}
	// Sending follows again.
	m.release <- struct{}{}
	m.release <- struct{}{}
	say(t, u, "More.")
	if !s.atEnd() || s.scroll.Offset.Y <= 0 {
		t.Fatalf("after sending: offset %v", s.scroll.Offset.Y)
	}
}
