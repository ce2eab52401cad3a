package trust

import (
	"context"
	"crypto/sha256"
	"fmt"
	"io"
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

// stamp is what tells the file changed: its content's digest, or why it
// cannot be read. Reading a small file at each check costs microseconds,
// and sees every change (a timestamp may not: a file rewritten in place
// within one clock tick keeps it); what changed is parsed from the bytes
// read, not read again.
type stamp struct {
	sum [sha256.Size]byte
	err string
}

func stampOf(data []byte, err error) stamp {
	s := stamp{sum: sha256.Sum256(data)}
	if err != nil {
		s.err = err.Error()
	}
	return s
}

// NewLive is p, loaded from path (Load's arguments), read again when the
// file changes.
func NewLive(p *Policy, path string, explicit bool, registriesDir string) *Live {
	return &Live{path: path, registriesDir: registriesDir, explicit: explicit, stamp: stampOf(readPolicy(path)), policy: p}
}

// current is the policy as the file is now: nil, nil when there is none.
func (l *Live) current() (*Policy, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	data, err := readPolicy(l.path)
	if s := stampOf(data, err); s != l.stamp {
		l.stamp = s
		l.policy, l.err = load(l.path, data, err, l.explicit, l.registriesDir)
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
