package engine

import "slices"

// maxDraft bounds a draft's length: past a few tokens a draft is rarely right to its end, and
// a verify pass costs more with every row.
const maxDraft = 16

// draftGrams are the lengths of the context's end that a draft looks up, longest first: a
// longer match is the likelier to continue alike.
var draftGrams = [...]int{4, 3, 2}

// drafter proposes drafts from the context (prompt lookup): the tokens that followed the latest
// earlier occurrence of the sequence's last few tokens. It adapts the draft's length to how
// the drafts fare: longer after one accepted whole, as long as the part accepted after a
// partial one, and after misses none for a while, so that a text that does not repeat itself
// costs little beyond one-token passes.
type drafter struct {
	seq    []int32 // the sequence: what the session held before the prompt, the prompt, the tokens chosen
	most   int     // the longest draft
	length int     // the next draft's length
	pause  int     // chosen tokens to wait before drafting again
	misses int     // drafts in a row of which nothing was accepted
	out    []int32 // the proposal
	batch  []int32 // the verify pass's tokens, for the caller
}

func newDrafter(before, prompt []int32, most int) *drafter {
	seq := make([]int32, 0, len(before)+len(prompt)+64)
	seq = append(append(seq, before...), prompt...)
	return &drafter{seq: seq, most: most, length: min(4, most),
		out: make([]int32, 0, most), batch: make([]int32, 0, most+1)}
}

// add appends a chosen token to the sequence.
func (d *drafter) add(tok int32) { d.seq = append(d.seq, tok) }

// accepted appends a chosen token that was drafted.
func (d *drafter) accepted(tok int32) { d.seq = append(d.seq, tok) }

// ended records how a draft of drafted tokens fared: confirmed of them were chosen.
func (d *drafter) ended(confirmed, drafted int) {
	switch {
	case confirmed == drafted:
		d.length, d.misses = min(2*d.length, d.most), 0
	case confirmed > 0:
		d.length, d.misses = max(1, confirmed+1), 0
	default:
		// Wait 1, 2, 4, … 16 tokens after consecutive misses.
		d.misses++
		d.length = max(1, d.length/2)
		d.pause = 1 << min(d.misses-1, 4)
	}
}

// propose returns a draft of at most room tokens to follow the sequence, or none: the tokens
// after the latest earlier occurrence of its last 4, 3 or 2 tokens. The slice is valid until
// the next call.
func (d *drafter) propose(room int) []int32 {
	if d.pause > 0 {
		d.pause--
		return nil
	}
	n := min(d.length, room)
	if n < 1 {
		return nil
	}
	seq := d.seq
	for _, g := range draftGrams {
		if len(seq) <= g {
			continue
		}
		tail := seq[len(seq)-g:]
		for i := len(seq) - g - 1; i >= 0; i-- {
			if seq[i] != tail[0] || !slices.Equal(seq[i:i+g], tail) {
				continue
			}
			follow := seq[i+g : min(i+g+n, len(seq))]
			d.out = append(d.out[:0], follow...)
			return d.out
		}
	}
	return nil
}
