package main

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestGenerateRouteTrace runs generate with -route-trace: the same ids, and a trace file of
// the experts package's format holding the prompt's pass and one pass a generated token after
// the first (its size is exact: a kind byte, a one-byte token count and one byte an id).
func TestGenerateRouteTrace(t *testing.T) {
	path := tinyModel(t)
	prompt := []int32{50279, 510, 3158, 8516, 30013}
	want, _, _ := engineRun(t, path, prompt, 6)
	file := filepath.Join(t.TempDir(), "routes.trace")
	code, out, errs := runCLI("generate", "-m", path, "--tokens", joinIDs(prompt), "-n", "6", "--ignore-eos", "-route-trace", file)
	if code != 0 || out != joinIDs(want)+"\n" {
		t.Fatalf("exit %d, stdout %q (want %q), stderr %s", code, out, joinIDs(want), errs)
	}
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) < 12 || string(b[:4]) != "TRRT" || binary.LittleEndian.Uint16(b[4:]) != 1 {
		t.Fatalf("trace starts %q: not a version 1 route trace", b[:min(len(b), 12)])
	}
	layers, experts, used := int(binary.LittleEndian.Uint16(b[6:])), int(binary.LittleEndian.Uint16(b[8:])), int(binary.LittleEndian.Uint16(b[10:]))
	name := int(binary.LittleEndian.Uint16(b[12+8*layers:]))
	header := 12 + 8*layers + 2 + name
	if experts > 256 || string(b[header-name:header]) != filepath.Base(path) {
		t.Fatalf("trace of %d experts named %q", experts, b[header-name:header])
	}
	size := header + 2 + layers*len(prompt)*used + 5*(2+layers*used)
	if len(b) != size || b[header] != 0 || b[header+1] != byte(len(prompt)-1) {
		t.Fatalf("trace of %d bytes, first pass kind %d; want %d bytes for a %d×%d (%d used) model", len(b), b[header], size, layers, experts, used)
	}
	if code, _, errs := runCLI("generate", "-m", path, "--tokens", "1", "-route-trace", filepath.Join(t.TempDir(), "no", "such", "dir")); code == 0 || !strings.Contains(errs, "route trace") {
		t.Errorf("a trace in a missing folder: exit %d, %s", code, errs)
	}
}
