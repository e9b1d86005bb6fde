// Command gencorpus writes the corpus of malformed GGUF files (package corpus) into a folder,
// replacing the .gguf files there.
//
//	go run ./gguf/internal/corpus/gencorpus testdata/gguf
package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/trochilus-llm/trochilus/gguf/internal/corpus"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: gencorpus DIR")
		os.Exit(2)
	}
	if err := write(os.Args[1]); err != nil {
		fmt.Fprintln(os.Stderr, "gencorpus:", err)
		os.Exit(1)
	}
}

func write(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	old, err := filepath.Glob(filepath.Join(dir, "*.gguf"))
	if err != nil {
		return err
	}
	for _, p := range old {
		if err := os.Remove(p); err != nil {
			return err
		}
	}
	cases := corpus.Cases()
	for _, c := range cases {
		if err := os.WriteFile(filepath.Join(dir, c.Name+".gguf"), c.Data, 0o644); err != nil {
			return err
		}
	}
	fmt.Printf("gencorpus: wrote %d files to %s\n", len(cases), dir)
	return nil
}
