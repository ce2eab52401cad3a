package keeper

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	testclock "k8s.io/utils/clock/testing"
)

// fileOut is a journal's stderr in a test: a file that restart renames
// and begins again, as restartStderr does with the real one.
type fileOut struct {
	path string
	f    *os.File
}

func (o *fileOut) Write(p []byte) (int, error) { return o.f.Write(p) }

func (o *fileOut) open(t *testing.T) {
	f, err := os.OpenFile(o.path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	o.f = f
	t.Cleanup(func() { f.Close() })
}

func size(path string) int64 {
	st, err := os.Stat(path)
	if err != nil {
		return -1
	}
	return st.Size()
}

// TestJournalCapsTheLog (issue 35 item 7): the keeper's log is capped while
// the keeper runs: over maxLog it is begun again, the one before kept as
// keeper.log.1, so the two never hold more than twice the cap.
func TestJournalCapsTheLog(t *testing.T) {
	path := filepath.Join(t.TempDir(), logFile)
	out := &fileOut{path: path}
	out.open(t)
	at := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	j := &journal{out: out, max: 4096, clock: testclock.NewFakePassiveClock(at), said: map[string]*repeat{},
		restart: func() error {
			out.f.Close()
			if err := os.Rename(path, path+".1"); err != nil {
				return err
			}
			out.open(t)
			return nil
		}}
	for i := range 2000 {
		j.log(fmt.Sprintf("message %06d", i))
		if s := size(path); s > 4096 {
			t.Fatalf("after message %d: keeper.log is %d bytes, over the cap of 4096", i, s)
		}
	}
	if s := size(path + ".1"); s <= 0 || s > 4096 {
		t.Errorf("keeper.log.1: %d bytes, want the log before, at most 4096", s)
	}
	if b, _ := os.ReadFile(path); !strings.HasSuffix(string(b), "message 001999\n") {
		t.Errorf("keeper.log does not end with the last message: %q", b)
	}
}

// TestJournalRepeats (issue 35 item 7): a message said again within a
// minute is counted, not written; the count is written with the next
// message once the minute is over, and the message is written again.
func TestJournalRepeats(t *testing.T) {
	var out strings.Builder
	clk := testclock.NewFakePassiveClock(time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC))
	j := &journal{out: &out, max: 1 << 20, clock: clk, said: map[string]*repeat{}}
	for i := range 1000 {
		j.log("taking x: too many open files")
		j.log(fmt.Sprintf("taking y%d", i%2)) // interleaved repeats are counted too
		clk.SetTime(clk.Now().Add(10 * time.Millisecond))
	}
	if got := strings.Count(out.String(), "\n"); got != 3 {
		t.Fatalf("3000 messages, 3 different, within a minute: %d lines written, want 3:\n%s", got, out.String())
	}
	clk.SetTime(clk.Now().Add(time.Minute))
	j.log("taking x: too many open files")
	want := []string{
		"taking x: too many open files", "taking y0", "taking y1",
		"taking x: too many open files (999 times more since 2026-11-29T10:00:00Z)",
		"taking y0 (499 times more since 2026-11-29T10:00:00Z)",
		"taking y1 (499 times more since 2026-11-29T10:00:00Z)",
		"taking x: too many open files",
	}
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	if len(lines) != len(want) {
		t.Fatalf("lines:\n%s\nwant %d", out.String(), len(want))
	}
	for i, l := range lines {
		_, msg, _ := strings.Cut(l, " podrun keeper: ")
		if i >= 3 && i <= 5 { // the counts come in any order
			if !strings.Contains(strings.Join(want[3:6], "\n"), msg) {
				t.Errorf("line %d: %q, want one of %q", i, msg, want[3:6])
			}
			continue
		}
		if msg != want[i] {
			t.Errorf("line %d: %q, want %q", i, msg, want[i])
		}
	}
}

// TestKeeperLogCappedWhileRunning (issue 35 item 7): a keeper process
// whose stderr is keeper.log (as Client.start opens it) begins the file
// again while it runs: its stderr, not only its messages, moves to the new
// file.
func TestKeeperLogCappedWhileRunning(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, logFile)
	logf, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer logf.Close()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "journal-flood", dir, "1000") // maxLog is 4096 there
	cmd.Stderr = logf
	if out, err := cmd.Output(); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	for _, p := range []string{path, path + ".1"} {
		if s := size(p); s <= 0 || s > 4096 {
			t.Errorf("%s: %d bytes after 1000 messages, want at most the cap of 4096", filepath.Base(p), s)
		}
	}
	if b, _ := os.ReadFile(path); !strings.HasSuffix(string(b), "message 000999\n") {
		t.Errorf("keeper.log does not end with the last message: %q", b)
	}
}
