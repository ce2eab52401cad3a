package pullnet

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"
)

// TestStallCheck: more bytes than at the last sample is progress; the
// same bytes for the deadline is a stall.
func TestStallCheck(t *testing.T) {
	t0 := time.Unix(1000, 0)
	type sample struct {
		at   time.Duration
		read int64
		want bool
	}
	for _, tc := range []struct {
		name    string
		samples []sample
	}{
		{"bytes keep coming", []sample{{30 * time.Second, 10, false}, {60 * time.Second, 20, false}, {90 * time.Second, 30, false}}},
		{"stalled for the deadline", []sample{{30 * time.Second, 5, false}, {60 * time.Second, 5, false}, {90 * time.Second, 5, true}}},
		{"stalled, but not for the deadline yet", []sample{{30 * time.Second, 5, false}, {89 * time.Second, 5, false}}},
		{"never a byte from the start", []sample{{30 * time.Second, 0, false}, {60 * time.Second, 0, true}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := stallCheck{deadline: time.Minute, since: t0}
			for _, x := range tc.samples {
				if got := s.stalled(t0.Add(x.at), x.read); got != x.want {
					t.Fatalf("at %v (read %d): stalled %v, want %v", x.at, x.read, got, x.want)
				}
			}
		})
	}
}

func TestCheckEvery(t *testing.T) {
	for _, tc := range []struct{ deadline, want time.Duration }{
		{time.Minute, 10 * time.Second},
		{5 * time.Minute, 10 * time.Second},
		{4 * time.Second, 2 * time.Second},
	} {
		if got := checkEvery(tc.deadline); got != tc.want {
			t.Errorf("checkEvery(%v) = %v, want %v", tc.deadline, got, tc.want)
		}
	}
}

// stallingBody gives n bytes, then blocks until its context ends.
type stallingBody struct {
	ctx context.Context
	n   int
}

func (b *stallingBody) Read(p []byte) (int, error) {
	if b.n > 0 {
		k := min(len(p), b.n)
		b.n -= k
		return k, nil
	}
	<-b.ctx.Done()
	return 0, b.ctx.Err()
}
func (b *stallingBody) Close() error { return nil }

type fakeRT func(*http.Request) (*http.Response, error)

func (f fakeRT) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// stepUntil steps clk by 1 s while it has waiters, until done is closed;
// it returns the fake time taken.
func stepUntil(t *testing.T, clk *clocktesting.FakeClock, done <-chan struct{}) time.Duration {
	t.Helper()
	start := clk.Now()
	for {
		select {
		case <-done:
			return clk.Since(start)
		default:
		}
		if clk.HasWaiters() {
			clk.Step(time.Second)
		}
		time.Sleep(time.Millisecond)
		if clk.Since(start) > time.Minute {
			t.Fatal("still going a fake minute on")
		}
	}
}

// TestWatchGivesUpAStalledBody: a body that gives some bytes and then
// nothing ends with io.ErrUnexpectedEOF (containerd's fetcher then asks for
// the rest) once the deadline passes; the pull and the link count it.
func TestWatchGivesUpAStalledBody(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Unix(1000, 0))
	l := NewLink(clk, 4*time.Second, 0)
	p := l.Watch(context.Background())
	rt := p.Transport(fakeRT(func(r *http.Request) (*http.Response, error) {
		return &http.Response{StatusCode: 200, Body: &stallingBody{ctx: r.Context(), n: 100}}, nil
	}))
	req, _ := http.NewRequest(http.MethodGet, "http://registry/v2/x/blobs/y", nil)
	resp, err := rt.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadFull(resp.Body, make([]byte, 100)); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	var readErr error
	go func() { _, readErr = resp.Body.Read(make([]byte, 10)); close(done) }()
	took := stepUntil(t, clk, done)
	if !errors.Is(readErr, io.ErrUnexpectedEOF) {
		t.Errorf("reading the stalled body: %v, want io.ErrUnexpectedEOF", readErr)
	}
	if took < 4*time.Second || took > 6*time.Second {
		t.Errorf("given up after %v of fake time, want 4s to 6s (the deadline, checked every 2s)", took)
	}
	resp.Body.Close()
	stalled, n := p.Stop()
	if !stalled || n != 100 {
		t.Errorf("Stop() = %v, %d; want true, 100", stalled, n)
	}
	if l.Stalls() != 1 || l.BytesRead() != 100 {
		t.Errorf("link: %d stalls, %d bytes; want 1, 100", l.Stalls(), l.BytesRead())
	}
}

