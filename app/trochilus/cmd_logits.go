package main

import (
	"bufio"
	"context"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"io"
	"math"
	"os"
	"time"
)

// runLogits evaluates token ids and writes the float32 logits of every position.
func runLogits(ctx context.Context, cl *commandLine, stdout, stderr io.Writer) (err error) {
	mf := addModelFlags(cl.FlagSet)
	tokens := cl.String("tokens", "", "comma-separated token ids (required)")
	out := cl.String("o", "", "write the logits to this file (default: stdout)")
	asHex := cl.Bool("hex", false, "print each position's logits as one line of hex (the little-endian bytes)")
	if err := cl.parse(); err != nil {
		return err
	}
	ids, err := parseTokens(*tokens)
	if err != nil {
		return err
	}
	m, s, done, err := mf.open(ctx, stderr)
	if err != nil {
		return err
	}
	defer done()

	var w io.Writer = stdout
	if *out != "" {
		f, err := os.Create(*out)
		if err != nil {
			return err
		}
		defer func() {
			if cerr := f.Close(); err == nil && cerr != nil {
				err = cerr
			}
		}()
		w = f
	}
	bw := bufio.NewWriterSize(w, 1<<20)
	vocab := m.Config().Vocab
	step := s.PassSize()
	rows := make([]float32, min(step, len(ids))*vocab)
	bytes := make([]byte, 4*vocab)
	line := make([]byte, hex.EncodedLen(len(bytes))+1)
	start := time.Now()
	// One pass at a time, so the logits never need more than a pass's rows in memory.
	for from := 0; from < len(ids); from += step {
		chunk := ids[from:min(from+step, len(ids))]
		dst := rows[:len(chunk)*vocab]
		if err := s.EvalAll(ctx, chunk, dst); err != nil {
			return err
		}
		for r := range chunk {
			for i, v := range dst[r*vocab : (r+1)*vocab] {
				binary.LittleEndian.PutUint32(bytes[4*i:], math.Float32bits(v))
			}
			if *asHex {
				hex.Encode(line, bytes)
				line[len(line)-1] = '\n'
				_, err = bw.Write(line)
			} else {
				_, err = bw.Write(bytes)
			}
			if err != nil {
				return err
			}
		}
	}
	took := time.Since(start)
	if err := bw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(stderr, "prompt: %d tokens × %d logits in %.3fs, %.2f tok/s\n", len(ids), vocab, took.Seconds(), float64(len(ids))/took.Seconds())
	return nil
}
