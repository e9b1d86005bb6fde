package chat

import (
	"fmt"
	"strings"
	"time"
)

// Strftime formats t as Python's datetime.strftime does with glibc in the C locale, including
// glibc's "-" flag (no padding) and the common extensions (%e, %F, %T, %D, %R, %s, ...).
// Unknown conversions are written unchanged.
func Strftime(t time.Time, format string) string {
	var b strings.Builder
	for i := 0; i < len(format); i++ {
		c := format[i]
		if c != '%' || i+1 >= len(format) {
			b.WriteByte(c)
			continue
		}
		start := i
		i++
		noPad := false
		if format[i] == '-' && i+1 < len(format) {
			noPad = true
			i++
		}
		num := func(v, width int) string {
			if noPad {
				return fmt.Sprint(v)
			}
			return fmt.Sprintf("%0*d", width, v)
		}
		switch format[i] {
		case 'a':
			b.WriteString(t.Weekday().String()[:3])
		case 'A':
			b.WriteString(t.Weekday().String())
		case 'b', 'h':
			b.WriteString(t.Month().String()[:3])
		case 'B':
			b.WriteString(t.Month().String())
		case 'c':
			b.WriteString(Strftime(t, "%a %b %e %H:%M:%S %Y"))
		case 'C':
			b.WriteString(num(t.Year()/100, 2))
		case 'd':
			b.WriteString(num(t.Day(), 2))
		case 'D':
			b.WriteString(Strftime(t, "%m/%d/%y"))
		case 'e':
			if noPad {
				b.WriteString(fmt.Sprint(t.Day()))
			} else {
				b.WriteString(fmt.Sprintf("%2d", t.Day()))
			}
		case 'f':
			b.WriteString(fmt.Sprintf("%06d", t.Nanosecond()/1000))
		case 'F':
			b.WriteString(Strftime(t, "%Y-%m-%d"))
		case 'H':
			b.WriteString(num(t.Hour(), 2))
		case 'I':
			h := t.Hour() % 12
			if h == 0 {
				h = 12
			}
			b.WriteString(num(h, 2))
		case 'j':
			b.WriteString(num(t.YearDay(), 3))
		case 'k':
			b.WriteString(fmt.Sprintf("%2d", t.Hour()))
		case 'l':
			h := t.Hour() % 12
			if h == 0 {
				h = 12
			}
			b.WriteString(fmt.Sprintf("%2d", h))
		case 'm':
			b.WriteString(num(int(t.Month()), 2))
		case 'M':
			b.WriteString(num(t.Minute(), 2))
		case 'n':
			b.WriteByte('\n')
		case 'p':
			if t.Hour() < 12 {
				b.WriteString("AM")
			} else {
				b.WriteString("PM")
			}
		case 'R':
			b.WriteString(Strftime(t, "%H:%M"))
		case 's':
			b.WriteString(fmt.Sprint(t.Unix()))
		case 'S':
			b.WriteString(num(t.Second(), 2))
		case 't':
			b.WriteByte('\t')
		case 'T':
			b.WriteString(Strftime(t, "%H:%M:%S"))
		case 'u':
			wd := int(t.Weekday())
			if wd == 0 {
				wd = 7
			}
			b.WriteString(fmt.Sprint(wd))
		case 'U':
			b.WriteString(num((t.YearDay()+6-int(t.Weekday()))/7, 2))
		case 'w':
			b.WriteString(fmt.Sprint(int(t.Weekday())))
		case 'W':
			b.WriteString(num((t.YearDay()+6-(int(t.Weekday())+6)%7)/7, 2))
		case 'x':
			b.WriteString(Strftime(t, "%m/%d/%y"))
		case 'X':
			b.WriteString(Strftime(t, "%H:%M:%S"))
		case 'y':
			b.WriteString(num(t.Year()%100, 2))
		case 'Y':
			b.WriteString(fmt.Sprint(t.Year()))
		case 'z':
			// Python's naive datetime has no offset.
		case 'Z':
		case '%':
			b.WriteByte('%')
		default:
			b.WriteString(format[start : i+1])
		}
	}
	return b.String()
}
