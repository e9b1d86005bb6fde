//go:build !linux && !windows

package gpu

import "errors"

func libraryNames() []string { return []string{"libcuda"} }

func openLibrary(string) (uintptr, error) {
	return 0, errors.New("the CUDA driver is loaded on Linux and Windows only")
}

func librarySymbol(uintptr, string) (uintptr, error) {
	return 0, errors.New("no CUDA driver on this system")
}

func register(any, uintptr) {}
