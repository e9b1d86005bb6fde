package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/trochilus-llm/trochilus/engine"
	"github.com/trochilus-llm/trochilus/engine/download"
	"github.com/trochilus-llm/trochilus/engine/hub"
	"github.com/trochilus-llm/trochilus/engine/library"
	"github.com/trochilus-llm/trochilus/engine/machine"
	"github.com/trochilus-llm/trochilus/internal/units"
)

// runPull downloads a model from Hugging Face into the app's models folder.
func runPull(ctx context.Context, cl *commandLine, stdout, stderr io.Writer) error {
	// No overall timeout: a multi-gigabyte transfer takes as long as it takes, and
	// download.Fetch ends the attempts that stall.
	return pull(ctx, cl, stdout, stderr, &http.Client{})
}

// pull is runPull with the HTTP client given, so tests can act at exact points of a transfer.
func pull(ctx context.Context, cl *commandLine, stdout, stderr io.Writer, client *http.Client) error {
	if err := cl.parse(); err != nil {
		return err
	}
	target := cl.Arg(0)
	repo, want, err := parseTarget(target)
	if err != nil {
		return err
	}
	dirs, err := library.UserDirs()
	if err != nil {
		return err
	}
	endpoint := hub.Endpoint()
	files, err := hub.ListFiles(ctx, client, endpoint, repo)
	if err != nil {
		return err
	}
	fi, err := chooseFile(files, repo, want)
	if err != nil {
		return err
	}
	if fi.SHA256 == "" {
		return fmt.Errorf("%s in %s is not stored with Git LFS: %s publishes no SHA-256 for it, and an unverified file is not offered as a model",
			fi.Path, repo, endpoint)
	}
	e := library.Entry{Name: path.Base(fi.Path), Repo: repo, File: fi.Path, Size: fi.Size, SHA256: fi.SHA256}
	if err := e.Check(); err != nil {
		return fmt.Errorf("the listing of %s: %w", repo, err)
	}
	dest := filepath.Join(dirs.Models, e.LocalName())
	fmt.Fprintf(stdout, "%s/%s: %s\n", repo, fi.Path, sizeOrUnknown(fi.Size))

	if _, err := os.Lstat(dest); err == nil {
		return checkExisting(ctx, dest, e, stdout, stderr)
	}
	url := e.DownloadURL(endpoint)
	if err := sayFit(ctx, stdout, client, url, fi.Size); err != nil {
		return err
	}
	if kept := download.Partial(dest); kept > 0 {
		fmt.Fprintf(stdout, "resuming: %s already downloaded in %s\n", units.Bytes(uint64(kept)), download.PartialPath(dest))
	}

	prog := newPullProgress(stderr, e.LocalName())
	err = download.Fetch(ctx, download.Request{URL: url, Path: dest, SHA256: fi.SHA256, Size: fi.Size},
		download.Options{Client: client, OnProgress: prog.update})
	prog.close()
	if err != nil {
		kept := download.Partial(dest)
		switch {
		case ctx.Err() != nil && kept > 0:
			fmt.Fprintf(stderr, "paused: %s of %s kept in %s; run 'trochilus pull %s' again to resume\n",
				units.Bytes(uint64(kept)), sizeOrUnknown(fi.Size), download.PartialPath(dest), target)
		case ctx.Err() == nil && kept > 0:
			return fmt.Errorf("%w\nrun 'trochilus pull %s' again to resume", err, target)
		}
		return err
	}
	fmt.Fprintf(stdout, "downloaded and verified (SHA-256 %s): %s\n", fi.SHA256[:12], dest)
	return nil
}

// parseTarget splits REPO[:FILE]; a repository name never holds a colon.
func parseTarget(arg string) (repo, file string, err error) {
	repo, file, _ = strings.Cut(arg, ":")
	if owner, name, ok := strings.Cut(repo, "/"); !ok || owner == "" || name == "" || strings.Contains(name, "/") {
		return "", "", fmt.Errorf("%w: %q is not REPO[:FILE] with REPO an owner/name on Hugging Face", errUsage, arg)
	}
	if strings.Contains(arg, ":") && file == "" {
		return "", "", fmt.Errorf("%w: %q names no file after the colon", errUsage, arg)
	}
	return repo, file, nil
}

