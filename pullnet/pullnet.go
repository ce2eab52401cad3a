// Package pullnet is the HTTP side of registry pulls over a bad link: it
// counts the bytes of every registry response body, gives up a request that
// reads no byte for a deadline (the kubelet's
// --image-pull-progress-deadline; containerd's CRI plugin cancels the whole
// pull then, with image_pull_progress_timeout, losing what its copy buffer
// held), and caps the bytes per second of all the pulls of the process
// together with one token bucket.
package pullnet

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/time/rate"
	"k8s.io/utils/clock"
)

// DefaultDeadline is the kubelet's default --image-pull-progress-deadline.
const DefaultDeadline = time.Minute

// maxBurst bounds the bytes a body reads at once under a rate, so that no
// second ever gets much more than the rate.
const maxBurst = 64 << 10

// Link is the process's link to registries: every pull's transport goes
// through it.
type Link struct {
	clock    clock.WithTicker
	deadline time.Duration // 0: none
	limiter  *rate.Limiter // nil: no cap
	burst    int

	read   atomic.Int64 // bytes read from registries, all pulls
	stalls atomic.Int64 // requests given up for want of progress
}

// NewLink returns the link of a process: requests that read nothing for
// deadline (0: never) are given up, and all pulls together read at most
// bytesPerSecond (0: no cap).
func NewLink(c clock.WithTicker, deadline time.Duration, bytesPerSecond int64) *Link {
	l := &Link{clock: c, deadline: deadline}
	if bytesPerSecond > 0 {
		l.burst = int(min(bytesPerSecond, maxBurst))
		l.limiter = rate.NewLimiter(rate.Limit(bytesPerSecond), l.burst)
	}
	return l
}

// Capped says whether the link caps the bytes per second.
func (l *Link) Capped() bool { return l.limiter != nil }

// Deadline is how long a pull may read nothing; 0: for ever.
func (l *Link) Deadline() time.Duration { return l.deadline }

// BytesRead is how many bytes all pulls have read from registries.
func (l *Link) BytesRead() int64 { return l.read.Load() }

// Stalls is how many requests were given up for reading nothing for the deadline.
func (l *Link) Stalls() int64 { return l.stalls.Load() }

// ErrStalled marks a request given up for reading nothing for the deadline.
var ErrStalled = errors.New("no progress")

// Pull is one pull's watch: its open requests and the bytes it read.
type Pull struct {
	link    *Link
	read    atomic.Int64
	stalled atomic.Bool // a request of it was given up
	done    chan struct{}
	stop    chan struct{}

	mu   sync.Mutex
	open map[*request]bool
}

// request is one HTTP request of a pull, from RoundTrip until its body is
// closed.
type request struct {
	cancel  context.CancelFunc
	read    atomic.Int64
	stalled atomic.Bool
	check   stallCheck // the watch's alone
}

// Watch starts watching a pull made with p.Transport until ctx ends or
// p.Stop: a request that reads nothing for the link's deadline is given
// up. Its body then ends with io.ErrUnexpectedEOF, as when the connection is
// cut, which containerd's fetcher answers by asking for the rest (a Range
// request) a few times; a request still waiting for its answer fails.
func (l *Link) Watch(ctx context.Context) *Pull {
	p := &Pull{link: l, open: map[*request]bool{}, done: make(chan struct{}), stop: make(chan struct{})}
	if l.deadline <= 0 {
		close(p.done)
		return p
	}
	go p.watch(ctx)
	return p
}

// checkEvery is how often a pull is looked at: containerd's CRI plugin
// looks every 10 s, or twice per deadline when that is shorter.
func checkEvery(deadline time.Duration) time.Duration {
	return min(10*time.Second, deadline/2)
}

func (p *Pull) watch(ctx context.Context) {
	defer close(p.done)
	tick := p.link.clock.NewTicker(checkEvery(p.link.deadline))
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-p.stop:
			return
		case now := <-tick.C():
			p.mu.Lock()
			for r := range p.open {
				if !r.stalled.Load() && r.check.stalled(now, r.read.Load()) {
					r.stalled.Store(true)
					p.stalled.Store(true)
					p.link.stalls.Add(1)
					r.cancel()
				}
			}
			p.mu.Unlock()
		}
	}
}

// Stop ends the watch; it returns whether a request of the pull was given
// up for want of progress, and the bytes the pull read.
func (p *Pull) Stop() (stalled bool, read int64) {
	select {
	case <-p.stop:
	default:
		close(p.stop)
	}
	<-p.done
	return p.stalled.Load(), p.read.Load()
}

