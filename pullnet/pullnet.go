// Package pullnet is the HTTP side of registry pulls over a bad link: it
// counts the bytes of every registry response body, cancels a pull that
// reads no byte for a deadline while it has requests open (the kubelet's
// --image-pull-progress-deadline, as containerd's CRI plugin does it with
// image_pull_progress_timeout), and caps the bytes per second of all the
// pulls of the process together with one token bucket.
package pullnet

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
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
	stalls atomic.Int64 // pulls cancelled for want of progress
}

// NewLink returns the link of a process: pulls that read nothing for
// deadline (0: never) are cancelled, and all pulls together read at most
// bytesPerSecond (0: no cap).
func NewLink(c clock.WithTicker, deadline time.Duration, bytesPerSecond int64) *Link {
	l := &Link{clock: c, deadline: deadline}
	if bytesPerSecond > 0 {
		l.burst = int(min(bytesPerSecond, maxBurst))
		l.limiter = rate.NewLimiter(rate.Limit(bytesPerSecond), l.burst)
	}
	return l
}

// Deadline is how long a pull may read nothing; 0: for ever.
func (l *Link) Deadline() time.Duration { return l.deadline }

// BytesRead is how many bytes all pulls have read from registries.
func (l *Link) BytesRead() int64 { return l.read.Load() }

// Stalls is how many pulls were cancelled for reading nothing for the deadline.
func (l *Link) Stalls() int64 { return l.stalls.Load() }

// ErrStalled is the cause of a pull cancelled for want of progress.
var ErrStalled = errors.New("no progress")

// Pull is one pull's watch: its open requests and the bytes it read.
type Pull struct {
	link   *Link
	ctx    context.Context
	active atomic.Int32
	read   atomic.Int64
	cancel context.CancelCauseFunc
	done   chan struct{}
	stop   chan struct{}
}

// Watch starts watching a pull: it returns the pull's context, cancelled
// with ErrStalled when the pull has requests open and reads nothing for
// the deadline. Wrap the pull's transports with p.Transport; call p.Stop
// when the pull returns.
func (l *Link) Watch(ctx context.Context) (context.Context, *Pull) {
	ctx, cancel := context.WithCancelCause(ctx)
	p := &Pull{link: l, ctx: ctx, cancel: cancel, done: make(chan struct{}), stop: make(chan struct{})}
	if l.deadline <= 0 {
		close(p.done)
		return ctx, p
	}
	go p.watch(ctx)
	return ctx, p
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
	s := stallCheck{deadline: p.link.deadline, since: p.link.clock.Now()}
	for {
		select {
		case <-ctx.Done():
			return
		case <-p.stop:
			return
		case now := <-tick.C():
			if s.stalled(now, p.active.Load(), p.read.Load()) {
				p.link.stalls.Add(1)
				p.cancel(fmt.Errorf("%w in %v", ErrStalled, p.link.deadline))
				return
			}
		}
	}
}

// Stop ends the watch; it returns whether the pull was cancelled for want of
// progress, and the bytes it read.
func (p *Pull) Stop() (stalled bool, read int64) {
	select {
	case <-p.stop:
	default:
		close(p.stop)
	}
	<-p.done
	p.cancel(nil)
	return p.stalledCause(), p.read.Load()
}

// stalledCause reports whether the pull's context ended with ErrStalled.
func (p *Pull) stalledCause() bool {
	// The watch set the cause before Stop's cancel(nil), which keeps it.
	return errors.Is(context.Cause(p.ctx), ErrStalled)
}

// stallCheck decides, from samples of a pull's open requests and bytes
// read, whether it made no progress for the deadline (containerd CRI's
// pullProgressReporter): a sample with no request open, or with more bytes
// read than the last, is progress.
type stallCheck struct {
	deadline time.Duration
	since    time.Time // of the last progress
	read     int64
}

func (s *stallCheck) stalled(now time.Time, active int32, read int64) bool {
	if active == 0 || read > s.read {
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
	t.p.active.Add(1)
	resp, err := t.rt.RoundTrip(req)
	if err != nil {
		t.p.active.Add(-1)
		return nil, err
	}
	resp.Body = &body{rc: resp.Body, p: t.p, ctx: req.Context()}
	return resp, nil
}

// body counts what is read of a response body and keeps it within the
// link's rate: a read takes at most a burst, then waits for its tokens.
type body struct {
	rc     io.ReadCloser
	p      *Pull
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
		b.p.read.Add(int64(n))
		l.read.Add(int64(n))
		if l.limiter != nil {
			if werr := l.wait(b.ctx, n); werr != nil && err == nil {
				err = werr
			}
		}
	}
	return n, err
}

func (b *body) Close() error {
	if !b.closed.Swap(true) {
		b.p.active.Add(-1)
	}
	return b.rc.Close()
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
