package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/trochilus-llm/trochilus/engine/library"
	"github.com/trochilus-llm/trochilus/experts"
	"github.com/trochilus-llm/trochilus/internal/units"
)

// storeLine is one of the expert store's lines a run prints (reportStore).
type storeLine struct {
	calls, named, hits, misses uint64
	read, perToken             string // as units.Bytes writes them; perToken "" when not printed
	readMS, share, wall        float64
}

var storeLineRE = regexp.MustCompile(`(?m)^(experts(?:, prompt|, generation)?): (\d+) calls named (\d+) units: (\d+) hits, (\d+) misses \(([\d.]+)% hit rate\); (.+?) read from disk(?:, (.+?) per generated token)?; reading ([\d.]+) ms, ([\d.]+)% of ([\d.]+)s$`)

// storeLines returns the store's lines in stderr by label, in order; a label printed twice
// (a -repeat run) keeps every line.
func storeLines(t *testing.T, stderr string) map[string][]storeLine {
	t.Helper()
	got := map[string][]storeLine{}
	for _, m := range storeLineRE.FindAllStringSubmatch(stderr, -1) {
		u := func(i int) uint64 {
			v, err := strconv.ParseUint(m[i], 10, 64)
			if err != nil {
				t.Fatalf("%q: %v", m[0], err)
			}
			return v
		}
		f := func(i int) float64 {
			v, err := strconv.ParseFloat(m[i], 64)
			if err != nil {
				t.Fatalf("%q: %v", m[0], err)
			}
			return v
		}
		l := storeLine{calls: u(2), named: u(3), hits: u(4), misses: u(5), read: m[7], perToken: m[8], readMS: f(9), share: f(10), wall: f(11)}
		if rate := f(6); l.named > 0 && strconv.FormatFloat(100*float64(l.hits)/float64(l.named), 'f', 1, 64) != m[6] {
			t.Errorf("%q: hit rate %v%%, want %d of %d", m[0], rate, l.hits, l.named)
		}
		if l.readMS/1000 > l.wall*1.01+0.001 || l.share > 100.5 {
			t.Errorf("%q: reading takes more than the wall time", m[0])
		}
		got[m[1]] = append(got[m[1]], l)
	}
	return got
}

// parseBytes reads units.Bytes's text back, to its two decimals.
func parseBytes(t *testing.T, s string) float64 {
	t.Helper()
	num, unit, _ := strings.Cut(s, " ")
	v, err := strconv.ParseFloat(num, 64)
	if err != nil {
		t.Fatalf("bytes %q: %v", s, err)
	}
	for i, u := range []string{"B", "KiB", "MiB", "GiB"} {
		if u == unit {
			for range i {
				v *= 1024
			}
			return v
		}
	}
	t.Fatalf("bytes %q: unit %q", s, unit)
	return 0
}

