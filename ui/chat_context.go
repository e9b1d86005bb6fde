package ui

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/widget"

	"github.com/trochilus-llm/trochilus/tokenizer/chat"
	"github.com/trochilus-llm/trochilus/ui/conversation"
)

// A conversation longer than the model's context rolls, as LM Studio's and Jan's do: the
// oldest turns after the system prompt leave the model's view, whole (a question with its
// answer), until what is left and the room for an answer fit, with room to spare for the
// turns to come. They stay in the chat, shown above a divider that says the model no longer
// reads them.

// rolledNote is the divider's text, above the first message the model still reads.
const rolledNote = "Older messages are outside the model's context"

// untilEnd is the answer length that lets an answer run until the model ends it or the
// context is full.
const untilEnd = 0

// answerLengths are the answer lengths offered, in tokens (untilEnd last).
var answerLengths = []int{256, 512, 1024, 2048, 4096, untilEnd}

// lengthLabel names an answer length as the setting shows it.
func lengthLabel(n int) string {
	if n == untilEnd {
		return "Until the model stops"
	}
	return fmt.Sprintf("%d tokens", n)
}

// lengthOptions returns the answer lengths offered, with n among them, shortest first and
// untilEnd last.
func lengthOptions(n int) []string {
	lengths := slices.Clone(answerLengths[:len(answerLengths)-1])
	if n != untilEnd && !slices.Contains(lengths, n) {
		lengths = append(lengths, n)
		slices.Sort(lengths)
	}
	out := make([]string, 0, len(lengths)+1)
	for _, l := range append(lengths, untilEnd) {
		out = append(out, lengthLabel(l))
	}
	return out
}

// parseLength reads a lengthLabel back.
func parseLength(label string) int {
	n, err := strconv.Atoi(strings.TrimSuffix(label, " tokens"))
	if err != nil {
		return untilEnd
	}
	return n
}

// answerRoom is the room a conversation leaves in the context for the answer: the answer
// length, or a quarter of the context for answers that run until the model stops; never more
// than half the context, so that a long answer setting still leaves the conversation room
// (an answer that then reaches the context's end can be continued, the conversation rolled).
func answerRoom(maxAnswer, context int) int {
	room := maxAnswer
	if room == untilEnd {
		room = context / 4
	}
	return max(min(room, context/2), 1)
}

// contextError says that even the shortest conversation the model could read, the system
// prompt and the last user message (and, continuing, the answer so far), does not fit.
type contextError struct {
	prompt, room, context int
	cont                  bool
}

func (e *contextError) Error() string {
	what := "the system prompt and your last message take"
	if e.cont {
		what = "the system prompt, your last message and the answer so far take"
	}
	return fmt.Sprintf("Too long for the model's context: %s %d tokens and the answer needs room for %d more, %d in all, "+
		"but the context holds %d. Shorten the message or the system prompt, or choose a shorter answer length.",
		what, e.prompt, e.room, e.prompt+e.room, e.context)
}

// fitContext returns the turns the model reads of c, and from which message: from c.Rolled
// when they (counted by m, as Continue counts them with cont) leave room tokens of m's
// context for the answer; otherwise from a later roll point (conversation.RollPoints). A roll
// re-reads everything it keeps (the KV cache is kept only up to the first message dropped), so
// it drops enough turns to leave a quarter of the context free besides the room, when the
// last question allows: the next turns then fit as they are, their prefix reused whole,
// rather than each rolling again (llama.cpp's context shift drops half for the same reason).
func fitContext(m ChatModel, c *conversation.Conversation, cont bool, room int) (first int, turns []chat.Message, err error) {
	context := m.Context()
	points := c.RollPoints()
	n, err := m.Count(c.TurnsFrom(points[0]), cont)
	if err != nil {
		return 0, nil, err
	}
	if n+room <= context {
		return points[0], c.TurnsFrom(points[0]), nil
	}
	fits := -1 // the first roll point that fits, without the headroom
	for _, p := range points[1:] {
		if n, err = m.Count(c.TurnsFrom(p), cont); err != nil {
			return 0, nil, err
		}
		if n+room <= context-context/4 {
			return p, c.TurnsFrom(p), nil
		}
		if fits < 0 && n+room <= context {
			fits = p
		}
	}
	if fits >= 0 {
		return fits, c.TurnsFrom(fits), nil
	}
	return 0, nil, &contextError{prompt: n, room: room, context: context, cont: cont}
}

// newRolledDivider makes the divider shown above the first message the model reads.
func newRolledDivider() fyne.CanvasObject {
	l := widget.NewLabelWithStyle(rolledNote, fyne.TextAlignCenter, fyne.TextStyle{Italic: true})
	l.Importance = widget.LowImportance
	return container.NewVBox(widget.NewSeparator(), l)
}
