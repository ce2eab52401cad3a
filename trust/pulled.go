package trust

import (
	"context"
	"fmt"
	"strings"

	"go.podman.io/image/v5/docker"
	imgref "go.podman.io/image/v5/docker/reference"
	"go.podman.io/image/v5/types"

	"github.com/podrun/podrun/archivereg"
	"github.com/podrun/podrun/registry"
)

// VerifyPulled is Verify for an image a pull fetched, with its signatures
// read the way the pull read the image: fetch returns the image's manifest
// and its sigstore attachment as the pull's hosts (mirrors), credentials
// and link fetched them, served on 127.0.0.1 for c/image's docker
// transport as VerifyArchive serves an archive's (the policy sees ref's
// real name); fetch is called only when the scope asks for signatures.
// The lookaside registries.d gives ref's repository is read too when it is
// a directory (file://, as c/image's default); a lookaside on a web server
// names the real repository's path, which the loopback cannot stand for:
// such an image is verified as Verify does, straight from its registry
// (insecure, cred). A refusal is a *Refusal.
func (p *Policy) VerifyPulled(ctx context.Context, ref, digest string, insecure bool, cred registry.Credential, fetch func(context.Context) (archivereg.Source, error)) error {
	s, err := p.scoped(ref, digest)
	if err != nil || !s.need {
		return err
	}
	lookaside, err := p.lookasideDir(s.named)
	if err != nil {
		return s.refuse(err)
	}
	if lookaside == "" {
		return p.Verify(ctx, ref, digest, insecure, cred)
	}
	src, err := fetch(ctx)
	if err != nil {
		return s.refuse(fmt.Errorf("reading its signatures: %w", err))
	}
	return p.allowedOn(ctx, s, src, lookaside)
}

// lookasideDir is the top directory of the lookaside registries.d(5) gives
// named's repository (c/image's default when none is configured), or ""
// when it is not a directory (http, https).
func (p *Policy) lookasideDir(named imgref.Named) (string, error) {
	dref, err := docker.NewReference(named)
	if err != nil {
		return "", err
	}
	base, err := docker.SignatureStorageBaseURL(&types.SystemContext{RegistriesDirPath: p.registriesDir}, dref, false)
	if err != nil {
		return "", fmt.Errorf("registries.d: %w", err)
	}
	if base.Scheme != "file" {
		return "", nil
	}
	top, ok := strings.CutSuffix(base.Path, "/"+imgref.Path(named))
	if !ok || top == "" {
		return "", fmt.Errorf("registries.d: lookaside %s does not end with the repository %s", base.Redacted(), imgref.Path(named))
	}
	return top, nil
}
