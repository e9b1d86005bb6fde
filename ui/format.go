package ui

import (
	"fmt"
	"time"
)

// rateText renders a transfer rate in decimal megabytes per second, as browsers show it.
func rateText(bytesPerSec float64) string {
	if bytesPerSec <= 0 {
		return "— MB/s"
	}
	if bytesPerSec < 1e6 {
		return fmt.Sprintf("%.0f kB/s", bytesPerSec/1e3)
	}
	return fmt.Sprintf("%.1f MB/s", bytesPerSec/1e6)
}

// leftText renders an estimated time left, coarsely: estimates of a network transfer are not
// worth more than two units.
func leftText(d time.Duration) string {
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
