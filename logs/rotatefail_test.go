package logs

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// readBack is what `podrun logs` (all of it) gives of the log at dir.
func readBack(t *testing.T, dir string) []string {
	t.Helper()
	var out bytes.Buffer
	if err := Copy(context.Background(), &out, dir, 0, Options{Tail: -1}); err != nil {
		t.Fatalf("reading the log back: %v", err)
	}
	return strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
}

// checkRun fails unless got is line(first)..line(last) for some first: a
// run of the last lines written, in order, nothing missing in between.
func checkRun(t *testing.T, got []string, last int) {
	t.Helper()
	first := last + 1 - len(got)
	for i, l := range got {
		if l != line(first+i) {
			t.Fatalf("line %d of %d read back: %q, want %q (a gap, a reorder, or not the newest lines)", i, len(got), e(l), e(line(first+i)))
		}
	}
}

// checkCap fails when the log at path has more than files files or one
// over size bytes.
func checkCap(t *testing.T, path string, files int, size int64) {
	t.Helper()
	all, _ := filepath.Glob(path + "*")
	logical := map[string]bool{}
	for _, f := range all {
		if strings.HasSuffix(f, ".tmp") {
			continue
		}
		logical[strings.TrimSuffix(f, ".gz")] = true
		if st, err := os.Stat(f); err == nil && st.Size() > size {
			t.Errorf("%s is %d bytes, over %d", filepath.Base(f), st.Size(), size)
		}
	}
	if len(logical) > files {
		t.Errorf("%d files %v, want at most %d", len(logical), all, files)
	}
}

// TestRotationSurvivesAFailedReopen (issue 35 item 6): the new file of a
// rotation cannot be made — a real EMFILE here, as a process out of file
// descriptors gets, or a file system out of inodes (ENOSPC) — and the log
// stays under its name: `logs` reads it, and the next record rotates it,
// so the cap holds again.
func TestRotationSurvivesAFailedReopen(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "0.log")
	rf, err := openRotating(path, Rotation{MaxSize: 1024, MaxFiles: 3}, fakeClock())
	if err != nil {
		t.Fatal(err)
	}
	defer rf.Close()
	w := NewWriter(rf)
	i := 0
	write := func() {
		t.Helper()
		if err := w.Copy("stdout", strings.NewReader(line(i)+"\n")); err != nil {
			t.Fatal(err)
		}
		i++
	}
	// A record is line(i) and at least 31 bytes (a time of 20, the stream,
	// the tag, the spaces and the newline): write until the next one
	// cannot fit, so that it rotates.
	for rf.size+int64(len(line(i))+31) <= 1024 {
		write()
	}

	// No file descriptor to be had while the next record is written.
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		t.Fatal(err)
	}
	low := lim
	low.Cur = 3
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &low); err != nil {
		t.Fatal(err)
	}
	write()
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		t.Fatal(err)
	}

	if _, err := os.Stat(path); err != nil {
		t.Fatalf("after the failed rotation, the log is not at its name: %v", err)
	}
	checkRun(t, readBack(t, dir), i-1)
	for range 40 { // rotations again, past the one that failed
		write()
	}
	checkCap(t, path, 3, 1024)
	got := readBack(t, dir)
	checkRun(t, got, i-1)
	if len(got) < 10 {
		t.Errorf("only %d lines kept in 3 files of 1 KiB", len(got))
	}
}