// TestWatchGivesUpAStalledAnswer: a request whose answer never comes fails
// with ErrStalled after the deadline.
func TestWatchGivesUpAStalledAnswer(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Unix(1000, 0))
	l := NewLink(clk, 4*time.Second, 0)
	p := l.Watch(context.Background())
	rt := p.Transport(fakeRT(func(r *http.Request) (*http.Response, error) {
		<-r.Context().Done()
		return nil, r.Context().Err()
	}))
	done := make(chan struct{})
	var rtErr error
	go func() {
		req, _ := http.NewRequest(http.MethodGet, "http://registry/v2/x/manifests/1", nil)
		_, rtErr = rt.RoundTrip(req)
		close(done)
	}()
	stepUntil(t, clk, done)
	if !errors.Is(rtErr, ErrStalled) || !errors.Is(rtErr, context.Canceled) {
		t.Errorf("RoundTrip: %v, want ErrStalled and context.Canceled", rtErr)
	}
	if stalled, n := p.Stop(); !stalled || n != 0 {
		t.Errorf("Stop() = %v, %d; want true, 0", stalled, n)
	}
}

// TestWatchEndsQuietly: a pull whose requests keep reading is not given
// up, and Stop says it did not stall; without a deadline there is no watch.
func TestWatchEndsQuietly(t *testing.T) {
	for _, deadline := range []time.Duration{4 * time.Second, 0} {
		clk := clocktesting.NewFakeClock(time.Unix(1000, 0))
		l := NewLink(clk, deadline, 0)
		p := l.Watch(context.Background())
		rt := p.Transport(fakeRT(func(*http.Request) (*http.Response, error) {
			return &http.Response{StatusCode: 200, Body: io.NopCloser(strings.NewReader(strings.Repeat("x", 10)))}, nil
		}))
		req, _ := http.NewRequest(http.MethodGet, "http://registry/", nil)
		resp, err := rt.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 10; i++ { // a byte a second
			if _, err := resp.Body.Read(make([]byte, 1)); err != nil {
				t.Fatal(err)
			}
			if deadline > 0 {
				for !clk.HasWaiters() {
					time.Sleep(time.Millisecond)
				}
				clk.Step(time.Second)
			}
		}
		resp.Body.Close()
		if stalled, n := p.Stop(); stalled || n != 10 {
			t.Errorf("deadline %v: Stop() = %v, %d; want false, 10", deadline, stalled, n)
		}
		if l.Stalls() != 0 {
			t.Errorf("deadline %v: %d stalls", deadline, l.Stalls())
		}
	}
}

