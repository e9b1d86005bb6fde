package gpu

import "github.com/ebitengine/purego"

func register(fptr any, sym uintptr) { purego.RegisterFunc(fptr, sym) }

// libraryNames are the driver library's names, tried in order.
func libraryNames() []string { return []string{"libcuda.so.1", "libcuda.so"} }

func openLibrary(name string) (uintptr, error) {
	return purego.Dlopen(name, purego.RTLD_NOW|purego.RTLD_GLOBAL)
}

func librarySymbol(lib uintptr, name string) (uintptr, error) { return purego.Dlsym(lib, name) }
