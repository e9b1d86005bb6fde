package machine

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/trochilus-llm/trochilus/internal/directio"
)

// ReadSpeed is how fast a folder's disk delivered a file it held.
type ReadSpeed struct {
	BytesPerSec float64
	Bytes       int64         // bytes read
	Took        time.Duration // time the reads took
	File        string        // the file read (a model, or a probe file written for the purpose)

	// Unbuffered reports that the reads bypassed the page cache (O_DIRECT on Linux,
	// F_NOCACHE on macOS, FILE_FLAG_NO_BUFFERING on Windows). When false the file system
	// refused that, and a file recently read may have come from memory.
	Unbuffered bool
}

func (s ReadSpeed) String() string {
	how := "unbuffered"
	if !s.Unbuffered {
		how = "buffered: the page cache may have helped"
	}
	return fmt.Sprintf("%.2f GB/s (%d MiB read in %v, %s)", s.BytesPerSec/1e9, s.Bytes>>20, s.Took.Round(time.Millisecond), how)
}

// Sizes of the measurement: reads of ioChunk bytes (a multiple of directio.Align, into a buffer
// aligned to it, as unbuffered reads ask), at most readLimit in all; a folder without a large
// enough model gets a probe file of probeSize.
const (
	ioChunk   = 4 << 20
	readLimit = 512 << 20
	readTime  = 3 * time.Second
	probeSize = 64 << 20
)

// MeasureReadSpeed measures how fast dir's disk reads without the page cache: it reads the
// start of the largest file in dir (in the models folder, a model; at most 512 MiB or 3 s),
// or, when dir holds no file of at least 64 MiB, a 64 MiB probe file it writes, syncs, reads
// and removes.
func MeasureReadSpeed(ctx context.Context, dir string) (ReadSpeed, error) {
	file, err := largestFile(dir)
	if err != nil {
		return ReadSpeed{}, err
	}
	if file == "" {
		probe, err := writeProbe(dir)
		if err != nil {
			return ReadSpeed{}, fmt.Errorf("machine: measuring %s: %w", dir, err)
		}
		defer os.Remove(probe)
		file = probe
	}
	s, err := measureFile(ctx, file)
	if err != nil {
		return ReadSpeed{}, fmt.Errorf("machine: measuring %s: %w", dir, err)
	}
	return s, nil
}

func largestFile(dir string) (string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return "", fmt.Errorf("machine: %w", err)
	}
	var best string
	var size int64 = probeSize - 1
	for _, e := range entries {
		if !e.Type().IsRegular() {
			continue
		}
		if fi, err := e.Info(); err == nil && fi.Size() > size {
			best, size = filepath.Join(dir, e.Name()), fi.Size()
		}
	}
	return best, nil
}

// writeProbe writes probeSize random bytes (incompressible, so a compressing file system
// stores them all) to a new file in dir and syncs it to the disk.
func writeProbe(dir string) (string, error) {
	f, err := os.CreateTemp(dir, ".read-speed-*.tmp")
	if err != nil {
		return "", err
	}
	name := f.Name()
	buf := make([]byte, 1<<20)
	for n := 0; n < probeSize && err == nil; n += len(buf) {
		rand.Read(buf)
		_, err = f.Write(buf)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(name)
		return "", err
	}
	return name, nil
}

func measureFile(ctx context.Context, path string) (ReadSpeed, error) {
	f, err := directio.Open(path)
	unbuffered := err == nil
	if !unbuffered {
		// The system or the file system refused unbuffered reads (tmpfs, some overlay and
		// network file systems; directio proves the reads, not only the open): read through
		// the page cache, and say so in the result.
		if f, err = os.Open(path); err != nil {
			return ReadSpeed{}, err
		}
	}
	defer f.Close()
	s, err := timeReads(ctx, f)
	if err != nil {
		return ReadSpeed{}, err
	}
	s.File, s.Unbuffered = path, unbuffered
	return s, nil
}

// timeReads reads f from its start in aligned chunks until readLimit, readTime or its end.
func timeReads(ctx context.Context, f *os.File) (ReadSpeed, error) {
	buf := directio.AlignedBuffer(ioChunk)

	var s ReadSpeed
	start := time.Now()
	for s.Bytes < readLimit && time.Since(start) < readTime {
		if err := ctx.Err(); err != nil {
			return ReadSpeed{}, err
		}
		n, err := f.ReadAt(buf, s.Bytes)
		s.Bytes += int64(n)
		if err == io.EOF {
			break
		}
		if err != nil {
			return ReadSpeed{}, err
		}
	}
	s.Took = time.Since(start)
	if s.Bytes == 0 || s.Took <= 0 {
		return ReadSpeed{}, errors.New("nothing read")
	}
	s.BytesPerSec = float64(s.Bytes) / s.Took.Seconds()
	return s, nil
}
