package pullnet

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"
)

// TestStallCheck: no request open, or more bytes than the last sample, is
// progress; the same bytes with a request open for the deadline is a stall.
func TestStallCheck(t *testing.T) {
	t0 := time.Unix(1000, 0)
	type sample struct {
		at     time.Duration
		active int32
		read   int64
		want   bool
	}
	for _, tc := range []struct {
		name    string
		samples []sample
	}{
		{"bytes keep coming", []sample{{30 * time.Second, 1, 10, false}, {60 * time.Second, 1, 20, false}, {90 * time.Second, 1, 30, false}}},
		{"no request open is no stall", []sample{{30 * time.Second, 0, 0, false}, {90 * time.Second, 0, 0, false}}},
		{"stalled for the deadline", []sample{{30 * time.Second, 1, 5, false}, {60 * time.Second, 1, 5, false}, {90 * time.Second, 1, 5, true}}},
		{"stalled, but not for the deadline yet", []sample{{30 * time.Second, 1, 5, false}, {89 * time.Second, 1, 5, false}}},
		{"a request opens after idling", []sample{{50 * time.Second, 0, 0, false}, {100 * time.Second, 1, 0, false}, {110 * time.Second, 1, 0, true}}},
		{"never a byte from the start", []sample{{30 * time.Second, 1, 0, false}, {60 * time.Second, 1, 0, true}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := stallCheck{deadline: time.Minute, since: t0}
			for _, x := range tc.samples {
				if got := s.stalled(t0.Add(x.at), x.active, x.read); got != x.want {
					t.Fatalf("at %v (active %d, read %d): stalled %v, want %v", x.at, x.active, x.read, got, x.want)
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

// TestWatchCancelsAStalledPull: a pull whose body gives some bytes and
// then nothing is cancelled with ErrStalled once the fake clock passes the
// deadline, counted in the link, and Stop says so with the bytes read.
func TestWatchCancelsAStalledPull(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Unix(1000, 0))
	l := NewLink(clk, 4*time.Second, 0)
	ctx, p := l.Watch(context.Background())
	rt := p.Transport(fakeRT(func(r *http.Request) (*http.Response, error) {
		return &http.Response{StatusCode: 200, Body: &stallingBody{ctx: r.Context(), n: 100}}, nil
	}))
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://registry/v2/x/blobs/y", nil)
	resp, err := rt.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadFull(resp.Body, make([]byte, 100)); err != nil {
		t.Fatal(err)
	}
	read := make(chan error, 1)
	go func() { _, err := io.ReadAll(resp.Body); read <- err }()
	for ctx.Err() == nil {
		// Steps of the check interval (2 s), until the watch cancels.
		if !clk.HasWaiters() {
			time.Sleep(time.Millisecond)
			continue
		}
		clk.Step(2 * time.Second)
		time.Sleep(time.Millisecond)
		if clk.Since(time.Unix(1000, 0)) > time.Minute {
			t.Fatal("not cancelled a minute after the body stalled")
		}
	}
	if err := <-read; !errors.Is(err, context.Canceled) {
		t.Errorf("reading the stalled body: %v, want context.Canceled", err)
	}
	resp.Body.Close()
	if !errors.Is(context.Cause(ctx), ErrStalled) {
		t.Errorf("cause %v, want ErrStalled", context.Cause(ctx))
	}
	stalled, n := p.Stop()
	if !stalled || n != 100 {
		t.Errorf("Stop() = %v, %d; want true, 100", stalled, n)
	}
	if l.Stalls() != 1 || l.BytesRead() != 100 {
		t.Errorf("link: %d stalls, %d bytes; want 1, 100", l.Stalls(), l.BytesRead())
	}
	if waited := clk.Since(time.Unix(1000, 0)); waited < 4*time.Second || waited > 6*time.Second {
		t.Errorf("cancelled after %v of fake time, want 4s to 6s (the deadline plus a check interval)", waited)
	}
}

// TestWatchEndsQuietly: a pull that ends before its deadline is not
// cancelled, and Stop says it did not stall; without a deadline there is
// no watch at all.
func TestWatchEndsQuietly(t *testing.T) {
	for _, deadline := range []time.Duration{time.Minute, 0} {
		clk := clocktesting.NewFakeClock(time.Unix(1000, 0))
		l := NewLink(clk, deadline, 0)
		ctx, p := l.Watch(context.Background())
		if stalled, _ := p.Stop(); stalled {
			t.Errorf("deadline %v: Stop says stalled", deadline)
		}
		if ctx.Err() == nil {
			t.Errorf("deadline %v: the pull's context is still alive after Stop", deadline)
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
			_, p := l.Watch(context.Background())
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
