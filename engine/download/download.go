// Package download fetches large files over HTTP so that an interruption costs nothing and a
// damaged file is never mistaken for a good one.
//
// The bytes received so far live in a partial file beside the destination (PartialPath), with
// a small state file naming what they are a part of (the URL, size, SHA-256 and the server's
// ETag). A later Fetch of the same file resumes where the partial file ends with an HTTP Range
// request; a transfer that stalls or drops is retried from where it stopped, a bounded number
// of times with growing waits. The destination path appears only once the whole file's SHA-256
// equals the expected one, by an atomic rename: a file that fails the check is deleted, never
// left where it could be opened as a model.
//
// Pausing is cancelling the context given to Fetch (the partial file stays); cancelling a
// download for good is Discard. One Fetch at a time may work on a given destination.
package download

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/trochilus-llm/trochilus/internal/units"
)

// Request names a file to fetch and what it must be.
type Request struct {
	URL  string // where to get it (redirects are followed)
	Path string // where it goes once verified; its folder is created if missing

	// SHA256 is the expected digest of the whole file, in hex. It is required: a download that
	// cannot be verified is not offered as a model.
	SHA256 string

	// Size is the exact length in bytes, or 0 when unknown (the server's word is taken).
	// When known it sizes the free-disk check and a server disagreeing with it is an error.
	Size int64

	// SizeHint is an approximate length (a catalog's rounded figure), used only until the
	// server says the real one: for the free-disk check and the progress shown (Progress's
	// Approximate). It is never enforced: a file that differs from it is fine as long as its
	// SHA-256 is the expected one. Ignored when Size is set.
	SizeHint int64
}

// Options tune Fetch; the zero value is ready to use.
type Options struct {
	// Client makes the requests; nil means an http.Client without an overall timeout (a
	// multi-gigabyte transfer takes as long as it takes; stalls are caught by StallTimeout).
	Client *http.Client

	// Retries is how many failed attempts in a row (dropped connections, stalls, 5xx and 429
	// answers) are retried before Fetch gives up; an attempt that received bytes resets the
	// count. 0 means 5; a negative value means no retries.
	Retries int

	// Backoff is the wait before the first retry; each further retry in a row doubles it, up
	// to a minute. 0 means one second.
	Backoff time.Duration

	// StallTimeout ends an attempt that has received nothing for this long. 0 means 30 s.
	StallTimeout time.Duration

	// OnProgress, when set, is called on Fetch's goroutine at each phase change and at most
	// every ProgressEvery while bytes arrive. It must return quickly.
	OnProgress func(Progress)

	// ProgressEvery spaces progress reports during a transfer; 0 means 200 ms.
	ProgressEvery time.Duration

	// FreeSpace reports the bytes available to this user on the file system holding dir; nil
	// means asking the operating system. Tests use it to play a full disk.
	FreeSpace func(dir string) (uint64, error)

	// newStallTimer starts the timer that calls stalled once an attempt has received nothing
	// for d; nil means time.AfterFunc. It is unexported because only this package's tests
	// replace it: with timers that fire when the test says so, a slow but healthy transfer on
	// a loaded machine can never be taken for a stall.
	newStallTimer func(d time.Duration, stalled func()) stallTimer
}

// stallTimer is the part of *time.Timer an attempt uses to notice a silent server.
type stallTimer interface {
	Reset(d time.Duration) bool
	Stop() bool
}

// afterFunc is the production stall timer.
func afterFunc(d time.Duration, f func()) stallTimer { return time.AfterFunc(d, f) }

// Errors Fetch returns, to be tested with errors.Is.
var (
	// ErrChecksum: the file received does not have the expected SHA-256. It was deleted.
	ErrChecksum = errors.New("checksum mismatch")
	// ErrNoSpace: the disk has no room for the rest of the file.
	ErrNoSpace = errors.New("not enough free disk space")
	// ErrExists: the destination is already there; Fetch does not overwrite it.
	ErrExists = errors.New("destination already exists")
)

