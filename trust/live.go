package trust

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"

	"github.com/podrun/podrun/archivereg"
	"github.com/podrun/podrun/registry"
)

// Live is the policy file as it is now, for a process that runs on (the
// daemon): read again when the file's content changes, as podman reads it
// for each command and CRI-O for each pull. A policy that no longer loads refuses every image
// that needs verifying (fail closed, the file and the field named); the
// default location removed is no policy, as it is at start.
type Live struct {
	path, registriesDir string
	explicit            bool

	mu     sync.Mutex
	stamp  stamp
	policy *Policy // nil: no policy
	err    error   // why the file as it is now does not load
}

// stamp is what tells the file changed: whether it exists, its content's
// digest, or why it cannot be read. Reading a small file at each check
// costs microseconds, and sees every change (a timestamp may not: a file
// rewritten in place within one clock tick keeps it).
type stamp struct {
	exists bool
	sum    [sha256.Size]byte
	err    string
}

// NewLive is p, loaded from path (Load's arguments), read again when the
// file changes.
func NewLive(p *Policy, path string, explicit bool, registriesDir string) *Live {
	return &Live{path: path, registriesDir: registriesDir, explicit: explicit, stamp: stampOf(path), policy: p}
}

// maxPolicySize bounds the policy file read.
const maxPolicySize = 4 << 20

func stampOf(path string) stamp {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return stamp{}
	}
	if err != nil {
		return stamp{err: err.Error()}
	}
	defer f.Close()
	h := sha256.New()
	n, err := io.Copy(h, io.LimitReader(f, maxPolicySize+1))
	switch {
	case err != nil:
		return stamp{exists: true, err: err.Error()}
	case n > maxPolicySize:
		return stamp{exists: true, err: "too large"}
	}
	s := stamp{exists: true}
	h.Sum(s.sum[:0])
	return s
}

// current is the policy as the file is now: nil, nil when there is none.
func (l *Live) current() (*Policy, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if s := stampOf(l.path); s != l.stamp {
		l.stamp = s
		if s.err != "" {
			l.policy, l.err = nil, fmt.Errorf("signature policy %s: %s", l.path, s.err)
		} else {
			l.policy, l.err = Load(l.path, l.explicit, l.registriesDir)
		}
	}
	return l.policy, l.err
}

// refusal is every image refused while the policy does not load.
func (l *Live) refusal(err error) error {
	return &Refusal{Scope: "none: the policy does not load", Err: fmt.Errorf("%w: nothing runs unverified", err)}
}

// under is check under the policy as it is now: nil without one, every
// image refused while it does not load.
func (l *Live) under(check func(*Policy) error) error {
	p, err := l.current()
	switch {
	case err != nil:
		return l.refusal(err)
	case p == nil:
		return nil
	}
	return check(p)
}

// AllowUnverified is Policy.AllowUnverified under the policy as it is now
// (nil when there is none).
func (l *Live) AllowUnverified(ctx context.Context, ref, digest string) error {
	return l.under(func(p *Policy) error { return p.AllowUnverified(ctx, ref, digest) })
}

// VerifyArchive is Policy.VerifyArchive under the policy as it is now.
func (l *Live) VerifyArchive(ctx context.Context, ref, digest string, archive *io.SectionReader) error {
	return l.under(func(p *Policy) error { return p.VerifyArchive(ctx, ref, digest, archive) })
}

// VerifyPulled is Policy.VerifyPulled under the policy as it is now.
func (l *Live) VerifyPulled(ctx context.Context, ref, digest string, insecure bool, cred registry.Credential, fetch func(context.Context) (archivereg.Source, error)) error {
	return l.under(func(p *Policy) error { return p.VerifyPulled(ctx, ref, digest, insecure, cred, fetch) })
}