// TestRotationOrderSurvivesAClockStepBack (issue 35 item 12): the clock
// steps back an hour (a device without an RTC) and the writer starts again
// (a keeper restart): the rotated files are still read oldest first, and
// those over MaxFiles removed are the oldest, across a second restart too.
func TestRotationOrderSurvivesAClockStepBack(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "0.log")
	at := time.Date(2026, 11, 26, 9, 0, 0, 0, time.UTC)
	clock := func() time.Time { at = at.Add(time.Second); return at }
	rot := Rotation{MaxSize: 1024, MaxFiles: 5}
	i := 0
	run := func(lines int) {
		t.Helper()
		rf, err := openRotating(path, rot, clock)
		if err != nil {
			t.Fatal(err)
		}
		w := NewWriter(rf)
		for range lines {
			if err := w.Copy("stdout", strings.NewReader(line(i)+"\n")); err != nil {
				t.Fatal(err)
			}
			i++
		}
		if err := rf.Close(); err != nil {
			t.Fatal(err)
		}
	}
	run(30) // 4 rotations at 09:00:0x
	at = at.Add(-time.Hour)
	run(10) // 1 rotation at 08:00:0x, older files still there
	got := readBack(t, dir)
	checkRun(t, got, i-1)
	run(10) // restarted again: the list is made from the names
	checkCap(t, path, 5, 1024)
	got = readBack(t, dir)
	checkRun(t, got, i-1)
	if len(got) < 25 {
		t.Errorf("only %d lines kept in 5 files of 1 KiB", len(got))
	}
}

// failingFS is the file system with the failures a test asks for: fail
// is asked before each operation ("open" or "rename", and the names).
type failingFS struct {
	fail func(op, from, to string) error
}

func (f failingFS) OpenFile(name string, flag int, perm os.FileMode) (*os.File, error) {
	if err := f.fail("open", name, ""); err != nil {
		return nil, &os.PathError{Op: "open", Path: name, Err: err}
	}
	return os.OpenFile(name, flag, perm)
}

func (f failingFS) Rename(from, to string) error {
	if err := f.fail("rename", from, to); err != nil {
		return &os.LinkError{Op: "rename", Old: from, New: to, Err: err}
	}
	return os.Rename(from, to)
}

// withFS has Files use fs for the rest of the test.
func withFS(t *testing.T, fs fsys) {
	fileSystem = fs
	t.Cleanup(func() { fileSystem = osFS{} })
}

// TestRotationFailureStreak (issue 35 item 6): the next file cannot be
// made for many records in a row (ENOSPC: the file system is out of
// inodes). The log stays under its name and takes records up to twice its
// size, then drops and counts them; the streak is reported once, and its
// end once; the first rotation that works brings the cap back, and the log
// says what was dropped.
func TestRotationFailureStreak(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "0.log")
	full := false
	withFS(t, failingFS{fail: func(op, from, _ string) error {
		if full && op == "open" && strings.HasSuffix(from, nextSuffix) {
			return syscall.ENOSPC
		}
		return nil
	}})
	lg := openFailing(t, path, 3)
	write := lg.write
	for range 20 {
		write()
	}
	full = true
	for range 30 {
		write()
		if st, err := os.Stat(path); err != nil || st.Size() > 2*1024 {
			t.Fatalf("while rotations fail: %v, %v (want the log at its name, at most twice its size)", st, err)
		}
	}
	if len(lg.reports) != 1 || !strings.Contains(lg.reports[0], "no space left on device") {
		t.Errorf("30 records with rotations failing reported %d times: %q; want once, with the error", len(lg.reports), lg.reports)
	}
	full = false
	write()
	if len(lg.reports) != 2 || !strings.Contains(lg.reports[1], "again") {
		t.Errorf("reports %q: want the end of the streak reported", lg.reports)
	}
	if b, _ := os.ReadFile(path); !strings.Contains(string(b), "records (") || !strings.Contains(string(b), "were dropped: the log could not be written") {
		t.Errorf("no notice of the records dropped in the log after the streak:\n%s", b)
	}
	for range 30 {
		write()
	}
	checkCap(t, path, 3, 1024)
	got := readBack(t, dir)
	checkRun(t, got, lg.n-1)
	if len(got) < 10 {
		t.Errorf("only %d lines kept", len(got))
	}
}

