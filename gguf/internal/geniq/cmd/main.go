// Command geniq writes gguf/iq_tables.go, the IQ types' grids and deltas, read out of the pinned
// libggml (npm @node-llama-cpp/linux-x64@3.22.1, which tools/deps.sh test installs under
// .deps/npm) by package geniq. It runs on linux/amd64, where that library is shipped:
//
//	go generate ./gguf
//
// or, from the module root, go run ./gguf/internal/geniq/cmd -out gguf/iq_tables.go. The library
// is found under $TROCHILUS_DEPS, or .deps above the working directory; -lib names it directly.
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/trochilus-llm/trochilus/gguf/internal/geniq"
)

func main() {
	out := flag.String("out", "iq_tables.go", "the file to write")
	lib := flag.String("lib", "", "libggml-base.so (default: the pinned npm package's, found under .deps)")
	flag.Parse()
	if err := run(*out, *lib); err != nil {
		fmt.Fprintln(os.Stderr, "geniq:", err)
		os.Exit(1)
	}
}

func run(out, lib string) error {
	toFloat, closeLib, err := load(lib)
	if err != nil {
		return err
	}
	defer closeLib()
	tb, err := geniq.Extract(toFloat)
	if err != nil {
		return err
	}
	src, err := geniq.Source(tb)
	if err != nil {
		return err
	}
	if err := os.WriteFile(out, src, 0o644); err != nil {
		return err
	}
	fmt.Printf("geniq: wrote %s from %s\n", out, geniq.LibggmlPackage)
	return nil
}
