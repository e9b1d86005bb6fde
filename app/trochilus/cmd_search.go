package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"path"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/trochilus-llm/trochilus/engine/hub"
	"github.com/trochilus-llm/trochilus/engine/library"
)

// runSearch finds GGUF models on Hugging Face: repositories by name, or one repository's models.
func runSearch(ctx context.Context, cl *commandLine, stdout, stderr io.Writer) error {
	return search(ctx, cl, stdout, stderr, &http.Client{Timeout: time.Minute})
}

// search is runSearch with the HTTP client given, for tests.
func search(ctx context.Context, cl *commandLine, stdout, stderr io.Writer, client *http.Client) error {
	n := cl.Int("n", 20, fmt.Sprintf("the most repositories to list (1 to %d)", hub.MaxSearchResults))
	fit := cl.Bool("fit", false, "with a repository: read each model's header and say whether it fits this machine")
	if err := cl.parse(); err != nil {
		return err
	}
	if *n < 1 || *n > hub.MaxSearchResults {
		return fmt.Errorf("%w: -n %d: want 1 to %d", errUsage, *n, hub.MaxSearchResults)
	}
	endpoint := hub.Endpoint()
	what := cl.Arg(0)
	if hub.IsRepo(what) {
		return listRepo(ctx, stdout, client, endpoint, what, *fit)
	}
	repos, err := hub.Search(ctx, client, endpoint, what, *n)
	if err != nil {
		return err
	}
	if len(repos) == 0 {
		fmt.Fprintf(stdout, "no GGUF repository on %s has %q in its name\n", endpoint, what)
		return nil
	}
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "REPOSITORY\tDOWNLOADS\tLIKES\tUPDATED")
	for _, r := range repos {
		updated := "-"
		if !r.Updated.IsZero() {
			updated = r.Updated.UTC().Format("2006-01-02")
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%s\n", r.ID, r.Downloads, r.Likes, updated)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "\n'trochilus search REPOSITORY' lists a repository's models; 'trochilus pull REPOSITORY:TAG' downloads one.\n")
	return nil
}

// repoModel is one model of a repository: a file, or the parts of a split one.
type repoModel struct {
	name  string // the file, or the split model's name without the part suffix
	first hub.FileInfo
	parts int
	size  int64
}

// repoModels groups a repository's GGUF files into models, in the listing's order; vision
// projectors (mmproj) are left out, since they are no model on their own.
func repoModels(files []hub.FileInfo) []repoModel {
	var out []repoModel
	at := map[string]int{}
	for _, f := range files {
		if !strings.EqualFold(path.Ext(f.Path), library.Extension) || strings.Contains(strings.ToLower(path.Base(f.Path)), "mmproj") {
			continue
		}
		key, _ := splitKey(f.Path)
		if i, ok := at[key]; ok {
			out[i].parts++
			out[i].size += f.Size
			continue
		}
		at[key] = len(out)
		out = append(out, repoModel{name: key, first: f, parts: 1, size: f.Size})
	}
	return out
}

// quantTag returns the weight mix a file name carries (Q4_K_M, IQ2_XXS, UD-Q2_K_XL, BF16, …), or
// "" when it names none.
func quantTag(name string) string {
	stem := strings.TrimSuffix(path.Base(name), path.Ext(name))
	fields := strings.FieldsFunc(stem, func(c rune) bool { return c == '-' || c == '.' })
	for i := len(fields) - 1; i >= 0; i-- {
		f := strings.ToUpper(fields[i])
		if isQuant(f) {
			if i > 0 && strings.EqualFold(fields[i-1], "UD") {
				return "UD-" + f
			}
			return f
		}
	}
	return ""
}

// isQuant reports whether s is a quant tag as llama-quantize and publishers write them.
func isQuant(s string) bool {
	switch s {
	case "F32", "F16", "BF16", "MXFP4", "MXFP4_MOE":
		return true
	}
	base, _, _ := strings.Cut(s, "_")
	switch {
	case strings.HasPrefix(base, "IQ") && len(base) == 3 && '1' <= base[2] && base[2] <= '4':
	case strings.HasPrefix(base, "TQ") && len(base) == 3 && '1' <= base[2] && base[2] <= '2':
	case strings.HasPrefix(base, "Q") && len(base) == 2 && '1' <= base[1] && base[1] <= '8':
	default:
		return false
	}
	return strings.Contains(s, "_")
}

// listRepo prints a repository's models.
func listRepo(ctx context.Context, stdout io.Writer, client *http.Client, endpoint, repo string, fit bool) error {
	files, err := hub.ListFiles(ctx, client, endpoint, repo)
	if err != nil {
		return err
	}
	models := repoModels(files)
	if len(models) == 0 {
		fmt.Fprintf(stdout, "%s has no %s model on its main branch\n", repo, library.Extension)
		return nil
	}
	for _, m := range models {
		tag := quantTag(m.name)
		if tag == "" {
			tag = "-"
		}
		line := fmt.Sprintf("%-8s %10s  %s", tag, sizeOrUnknown(m.size), m.name)
		if m.parts > 1 {
			line += fmt.Sprintf("  (%d parts)", m.parts)
		}
		fmt.Fprintln(stdout, line)
		if !fit {
			continue
		}
		if m.parts > 1 {
			fmt.Fprintln(stdout, "         fit: not read (a split model's first part holds a part of its tensors)")
			continue
		}
		var b strings.Builder
		if err := sayFit(ctx, &b, client, hub.FileURL(endpoint, repo, m.first.Path), m.first.Size); err != nil {
			return err
		}
		for _, l := range strings.Split(strings.TrimRight(b.String(), "\n"), "\n") {
			fmt.Fprintln(stdout, "         "+l)
		}
	}
	fmt.Fprintf(stdout, "\n'trochilus pull %s:TAG' downloads one.\n", repo)
	return nil
}
