package main

import (
	"fmt"
	"io"
	"os"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"

	"github.com/trochilus-llm/trochilus/engine/download"
	"github.com/trochilus-llm/trochilus/internal/units"
)

// pullProgress shows a download's progress reports: on a terminal as a progress bar with
// bytes, speed and time left; elsewhere (a log, a pipe, a test) as plain lines, one every 5%,
// with no carriage returns to garble the log.
type pullProgress struct {
	w     io.Writer
	name  string
	tty   bool
	phase download.Phase
	said  bool // the current phase was announced

	bar  *progressbar.ProgressBar
	base int64 // bytes already there when the bar began: it counts this run's bytes only

	step int // the last 5% step printed as a line, -1 before the first
}

// lineSteps is how many lines a transfer prints when not on a terminal: one per 5%.
const lineSteps = 20

func newPullProgress(w io.Writer, name string) *pullProgress {
	return &pullProgress{w: w, name: name, tty: isTerminalWriter(w), phase: -1, step: -1}
}

// isTerminalWriter reports whether w is a terminal that a redrawn progress bar suits.
func isTerminalWriter(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// barWidth sizes the bar to the terminal when it tells its width (a terminal without a window,
// as under script(1), says 0, which would leave no room for the bar at all).
func barWidth(w io.Writer) progressbar.Option {
	if f, ok := w.(*os.File); ok {
		if cols, _, err := term.GetSize(int(f.Fd())); err == nil && cols >= 60 {
			return progressbar.OptionFullWidth()
		}
	}
	return progressbar.OptionSetWidth(20)
}

// update takes one report of download.Fetch (on Fetch's goroutine).
func (p *pullProgress) update(pr download.Progress) {
	if pr.Phase != p.phase {
		p.phase, p.said = pr.Phase, false
	}
	switch pr.Phase {
	case download.Checking:
		p.once("checking the bytes already downloaded, to resume after them…")
	case download.Transferring:
		if p.tty && pr.Total > 0 {
			p.drawBar(pr)
		} else {
			p.line(pr)
		}
	case download.Waiting:
		p.endBar()
		p.once(fmt.Sprintf("connection trouble (%v): retrying…", pr.Err))
	case download.Verifying:
		// The last bytes may have come after the last transfer report: show them complete.
		if p.tty && p.bar != nil {
			p.drawBar(pr)
		} else if !p.tty && pr.Total > 0 && p.step >= 0 {
			p.line(pr)
		}
		if p.bar != nil {
			p.bar.Finish() // its completion ends the line
			p.bar = nil
		}
		p.once("verifying the SHA-256…")
	}
}

// once prints a phase's message the first time the phase is reported.
func (p *pullProgress) once(msg string) {
	if !p.said {
		p.said = true
		p.endBar()
		fmt.Fprintln(p.w, msg)
	}
}

// drawBar moves the bar to the bytes received. It starts at the first transfer report, over
// the bytes still to come: the library's speed and time left then measure this run, not the
// part an earlier pull left. A restart from the beginning (the file changed on the server)
// begins a new bar.
func (p *pullProgress) drawBar(pr download.Progress) {
	if p.bar != nil && pr.Received < p.base {
		p.endBar()
	}
	if p.bar == nil {
		if pr.Total-pr.Received <= 0 {
			return
		}
		p.base = pr.Received
		desc := p.name
		if p.base > 0 {
			desc = fmt.Sprintf("%s, resumed after %s", p.name, units.Bytes(uint64(p.base)))
		}
		w := p.w
		p.bar = progressbar.NewOptions64(pr.Total-p.base,
			progressbar.OptionSetWriter(w),
			progressbar.OptionSetDescription(desc),
			progressbar.OptionShowBytes(true),
			progressbar.OptionShowCount(),
			progressbar.OptionUseIECUnits(true),
			progressbar.OptionSetPredictTime(true),
			barWidth(w),
			progressbar.OptionThrottle(100*time.Millisecond),
			progressbar.OptionSetRenderBlankState(true),
			progressbar.OptionOnCompletion(func() { fmt.Fprintln(w) }),
		)
	}
	p.bar.Set64(min(pr.Received-p.base, p.bar.GetMax64()))
}

// endBar leaves the bar where it is and moves to the next line, so a message can follow.
func (p *pullProgress) endBar() {
	if p.bar == nil {
		return
	}
	if !p.bar.IsFinished() {
		p.bar.Exit() // its completion ends the line
	}
	p.bar = nil
}

// line prints a plain progress line each time the share received crosses a 5% step (or,
// with the size unknown, each 64 MiB).
func (p *pullProgress) line(pr download.Progress) {
	var step int
	if pr.Total > 0 {
		step = int(pr.Fraction() * lineSteps)
	} else {
		step = int(pr.Received >> 26)
	}
	if step == p.step {
		return
	}
	p.step = step
	if pr.Total <= 0 {
		fmt.Fprintf(p.w, "%s: %s%s\n", p.name, units.Bytes(uint64(pr.Received)), pullRateText(pr))
		return
	}
	fmt.Fprintf(p.w, "%s: %3.0f%% (%s of %s%s)\n", p.name, 100*pr.Fraction(),
		units.Bytes(uint64(pr.Received)), units.Bytes(uint64(pr.Total)), pullRateText(pr))
}

// pullRateText is ", SPEED, TIME left" when the rate is known.
func pullRateText(pr download.Progress) string {
	if pr.Rate <= 0 {
		return ""
	}
	s := ", " + units.Bytes(uint64(pr.Rate)) + "/s"
	if left := pr.Remaining(); left >= 0 {
		s += ", " + left.Round(time.Second).String() + " left"
	}
	return s
}

// close ends what is on screen once Fetch has returned.
func (p *pullProgress) close() { p.endBar() }
