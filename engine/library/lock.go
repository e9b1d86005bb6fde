package library

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// ErrLocked: another instance of the app holds the data folder's lock. Two windows sharing one
// folder would write the same chats and download to the same partial files.
var ErrLocked = errors.New("the data folder is in use by another Trochilus")

// LockedError is ErrLocked with what the lock file says about its holder.
type LockedError struct {
	Data string // the data folder
	PID  int    // the process holding it, 0 when its lock file does not say
}

func (e *LockedError) Error() string {
	who := "another Trochilus window"
	if e.PID > 0 {
		who = fmt.Sprintf("another Trochilus window (process %d)", e.PID)
	}
	return fmt.Sprintf("%s already uses the data folder %s. Switch to that window, or close it and start again; "+
		"to run a second one, set $%s to another folder.", who, e.Data, HomeEnv)
}

func (e *LockedError) Is(target error) bool { return target == ErrLocked }

// Lock is the data folder's instance lock, held until Release or the process ends (the
// operating system drops it then, so a crash leaves no stale lock behind).
type Lock struct {
	f *os.File
}

// lockFile is the file the lock is taken on; it holds the holder's process id, for the
// message the next instance shows.
func (d Dirs) lockFile() string { return filepath.Join(d.Data, "instance.lock") }

// Lock takes the data folder's instance lock, creating the folder if needed. When another
// process holds it the error is a *LockedError (errors.Is(err, ErrLocked)); any other error
// means the lock could not be taken at all (a file system without locks, say), which the
// caller may choose to run without.
func (d Dirs) Lock() (*Lock, error) {
	if err := os.MkdirAll(d.Data, 0o755); err != nil {
		return nil, fmt.Errorf("library: the instance lock: %w", err)
	}
	path := d.lockFile()
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("library: the instance lock %s: %w", path, err)
	}
	held, err := lockFile(f)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("library: the instance lock %s: %w", path, err)
	}
	if !held {
		pid := readPID(f)
		f.Close()
		return nil, &LockedError{Data: d.Data, PID: pid}
	}
	// The process id is only for the message: failing to write it costs nothing else.
	if f.Truncate(0) == nil {
		f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	return &Lock{f: f}, nil
}

// readPID reads the holder's process id from the lock file, or 0.
func readPID(f *os.File) int {
	buf := make([]byte, 32)
	n, _ := f.ReadAt(buf, 0)
	pid, err := strconv.Atoi(strings.TrimSpace(string(buf[:n])))
	if err != nil || pid <= 0 {
		return 0
	}
	return pid
}

// Release gives the lock up; safe to call twice and on nil. The file stays (removing it would
// race with an instance that has just opened it).
func (l *Lock) Release() error {
	if l == nil || l.f == nil {
		return nil
	}
	err := unlockFile(l.f)
	if cerr := l.f.Close(); err == nil {
		err = cerr
	}
	l.f = nil
	if err != nil {
		return fmt.Errorf("library: releasing the instance lock: %w", err)
	}
	return nil
}
