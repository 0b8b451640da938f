package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// dataLockFile is the file in an embedded data directory whose lock one
// process holds while it serves or collects the directory; it names that
// process's id.
const dataLockFile = "cairn.lock"

// errLocked is returned by lockFile when another process holds the lock.
var errLocked = errors.New("locked")

// lockDataDir takes the data directory's exclusive lock, so that a second
// `cairn serve` (or a `cairn gc`) on the same directory refuses to start
// instead of racing the first on session heads. The operating system drops
// the lock when the process dies, however it dies, so a crash never leaves
// a directory locked. release gives it up.
func lockDataDir(dir string) (release func(), err error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("creating data directory: %w", err)
	}
	path := filepath.Join(dir, dataLockFile)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("opening the data directory's lock: %w", err)
	}
	if err := lockFile(f); err != nil {
		f.Close()
		if !errors.Is(err, errLocked) {
			return nil, fmt.Errorf("locking data directory %s: %w", dir, err)
		}
		holder := "another process"
		if data, err := os.ReadFile(path); err == nil {
			if pid, err := strconv.Atoi(strings.TrimSpace(string(data))); err == nil {
				holder = fmt.Sprintf("process %d", pid)
			}
		}
		return nil, fmt.Errorf("data directory %s is in use by %s (a cairn serve or gc): stop it first, or talk to that server with --server", dir, holder)
	}
	// Only the holder writes the file, so a reader sees the holder's id.
	if err := f.Truncate(0); err == nil {
		_, _ = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	return func() { f.Close() }, nil
}
