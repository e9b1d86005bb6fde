//go:build (linux || freebsd || netbsd || openbsd) && !android

package main

/*
#cgo LDFLAGS: -lX11
#include <stdlib.h>
#include <X11/Xlib.h>

// canOpenDisplay reports whether the X server named by name (NULL: $DISPLAY) accepts a
// connection.
static int canOpenDisplay(const char *name) {
	Display *d = XOpenDisplay(name);
	if (d == NULL) {
		return 0;
	}
	XCloseDisplay(d);
	return 1;
}
*/
import "C"

import (
	"fmt"
	"os"
)

// displayProblem says why no window can open here, or returns "". This build of the window
// toolkit (GLFW) talks to X11, which Wayland desktops provide through XWayland; checking first
// turns GLFW's crash on a missing display into a sentence.
func displayProblem() string {
	x, wayland := os.Getenv("DISPLAY"), os.Getenv("WAYLAND_DISPLAY")
	switch {
	case x == "" && wayland == "":
		return "no display: neither $DISPLAY nor $WAYLAND_DISPLAY is set, so there is nowhere to open a window."
	case x == "":
		return fmt.Sprintf("Wayland display %q without XWayland ($DISPLAY is not set): this build needs X11.", wayland)
	}
	if C.canOpenDisplay(nil) == 0 {
		return fmt.Sprintf("cannot connect to the X display %q.", x)
	}
	return ""
}