// TestRateWait: under a cap, reads are cut to the burst and each read waits
// on the clock for its tokens, so the fake time taken is the bytes over
// the rate (less the first burst).
func TestRateWait(t *testing.T) {
	for _, tc := range []struct {
		name                    string
		rate                    int64
		size                    int
		wantBurst               int
		wantAtLeast, wantAtMost time.Duration
	}{
		{"1 MiB at 256 KiB/s", 256 << 10, 1 << 20, 64 << 10, 3500 * time.Millisecond, 4 * time.Second},
		{"small rate: burst is the rate", 1000, 5000, 1000, 4 * time.Second, 4 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Unix(1000, 0)
			clk := clocktesting.NewFakeClock(start)
			l := NewLink(clk, 0, tc.rate)
			if l.burst != tc.wantBurst {
				t.Fatalf("burst %d, want %d", l.burst, tc.wantBurst)
			}
			p := l.Watch(context.Background())
			defer p.Stop()
			rt := p.Transport(fakeRT(func(*http.Request) (*http.Response, error) {
				return &http.Response{StatusCode: 200, Body: io.NopCloser(strings.NewReader(strings.Repeat("x", tc.size)))}, nil
			}))
			req, _ := http.NewRequest(http.MethodGet, "http://registry/", nil)
			resp, err := rt.RoundTrip(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			done := make(chan int)
			go func() {
				total, buf := 0, make([]byte, 1<<20)
				for {
					n, err := resp.Body.Read(buf)
					if n > tc.wantBurst {
						t.Errorf("a read of %d bytes, more than the burst %d", n, tc.wantBurst)
					}
					total += n
					if err != nil {
						done <- total
						return
					}
				}
			}()
			for {
				select {
				case total := <-done:
					if total != tc.size {
						t.Errorf("read %d bytes, want %d", total, tc.size)
					}
					took := clk.Since(start)
					if took < tc.wantAtLeast || took > tc.wantAtMost {
						t.Errorf("took %v of fake time, want %v to %v", took, tc.wantAtLeast, tc.wantAtMost)
					}
					if l.BytesRead() != int64(tc.size) {
						t.Errorf("link counted %d bytes, want %d", l.BytesRead(), tc.size)
					}
					return
				default:
				}
				if clk.HasWaiters() {
					clk.Step(time.Millisecond)
				} else {
					time.Sleep(50 * time.Microsecond)
				}
			}
		})
	}
}

// TestRateWaitEndsWithTheRequest: a read waiting for tokens returns when
// the request's context ends.
func TestRateWaitEndsWithTheRequest(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Unix(1000, 0))
	l := NewLink(clk, 0, 10)
	ctx, cancel := context.WithCancel(context.Background())
	if err := l.wait(ctx, 10); err != nil { // the first burst is free
		t.Fatal(err)
	}
	go func() {
		for !clk.HasWaiters() {
			time.Sleep(time.Millisecond)
		}
		cancel()
	}()
	if err := l.wait(ctx, 10); !errors.Is(err, context.Canceled) {
		t.Errorf("wait: %v, want context.Canceled", err)
	}
}

// TestReceiveBuffer: under a cap, registry connections get a quarter second
// of the rate (at least 16 KiB) as their receive buffer; without, the
// system's.
func TestReceiveBuffer(t *testing.T) {
	for _, tc := range []struct {
		rate int64
		want int
	}{{0, 0}, {1 << 20, 256 << 10}, {1000, 16 << 10}, {2 << 20, 512 << 10}} {
		if got := NewLink(clocktesting.NewFakeClock(time.Unix(0, 0)), 0, tc.rate).ReceiveBuffer(); got != tc.want {
			t.Errorf("rate %d: receive buffer %d, want %d", tc.rate, got, tc.want)
		}
	}
	// The dial of a capped link sets it on TCP connections.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		if c, err := l.Accept(); err == nil {
			c.Close()
		}
	}()
	link := NewLink(clocktesting.NewFakeClock(time.Unix(0, 0)), 0, 1<<20)
	c, err := link.Dial((&net.Dialer{}).DialContext)(context.Background(), "tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	raw, err := c.(*net.TCPConn).SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var got int
	var serr error
	if err := raw.Control(func(fd uintptr) { got, serr = syscall.GetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF) }); err != nil || serr != nil {
		t.Fatal(err, serr)
	}
	// Linux doubles the value asked for (its bookkeeping).
	if got < 256<<10 || got > 512<<10 {
		t.Errorf("SO_RCVBUF %d, want 256 KiB (doubled by Linux: 512 KiB)", got)
	}
}
