package main

import (
	"context"
	"errors"
	"io"
)

func runCPU(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return errors.New("cpu: not built yet")
}
