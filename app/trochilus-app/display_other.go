//go:build !((linux || freebsd || netbsd || openbsd) && !android)

package main

// displayProblem returns "": Windows and macOS always have a desktop to open a window on.
func displayProblem() string { return "" }