// TestRotationRenameFailures (issue 35 item 6): a rotation that fails
// half way — the next file made, the log renamed, but the next file
// cannot take the log's name — is undone, the log renamed back; when even
// that fails, the writer knows where its file is and gives it its name
// back first. Nothing is lost, and the order holds.
func TestRotationRenameFailures(t *testing.T) {
	for _, backToo := range []bool{false, true} {
		t.Run(map[bool]string{false: "renamed back", true: "rename back fails"}[backToo], func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "0.log")
			failing := false
			withFS(t, failingFS{fail: func(op, from, to string) error {
				switch {
				case !failing || op != "rename":
				case strings.HasSuffix(from, nextSuffix), backToo && to == path:
					return syscall.EIO
				}
				return nil
			}})
			lg := openFailing(t, path, 4)
			write := lg.write
			for range 10 {
				write()
			}
			failing = true
			for n := 0; len(lg.reports) == 0 && n < 12; n++ { // up to the next rotation
				write()
			}
			write()
			_, err := os.Stat(path)
			if backToo != (err != nil) {
				t.Fatalf("after a rotation failed half way: the log at its name: %v; want it there unless renaming it back failed", err)
			}
			if _, err := os.Stat(path + nextSuffix); err == nil {
				t.Errorf("the next file of a failed rotation is left")
			}
			failing = false
			write()
			if _, err := os.Stat(path); err != nil {
				t.Fatalf("the log is not at its name at the first record once renames work: %v", err)
			}
			for range 20 {
				write()
			}
			checkCap(t, path, 4, 2*1024)
			checkRun(t, readBack(t, dir), lg.n-1)
			if len(lg.reports) != 2 {
				t.Errorf("reports %q: want the failure once and its end once", lg.reports)
			}
		})
	}
}

// TestRotatedOrder: rotated files are ordered by their number, never by
// their time; those named by time alone (podrun before numbers) come
// first, by time then counter; the next rotation takes the next number.
func TestRotatedOrder(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "0.log")
	want := []string{
		".20261126-100000", ".20261126-100000.2", ".20261126-100000.10",
		".00000002.20261126-080000.gz", ".00000009.20261126-120000.gz", ".00000010.20261126-070000",
	}
	for _, i := range []int{4, 0, 5, 2, 1, 3} {
		if err := os.WriteFile(path+want[i], nil, 0o640); err != nil {
			t.Fatal(err)
		}
	}
	got := Rotated(path)
	for i := range got {
		got[i] = strings.TrimPrefix(got[i], path)
	}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("Rotated:\n%q\nwant\n%q", got, want)
	}
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC) // before all of them
	rf, err := openRotating(path, Rotation{MaxSize: 100, MaxFiles: 100}, func() time.Time { return at })
	if err != nil {
		t.Fatal(err)
	}
	defer rf.Close()
	w := NewWriter(rf)
	for i := range 2 {
		if err := w.Copy("stdout", strings.NewReader(line(i)+"\n")); err != nil {
			t.Fatal(err)
		}
	}
	if got := Rotated(path); got[len(got)-1] != path+".00000011.20260101-000000" {
		t.Errorf("rotated files %q: want the newest named %s", got, path+".00000011.20260101-000000")
	}
}

// failingLog is a rotating log of 1 KiB files written a numbered line at a
// time, with what it reports.
type failingLog struct {
	t       *testing.T
	w       *Writer
	n       int // the lines written
	reports []string
}

// openFailing opens the log at path (on the failingFS the test set), keeping
// maxFiles files; it is closed with the test.
func openFailing(t *testing.T, path string, maxFiles int) *failingLog {
	t.Helper()
	rf, err := openRotating(path, Rotation{MaxSize: 1024, MaxFiles: maxFiles}, fakeClock())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rf.Close() })
	lg := &failingLog{t: t, w: NewWriter(rf)}
	rf.SetReport(func(m string) { lg.reports = append(lg.reports, m) })
	return lg
}

// write writes the next line.
func (lg *failingLog) write() {
	lg.t.Helper()
	if err := lg.w.Copy("stdout", strings.NewReader(line(lg.n)+"\n")); err != nil {
		lg.t.Fatal(err)
	}
	lg.n++
}