// TestGenerateStoreFigures streams the tiny model's experts through the fewest slots and
// checks the store's lines against a replay of the run's own route trace under the store's
// rule: the calls, the units they name, hits and misses are the replay's, exactly, and the
// bytes are the misses' units (exactly with buffered reads; with unbuffered ones each part's
// read also takes the rest of the pages holding its ends). A resident run prints none.
func TestGenerateStoreFigures(t *testing.T) {
	path := tinyModel(t)
	trace := filepath.Join(t.TempDir(), "routes.trace")
	prompt := "50279,510,3158,8516,30013"
	code, _, errs := runCLI("generate", "-m", path, "--tokens", prompt, "-n", "6", "--ignore-eos", "-t", "1", "-draft", "0",
		"-expert-budget", "min", "-route-trace", trace)
	if code != 0 {
		t.Fatalf("generate: exit %d: %s", code, errs)
	}
	t.Logf("stderr:\n%s", errs)
	f, err := os.Open(trace)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tr, err := experts.ReadTrace(f)
	if err != nil {
		t.Fatal(err)
	}
	desc, err := library.Describe(path)
	if err != nil {
		t.Fatal(err)
	}
	slots := desc.Footprint.MinSlots // -expert-budget min
	want, err := experts.Replay(tr, experts.Hot, slots)
	if err != nil {
		t.Fatal(err)
	}
	var promptCalls, promptNamed, decodeCalls, decodeNamed uint64
	for _, c := range tr.Calls() {
		if c.Prompt {
			promptCalls, promptNamed = promptCalls+1, promptNamed+uint64(len(c.IDs))
		} else {
			decodeCalls, decodeNamed = decodeCalls+1, decodeNamed+uint64(len(c.IDs))
		}
	}
	lines := storeLines(t, errs)
	if len(lines["experts, prompt"]) != 1 || len(lines["experts, generation"]) != 1 {
		t.Fatalf("want one prompt and one generation line of the store's:\n%s", errs)
	}
	p, g := lines["experts, prompt"][0], lines["experts, generation"][0]
	// The tiny model: 2 layers, 8 experts, 2 used; one prompt pass, 5 decode passes.
	if promptCalls != 2 || decodeCalls != 2*5 || decodeNamed != 2*2*5 || want.DecodeTokens != 5 {
		t.Fatalf("trace: prompt %d calls naming %d units, decode %d naming %d, %d tokens", promptCalls, promptNamed, decodeCalls, decodeNamed, want.DecodeTokens)
	}
	for _, c := range []struct {
		name                       string
		got                        storeLine
		calls, named, hits, misses uint64
	}{
		{"prompt", p, promptCalls, promptNamed, want.PromptHits, want.PromptMisses},
		{"generation", g, decodeCalls, decodeNamed, want.DecodeHits, want.DecodeMisses},
	} {
		if c.got.calls != c.calls || c.got.named != c.named || c.got.hits != c.hits || c.got.misses != c.misses || c.got.hits+c.got.misses != c.got.named {
			t.Errorf("%s: %+v; the trace's replay: %d calls naming %d units, %d hits, %d misses", c.name, c.got, c.calls, c.named, c.hits, c.misses)
		}
	}
	if p.hits != 0 || p.misses != promptNamed {
		t.Errorf("the prompt's pass found units in an empty store: %+v", p)
	}
	// Every unit of the tiny model has the same file bytes.
	unit := desc.Footprint.Experts / uint64(desc.Footprint.Units)
	promptBytes, decodeBytes := want.BytesRead-want.DecodeBytes, want.DecodeBytes
	if promptBytes != p.misses*unit || decodeBytes != g.misses*unit {
		t.Fatalf("replay: %d and %d bytes for %d and %d misses of %d", promptBytes, decodeBytes, p.misses, g.misses, unit)
	}
	if strings.Contains(errs, "buffered reads,") && !strings.Contains(errs, "unbuffered reads,") {
		if p.read != units.Bytes(promptBytes) || g.read != units.Bytes(decodeBytes) || g.perToken != units.Bytes(decodeBytes/5) {
			t.Errorf("buffered reads: %s and %s read (%s a token), want %s and %s (%s)", p.read, g.read, g.perToken,
				units.Bytes(promptBytes), units.Bytes(decodeBytes), units.Bytes(decodeBytes/5))
		}
	} else {
		// Each of a unit's parts (gate, up, down: of equal bytes here) is read as the whole
		// pages holding it: as many as its bytes take, or one more where it straddles one.
		const page, parts = 4096, 3
		pages := (unit/parts + page - 1) / page
		for _, c := range []struct {
			got    storeLine
			misses uint64
		}{{p, p.misses}, {g, g.misses}} {
			lo, hi := float64(c.misses*parts*pages*page), float64(c.misses*parts*(pages+1)*page)
			if v := parseBytes(t, c.got.read); v < lo*0.995 || v > hi*1.005 {
				t.Errorf("unbuffered reads: %s read for %d misses, want %s to %s", c.got.read, c.misses, units.Bytes(uint64(lo)), units.Bytes(uint64(hi)))
			}
		}
		if v, per := parseBytes(t, g.read), parseBytes(t, g.perToken); per < v/5*0.99 || per > v/5*1.01 {
			t.Errorf("%s read, %s per generated token: want a fifth", g.read, g.perToken)
		}
	}
	if g.perToken == "" || p.perToken != "" {
		t.Errorf("per generated token: prompt %q, generation %q", p.perToken, g.perToken)
	}

	// A resident run prints no store figures.
	code, _, errs = runCLI("generate", "-m", path, "--tokens", prompt, "-n", "3", "--ignore-eos", "-t", "1")
	if code != 0 || strings.Contains(errs, "experts, prompt") || strings.Contains(errs, "experts, generation") || !strings.Contains(errs, "experts in memory") {
		t.Errorf("resident generate: exit %d, stderr:\n%s", code, errs)
	}
}

// With a slot for every unit, a second run of -repeat reads nothing: each run's figures are
// its own, not the store's since the load.
func TestGenerateStoreFiguresPerRun(t *testing.T) {
	path := tinyModel(t)
	code, _, errs := runCLI("generate", "-m", path, "--tokens", "50279,510,3158", "-n", "4", "--ignore-eos", "-t", "1", "-draft", "0",
		"-expert-budget", "1", "-repeat", "2")
	if code != 0 {
		t.Fatalf("generate: exit %d: %s", code, errs)
	}
	lines := storeLines(t, errs)
	ps, gs := lines["experts, prompt"], lines["experts, generation"]
	if len(ps) != 2 || len(gs) != 2 {
		t.Fatalf("want a prompt and a generation line per run:\n%s", errs)
	}
	if ps[0].misses == 0 || ps[0].hits+ps[0].misses != ps[0].named || ps[0].calls != 2 {
		t.Errorf("first run's prompt: %+v", ps[0])
	}
	for i, l := range []storeLine{ps[1], gs[1]} {
		if l.misses != 0 || l.hits != l.named || l.read != "0 B" || l.calls == 0 {
			t.Errorf("second run's line %d: %+v; want every unit a hit, nothing read", i, l)
		}
	}
	if gs[1].calls != 2*3 || gs[1].named != 2*2*3 { // 3 decode passes of one token at 2 layers
		t.Errorf("second run's generation: %+v", gs[1])
	}
}

// run prints the store's figures for the whole run, per generated token.
func TestRunStoreFigures(t *testing.T) {
	path := tinyModel(t)
	code, _, errs := runCLI("run", "-m", path, "-p", "The quick brown fox", "-n", "5", "--ignore-eos", "-t", "1", "-expert-budget", "min")
	if code != 0 {
		t.Fatalf("run: exit %d: %s", code, errs)
	}
	lines := storeLines(t, errs)["experts"]
	if len(lines) != 1 {
		t.Fatalf("want one store line:\n%s", errs)
	}
	l := lines[0]
	if l.calls < 2 || l.hits+l.misses != l.named || l.misses == 0 || l.perToken == "" || parseBytes(t, l.read) == 0 {
		t.Errorf("run: %+v", l)
	}
}
