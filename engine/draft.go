package engine

import (
	"slices"
	"time"
)

// maxDraft bounds a draft's length: past a few tokens a draft is rarely right to its end, and
// a verify pass costs more with every row.
const maxDraft = 16

// DefaultDraft is the longest draft the CLI, the server and the app make unless told
// otherwise: drafts are on by default, since the cost model only drafts where a verify pass is
// measured to beat one-token passes. Measured (docs/MEASUREMENTS.md, session 11): 1.76× on the
// trained tiny model and 2.08× on the full-size OLMoE shape when the answer copies its
// context, 0.98× and 1.10× when it does not.
const DefaultDraft = maxDraft

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

	untimed bool // drafts by the length rule alone
	costs   passCosts
	p       float64 // the estimated chance that a drafted token is accepted, given the ones before were
	skipped int     // drafts the costs advised against since the last one made
}

// probeEvery is how many drafts the costs advise against before one is made anyway: the text
// may have turned to repeating itself, and only a draft can tell.
const probeEvery = 32

func newDrafter(before, prompt []int32, most int) *drafter {
	seq := make([]int32, 0, len(before)+len(prompt)+64)
	seq = append(append(seq, before...), prompt...)
	return &drafter{seq: seq, most: most, length: min(4, most), p: 0.5,
		out: make([]int32, 0, most), batch: make([]int32, 0, most+1)}
}

// observe records that a pass of width rows (1 for a token alone, k+1 for a draft of k) took
// d. Timing decides only whether and how long to draft, never a token.
func (d *drafter) observe(width int, dur time.Duration) {
	if !d.untimed {
		d.costs.observe(width, dur)
	}
}

// worth returns the longest draft of at most n tokens that is expected to give more tokens a
// second than one-token passes, and how many it is worth: with acceptance chance p a draft of
// k gives 1 + p + … + p^k tokens for a pass of k+1 rows. Without a measured one-token pass it
// returns n (no basis to refuse).
func (d *drafter) worth(n int) int {
	t1, ok := d.costs.estimate(1)
	if !ok {
		return n
	}
	best, bestRate := 0, 1/t1
	gain, pk := 1.0, 1.0
	for k := 1; k <= n; k++ {
		pk *= d.p
		gain += pk
		tk, _ := d.costs.estimate(k + 1)
		if r := gain / tk; r > bestRate {
			best, bestRate = k, r
		}
	}
	return best
}

// add appends a chosen token to the sequence.
func (d *drafter) add(tok int32) { d.seq = append(d.seq, tok) }

// accepted appends a chosen token that was drafted.
func (d *drafter) accepted(tok int32) { d.seq = append(d.seq, tok) }

// ended records how a draft of drafted tokens fared: confirmed of them were chosen.
func (d *drafter) ended(confirmed, drafted int) {
	// The acceptance chance: each drafted position reached is an accepted or a rejected
	// token, weighed so that the last few drafts count most.
	for i := range min(confirmed+1, drafted) {
		hit := 0.0
		if i < confirmed {
			hit = 1
		}
		d.p += acceptWeight * (hit - d.p)
	}
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
// after the latest earlier occurrence of its last 4, 3 or 2 tokens, continued periodically
// where that occurrence overlaps the end. The slice is valid until the next call.
func (d *drafter) propose(room int) []int32 {
	if d.pause > 0 {
		d.pause--
		return nil
	}
	n := min(d.length, room)
	if n < 1 {
		return nil
	}
	if w := d.worth(n); w < n {
		if w == 0 {
			if d.skipped++; d.skipped < probeEvery {
				return nil
			}
			w = min(2, n) // a probe
		}
		n = w
	}
	d.skipped = 0
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
			// A match that ends close to the sequence's end says the text repeats with a
			// period of len(follow) tokens (a loop, a list's rhythm): past the end it predicts
			// its own beginning again, period by period, so the draft need not stop at the
			// end (measured: the trained tiny model's 7-token loop got drafts of 6 where 16
			// were asked).
			for period := len(follow); len(d.out) < n; {
				d.out = append(d.out, d.out[len(d.out)-period])
			}
			return d.out
		}
	}
	return nil
}

// acceptWeight is the weight of a drafted position's outcome in the acceptance chance.
const acceptWeight = 0.2

// passCosts are the measured seconds of forward passes by width, each an exponentially weighted
// mean (the machine's load drifts), for the widths a drafter uses: 1 to maxDraft+1.
type passCosts struct {
	secs [maxDraft + 2]float64 // 0: not measured
}

// costWeight is the weight of a new measurement in its width's mean.
const costWeight = 0.3

func (c *passCosts) observe(width int, d time.Duration) {
	if width < 1 || width >= len(c.secs) || d <= 0 {
		return
	}
	if s := d.Seconds(); c.secs[width] == 0 {
		c.secs[width] = s
	} else {
		c.secs[width] += costWeight * (s - c.secs[width])
	}
}

// estimate returns the expected seconds of a pass of width w: its measurement, else a straight
// line through the nearest measured widths around it, else past the widest measured one the
// line from the one-token pass through it; ok is false until a one-token pass is measured. A
// width measured only at 1 is guessed at a tenth of a one-token pass per extra row: hopeful on
// purpose, so that a first draft is tried and then measured.
func (c *passCosts) estimate(w int) (secs float64, ok bool) {
	t1 := c.secs[1]
	if t1 == 0 {
		return 0, false
	}
	w = min(max(w, 1), len(c.secs)-1)
	if c.secs[w] != 0 {
		return c.secs[w], true
	}
	lo, hi := 1, 0
	for i := w - 1; i > 1; i-- {
		if c.secs[i] != 0 {
			lo = i
			break
		}
	}
	for i := w + 1; i < len(c.secs); i++ {
		if c.secs[i] != 0 {
			hi = i
			break
		}
	}
	if hi != 0 {
		f := float64(w-lo) / float64(hi-lo)
		return max(c.secs[lo]+f*(c.secs[hi]-c.secs[lo]), t1), true
	}
	if lo == 1 {
		return t1 * (1 + 0.1*float64(w-1)), true
	}
	// A noisy measurement can put a wider pass below the one-token pass: no pass is cheaper
	// than that one, whatever the line says.
	slope := (c.secs[lo] - t1) / float64(lo-1)
	return max(c.secs[lo]+slope*float64(w-lo), t1), true
}
