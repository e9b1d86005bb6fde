//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly || windows)

package engine

import "os"

func mapPlatform(f *os.File, size int) (*mapping, error) { return readWhole(f, size) }
