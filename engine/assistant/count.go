package assistant

// CountText returns the tokens of the prompt Complete would evaluate for text with
// opts.SpecialText (the other options do not change it), tokenizing only: nothing is
// evaluated and the session is left as it is. A server counts with it before a request
// waits for a session, so that a prompt the context cannot hold is refused without holding one.
func (c *Chat) CountText(text string, opts Options) int {
	n := 0
	if c.tok.AddBOS() {
		n++
	}
	return n + len(c.tok.Encode(text, opts.SpecialText))
}
