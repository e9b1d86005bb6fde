//go:build !(linux && amd64)

package main

import (
	"errors"

	"github.com/trochilus-llm/trochilus/gguf/internal/geniq"
)

// load refuses: the pinned npm package ships libggml-base.so for linux/amd64 only.
func load(string) (geniq.ToFloat, func(), error) {
	return nil, nil, errors.New("the pinned libggml is shipped for linux/amd64 only")
}
