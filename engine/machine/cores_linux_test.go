package machine

import (
	"fmt"
	"testing"
)

func TestParseCPUList(t *testing.T) {
	for _, c := range []struct {
		in   string
		want string // fmt of the list, "bad" for a refusal
	}{
		{"0", "[0]"}, {"0-3", "[0 1 2 3]"}, {"0-1,4,6-7", "[0 1 4 6 7]"},
		{"", "bad"}, {"3-1", "bad"}, {"a", "bad"}, {"-1", "bad"}, {"0-", "bad"},
		{"0-99999999999", "bad"}, {"0-2000000", "bad"},
	} {
		cpus, ok := parseCPUList(c.in)
		got := "bad"
		if ok {
			got = fmt.Sprint(cpus)
		}
		if got != c.want {
			t.Errorf("parseCPUList(%q) = %s, want %s", c.in, got, c.want)
		}
	}
}

func TestOSCoresLinux(t *testing.T) {
	phys, logical := osCores()
	t.Logf("sysfs: %d physical, %d logical", phys, logical)
	if logical < 1 || phys < 1 || phys > logical {
		t.Errorf("sysfs counts %d physical, %d logical: want 1 <= physical <= logical", phys, logical)
	}
}
