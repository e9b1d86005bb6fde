package main

import (
	"context"
	"errors"
	"io"
)

func runInspect(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return errors.New("inspect: not built yet")
}
