package ui

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/trochilus-llm/trochilus/engine"
	"github.com/trochilus-llm/trochilus/engine/assistant"
	"github.com/trochilus-llm/trochilus/ui/conversation"
)

// streamEvery spaces the updates of a growing answer: often enough to look live, seldom
// enough that a fast model does not flood the UI goroutine (the text coming in between is
// shown together, never a token at a time).
const streamEvery = 50 * time.Millisecond

// turn is an answer being generated.
type turn struct {
	stop context.CancelFunc
	view *messageView // the answer as it grows
	// prev is the answer being regenerated, whose versions the new one joins, or with cont
	// the answer being continued, whose shown version the new text goes on; nil for a new
	// turn.
	prev     *conversation.Message
	cont     bool
	sampling *engine.Sampling // nil: greedy
	start    time.Time
	shown    int // updates shown while it grew (tests: they are coalesced)
	saves    int // saves made while it grew, by the generating goroutine (tests: spaced)
}

// base returns the text the answer starts with: the answer continued, or none.
func (t *turn) base() string {
	if t.cont {
		return t.prev.Content
	}
	return ""
}

// answer returns the turn's answer once reply r has made text (length: it took all the tokens
// it could): the text, or when continuing the answer continued (less what r takes back of its
// end: an unfinished character's U+FFFD) followed by the text, with the tokens of both.
func (t *turn) answer(text string, r Reply, length bool) conversation.Answer {
	a := conversation.Answer{Content: text, Tokens: r.Tokens, Rate: r.Rate, Stopped: !r.Ended, Seed: t.seed(), Length: length}
	if t.cont {
		prev := t.prev.Content
		a.Content = prev[:len(prev)-min(max(r.Replaced, 0), len(prev))] + text
		a.Tokens += t.prev.Tokens
		if a.Rate == 0 {
			a.Rate = t.prev.Rate
		}
	}
	return a
}

// message returns the turn's message with answer a: a new answer joins the versions of the
// one regenerated as the newest, shown; a continued one replaces the version it continued.
func (t *turn) message(a conversation.Answer) conversation.Message {
	if t.prev == nil {
		return conversation.Answered([]conversation.Answer{a})
	}
	vs := slices.Clone(t.prev.AllVersions())
	if !t.cont {
		return conversation.Answered(append(vs, a))
	}
	shown := min(max(t.prev.Shown, 0), len(vs)-1)
	vs[shown] = a
	m := conversation.Answered(vs)
	m.Show(shown)
	return m
}

// seed returns the seed the answer is sampled with, nil for a greedy one.
func (t *turn) seed() *uint64 {
	if t.sampling == nil {
		return nil
	}
	seed := t.sampling.Seed
	return &seed
}

