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
	stop     context.CancelFunc
	view     *messageView          // the answer as it grows
	prev     *conversation.Message // the answer being regenerated, whose versions the new one joins; nil for a new turn
	sampling *engine.Sampling      // nil: greedy
	start    time.Time
	shown    int // updates shown while it grew (tests: they are coalesced)
	saves    int // saves made while it grew, by the generating goroutine (tests: spaced)
}

// versions returns the versions the answer will have, the new one, a, last.
func (t *turn) versions(a conversation.Answer) []conversation.Answer {
	var vs []conversation.Answer
	if t.prev != nil {
		vs = slices.Clone(t.prev.AllVersions())
	}
	return append(vs, a)
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
// goroutine; prev is the answer it replaces as the shown version (regenerating), or nil.
func (s *chatScreen) startTurn(prev *conversation.Message, sampling *engine.Sampling) {
	model := s.u.loaded
	s.conv.System = s.system.Text
	s.conv.Model = model.Path()
	s.save()
	s.follow = true // what was just asked, and its answer, come into view
	s.render()
	ctx, stop := context.WithCancel(s.u.ctx)
	t := &turn{stop: stop, prev: prev, sampling: sampling, start: time.Now()}
	n := 1
	if prev != nil {
		n = len(prev.AllVersions()) + 1
	}
	t.view = s.newView(conversation.Message{Role: conversation.Assistant}, len(s.conv.Messages), n)
	t.view.body.SetText("…")
	s.messages.Add(t.view.obj)
	s.turn = t
	s.scrollToEnd()
	s.status.generating(0)
	s.updateButtons()

	turns := s.conv.Turns()
	base := s.conv.Clone()
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
			snapshot := text.String()
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
			snap.Messages = append(snap.Messages, conversation.Answered(t.versions(conversation.Answer{
				Content: text.String(), Stopped: true, Seed: t.seed()})))
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
		r, err := model.Reply(ctx, turns, assistant.Options{MaxTokens: s.u.opts.MaxAnswer, Sampling: sampling, OnText: onText})
		mu.Lock()
		if trailer != nil {
			trailer.Stop()
		}
		mu.Unlock()
		saving.Wait() // the answer's last save comes after any made while it grew
		s.u.later(func() { s.turnDone(t, r, err) })
	})
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
	switch {
	case r.Text != "" || r.Tokens > 0:
		a := conversation.Answer{Content: r.Text, Tokens: r.Tokens, Rate: r.Rate, Stopped: !r.Ended, Seed: t.seed()}
		s.conv.Add(conversation.Answered(t.versions(a)), s.u.opts.Now())
	case t.prev != nil:
		// Nothing came of it: the answer regenerated stays as it was.
		s.conv.Add(*t.prev, s.u.opts.Now())
	}
	s.save()
	s.render()
	s.updateButtons()
	switch {
	case stopped:
		s.status.showReply(r, t.seed(), "Stopped")
	case err != nil:
		s.status.showReply(r, t.seed(), "Error: "+err.Error())
		s.u.showError(err)
	default:
		s.status.showReply(r, t.seed(), "")
	}
}
