package machine

import (
	"bufio"
	"bytes"
	"io/fs"
	"path"
	"strconv"
	"strings"
)

// A memory cgroup (Linux: a container, a systemd slice, an emulated smaller machine) can hold a
// process to far less memory than the machine has, and the kernel kills it past that limit
// whatever MemAvailable says: the guard must plan against the cgroup, as it would against a
// smaller machine. cgroupMemory reads the limits that apply to this process from a file system
// laid out as Linux's (/proc and /sys/fs/cgroup, rooted at fsys so that tests can give a fake
// one), for cgroup v2 and v1 alike.
//
// Every cgroup from the process's own up to its hierarchy's root may set a limit; what the
// process can still have is the least, over those that do, of the limit less what the cgroup
// uses now, not counting the page cache the kernel would drop first (memory.stat's
// inactive_file: MemAvailable likewise counts reclaimable cache as available). limit is the
// least limit; ok is false when no cgroup limits memory.
func cgroupMemory(fsys fs.FS) (limit, available uint64, ok bool) {
	self, err := fs.ReadFile(fsys, "proc/self/cgroup")
	if err != nil {
		return 0, 0, false
	}
	info, err := fs.ReadFile(fsys, "proc/self/mountinfo")
	if err != nil {
		return 0, 0, false
	}
	for _, dir := range memoryCgroupDirs(self, info) {
		// From the process's cgroup up to the hierarchy's root, the mount point.
		for d := dir.path; ; d = path.Dir(d) {
			lim, avail, has := cgroupLevel(fsys, d, dir.v2)
			if has {
				if !ok || lim < limit {
					limit = lim
				}
				if !ok || avail < available {
					available = avail
				}
				ok = true
			}
			if d == dir.mount || d == "." || len(d) <= len(dir.mount) {
				break
			}
		}
	}
	return limit, available, ok
}

// cgroupDir is a process's memory cgroup directory (relative to the file system's root) and
// the mount point of its hierarchy, where the walk up stops.
type cgroupDir struct {
	path, mount string
	v2          bool
}

// memoryCgroupDirs finds the directories of the process's memory cgroups: for each hierarchy
// that /proc/self/cgroup names (v2's "0::PATH", v1's "N:…memory…:PATH") and mountinfo mounts
// (a cgroup2 file system, or a cgroup one with the memory option), the mount point joined with
// the path relative to the mount's root (in a container the mount's root is the container's own
// cgroup, and the path /proc shows may be outside it).
func memoryCgroupDirs(self, mountinfo []byte) []cgroupDir {
	var v1Path, v2Path string
	var hasV1, hasV2 bool
	for _, line := range strings.Split(string(self), "\n") {
		id, rest, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		ctrls, p, ok := strings.Cut(rest, ":")
		if !ok {
			continue
		}
		if id == "0" && ctrls == "" {
			v2Path, hasV2 = p, true
		}
		for _, c := range strings.Split(ctrls, ",") {
			if c == "memory" {
				v1Path, hasV1 = p, true
			}
		}
	}
	var dirs []cgroupDir
	sc := bufio.NewScanner(bytes.NewReader(mountinfo))
	for sc.Scan() {
		// ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTIONS [OPTIONAL…] - FSTYPE SOURCE SUPEROPTIONS
		pre, post, ok := strings.Cut(sc.Text(), " - ")
		if !ok {
			continue
		}
		f, g := strings.Fields(pre), strings.Fields(post)
		if len(f) < 5 || len(g) < 1 {
			continue
		}
		root, mount := unescapeMount(f[3]), unescapeMount(f[4])
		switch {
		case g[0] == "cgroup2" && hasV2:
			if d, ok := joinCgroup(mount, root, v2Path); ok {
				dirs = append(dirs, cgroupDir{d, strings.TrimPrefix(mount, "/"), true})
			}
		case g[0] == "cgroup" && hasV1 && len(g) >= 3 && hasOption(g[2], "memory"):
			if d, ok := joinCgroup(mount, root, v1Path); ok {
				dirs = append(dirs, cgroupDir{d, strings.TrimPrefix(mount, "/"), false})
			}
		}
	}
	return dirs
}

// joinCgroup returns the directory, relative to the file system's root, of the cgroup at path
// p in a hierarchy mounted at mount whose root is root; false when p lies outside the mount.
func joinCgroup(mount, root, p string) (string, bool) {
	rel := p
	if root != "/" {
		if p != root && !strings.HasPrefix(p, root+"/") {
			return "", false
		}
		rel = strings.TrimPrefix(p, root)
	}
	return strings.TrimPrefix(path.Join(mount, rel), "/"), true
}

func hasOption(opts, name string) bool {
	for _, o := range strings.Split(opts, ",") {
		if o == name {
			return true
		}
	}
	return false
}

// unescapeMount undoes mountinfo's octal escapes of space, tab, newline and backslash.
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if v, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(v))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// v1Unlimited: cgroup v1 writes "no limit" as the largest multiple of the page size below 2^63.
const v1Unlimited = 1 << 62

// cgroupLevel reads one cgroup directory's limit and headroom; has is false where it sets no
// limit (or its files cannot be read).
func cgroupLevel(fsys fs.FS, dir string, v2 bool) (limit, available uint64, has bool) {
	limitFile, usageFile, cacheKey := "memory.limit_in_bytes", "memory.usage_in_bytes", "total_inactive_file"
	if v2 {
		limitFile, usageFile, cacheKey = "memory.max", "memory.current", "inactive_file"
	}
	limit, ok := readCgroupNumber(fsys, path.Join(dir, limitFile))
	if !ok || limit >= v1Unlimited {
		return 0, 0, false
	}
	used, ok := readCgroupNumber(fsys, path.Join(dir, usageFile))
	if !ok {
		return limit, limit, true // the limit alone: nothing known in use
	}
	if stat, err := fs.ReadFile(fsys, path.Join(dir, "memory.stat")); err == nil {
		for _, line := range strings.Split(string(stat), "\n") {
			if k, v, ok := strings.Cut(line, " "); ok && k == cacheKey {
				if cache, err := strconv.ParseUint(strings.TrimSpace(v), 10, 64); err == nil {
					used -= min(cache, used)
				}
			}
		}
	}
	return limit, limit - min(used, limit), true
}

// readCgroupNumber reads a file holding one number (v2's "max" reads as no number).
func readCgroupNumber(fsys fs.FS, name string) (uint64, bool) {
	b, err := fs.ReadFile(fsys, name)
	if err != nil {
		return 0, false
	}
	v, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
	return v, err == nil
}
