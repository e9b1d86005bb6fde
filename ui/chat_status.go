package ui

import (
	"fmt"
	"strings"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/widget"
)

// chatStatus is the line under the input: the speed, the context used and the seed of the
// last answer, each a label of its own that is never cut short (they are what people compare
// between answers), then a note (what the turn is doing, what went wrong, the prompt's cost)
// that wraps onto more lines rather than lose its end.
type chatStatus struct {
	obj     fyne.CanvasObject
	rate    *widget.Label
	context *widget.Label
	seed    *widget.Label
	note    *widget.Label
}

func newChatStatus() *chatStatus {
	st := &chatStatus{rate: widget.NewLabel(""), context: widget.NewLabel(""), seed: widget.NewLabel(""), note: widget.NewLabel("")}
	st.note.Wrapping = fyne.TextWrapWord
	st.obj = container.NewBorder(nil, nil, container.NewHBox(st.rate, st.context, st.seed), nil, st.note)
	return st
}

// clear empties the status (a new or opened chat).
func (st *chatStatus) clear() {
	for _, l := range []*widget.Label{st.rate, st.context, st.seed, st.note} {
		l.SetText("")
	}
	st.obj.Refresh()
}

// setNote replaces the note, keeping the figures.
func (st *chatStatus) setNote(s string) {
	st.note.SetText(s)
	st.obj.Refresh()
}

// generating shows an answer under way for d.
func (st *chatStatus) generating(d time.Duration) {
	st.rate.SetText("… tok/s")
	if d == 0 {
		st.setNote("Reading the conversation…")
		return
	}
	st.setNote(fmt.Sprintf("Generating… %.1f s (Esc stops)", d.Seconds()))
}

// showReply shows what answer r cost: its speed (a stopped answer's too: the engine times the
// tokens made before the stop), the context it leaves used, its seed (nil: exact, greedy) and,
// before the prompt's figures, state ("Stopped", an error) when not "".
func (st *chatStatus) showReply(r Reply, seed *uint64, state string) {
	st.rate.SetText(fmt.Sprintf("%.1f tok/s", r.Rate))
	st.context.SetText(fmt.Sprintf("context %d / %d", r.Used, r.Context))
	if seed != nil {
		st.seed.SetText(fmt.Sprintf("seed %d", *seed))
	} else {
		st.seed.SetText("exact")
	}
	note := fmt.Sprintf("%d tokens · prompt %d (%d reused) at %.0f tok/s", r.Tokens, r.Prompt, r.Reused, r.PPRate)
	if state != "" {
		note = state + " · " + note
	}
	// The labels' new widths need the row laid out again (Fyne's desktop driver would at the
	// next frame; saying so keeps every driver right).
	st.setNote(note)
}

// String is the status as one line, the figures first (the tests' and the log's view of it).
func (st *chatStatus) String() string {
	var parts []string
	for _, l := range []*widget.Label{st.rate, st.context, st.seed, st.note} {
		if l.Text != "" {
			parts = append(parts, l.Text)
		}
	}
	return strings.Join(parts, " · ")
}