// stallCheck decides, from samples of the bytes a request read, whether
// it made no progress for the deadline (as containerd CRI's
// pullProgressReporter does for a whole pull).
type stallCheck struct {
	deadline time.Duration
	since    time.Time // of the last progress
	read     int64
}

func (s *stallCheck) stalled(now time.Time, read int64) bool {
	if read > s.read {
		s.read, s.since = read, now
		return false
	}
	return now.Sub(s.since) >= s.deadline
}

// Transport wraps rt: the bodies of its responses count towards the pull
// and the link, and read within the link's rate.
func (p *Pull) Transport(rt http.RoundTripper) http.RoundTripper {
	return roundTripper{rt: rt, p: p}
}

type roundTripper struct {
	rt http.RoundTripper
	p  *Pull
}

func (t roundTripper) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx, cancel := context.WithCancel(req.Context())
	r := &request{cancel: cancel, check: stallCheck{deadline: t.p.link.deadline, since: t.p.link.clock.Now()}}
	t.p.mu.Lock()
	t.p.open[r] = true
	t.p.mu.Unlock()
	resp, err := t.rt.RoundTrip(req.WithContext(ctx))
	if err != nil {
		t.p.done1(r)
		if r.stalled.Load() {
			return nil, fmt.Errorf("%w in %v waiting for %s: %w", ErrStalled, t.p.link.deadline, req.URL.Redacted(), err)
		}
		return nil, err
	}
	resp.Body = &body{rc: resp.Body, p: t.p, r: r, ctx: ctx}
	return resp, nil
}

// done1 forgets a request that ended.
func (p *Pull) done1(r *request) {
	p.mu.Lock()
	delete(p.open, r)
	p.mu.Unlock()
	r.cancel()
}

// body counts what is read of a response body and keeps it within the
// link's rate: a read takes at most a burst, then waits for its tokens. A
// body given up for want of progress ends with io.ErrUnexpectedEOF.
type body struct {
	rc     io.ReadCloser
	p      *Pull
	r      *request
	ctx    context.Context
	closed atomic.Bool
}

func (b *body) Read(buf []byte) (int, error) {
	l := b.p.link
	if l.limiter != nil && len(buf) > l.burst {
		buf = buf[:l.burst]
	}
	n, err := b.rc.Read(buf)
	if n > 0 {
		b.r.read.Add(int64(n))
		b.p.read.Add(int64(n))
		l.read.Add(int64(n))
		if l.limiter != nil {
			if werr := l.wait(b.ctx, n); werr != nil && err == nil {
				err = werr
			}
		}
	}
	if err != nil && b.r.stalled.Load() {
		err = io.ErrUnexpectedEOF
	}
	return n, err
}

func (b *body) Close() error {
	if !b.closed.Swap(true) {
		defer b.p.done1(b.r)
	}
	return b.rc.Close()
}

// ReceiveBuffer is the socket receive buffer of registry connections under
// the link's cap, 0 without one (the system's, which grows to megabytes on
// a fast link: the sender would fill it at the link's speed whatever the
// cap). A quarter second of the rate keeps the rate up to 250 ms of round
// trip; at least 16 KiB.
func (l *Link) ReceiveBuffer() int {
	if l.limiter == nil {
		return 0
	}
	return max(int(l.limiter.Limit()/4), 16<<10)
}

// Dialer is a transport's DialContext.
type Dialer func(ctx context.Context, network, addr string) (net.Conn, error)

// Dial wraps dial so that its TCP connections get ReceiveBuffer; without
// a cap it returns dial.
func (l *Link) Dial(dial Dialer) Dialer {
	size := l.ReceiveBuffer()
	if size == 0 {
		return dial
	}
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		if tc, ok := c.(*net.TCPConn); ok {
			if err := tc.SetReadBuffer(size); err != nil {
				c.Close()
				return nil, fmt.Errorf("setting the receive buffer of %s: %w", addr, err)
			}
		}
		return c, nil
	}
}

// wait takes n tokens (n <= the burst), waiting on the link's clock until
// they are there, or until ctx ends.
func (l *Link) wait(ctx context.Context, n int) error {
	now := l.clock.Now()
	delay := l.limiter.ReserveN(now, n).DelayFrom(now)
	if delay <= 0 {
		return nil
	}
	select {
	case <-l.clock.After(delay):
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
