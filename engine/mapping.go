package engine

import (
	"errors"
	"fmt"
	"math"
	"os"
)

// A mapping is a whole file's bytes, off the Go heap: either read into memory the engine owns
// (resident) or mapped read-only from the file, so that the page cache holds them.
type mapping struct {
	data      []byte
	resident  bool // read into the engine's own memory, not mapped from the file
	hugePages bool // the memory asked the kernel for huge pages
	unmap     func() error
}

// errNotResident says the platform gives no resident memory for weights.
var errNotResident = errors.New("no resident weight memory on this platform")

// mapFile maps the size bytes of f. The mapping outlives f: the caller may close f.
func mapFile(f *os.File, size int64) (*mapping, error) {
	if size <= 0 {
		return nil, fmt.Errorf("map %s: file is empty", f.Name())
	}
	if size > math.MaxInt {
		return nil, fmt.Errorf("map %s: %d bytes do not fit this platform's address space", f.Name(), size)
	}
	m, err := mapPlatform(f, int(size))
	if err != nil {
		return nil, fmt.Errorf("map %s: %w", f.Name(), err)
	}
	return m, nil
}

// close releases the mapping; its bytes must not be used afterwards.
func (m *mapping) close() error {
	if m == nil || m.unmap == nil {
		return nil
	}
	err := m.unmap()
	m.unmap, m.data = nil, nil
	return err
}

// readWhole is the fallback of platforms without a file mapping: the file read into memory.
func readWhole(f *os.File, size int) (*mapping, error) {
	data := make([]byte, size)
	if _, err := f.ReadAt(data, 0); err != nil {
		return nil, err
	}
	return &mapping{data: data, unmap: func() error { return nil }}, nil
}
