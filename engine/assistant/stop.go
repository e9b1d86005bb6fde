package assistant

import "strings"

// stopWriter passes an answer's text on as it grows, holding back any tail that could be the
// start of a stop text, so that a stop text is never streamed, not even in part.
type stopWriter struct {
	stops  []string
	onText func(string)
	buf    strings.Builder
	sent   int // bytes of buf passed on
	end    int // where a stop text begins, or -1
	skip   int // bytes still to pass on that were shown already (resume)
}

func newStopWriter(stops []string, onText func(string)) *stopWriter {
	w := &stopWriter{onText: onText, end: -1}
	for _, s := range stops {
		if s != "" {
			w.stops = append(w.stops, s)
		}
	}
	return w
}

// resume starts the writer with the text of the answer it continues, shown already: a stop
// text that begins in its tail and ends in what follows is found as in the uninterrupted
// answer, and none of it is passed on again.
func (w *stopWriter) resume(text string) {
	w.buf.WriteString(text)
	w.sent = len(text) - w.held(text)
	w.skip = len(text) - w.sent
}

// write adds s to the answer and reports whether a stop text now ends it.
func (w *stopWriter) write(s string) bool {
	if w.end >= 0 {
		return true
	}
	w.buf.WriteString(s)
	all := w.buf.String()
	// Whatever was passed on cannot begin a stop text (its start would have been held
	// back), so a stop text begins at or after sent.
	end := -1
	for _, stop := range w.stops {
		if i := strings.Index(all[w.sent:], stop); i >= 0 && (end < 0 || w.sent+i < end) {
			end = w.sent + i
		}
	}
	if end >= 0 {
		w.end = end
		w.emit(all[w.sent:end])
		return true
	}
	w.emit(all[w.sent : len(all)-w.held(all[w.sent:])])
	return false
}

// held returns the length of the longest tail of s that begins some stop text.
func (w *stopWriter) held(s string) int {
	n := 0
	for _, stop := range w.stops {
		for k := min(len(stop)-1, len(s)); k > n; k-- {
			if strings.HasSuffix(s, stop[:k]) {
				n = k
				break
			}
		}
	}
	return n
}

func (w *stopWriter) emit(s string) {
	if s == "" {
		return
	}
	w.sent += len(s)
	if n := min(w.skip, len(s)); n > 0 {
		s, w.skip = s[n:], w.skip-n
	}
	if s != "" && w.onText != nil {
		w.onText(s)
	}
}

// flush passes on the held tail: the answer ended without a stop text.
func (w *stopWriter) flush() {
	if w.end < 0 {
		w.emit(w.buf.String()[w.sent:])
	}
}

// text returns the answer: up to the stop text when one ended it.
func (w *stopWriter) text() string {
	if w.end >= 0 {
		return w.buf.String()[:w.end]
	}
	return w.buf.String()
}