// checkExisting reports on a file already in the models folder under the name the download
// would take: done when it is the published file, an error when it is another.
func checkExisting(ctx context.Context, dest string, e library.Entry, stdout, stderr io.Writer) error {
	other := func(why string) error {
		return fmt.Errorf("%s is already in the models folder but is not %s/%s (%s); 'trochilus rm %s' deletes it",
			dest, e.Repo, e.File, why, e.LocalName())
	}
	fi, err := os.Stat(dest)
	if err != nil {
		return fmt.Errorf("checking %s: %w", dest, err)
	}
	if !fi.Mode().IsRegular() {
		return other("not a regular file")
	}
	if e.Size > 0 && fi.Size() != e.Size {
		return other(fmt.Sprintf("%d bytes, the published file has %d", fi.Size(), e.Size))
	}
	fmt.Fprintf(stderr, "checking the SHA-256 of the %s already there…\n", units.Bytes(uint64(fi.Size())))
	sum, err := download.FileSHA256(ctx, dest)
	if err != nil {
		return err
	}
	if !strings.EqualFold(sum, e.SHA256) {
		return other("its SHA-256 is " + sum + ", the published one " + e.SHA256)
	}
	fmt.Fprintf(stdout, "already downloaded and verified (SHA-256 %s): %s\n", sum[:12], dest)
	return nil
}

// sayFit prints whether the model fits this machine, from its header read over HTTP when the
// server allows, else from the file's size alone. Only a cancelled context is an error: the
// verdict informs, the download goes ahead either way (the disk is what download.Fetch checks).
func sayFit(ctx context.Context, stdout io.Writer, client *http.Client, url string, size int64) error {
	mem, err := machine.ReadMemory(ctx)
	if err != nil {
		fmt.Fprintf(stdout, "Fit unknown: %v.\n", err)
		return nil
	}
	prof := machine.Profile{RAMTotal: mem.Total, RAMAvailable: mem.Available, RAMCgroup: mem.Cgroup}
	d, err := hub.DescribeRemote(ctx, client, url, size)
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if err == nil {
		m := library.Model{Path: url, Size: size, Description: d}
		pl := m.PlanFor(prof, 0) // the plan a load of it would follow, at the default context
		fmt.Fprintf(stdout, "model: %s, %s\n", m.Arch, m.TypesText())
		fmt.Fprintln(stdout, pl.Text())
		if pl.Placement == engine.Refused {
			fmt.Fprintln(stdout, "downloading anyway: another machine may run it")
		}
		return nil
	}
	// Without the header the file's size is all there is: the whole file fitting in RAM is a
	// safe "fits"; a larger one may still run with experts from disk, which only the header
	// can tell.
	est := library.Model{Size: size, Description: engine.Description{Footprint: engine.Footprint{FileSize: size}}}
	pl := est.PlanFor(prof, 0)
	room := uint64(0)
	if pl.Available > pl.Reserve {
		room = pl.Available - pl.Reserve
	}
	why := fmt.Sprintf("(the header could not be read, so this goes by the size alone: %v)", err)
	if pl.Placement == engine.InMemory {
		fmt.Fprintf(stdout, "Fits: the whole file (%s) fits in the %s of RAM usable %s.\n",
			sizeOrUnknown(size), units.Bytes(room), why)
		return nil
	}
	fmt.Fprintf(stdout, "Fit not known yet: the file (%s) is larger than the %s of RAM usable, which a Mixture-of-Experts "+
		"model may still run in with experts read from disk; 'trochilus ls' tells once it is here %s.\n",
		sizeOrUnknown(size), units.Bytes(room), why)
	return nil
}

func sizeOrUnknown(n int64) string {
	if n <= 0 {
		return "size unknown"
	}
	return units.Bytes(uint64(n))
}

// chooseFile picks the file `pull REPO[:FILE]` names among a repository's files: FILE is a
// path, a file name anywhere in the repository, or a quant tag (case-insensitive) that one
// model's file name carries; without FILE, the only model, or else the Q4_K_M one. A model
// split in parts is refused for now.
func chooseFile(files []hub.FileInfo, repo, want string) (hub.FileInfo, error) {
	var ggufs []hub.FileInfo
	for _, f := range files {
		if strings.EqualFold(path.Ext(f.Path), library.Extension) {
			ggufs = append(ggufs, f)
		}
	}
	if len(ggufs) == 0 {
		return hub.FileInfo{}, fmt.Errorf("%s has no %s file on its main branch", repo, library.Extension)
	}
	if want != "" && (strings.EqualFold(path.Ext(want), library.Extension) || strings.Contains(want, "/")) {
		var named []hub.FileInfo
		for _, f := range ggufs {
			if f.Path == want {
				return refuseSplit(f, ggufs)
			}
			if path.Base(f.Path) == want {
				named = append(named, f)
			}
		}
		switch len(named) {
		case 0:
			return hub.FileInfo{}, fmt.Errorf("%w: %s has no file %s; its models:\n%s", errUsage, repo, want, listChoices(ggufs))
		case 1:
			return refuseSplit(named[0], ggufs)
		}
		return hub.FileInfo{}, fmt.Errorf("%w: %s has %d files named %s; name one by its path:\n%s",
			errUsage, repo, len(named), want, listChoices(named))
	}
	if want != "" {
		tagged := withTag(ggufs, want)
		switch len(tagged) {
		case 0:
			return hub.FileInfo{}, fmt.Errorf("%w: no model in %s is tagged %s; its models:\n%s", errUsage, repo, want, listChoices(ggufs))
		case 1:
			return refuseSplit(tagged[0], ggufs)
		}
		return hub.FileInfo{}, fmt.Errorf("%w: %d models in %s are tagged %s; name one as %s:FILE:\n%s",
			errUsage, len(tagged), repo, want, repo, listChoices(tagged))
	}
	// Projector files of vision models are .gguf too, but no model to pull on their own.
	var cands []hub.FileInfo
	for _, f := range oneFilePerModel(ggufs) {
		if !strings.Contains(strings.ToLower(path.Base(f.Path)), "mmproj") {
			cands = append(cands, f)
		}
	}
	if len(cands) == 1 {
		return refuseSplit(cands[0], ggufs)
	}
	if q := withTag(cands, defaultQuant); len(q) == 1 {
		return refuseSplit(q[0], ggufs)
	}
	if len(cands) == 0 {
		cands = oneFilePerModel(ggufs)
	}
	return hub.FileInfo{}, fmt.Errorf("%w: %s holds %d models and no single %s one; pick one as %s:FILE or %s:TAG:\n%s",
		errUsage, repo, len(cands), defaultQuant, repo, repo, listChoices(cands))
}

