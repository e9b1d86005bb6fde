// Package units renders quantities for people: byte counts in binary units, the one way every
// message, listing and screen of the project writes a size.
package units

import "fmt"

// Bytes renders a byte count with a binary unit, two decimals from 1 KiB up: "512 B",
// "6.67 MiB", "16.00 GiB", "1.50 TiB". A negative count (an unknown size) renders as "0 B".
func Bytes[N ~int | ~int64 | ~uint64](n N) string {
	if n < 0 {
		return "0 B"
	}
	const unit = 1024
	u := uint64(n)
	if u < unit {
		return fmt.Sprintf("%d B", u)
	}
	v, i := float64(u)/unit, 0
	for v >= unit && i < 3 {
		v /= unit
		i++
	}
	return fmt.Sprintf("%.2f %s", v, [...]string{"KiB", "MiB", "GiB", "TiB"}[i])
}
