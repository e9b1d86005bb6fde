package gpu

import (
	"syscall"

	"github.com/ebitengine/purego"
)

func register(fptr any, sym uintptr) { purego.RegisterFunc(fptr, sym) }

func libraryNames() []string { return []string{"nvcuda.dll"} }

func openLibrary(name string) (uintptr, error) {
	h, err := syscall.LoadLibrary(name)
	return uintptr(h), err
}

func librarySymbol(lib uintptr, name string) (uintptr, error) {
	return syscall.GetProcAddress(syscall.Handle(lib), name)
}