// defaultQuant is the weight mix pulled when a repository offers several: a good trade of
// size and quality, and the one the app's catalog offers first.
const defaultQuant = "Q4_K_M"

// refuseSplit refuses a part of a split model, counting its parts among all.
func refuseSplit(f hub.FileInfo, all []hub.FileInfo) (hub.FileInfo, error) {
	key, part := splitKey(f.Path)
	if !part {
		return f, nil
	}
	n := 0
	for _, g := range all {
		if k, p := splitKey(g.Path); p && k == key {
			n++
		}
	}
	return hub.FileInfo{}, fmt.Errorf("%s is split in %d parts (%s); trochilus pull does not join split models yet",
		strings.TrimSuffix(key, path.Ext(key)), n, path.Base(f.Path))
}

// splitKey returns the name of the model a file belongs to, the split suffix
// ("-00001-of-00003") removed, and whether the file is such a part.
func splitKey(p string) (string, bool) {
	stem := p[:len(p)-len(path.Ext(p))]
	// "-NNNNN-of-NNNNN" is 15 characters of digits and dashes in fixed places.
	if len(stem) < 15 {
		return p, false
	}
	tail := stem[len(stem)-15:]
	if tail[0] != '-' || !strings.EqualFold(tail[6:10], "-of-") || !splitDigits(tail[1:6]) || !splitDigits(tail[10:]) {
		return p, false
	}
	return stem[:len(stem)-15] + path.Ext(p), true
}

func splitDigits(s string) bool {
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return s != ""
}

// oneFilePerModel returns one file per model: the first part stands for a split model's parts.
func oneFilePerModel(files []hub.FileInfo) []hub.FileInfo {
	seen := map[string]bool{}
	var out []hub.FileInfo
	for _, f := range files {
		key, _ := splitKey(f.Path)
		if !seen[key] {
			seen[key] = true
			out = append(out, f)
		}
	}
	return out
}

// withTag returns the models whose file name carries the quant tag.
func withTag(files []hub.FileInfo, tag string) []hub.FileInfo {
	var out []hub.FileInfo
	for _, f := range oneFilePerModel(files) {
		key, _ := splitKey(f.Path)
		if hasTag(path.Base(key), tag) {
			out = append(out, f)
		}
	}
	return out
}

// hasTag reports whether a file name carries tag as a whole word, in any case: Q4_K_M is in
// "OLMoE-Q4_K_M.gguf" and "olmoe.q4_k_m.gguf", but Q4_K is not in Q4_K_M, nor Q4_XS in IQ4_XS.
func hasTag(name, tag string) bool {
	name = strings.ToLower(strings.TrimSuffix(name, path.Ext(name)))
	tag = strings.ToLower(tag)
	if tag == "" {
		return false
	}
	word := func(c byte) bool { return c == '_' || '0' <= c && c <= '9' || 'a' <= c && c <= 'z' }
	for i := 0; ; {
		j := strings.Index(name[i:], tag)
		if j < 0 {
			return false
		}
		start, end := i+j, i+j+len(tag)
		if (start == 0 || !word(name[start-1])) && (end == len(name) || !word(name[end])) {
			return true
		}
		i = start + 1
	}
}

// listChoices renders files one a line with their sizes, for an error that asks to choose.
func listChoices(files []hub.FileInfo) string {
	var b strings.Builder
	for i, f := range files {
		if i > 0 {
			b.WriteByte('\n')
		}
		name := f.Path
		if key, part := splitKey(f.Path); part {
			name = key + " (split in parts)"
		}
		fmt.Fprintf(&b, "  %s  %s", name, sizeOrUnknown(f.Size))
	}
	return b.String()
}
