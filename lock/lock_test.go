package lock

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestExclusive: holders never overlap, also within one process (each
// Acquire opens its own descriptor), and waiters are told who holds it.
// The first holder holds until a waiter was told (whether a waiter looks
// while a holder has written its pid is up to the scheduler otherwise).
func TestExclusive(t *testing.T) {
	path := filepath.Join(t.TempDir(), "pods", "default_web.lock")
	first, err := Acquire(context.Background(), path, nil)
	if err != nil {
		t.Fatal(err)
	}
	var inside, maxInside atomic.Int32
	told := make(chan struct{})
	var tell sync.Once
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			l, err := Acquire(context.Background(), path, func(pid int) {
				if pid == os.Getpid() {
					tell.Do(func() { close(told) })
				}
			})
			if err != nil {
				t.Error(err)
				return
			}
			n := inside.Add(1)
			for {
				m := maxInside.Load()
				if n <= m || maxInside.CompareAndSwap(m, n) {
					break
				}
			}
			time.Sleep(5 * time.Millisecond)
			inside.Add(-1)
			if err := l.Release(); err != nil {
				t.Error(err)
			}
		}()
	}
	select {
	case <-told:
	case <-time.After(10 * time.Second): // a hang, not a timing check
		t.Error("no waiter was told the holder's pid")
	}
	if err := first.Release(); err != nil {
		t.Error(err)
	}
	wg.Wait()
	if maxInside.Load() != 1 {
		t.Errorf("%d holders at once", maxInside.Load())
	}
	if st, err := os.Stat(path); err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("lock file: %v %v", st.Mode(), err)
	}
}

// TestWaitEndsWithContext: a waiter gives up when its context ends.
func TestWaitEndsWithContext(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.lock")
	l, err := Acquire(context.Background(), path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release()
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if _, err := Acquire(ctx, path, nil); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Acquire = %v, want the deadline", err)
	}
}

// TestWaiterToldAWrittenPid: a holder has the lock before it writes its
// pid; a waiter that finds the file empty meanwhile is not told pid 0, and
// is told the pid once the file names it.
func TestWaiterToldAWrittenPid(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.lock")
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		t.Fatal(err)
	}
	var told []int
	waiting := func(pid int) { told = append(told, pid) }
	// A waiter tries once at least, whatever its context.
	ctx, cancel := context.WithTimeout(context.Background(), 3*poll)
	defer cancel()
	if _, err := Acquire(ctx, path, waiting); !errors.Is(err, context.DeadlineExceeded) || len(told) != 0 {
		t.Fatalf("the holder's pid not written yet: %v, told %v; want the deadline, told nothing", err, told)
	}
	if _, err := f.WriteString("4242\n"); err != nil {
		t.Fatal(err)
	}
	ctx, cancel = context.WithTimeout(context.Background(), 3*poll)
	defer cancel()
	if _, err := Acquire(ctx, path, waiting); !errors.Is(err, context.DeadlineExceeded) || !slices.Equal(told, []int{4242}) {
		t.Errorf("the holder's pid written: %v, told %v; want the deadline, told 4242 once", err, told)
	}
}

// TestKilledHolder: a holder killed with SIGKILL leaves no lock behind.
func TestKilledHolder(t *testing.T) {
	if os.Getenv("LOCK_HOLDER") != "" {
		if _, err := Acquire(context.Background(), os.Getenv("LOCK_HOLDER"), nil); err != nil {
			os.Exit(2)
		}
		os.Stdout.WriteString("held\n")
		time.Sleep(time.Hour)
	}
	path := filepath.Join(t.TempDir(), "x.lock")
	cmd := exec.Command(os.Args[0], "-test.run=^TestKilledHolder$")
	cmd.Env = append(os.Environ(), "LOCK_HOLDER="+path)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 5)
	if _, err := out.Read(buf); err != nil || string(buf) != "held\n" {
		t.Fatalf("holder: %q %v", buf, err)
	}
	var pid int
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	_, err = Acquire(ctx, path, func(p int) { pid = p })
	cancel()
	if err == nil || pid != cmd.Process.Pid {
		t.Fatalf("while held: err %v, holder %d; want a timeout naming pid %d", err, pid, cmd.Process.Pid)
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	ctx, cancel = context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	l, err := Acquire(ctx, path, nil)
	if err != nil {
		t.Fatalf("after kill -9 of the holder: %v", err)
	}
	b, _ := os.ReadFile(path)
	if string(b) != strconv.Itoa(os.Getpid())+"\n" {
		t.Errorf("lock file names %q, want this process", b)
	}
	l.Release()
}

// TestPodLockLongName: a pod's name may be 253 bytes; its lock file's name
// is short, and the file names the holder and the pod.
func TestPodLockLongName(t *testing.T) {
	p := Pods{Dir: t.TempDir()}
	key := "default/" + strings.Repeat("a", 253)
	unlock, err := p.Lock(context.Background(), key, nil)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(p.Dir, podFile(key)))
	if want := strconv.Itoa(os.Getpid()) + "\n" + key + "\n"; err != nil || string(b) != want {
		t.Errorf("lock file holds %q, %v; want %q", b, err, want)
	}
	unlock(true)
	if entries, _ := os.ReadDir(p.Dir); len(entries) != 0 {
		t.Errorf("left after unlock(gone): %v", entries)
	}
}

// TestRemovedWhileWaited: the holder removes the lock file while another
// waits for it: the waiter, once it has the lock, holds the file the path
// names, so a third one cannot lock it too (it could when the waiter kept
// the removed file's lock: the flock-on-an-unlinked-file race).
func TestRemovedWhileWaited(t *testing.T) {
	p := Pods{Dir: t.TempDir()}
	const key = "default/web"
	unlockA, err := p.Lock(context.Background(), key, nil)
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan func(bool), 1)
	waiting := make(chan struct{})
	go func() {
		unlockB, err := p.Lock(context.Background(), key, func(int) { close(waiting) })
		if err != nil {
			t.Error(err)
		}
		got <- unlockB
	}()
	<-waiting
	unlockA(true)
	unlockB := <-got
	defer unlockB(true)
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if unlockC, err := p.Lock(ctx, key, nil); err == nil {
		unlockC(false)
		t.Fatal("two holders at once")
	}
	// Many lockers removing as they go never overlap.
	var inside, most atomic.Int32
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			for range 20 {
				unlock, err := p.Lock(context.Background(), "default/many", nil)
				if err != nil {
					t.Error(err)
					return
				}
				for n, m := inside.Add(1), most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
				}
				time.Sleep(time.Millisecond)
				inside.Add(-1)
				unlock(i%2 == 0)
			}
		})
	}
	wg.Wait()
	if most.Load() != 1 {
		t.Errorf("%d holders at once", most.Load())
	}
}