// startTurn shows the conversation with an empty answer and generates it off the UI
// goroutine; prev is the answer it replaces as the shown version (regenerating) or, with cont,
// the answer it goes on with (Continue, which took it off the conversation), or nil. The model
// reads as much of the conversation as fits its context with room for the answer
// (fitContext): the oldest turns roll out of its view, marked by a divider.
func (s *chatScreen) startTurn(prev *conversation.Message, cont bool, sampling *engine.Sampling) {
	model, maxAnswer := s.u.loaded, s.maxAnswer()
	s.conv.System = s.system.Text
	if s.conv.Model != model.Path() {
		// Another model's context may hold more of the conversation: fit it afresh.
		s.conv.Rolled = 0
	}
	s.conv.Model = model.Path()
	if prev != nil {
		// Until the new answer is saved, the chat on disk keeps the one it replaces or goes
		// on with: a crash meanwhile loses neither.
		keep := s.conv.Clone()
		keep.Messages = append(keep.Messages, *prev)
		s.saveAs(keep)
	} else {
		s.save()
	}
	s.follow = true // what was just asked, and its answer, come into view
	s.render()
	ctx, stop := context.WithCancel(s.u.ctx)
	t := &turn{stop: stop, prev: prev, cont: cont, sampling: sampling, start: time.Now()}
	if cont {
		t.view = s.newView(*prev, len(s.conv.Messages), 0)
	} else {
		n := 1
		if prev != nil {
			n = len(prev.AllVersions()) + 1
		}
		t.view = s.newView(conversation.Message{Role: conversation.Assistant}, len(s.conv.Messages), n)
		t.view.body.SetText("…")
	}
	s.messages.Add(t.view.obj)
	s.turn = t
	s.scrollToEnd()
	s.status.generating(0)
	s.updateButtons()

	base := s.conv.Clone() // what the answer is saved with as it grows
	ask := s.conv.Clone()  // what the model is asked: the answer continued is its last message
	if cont {
		ask.Messages = append(ask.Messages, *prev)
	}
	store, saveEvery := s.store, s.saveEvery
	s.u.run(func(context.Context) {
		defer stop()
		var (
			mu      sync.Mutex
			text    strings.Builder
			pending bool        // text has come since the view was last updated
			shown   time.Time   // when the view was last updated
			trailer *time.Timer // a pending update for text that came too soon after the last
			saved   time.Time   // when the answer so far was last saved
			saving  sync.WaitGroup
			inSave  bool
		)
		// show hands the text so far to the view; called with mu held, as are the others.
		show := func() {
			shown, pending = time.Now(), false
			snapshot := t.base() + text.String()
			s.u.later(func() { s.showGrowing(t, snapshot) })
		}
		// update shows the text that came since the last update once streamEvery has passed
		// since it: now, or from a timer, so that the last piece before a pause is not held
		// back until the next one.
		var update func()
		update = func() {
			if !pending {
				return
			}
			if wait := streamEvery - time.Since(shown); wait > 0 {
				if trailer == nil {
					trailer = time.AfterFunc(wait, func() {
						mu.Lock()
						defer mu.Unlock()
						trailer = nil
						update()
					})
				}
				return
			}
			show()
		}
		// save writes the conversation with the answer so far (marked cut short, which it is
		// should the app die now), at most every saveEvery and one save at a time, off the
		// engine's goroutine.
		save := func() {
			if inSave || time.Since(saved) < saveEvery {
				return
			}
			inSave, saved = true, time.Now()
			t.saves++
			snap := base.Clone()
			snap.Messages = append(snap.Messages, t.message(t.answer(text.String(), Reply{}, false)))
			saving.Add(1)
			go func() {
				defer saving.Done()
				err := store.Save(snap)
				mu.Lock()
				inSave = false
				mu.Unlock()
				if err != nil {
					s.u.later(func() { s.status.setNote("Saving the answer failed: " + err.Error()) })
				}
			}()
		}
		onText := func(piece string) {
			mu.Lock()
			defer mu.Unlock()
			text.WriteString(piece)
			pending = true
			save()
			update()
		}
		room := answerRoom(maxAnswer, model.Context())
		first, turns, err := fitContext(model, ask, cont, room)
		if err != nil {
			s.u.later(func() { s.turnDone(t, Reply{Context: model.Context()}, err) })
			return
		}
		if first != base.Rolled {
			mu.Lock()
			base.Rolled = first
			mu.Unlock()
			s.u.later(func() { s.rolled(t, first) })
		}
		opts := assistant.Options{MaxTokens: maxAnswer, Sampling: sampling, OnText: onText, Draft: engine.DefaultDraft}
		var r Reply
		if cont {
			r, err = model.Continue(ctx, turns, opts)
		} else {
			r, err = model.Reply(ctx, turns, opts)
		}
		mu.Lock()
		if trailer != nil {
			trailer.Stop()
		}
		mu.Unlock()
		saving.Wait() // the answer's last save comes after any made while it grew
		s.u.later(func() { s.turnDone(t, r, err) })
	})
}

// rolled marks the messages before first as out of the model's view, while turn t is
// generated.
func (s *chatScreen) rolled(t *turn, first int) {
	if s.turn != t {
		return
	}
	s.conv.Rolled = first
	s.render()
}

// showGrowing shows the answer so far, on the UI goroutine.
func (s *chatScreen) showGrowing(t *turn, text string) {
	if s.turn != t {
		return // the turn ended meanwhile: turnDone showed the whole answer
	}
	t.shown++
	follow := s.follow
	t.view.body.SetText(text)
	s.status.generating(time.Since(t.start))
	if follow {
		s.scrollToEnd()
	}
}

// turnDone records the answer (whole, stopped or cut by an error) as the newest version of
// its turn, saves the chat and shows what the turn cost.
func (s *chatScreen) turnDone(t *turn, r Reply, err error) {
	s.turn = nil
	stopped := errors.Is(err, context.Canceled)
	// An answer that neither ended nor was stopped took all the tokens it could: Continue
	// goes on from it.
	length := err == nil && !r.Finished() && r.Tokens > 0
	switch {
	case r.Text != "" || r.Tokens > 0:
		s.conv.Add(t.message(t.answer(r.Text, r, length)), s.u.opts.Now())
	case t.prev != nil:
		// Nothing came of it: the answer regenerated (or continued) stays as it was.
		s.conv.Add(*t.prev, s.u.opts.Now())
	}
	s.save()
	s.render()
	s.updateButtons()
	var tooLong *contextError
	switch {
	case stopped:
		s.status.showReply(r, t.seed(), "Stopped")
	case errors.As(err, &tooLong):
		// Nothing was asked: the figures of the last answer stay, the note says why.
		s.status.setNote("Error: " + err.Error())
		s.u.showError(err)
	case err != nil:
		s.status.showReply(r, t.seed(), "Error: "+err.Error())
		s.u.showError(err)
	default:
		s.status.showReply(r, t.seed(), inexactNote(r))
	}
}

// inexactNote tells the user, for a continuation that may differ from the uninterrupted
// answer (one not made from the answer's own tokens: a chat reopened from disk, say), why.
func inexactNote(r Reply) string {
	if !r.Inexact {
		return ""
	}
	return "Inexact continuation: " + r.InexactReason
}
