package assistant

import (
	"strings"
	"testing"
)

func TestStopWriter(t *testing.T) {
	for _, c := range []struct {
		name    string
		stops   []string
		pieces  []string
		text    string
		stopped bool
	}{
		{"no stops", nil, []string{"ab", "c"}, "abc", false},
		{"empty stop ignored", []string{""}, []string{"ab", "c"}, "abc", false},
		{"inside a piece", []string{"XY"}, []string{"abXYcd", "ef"}, "ab", true},
		{"across pieces", []string{"XYZ"}, []string{"abX", "Y", "Zcd"}, "ab", true},
		{"prefix then not", []string{"XYZ"}, []string{"abX", "Yq", "r"}, "abXYqr", false},
		{"held tail at the end", []string{"XYZ"}, []string{"abXY"}, "abXY", false},
		{"earliest of two", []string{"cd", "b"}, []string{"abcd"}, "a", true},
		{"overlapping prefixes", []string{"aab"}, []string{"a", "a", "a", "b", "x"}, "a", true},
		{"at the start", []string{"ab"}, []string{"a", "bc"}, "", true},
		{"multibyte", []string{"é!"}, []string{"caf", "é", "é!"}, "café", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			var streamed strings.Builder
			w := newStopWriter(c.stops, func(s string) {
				if s == "" {
					t.Error("empty piece passed on")
				}
				streamed.WriteString(s)
			})
			stopped := false
			for _, p := range c.pieces {
				if w.write(p) {
					stopped = true
					break
				}
				// Nothing passed on may begin a stop text that the rest could complete.
				for _, s := range c.stops {
					if s != "" && strings.Contains(streamed.String(), s) {
						t.Fatalf("stop text %q streamed: %q", s, streamed.String())
					}
				}
			}
			if !stopped {
				w.flush()
			}
			if stopped != c.stopped || w.text() != c.text || streamed.String() != c.text {
				t.Fatalf("stopped %v text %q streamed %q, want %v %q", stopped, w.text(), streamed.String(), c.stopped, c.text)
			}
		})
	}
}
