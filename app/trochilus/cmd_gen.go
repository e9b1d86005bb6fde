package main

import (
	"context"
	"errors"
	"io"
)

func runGen(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return errors.New("gen: not built yet")
}
