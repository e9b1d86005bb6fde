package main

import (
	"strings"
	"testing"
)

// Without a display the app explains itself and exits with 1 instead of crashing in GLFW.
func TestNoDisplay(t *testing.T) {
	for _, c := range []struct {
		display, wayland, want string
	}{
		{"", "", "no display: neither $DISPLAY nor $WAYLAND_DISPLAY is set"},
		{"", "wayland-0", `Wayland display "wayland-0" without XWayland`},
		{":12345", "", `cannot connect to the X display ":12345"`},
	} {
		t.Setenv("DISPLAY", c.display)
		t.Setenv("WAYLAND_DISPLAY", c.wayland)
		var out strings.Builder
		if code := run(&out); code != 1 {
			t.Fatalf("DISPLAY=%q WAYLAND_DISPLAY=%q: exit %d, want 1", c.display, c.wayland, code)
		}
		if !strings.Contains(out.String(), c.want) || !strings.Contains(out.String(), "trochilus run -m MODEL.gguf") {
			t.Fatalf("DISPLAY=%q: printed %q", c.display, out.String())
		}
	}
}
