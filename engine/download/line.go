package download

import (
	"fmt"
	"os"
	"time"

	"github.com/trochilus-llm/trochilus/internal/units"
)

// Line is what a list of downloads shows of one file: the bar's value and the words on it,
// made from the same figures so that they never disagree (a paused download shows no speed
// or time left, a finished one its real size, a deleted one nothing).
type Line struct {
	Fraction float64 // the bar: the share received, in [0, 1]
	Text     string  // the bar's words
}

// RunningLine is the line of a download under way, from its latest report.
func RunningLine(p Progress) Line {
	switch {
	case p.Phase == Done:
		return Line{Fraction: 1, Text: "100% · " + units.Bytes(p.Received)}
	case p.Phase == Verifying:
		return Line{Fraction: 1, Text: "Verifying the SHA-256 of " + units.Bytes(p.Received) + "…"}
	case p.Total <= 0:
		text := units.Bytes(p.Received) + " received"
		if p.Phase == Transferring {
			text += " · " + RateText(p.Rate)
		}
		return Line{Text: text}
	}
	l := share(p.Received, p.Total, p.Approximate)
	if p.Phase == Transferring {
		l.Text += " · " + RateText(p.Rate) + " · " + LeftText(p.Remaining())
	}
	return l
}

// IdleLine is the line of a file no download is working on, from what its folder holds: the
// file (its real size), a partial file (its share of the size the download learnt, else of
// approx, the catalog's rounded size), or nothing.
func IdleLine(path string, approx int64) Line {
	if fi, err := os.Stat(path); err == nil {
		return Line{Fraction: 1, Text: "100% · " + units.Bytes(fi.Size())}
	}
	received, total := PartialProgress(path)
	guess := total == 0
	if guess {
		total = approx
	}
	switch {
	case received > 0 && total > 0:
		l := share(received, total, guess)
		l.Text = "Paused at " + l.Text
		return l
	case received > 0:
		return Line{Text: "Paused · " + units.Bytes(received) + " kept"}
	case approx > 0:
		return Line{Text: "about " + units.Bytes(approx)}
	}
	return Line{Text: "size unknown"}
}

// share is "38% · 1.60 GiB of 4.21 GiB". The percentage is rounded down and, short of the
// whole file, never reaches 100 (nor the bar 1): an approximate size can be below the real one,
// and a file is not whole until it is verified.
func share(received, total int64, approx bool) Line {
	f := min(float64(received)/float64(total), 1)
	if received < total || approx {
		f = min(f, 0.99)
	}
	of := units.Bytes(total)
	if approx {
		of = "about " + of
	}
	pct := int(100 * f)
	return Line{Fraction: float64(pct) / 100, Text: fmt.Sprintf("%d%% · %s of %s", pct, units.Bytes(received), of)}
}

// RateText renders a transfer rate in decimal megabytes per second, as browsers show it.
func RateText(bytesPerSec float64) string {
	if bytesPerSec <= 0 {
		return "— MB/s"
	}
	if bytesPerSec < 1e6 {
		return fmt.Sprintf("%.0f kB/s", bytesPerSec/1e3)
	}
	return fmt.Sprintf("%.1f MB/s", bytesPerSec/1e6)
}

// LeftText renders an estimated time left, coarsely: estimates of a network transfer are not
// worth more than two units.
func LeftText(d time.Duration) string {
	switch {
	case d < 0:
		return "time left unknown"
	case d < time.Minute:
		return fmt.Sprintf("%d s left", int(d.Seconds()+0.5))
	case d < time.Hour:
		m := int(d / time.Minute)
		return fmt.Sprintf("%d min %02d s left", m, int((d - time.Duration(m)*time.Minute).Seconds()))
	}
	h := int(d / time.Hour)
	return fmt.Sprintf("%d h %02d min left", h, int((d-time.Duration(h)*time.Hour)/time.Minute))
}
