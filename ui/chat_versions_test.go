package ui

import (
	"fmt"
	"testing"

	"fyne.io/fyne/v2/test"

	"github.com/trochilus-llm/trochilus/ui/conversation"
)

// Regenerate keeps every version: in Exact mode it asks for a sampled answer (the greedy one
// would come back the same) and says so on the button; ‹ › flip between the versions, the one
// shown is what the model is told next, and the chat saves them all.
func TestRegenerateKeepsVersions(t *testing.T) {
	be := &fakeBackend{prof: bigMachine(), answer: []string{"Hello."}, bySeed: true}
	u := newLoadedUI(t, be)
	s := u.chat
	if s.regenBtn.Text != "Regenerate" {
		t.Fatalf("button %q before any answer", s.regenBtn.Text)
	}
	say(t, u, "Hi")
	if s.regenBtn.Text != "Regenerate (varied)" {
		t.Fatalf("button %q in Exact mode", s.regenBtn.Text)
	}
	test.Tap(s.regenBtn)
	u.Wait()
	test.Tap(s.regenBtn)
	u.Wait()
	m := be.last()
	m.mu.Lock()
	asked := m.sampling
	m.mu.Unlock()
	if len(asked) != 3 || asked[0] != nil || asked[1] == nil || asked[2] == nil || asked[1].Seed == asked[2].Seed {
		t.Fatalf("the model was asked with %v", asked)
	}
	v2, v3 := fmt.Sprintf("Sampled %d.", asked[1].Seed), fmt.Sprintf("Sampled %d.", asked[2].Seed)
	msg := s.conv.Messages[1]
	if vs := msg.AllVersions(); len(s.conv.Messages) != 2 || len(vs) != 3 || vs[0].Content != "Hello." || vs[1].Content != v2 ||
		vs[2].Content != v3 || msg.Shown != 2 || msg.Content != v3 || *vs[2].Seed != asked[2].Seed {
		t.Fatalf("after two regenerates: %+v", s.conv.Messages)
	}
	view := s.views[1]
	if view.version.Text != "3/3" || view.nextBtn.Disabled() != true || view.prevBtn.Disabled() {
		t.Fatalf("versions %q, next disabled %v, previous disabled %v", view.version.Text, view.nextBtn.Disabled(), view.prevBtn.Disabled())
	}

	test.Tap(view.prevBtn)
	view = s.views[1]
	test.Tap(view.prevBtn)
	view = s.views[1]
	if view.version.Text != "1/3" || view.text() != "Hello." || s.conv.Messages[1].Content != "Hello." || !view.prevBtn.Disabled() {
		t.Fatalf("after ‹ ‹: %q showing %q", view.version.Text, view.text())
	}
	test.Tap(view.nextBtn)
	if s.views[1].version.Text != "2/3" || s.views[1].text() != v2 {
		t.Fatalf("after ›: %q showing %q", s.views[1].version.Text, s.views[1].text())
	}
	saved, err := conversation.Store{Dir: u.dirs.Chats}.Load(s.conv.ID)
	if err != nil || len(saved.Messages[1].Versions) != 3 || saved.Messages[1].Shown != 1 || saved.Messages[1].Content != v2 {
		t.Fatalf("saved %+v, %v", saved.Messages, err)
	}

	// The version shown is the conversation the model continues; an earlier answer's versions
	// no longer flip (what follows was said to the one shown).
	say(t, u, "More")
	if turns := m.lastTurns(); turns[1].Content != v2 {
		t.Fatalf("the model was told %q", turns[1].Content)
	}
	if v := s.views[1]; v.version.Text != "2/3" || !v.prevBtn.Disabled() || !v.nextBtn.Disabled() {
		t.Fatalf("an earlier answer's versions: %q, buttons enabled", v.version.Text)
	}
	// Reopened, the chat shows the same.
	id := s.conv.ID
	s.newChat()
	s.open(id)
	if v := s.views[1]; v.version.Text != "2/3" || v.text() != v2 {
		t.Fatalf("reopened: %q showing %q", v.version.Text, v.text())
	}
}

// In Varied mode the button is plain Regenerate (every answer is sampled anyway); a turn whose
// answer failed is answered again as the mode says (greedy in Exact mode: it has no answer to
// vary).
func TestRegenerateModes(t *testing.T) {
	be := &fakeBackend{prof: bigMachine(), answer: []string{"Hello."}, bySeed: true}
	u := newLoadedUI(t, be)
	s := u.chat
	s.answers.SetSelected(answersVaried)
	say(t, u, "Hi")
	if s.regenBtn.Text != "Regenerate" {
		t.Fatalf("button %q in Varied mode", s.regenBtn.Text)
	}
	s.answers.SetSelected(answersExact)
	s.conv.Messages = s.conv.Messages[:1] // as when the answer failed
	s.render()
	s.updateButtons()
	if s.regenBtn.Text != "Regenerate" {
		t.Fatalf("button %q with no answer to vary", s.regenBtn.Text)
	}
	test.Tap(s.regenBtn)
	u.Wait()
	m := be.last()
	if sp := m.sampling[len(m.sampling)-1]; sp != nil || s.conv.Messages[1].Content != "Hello." || len(s.conv.Messages[1].Versions) != 0 {
		t.Fatalf("retried with %v: %+v", sp, s.conv.Messages)
	}
}
