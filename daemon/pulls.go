package daemon

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"time"

	"k8s.io/utils/clock"

	"github.com/podrun/podrun/engine"
	"github.com/podrun/podrun/printers"
)

// Pull is a pull under way, as the status file shows it (`podrun ps` and
// `podrun status` print it).
type Pull struct {
	Image string    `json:"image"`
	Since time.Time `json:"since"`
	// Done and Total are the bytes fetched of those of the blobs known so
	// far (what a resumed pull had in the store counts as fetched).
	Done       int64 `json:"bytesDone"`
	Total      int64 `json:"bytesTotal"`
	Layers     int   `json:"layers"`
	LayersDone int   `json:"layersDone"`
	// BytesPerSecond is the pull's rate over the last rateWindow (0 when
	// it fetched nothing then: a stalled link shows so), what it had at
	// its start aside.
	BytesPerSecond int64 `json:"bytesPerSecond"`
}

// String is "IMAGE: layer 3/5, 52.0 MiB / 104.0 MiB (50%), 2.0 MiB/s".
func (p Pull) String() string {
	s := p.Image + ":"
	if p.Layers > 0 {
		// The layer being fetched is the one after those done.
		s += fmt.Sprintf(" layer %d/%d,", min(p.LayersDone+1, p.Layers), p.Layers)
	}
	s += fmt.Sprintf(" %s / %s", printers.HumanSize(p.Done), printers.HumanSize(p.Total))
	if p.Total > 0 {
		s += fmt.Sprintf(" (%d%%)", p.Done*100/p.Total)
	}
	if p.BytesPerSecond > 0 {
		s += fmt.Sprintf(", %s/s", printers.HumanSize(p.BytesPerSecond))
	}
	return s
}

// Pulls is the board of the daemon's pulls under way: the images.Progress
// of its pulls, read for the status file and /metrics.
type Pulls struct {
	clock   clock.PassiveClock
	changed chan struct{}

	mu    sync.Mutex
	under map[string]*pullEntry // by image reference
}

// pullEntry is the pull of one image under way.
type pullEntry struct {
	since time.Time
	last  engine.PullProgress
	// samples are the bytes done over the last rateWindow, at most one
	// per sampleEvery, with one before the window as the base; the first
	// is the first Update's (what the pull had at its start).
	samples []sample
}

type sample struct {
	at   time.Time
	done int64
}

// rateWindow is what a pull's rate is measured over; sampleEvery bounds
// the samples kept for it.
const (
	rateWindow  = 10 * time.Second
	sampleEvery = 500 * time.Millisecond
)

// add records done at now.
func (e *pullEntry) add(now time.Time, done int64) {
	if n := len(e.samples); n > 1 && now.Sub(e.samples[n-1].at) < sampleEvery {
		e.samples[n-1] = sample{now, done}
	} else {
		e.samples = append(e.samples, sample{now, done})
	}
	e.trim(now)
}

// trim drops the samples before the window of now, but the last of them
// (the base of the rate).
func (e *pullEntry) trim(now time.Time) {
	start := now.Add(-rateWindow)
	i := 0
	for i+1 < len(e.samples) && !e.samples[i+1].at.After(start) {
		i++
	}
	e.samples = e.samples[i:]
}

// rate is the bytes per second fetched over the window of now (since the
// base sample, or since the window's start when the base is older: an
// Update comes with each progress, so nothing came between the two); 0
// within the pull's first second.
func (e *pullEntry) rate(now time.Time) int64 {
	e.trim(now)
	base := e.samples[0]
	took := now.Sub(base.at)
	took = min(took, rateWindow)
	if took < time.Second {
		return 0
	}
	return int64(float64(max(e.last.Done-base.done, 0)) / took.Seconds())
}

// NewPulls returns an empty board stamped by c.
func NewPulls(c clock.PassiveClock) *Pulls {
	return &Pulls{clock: c, changed: make(chan struct{}, 1), under: map[string]*pullEntry{}}
}

// Update records how far the pull of ref is (images.Progress).
func (b *Pulls) Update(ref string, p engine.PullProgress) {
	b.mu.Lock()
	now := b.clock.Now()
	e := b.under[ref]
	if e == nil {
		e = &pullEntry{since: now}
		b.under[ref] = e
	}
	e.last = p
	e.add(now, p.Done)
	b.mu.Unlock()
	poke(b.changed)
}

// Done says a pull of ref has ended (images.Progress).
func (b *Pulls) Done(ref string) {
	b.mu.Lock()
	delete(b.under, ref)
	b.mu.Unlock()
	poke(b.changed)
}

// List is the pulls under way, by image.
func (b *Pulls) List() []Pull {
	b.mu.Lock()
	defer b.mu.Unlock()
	now := b.clock.Now()
	out := make([]Pull, 0, len(b.under))
	for ref, e := range b.under {
		out = append(out, Pull{Image: ref, Since: e.since.UTC(), Done: e.last.Done, Total: e.last.Total,
			Layers: e.last.Layers, LayersDone: e.last.LayersDone, BytesPerSecond: e.rate(now)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Image < out[j].Image })
	return out
}

// remaining is how many pulls are under way and the bytes they have left
// to fetch, of the blobs known so far.
func (b *Pulls) remaining() (pulls int, bytes int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, e := range b.under {
		bytes += max(e.last.Total-e.last.Done, 0)
	}
	return len(b.under), bytes
}

// pullsEvery is how often, at most, the status file is written again for
// the progress of pulls.
const pullsEvery = time.Second

// publishPulls writes the status file again when the pulls under way
// change, at most every pullsEvery, until ctx ends; the channel it returns
// is closed once it no longer writes.
func (d *Daemon) publishPulls(ctx context.Context) <-chan struct{} {
	done := make(chan struct{})
	if d.o.Pulls == nil {
		close(done)
		return done
	}
	go func() {
		defer close(done)
		for {
			select {
			case <-ctx.Done():
				return
			case <-d.o.Pulls.changed:
			}
			d.rewriteStatus()
			select {
			case <-ctx.Done():
				return
			case <-d.clock.After(pullsEvery):
			}
		}
	}()
	return done
}
