package machine

import (
	"fmt"
	"os"
	"testing"
	"testing/fstest"
)

// TestCgroupMemory reads fake /proc and /sys/fs/cgroup trees laid out as Linux's: cgroup v2
// (unified and in a container whose mount root is its own cgroup), v1 with the memory
// controller alone or with others, nested limits where an ancestor's is the tightest, "max"
// and v1's unlimited value, the page cache not counted, and trees without a limit.
func TestCgroupMemory(t *testing.T) {
	const gib = 1 << 30
	n := func(v uint64) *fstest.MapFile { return &fstest.MapFile{Data: []byte(fmt.Sprintf("%d\n", v))} }
	text := func(s string) *fstest.MapFile { return &fstest.MapFile{Data: []byte(s)} }
	v2mount := "30 23 0:26 / /sys/fs/cgroup rw,nosuid - cgroup2 cgroup2 rw\n"
	v1mount := "29 23 0:28 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory\n" +
		"28 23 0:27 / /sys/fs/cgroup/cpu,cpuacct rw - cgroup cgroup rw,cpu,cpuacct\n"
	cases := []struct {
		name         string
		files        fstest.MapFS
		limit, avail uint64
		ok           bool
	}{
		{"v2, a limit on the process's own cgroup", fstest.MapFS{
			"proc/self/cgroup":                            text("0::/user.slice/emu\n"),
			"proc/self/mountinfo":                         text(v2mount),
			"sys/fs/cgroup/user.slice/emu/memory.max":     n(12*gib + gib/2),
			"sys/fs/cgroup/user.slice/emu/memory.current": n(3 * gib),
			"sys/fs/cgroup/user.slice/emu/memory.stat":    text("anon 1073741824\ninactive_file 1073741824\nactive_file 5\n"),
			"sys/fs/cgroup/user.slice/memory.max":         text("max\n"),
		}, 12*gib + gib/2, 10*gib + gib/2, true},
		{"v2, the parent's limit is the tighter", fstest.MapFS{
			"proc/self/cgroup":                 text("0::/a/b\n"),
			"proc/self/mountinfo":              text(v2mount),
			"sys/fs/cgroup/a/b/memory.max":     n(8 * gib),
			"sys/fs/cgroup/a/b/memory.current": n(1 * gib),
			"sys/fs/cgroup/a/memory.max":       n(6 * gib),
			"sys/fs/cgroup/a/memory.current":   n(5 * gib),
		}, 6 * gib, 1 * gib, true},
		{"v2 in a container: the mount's root is the container's cgroup", fstest.MapFS{
			"proc/self/cgroup":             text("0::/docker/c1\n"),
			"proc/self/mountinfo":          text("40 30 0:26 /docker/c1 /sys/fs/cgroup ro - cgroup2 cgroup2 rw\n"),
			"sys/fs/cgroup/memory.max":     n(4 * gib),
			"sys/fs/cgroup/memory.current": n(gib),
		}, 4 * gib, 3 * gib, true},
		{"v1, memory controller, nested", fstest.MapFS{
			"proc/self/cgroup":    text("5:memory:/process_api/x\n4:cpu,cpuacct:/\n0::/\n"),
			"proc/self/mountinfo": text(v1mount),
			"sys/fs/cgroup/memory/process_api/x/memory.limit_in_bytes": n(5*gib + gib/2),
			"sys/fs/cgroup/memory/process_api/x/memory.usage_in_bytes": n(2 * gib),
			"sys/fs/cgroup/memory/process_api/x/memory.stat":           text("cache 100\ntotal_inactive_file 536870912\n"),
			"sys/fs/cgroup/memory/process_api/memory.limit_in_bytes":   n(9223372036854771712),
			"sys/fs/cgroup/memory/memory.limit_in_bytes":               n(9223372036854771712),
		}, 5*gib + gib/2, 4 * gib, true},
		{"v1 without a limit anywhere", fstest.MapFS{
			"proc/self/cgroup":    text("5:memory:/process_api/x\n"),
			"proc/self/mountinfo": text(v1mount),
			"sys/fs/cgroup/memory/process_api/x/memory.limit_in_bytes": n(9223372036854771712),
			"sys/fs/cgroup/memory/memory.limit_in_bytes":               n(9223372036854771712),
		}, 0, 0, false},
		{"usage above the limit leaves nothing", fstest.MapFS{
			"proc/self/cgroup":               text("0::/x\n"),
			"proc/self/mountinfo":            text(v2mount),
			"sys/fs/cgroup/x/memory.max":     n(gib),
			"sys/fs/cgroup/x/memory.current": n(2 * gib),
		}, gib, 0, true},
		{"a path with an escaped space", fstest.MapFS{
			"proc/self/cgroup":                     text("0::/my slice\n"),
			"proc/self/mountinfo":                  text(`30 23 0:26 / /sys/fs/cgroup\040v2 rw - cgroup2 cgroup2 rw` + "\n"),
			"sys/fs/cgroup v2/my slice/memory.max": n(2 * gib),
		}, 2 * gib, 2 * gib, true},
		{"no /proc", fstest.MapFS{}, 0, 0, false},
		{"garbage", fstest.MapFS{
			"proc/self/cgroup":    text("::::\nx\n0::\n"),
			"proc/self/mountinfo": text("1 2\n - \n30 23 0:26 / / rw - cgroup2 c rw\n"),
			"memory.max":          text("lots\n"),
		}, 0, 0, false},
	}
	for _, c := range cases {
		limit, avail, ok := cgroupMemory(c.files)
		if limit != c.limit || avail != c.avail || ok != c.ok {
			t.Errorf("%s: limit %d, available %d, ok %v; want %d, %d, %v", c.name, limit, avail, ok, c.limit, c.avail, c.ok)
		}
	}
}

// TestCgroupMemoryHere reads this machine's own cgroups, which must parse without a panic; the
// figures are logged (RAM applies them).
func TestCgroupMemoryHere(t *testing.T) {
	limit, avail, ok := cgroupMemory(os.DirFS("/"))
	t.Logf("memory cgroup: limit %d, available %d, limited %v", limit, avail, ok)
	if ok && avail > limit {
		t.Errorf("available %d above the limit %d", avail, limit)
	}
}
