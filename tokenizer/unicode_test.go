package tokenizer

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"golang.org/x/text/unicode/norm"

	"github.com/trochilus-llm/trochilus/internal/oracle"
)

// TestUnicodeClassesLong asks HF tokenizers (testdata/probe.cjs) which code points each
// pattern class matches and how its NFC treats every code point next to combining marks, and
// compares every answer with our tables and normalizer.
func TestUnicodeClassesLong(t *testing.T) {
	oracle.Long(t)
	node := oracle.Node(t)
	oracle.NPM(t, "@anush008/tokenizers")
	classes := []struct {
		pattern string
		flag    uint16
	}{
		{`\p{L}`, clsL}, {`\p{N}`, clsN}, {`\s`, clsSpace}, {`\p{M}`, clsM}, {`\p{Lu}`, clsLu},
		{`\p{Ll}`, clsLl}, {`\p{Lt}`, clsLt}, {`\p{Lm}`, clsLm}, {`\p{Lo}`, clsLo}, {`\p{P}`, clsP},
	}
	var in bytes.Buffer
	enc := json.NewEncoder(&in)
	for _, c := range classes {
		enc.Encode(map[string]string{"class": c.pattern})
	}
	// NFC of: each code point between a letter and a mark of class 1, after a letter and a mark
	// of class 230, and each canonical decomposition (recomposed).
	var probes [3][]string
	for c := rune(1); c < 0x110000; c++ {
		if c >= 0xD800 && c <= 0xDFFF {
			continue
		}
		probes[0] = append(probes[0], "a"+string(c)+"\u0334")
		probes[1] = append(probes[1], "a\u0301"+string(c))
		if d := norm.NFD.String(string(c)); d != string(c) {
			probes[2] = append(probes[2], d)
		}
	}
	for _, p := range probes {
		enc.Encode(map[string]any{"form": "nfc", "strs": p})
	}
	cmd := exec.Command(node, filepath.Join(oracle.Root(t), "tokenizer", "testdata", "probe.cjs"))
	cmd.Env = append(os.Environ(), "NODE_PATH="+oracle.NodeModules(t))
	cmd.Stdin = &in
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("probe: %v", err)
	}
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(nil, 1<<28)
	cl := classTable()
	for _, c := range classes {
		if !sc.Scan() {
			t.Fatalf("probe ended early: %v", sc.Err())
		}
		var ranges [][2]rune
		if err := json.Unmarshal(sc.Bytes(), &ranges); err != nil {
			t.Fatal(err)
		}
		in := make([]bool, 0x110000)
		for _, r := range ranges {
			for x := r[0]; x <= r[1]; x++ {
				in[x] = true
			}
		}
		diffs, members := 0, 0
		for x := rune(0); x < 0x110000; x++ {
			if x >= 0xD800 && x <= 0xDFFF {
				continue
			}
			if in[x] {
				members++
			}
			if (cl.of(x)&c.flag != 0) != in[x] {
				diffs++
				if diffs < 5 {
					t.Errorf("%s: U+%04X: ours %v, HF %v", c.pattern, x, !in[x], in[x])
				}
			}
		}
		t.Logf("%s: 1112064 code points compared, %d in the class, %d differences", c.pattern, members, diffs)
	}
	n := newNormalizer()
	for k, p := range probes {
		if !sc.Scan() {
			t.Fatalf("probe ended early: %v", sc.Err())
		}
		var got []string
		if err := json.Unmarshal(sc.Bytes(), &got); err != nil || len(got) != len(p) {
			t.Fatalf("NFC probe %d: %v (%d answers for %d)", k, err, len(got), len(p))
		}
		diffs := 0
		for i, s := range p {
			if ours := n.nfc(s); ours != got[i] {
				diffs++
				if diffs < 5 {
					t.Errorf("nfc(%+q) = %+q, HF %+q", s, ours, got[i])
				}
			}
		}
		t.Logf("NFC probe %d: %d strings compared, %d differences", k, len(p), diffs)
	}
}
