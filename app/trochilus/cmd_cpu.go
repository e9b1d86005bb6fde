package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"

	"github.com/trochilus-llm/trochilus/engine/machine"
)

// runCPU prints the machine profile: processor, cores, SIMD features and RAM.
func runCPU(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("cpu", stderr)
	asJSON := fs.Bool("json", false, "print the profile as JSON")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: trochilus cpu [-json]\n\nPrint what this machine offers: processor, cores, SIMD features, RAM.")
		fs.PrintDefaults()
	}
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 0 {
		return fmt.Errorf("%w: unexpected argument %q", errUsage, fs.Arg(0))
	}
	p, err := machine.Probe(ctx)
	if err != nil {
		return err
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(p)
	}
	return p.Write(stdout)
}
