package keeper

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"time"

	"golang.org/x/sys/unix"
	"k8s.io/utils/clock"
)

// maxLog bounds the keeper's own log: over it, keeper.log is renamed
// keeper.log.1 (the one before replaced) and begun again, when a keeper
// starts and while it runs (a test shortens it).
var maxLog int64 = 1 << 20

// repeatWindow is how long a message said again is counted, not written.
const repeatWindow = time.Minute

// maxRepeats bounds the messages whose repeats are counted.
const maxRepeats = 256

// journal is the keeper's own log: its messages are written to out, its
// stderr (keeper.log, which the podrun that started it opened), capped
// while it runs, and a message said again within repeatWindow is counted,
// not written; the count is written once the window is over.
type journal struct {
	mu  sync.Mutex
	out io.Writer
	// restart begins the log again (keeper.log.1 the one so far); nil when
	// stderr is not keeper.log (a keeper run by hand): then it is not
	// capped.
	restart func() error
	size    int64
	max     int64
	clock   clock.PassiveClock
	said    map[string]*repeat
}

// repeat is a message said within its window: first when, and how many
// times more.
type repeat struct {
	at time.Time
	n  int
}

// newJournal is the journal of the keeper of dir, on its stderr.
func newJournal(dir string) *journal {
	j := &journal{out: os.Stderr, max: maxLog, clock: clock.RealClock{}, said: map[string]*repeat{}}
	path := filepath.Join(dir, logFile)
	a, err := os.Stderr.Stat()
	if b, berr := os.Lstat(path); err == nil && berr == nil && os.SameFile(a, b) {
		j.size = a.Size()
		j.restart = func() error { return restartStderr(path) }
	}
	return j
}

// restartStderr renames the log at path (this process's stderr) to
// path.1 and has stderr write a new one there: whatever writes to stderr
// (a panic's trace too) goes to the new one.
func restartStderr(path string) error {
	a, err := os.Stderr.Stat()
	if err != nil {
		return err
	}
	if b, err := os.Lstat(path); err != nil || !os.SameFile(a, b) {
		return errors.New("stderr is no longer " + path)
	}
	if err := os.Rename(path, path+".1"); err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND|unix.O_NOFOLLOW, 0o600)
	if err != nil {
		return err
	}
	defer f.Close()
	return unix.Dup3(int(f.Fd()), 2, 0)
}

// log writes msg, unless it was said within repeatWindow (counted then),
// after the counts of the messages whose window is over.
func (j *journal) log(msg string) {
	j.mu.Lock()
	defer j.mu.Unlock()
	now := j.clock.Now()
	for m, r := range j.said {
		if now.Sub(r.at) < repeatWindow {
			continue
		}
		if r.n > 0 {
			j.write(now, fmt.Sprintf("%s (%d times more since %s)", m, r.n, r.at.UTC().Format(time.RFC3339)))
		}
		delete(j.said, m)
	}
	if r := j.said[msg]; r != nil {
		r.n++
		return
	}
	if len(j.said) < maxRepeats {
		j.said[msg] = &repeat{at: now}
	}
	j.write(now, msg)
}

// write writes one line, beginning the log again first when it would take
// it over its cap.
func (j *journal) write(now time.Time, msg string) {
	line := fmt.Sprintf("%s podrun keeper: %s\n", now.UTC().Format(time.RFC3339), msg)
	if j.restart != nil && j.size > 0 && j.size+int64(len(line)) > j.max {
		if err := j.restart(); err != nil {
			line = fmt.Sprintf("%s podrun keeper: beginning %s again: %v\n", now.UTC().Format(time.RFC3339), logFile, err) + line
		}
		j.size = 0 // failed: tried again after as much again
	}
	n, _ := io.WriteString(j.out, line)
	j.size += int64(n)
}