// StatusError is an HTTP answer that is not the file.
type StatusError struct {
	Code   int
	Status string
}

func (e *StatusError) Error() string { return "server answered " + e.Status }

// transient reports whether retrying the request may help.
func (e *StatusError) transient() bool {
	return e.Code >= 500 || e.Code == http.StatusTooManyRequests || e.Code == http.StatusRequestTimeout
}

// PartialPath returns the file that holds the bytes received so far for path.
func PartialPath(path string) string { return path + ".part" }

// statePath returns the file describing the partial file of path.
func statePath(path string) string { return path + ".part.json" }

// Partial returns how many bytes of path a paused or failed download left, or 0.
func Partial(path string) int64 {
	fi, err := os.Stat(PartialPath(path))
	if err != nil || !fi.Mode().IsRegular() {
		return 0
	}
	return fi.Size()
}

// PartialProgress returns how many bytes of path a paused or failed download left and the
// size the whole file will have, as far as that download learnt it (0 when unknown), so a
// listing can show an unfinished download's share without knowing how its state is kept.
func PartialProgress(path string) (received, total int64) {
	received = Partial(path)
	if received == 0 {
		return 0, 0
	}
	return received, max(readState(statePath(path)).Size, 0)
}

// Discard removes what an unfinished download of path left (the partial file and its state),
// for a download cancelled for good. Nothing there is not an error.
func Discard(path string) error {
	var errs []error
	for _, p := range []string{PartialPath(path), statePath(path)} {
		if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Fetch downloads req.URL to req.Path, resuming a partial file left by an earlier Fetch of
// the same file, and verifies the SHA-256 before the file takes its name. When ctx is
// cancelled it returns ctx's error (wrapped) and keeps the partial file for a later resume;
// after a network failure that retries did not cure, the error says how much is kept.
func Fetch(ctx context.Context, req Request, opts Options) error {
	want, err := parseDigest(req.SHA256)
	if err != nil {
		return fmt.Errorf("download %s: %w", req.Path, err)
	}
	if req.URL == "" || req.Path == "" {
		return fmt.Errorf("download: URL %q to path %q: both are needed", req.URL, req.Path)
	}
	if req.Size < 0 || req.SizeHint < 0 {
		return fmt.Errorf("download %s: size %d (approximately %d) is negative", req.Path, req.Size, req.SizeHint)
	}
	if _, err := os.Lstat(req.Path); err == nil {
		return fmt.Errorf("download %s: %w", req.Path, ErrExists)
	}
	d := &fetcher{req: req, want: want, opts: opts.withDefaults()}
	if err := d.run(ctx); err != nil {
		return fmt.Errorf("download %s: %w", filepath.Base(req.Path), err)
	}
	return nil
}

func (o Options) withDefaults() Options {
	if o.Client == nil {
		o.Client = &http.Client{}
	}
	if o.Retries == 0 {
		o.Retries = 5
	}
	if o.Retries < 0 {
		o.Retries = 0
	}
	if o.Backoff <= 0 {
		o.Backoff = time.Second
	}
	if o.StallTimeout <= 0 {
		o.StallTimeout = 30 * time.Second
	}
	if o.ProgressEvery <= 0 {
		o.ProgressEvery = 200 * time.Millisecond
	}
	if o.FreeSpace == nil {
		o.FreeSpace = freeSpace
	}
	if o.newStallTimer == nil {
		o.newStallTimer = afterFunc
	}
	return o
}

func parseDigest(s string) ([]byte, error) {
	b, err := hex.DecodeString(strings.TrimSpace(s))
	if err != nil || len(b) != sha256.Size {
		return nil, fmt.Errorf("expected SHA-256 %q is not 64 hex digits", s)
	}
	return b, nil
}

// fetcher is the state of one Fetch.
type fetcher struct {
	req  Request
	want []byte
	opts Options

	f       *os.File  // the partial file, open for appending
	created bool      // this Fetch created the partial file
	h       hash.Hash // digest of the partial file's bytes
	state   state     // what the partial file is a part of
	total   int64     // exact size, 0 while unknown
	hint    int64     // approximate size while total is unknown, 0 when none

	prog  Progress
	rate  rateMeter
	shown time.Time // when progress was last reported
}

func (d *fetcher) run(ctx context.Context) error {
	dir := filepath.Dir(d.req.Path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("models folder %s: %w", dir, err)
	}
	// The disk check comes before the partial file is touched, so a full disk leaves nothing.
	d.total = d.req.Size
	if d.total == 0 {
		d.hint = d.req.SizeHint
	}
	if d.total > 0 || d.hint > 0 {
		d.prog.Received = min(Partial(d.req.Path), max(d.total, d.hint))
		if err := d.checkSpace(dir); err != nil {
			return err
		}
	}
	defer func() {
		if d.f != nil {
			d.f.Close()
			d.f = nil
		}
		// A partial file this Fetch made and wrote no byte to is worth nothing: leave no
		// litter behind a failure.
		if d.created && d.prog.Received == 0 && d.prog.Phase != Done {
			Discard(d.req.Path)
		}
	}()
	if err := d.openPartial(ctx); err != nil {
		return err
	}

	fails := 0
	for attempt := 1; ; attempt++ {
		d.prog.Attempt = attempt
		before := d.prog.Received
		done, err := d.attempt(ctx)
		if done {
			return d.finish()
		}
		if ctx.Err() != nil {
			return fmt.Errorf("paused with %s kept in %s: %w", units.Bytes(d.prog.Received), PartialPath(d.req.Path), ctx.Err())
		}
		if !retryable(err) {
			return d.kept(err)
		}
		if d.prog.Received > before {
			fails = 0
		}
		fails++
		if fails > d.opts.Retries {
			what := "attempt failed"
			if fails > 1 {
				what = fmt.Sprintf("gave up after %d failed attempts in a row", fails)
			}
			return d.kept(fmt.Errorf("%s: %w", what, err))
		}
		wait := d.opts.Backoff << min(fails-1, 6)
		wait = min(wait, time.Minute)
		d.prog.Phase, d.prog.Err, d.prog.Rate = Waiting, err, 0
		d.report(true)
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("paused with %s kept in %s: %w", units.Bytes(d.prog.Received), PartialPath(d.req.Path), ctx.Err())
		case <-t.C:
		}
		d.prog.Err = nil
	}
}

// kept wraps a failure with how much of the file stays for a later resume.
func (d *fetcher) kept(err error) error {
	if d.prog.Received == 0 {
		return err
	}
	return fmt.Errorf("%w (%s kept in %s: download again to resume)", err, units.Bytes(d.prog.Received), PartialPath(d.req.Path))
}

// retryable reports whether a failed attempt may succeed if tried again.
func retryable(err error) bool {
	var se *StatusError
	if errors.As(err, &se) {
		return se.transient()
	}
	var lf localError
	if errors.As(err, &lf) {
		return false
	}
	return !errors.Is(err, ErrNoSpace)
}

// localError marks a failure on this machine's side (writing the file), which retrying the
// network does not cure.
type localError struct{ err error }

func (e localError) Error() string { return e.err.Error() }
func (e localError) Unwrap() error { return e.err }

// openPartial opens (or creates) the partial file and brings the digest up to its end. A
// partial file of another download (its state names another digest) or longer than the file
// is started afresh.
func (d *fetcher) openPartial(ctx context.Context) error {
	part := PartialPath(d.req.Path)
	d.state = readState(statePath(d.req.Path))
	d.total = d.req.Size
	if d.state.SHA256 != "" && !strings.EqualFold(d.state.SHA256, d.req.SHA256) {
		if err := Discard(d.req.Path); err != nil {
			return fmt.Errorf("removing the partial file of an earlier download: %w", err)
		}
		d.state = state{}
	}
	if d.req.Size > 0 || d.state.URL != d.req.URL {
		d.state.Size = d.req.Size
	}
	d.state.URL, d.state.SHA256 = d.req.URL, strings.ToLower(d.req.SHA256)

	_, statErr := os.Lstat(part)
	d.created = errors.Is(statErr, fs.ErrNotExist)
	f, err := os.OpenFile(part, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return localError{fmt.Errorf("partial file: %w", err)}
	}
	d.f = f
	fi, err := f.Stat()
	if err != nil {
		return localError{fmt.Errorf("partial file: %w", err)}
	}
	n := fi.Size()
	if d.total > 0 && n > d.total {
		n = 0
	}
	if d.total == 0 && d.state.Size > 0 && d.state.URL == d.req.URL {
		// The server's size, learnt by the download that left the partial file: better than
		// any hint until the server says it again (and checked against it then).
		d.hint = d.state.Size
	}
	d.h = sha256.New()
	// Received is what is kept while it is read back, so the bar stays where the pause left it.
	d.prog = Progress{Phase: Checking, Received: n}
	d.showTotal()
	if n > 0 {
		d.report(true)
		// Reading back costs a second or so per gigabyte; keeping a digest checkpoint instead
		// would have to be kept in step with the bytes on disk across crashes.
		if err := hashPrefix(ctx, d.h, f, n); err != nil {
			return err
		}
	}
	if err := d.restartAt(n); err != nil {
		return err
	}
	d.prog.Resumed = n
	return nil
}

// hashPrefix feeds the first n bytes of f to h, stopping early when ctx is cancelled.
// FileSHA256 returns the hex SHA-256 of the file at path, stopping when ctx is cancelled (a
// model takes seconds to read): for checking a file already in place against the digest a
// Request would name.
func FileSHA256(ctx context.Context, path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("download: checking %s: %w", path, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return "", fmt.Errorf("download: checking %s: %w", path, err)
	}
	h := sha256.New()
	if err := hashPrefix(ctx, h, f, fi.Size()); err != nil {
		if ctx.Err() != nil {
			return "", err
		}
		return "", fmt.Errorf("download: checking %s: %w", path, err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

func hashPrefix(ctx context.Context, h hash.Hash, f *os.File, n int64) error {
	buf := make([]byte, 4<<20)
	for off := int64(0); off < n; {
		if err := ctx.Err(); err != nil {
			return err
		}
		k, err := f.ReadAt(buf[:min(int64(len(buf)), n-off)], off)
		h.Write(buf[:k])
		off += int64(k)
		if err != nil && off < n {
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return localError{fmt.Errorf("reading back the partial file: %w", err)}
		}
	}
	return nil
}

// restartAt cuts the partial file to n bytes (0 also resets the digest) and positions writes
// at its end.
func (d *fetcher) restartAt(n int64) error {
	if n == 0 {
		d.h.Reset()
	}
	if err := d.f.Truncate(n); err != nil {
		return localError{fmt.Errorf("partial file: %w", err)}
	}
	if _, err := d.f.Seek(n, io.SeekStart); err != nil {
		return localError{fmt.Errorf("partial file: %w", err)}
	}
	d.prog.Received = n
	return nil
}

// checkSpace refuses to start when the disk cannot hold the rest of a file of known size: the
// server's size once it has said it, the catalog's approximate one only until then.
func (d *fetcher) checkSpace(dir string) error {
	size := d.total
	if size <= 0 {
		size = d.hint
	}
	if size <= 0 {
		return nil
	}
	need := uint64(max(size-d.prog.Received, 0))
	free, err := d.opts.FreeSpace(dir)
	if err != nil {
		if errors.Is(err, errors.ErrUnsupported) {
			return nil
		}
		return localError{fmt.Errorf("free space of %s: %w", dir, err)}
	}
	// A little room beyond the file itself, so the download does not fill the disk to the byte.
	const margin = 64 << 20
	if free < need+margin {
		return localError{fmt.Errorf("%s needs %s more, %s has %s free: %w", filepath.Base(d.req.Path),
			units.Bytes(need), dir, units.Bytes(free), ErrNoSpace)}
	}
	return nil
}

// attempt makes one request and copies what it brings to the partial file. It reports done
// when the file is complete.
func (d *fetcher) attempt(ctx context.Context) (done bool, err error) {
	if d.total > 0 && d.prog.Received == d.total {
		return true, nil
	}
	actx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	req, err := http.NewRequestWithContext(actx, http.MethodGet, d.req.URL, nil)
	if err != nil {
		return false, localError{err}
	}
	from := d.prog.Received
	if from > 0 {
		req.Header.Set("Range", "bytes="+strconv.FormatInt(from, 10)+"-")
		// If the file changed on the server since the partial file began, If-Range makes the
		// server send the whole new file instead of a tail that would not fit the head.
		if et := d.state.ETag; et != "" && !strings.HasPrefix(et, "W/") {
			req.Header.Set("If-Range", et)
		}
	}
	// A compressed answer would break ranges and lengths; GGUF does not compress anyway.
	req.Header.Set("Accept-Encoding", "identity")

	d.prog.Phase, d.prog.Rate = Connecting, 0
	d.report(true)
	stall := d.opts.newStallTimer(d.opts.StallTimeout, func() { cancel(errStalled) })
	defer stall.Stop()

	resp, err := d.opts.Client.Do(req)
	if err != nil {
		return false, d.cause(actx, err)
	}
	defer resp.Body.Close()

	switch resp.StatusCode {
	case http.StatusPartialContent:
		start, total, err := parseContentRange(resp.Header.Get("Content-Range"))
		if err != nil {
			return false, err
		}
		if start != from {
			return false, fmt.Errorf("asked for bytes from %d, server sent from %d", from, start)
		}
		if err := d.learnTotal(total); err != nil {
			return false, err
		}
	case http.StatusOK:
		if from > 0 {
			// The server ignored the range or the file changed: start again from the beginning.
			if err := d.restartAt(0); err != nil {
				return false, err
			}
			d.prog.Discarded += from
		}
		if resp.ContentLength >= 0 {
			if err := d.learnTotal(resp.ContentLength); err != nil {
				return false, err
			}
		}
	case http.StatusRequestedRangeNotSatisfiable:
		// The partial file is as long as (or longer than) the server's file: start over once
		// and let the digest decide.
		if err := d.restartAt(0); err != nil {
			return false, err
		}
		d.prog.Discarded += from
		return false, fmt.Errorf("server has no bytes from %d on (%s): starting over", from, resp.Status)
	default:
		return false, &StatusError{Code: resp.StatusCode, Status: resp.Status}
	}
	if et := resp.Header.Get("ETag"); et != d.state.ETag {
		d.state.ETag = et
	}
	if err := writeState(statePath(d.req.Path), d.state); err != nil {
		return false, localError{fmt.Errorf("partial file state: %w", err)}
	}
	if err := d.checkSpace(filepath.Dir(d.req.Path)); err != nil {
		return false, err
	}

	d.prog.Phase = Transferring
	d.rate.reset(time.Now(), d.prog.Received)
	d.report(true)
	if err := d.copyBody(resp.Body, stall); err != nil {
		return false, d.cause(actx, err)
	}
	if d.total > 0 && d.prog.Received < d.total {
		return false, fmt.Errorf("connection closed at %d of %d bytes: %w", d.prog.Received, d.total, io.ErrUnexpectedEOF)
	}
	if d.total == 0 {
		d.total = d.prog.Received
		d.showTotal()
	}
	return true, nil
}

var errStalled = errors.New("no data received for too long")

// cause prefers the reason an attempt's context was cancelled (a stall) over the transport's
// generic error.
func (d *fetcher) cause(actx context.Context, err error) error {
	if c := context.Cause(actx); errors.Is(c, errStalled) {
		return fmt.Errorf("stalled: %w", errStalled)
	}
	return err
}

// learnTotal takes the file size from the server, which must agree with the request's.
func (d *fetcher) learnTotal(total int64) error {
	if total < 0 {
		return nil
	}
	if d.total > 0 && total != d.total {
		return localError{fmt.Errorf("server says the file has %d bytes, expected %d", total, d.total)}
	}
	if d.total == 0 {
		d.total, d.state.Size = total, total
		d.showTotal()
	}
	return nil
}

// showTotal puts the size known into the progress: the exact one, else the hint, marked
// approximate.
func (d *fetcher) showTotal() {
	d.prog.Total, d.prog.Approximate = d.total, false
	if d.total == 0 && d.hint > 0 {
		d.prog.Total, d.prog.Approximate = d.hint, true
	}
}

// copyBody appends body to the partial file and the digest, keeping the stall timer wound.
func (d *fetcher) copyBody(body io.Reader, stall stallTimer) error {
	buf := make([]byte, 1<<20)
	for {
		n, rerr := body.Read(buf)
		if n > 0 {
			stall.Reset(d.opts.StallTimeout)
			if d.total > 0 && d.prog.Received+int64(n) > d.total {
				return localError{fmt.Errorf("server sent more than the %d bytes expected", d.total)}
			}
			w, werr := d.f.Write(buf[:n])
			d.h.Write(buf[:w])
			d.prog.Received += int64(w)
			if werr != nil {
				if errors.Is(werr, syscall.ENOSPC) {
					werr = fmt.Errorf("%w: %w", ErrNoSpace, werr)
				}
				return localError{fmt.Errorf("writing the partial file: %w", werr)}
			}
			now := time.Now()
			d.rate.add(now, d.prog.Received)
			d.prog.Rate = d.rate.perSecond()
			d.report(false)
		}
		if rerr == io.EOF {
			return nil
		}
		if rerr != nil {
			return rerr
		}
	}
}

// finish verifies the digest and moves the file into place, or deletes it.
func (d *fetcher) finish() error {
	d.prog.Phase, d.prog.Rate = Verifying, 0
	d.report(true)
	if err := d.f.Sync(); err != nil {
		return localError{fmt.Errorf("partial file: %w", err)}
	}
	err := d.f.Close()
	d.f = nil
	if err != nil {
		return localError{fmt.Errorf("partial file: %w", err)}
	}
	got := d.h.Sum(nil)
	if !bytes.Equal(got, d.want) {
		derr := Discard(d.req.Path)
		return errors.Join(fmt.Errorf("the file received has SHA-256 %x, expected %x; it was deleted: %w", got, d.want, ErrChecksum), derr)
	}
	if err := os.Rename(PartialPath(d.req.Path), d.req.Path); err != nil {
		return localError{fmt.Errorf("moving the verified file into place: %w", err)}
	}
	syncDir(filepath.Dir(d.req.Path))
	if err := os.Remove(statePath(d.req.Path)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return localError{fmt.Errorf("removing the partial file state: %w", err)}
	}
	d.prog.Phase = Done
	d.report(true)
	return nil
}

// report passes progress on, at once when forced (phase changes), otherwise at most every
// ProgressEvery.
func (d *fetcher) report(force bool) {
	if d.opts.OnProgress == nil {
		return
	}
	now := time.Now()
	if !force && now.Sub(d.shown) < d.opts.ProgressEvery {
		return
	}
	d.shown = now
	d.opts.OnProgress(d.prog)
}

// parseContentRange reads "bytes START-END/TOTAL" (TOTAL may be "*", returned as -1).
func parseContentRange(s string) (start, total int64, err error) {
	bad := fmt.Errorf("bad Content-Range %q", s)
	rest, ok := strings.CutPrefix(s, "bytes ")
	if !ok {
		return 0, 0, bad
	}
	span, size, ok := strings.Cut(rest, "/")
	if !ok {
		return 0, 0, bad
	}
	first, _, ok := strings.Cut(span, "-")
	if !ok {
		return 0, 0, bad
	}
	if start, err = strconv.ParseInt(first, 10, 64); err != nil || start < 0 {
		return 0, 0, bad
	}
	if size == "*" {
		return start, -1, nil
	}
	if total, err = strconv.ParseInt(size, 10, 64); err != nil || total < start {
		return 0, 0, bad
	}
	return start, total, nil
}
