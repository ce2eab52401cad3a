package trust

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"go.podman.io/image/v5/docker"
	imgref "go.podman.io/image/v5/docker/reference"
	"go.podman.io/image/v5/image"
	"go.podman.io/image/v5/signature"
	"go.podman.io/image/v5/types"

	"github.com/podrun/podrun/archivereg"
)

// VerifyArchive checks the image ref at digest, imported from archive (an
// uncompressed tar), against the policy with the sigstore attachments the
// archive's OCI layout carries (the `sha256-HEX.sig` manifest beside the
// image's, as cosign save or skopeo copy put it). It reads them through
// c/image's docker transport from archivereg serving the archive on
// 127.0.0.1 for the time of the check: registries.conf(5) of its own makes
// that the location of ref's repository (never the real registry), so the
// policy sees ref's real name and applies the scopes a pull would. A scope
// that accepts anything reads nothing. A refusal is a *Refusal.
func (p *Policy) VerifyArchive(ctx context.Context, ref, digest string, archive *io.SectionReader) error {
	s, err := p.scoped(ref, digest)
	if err != nil || !s.need {
		return err
	}
	layout, err := archivereg.Open(archive)
	if err != nil {
		return s.refuse(fmt.Errorf("reading the archive's signatures: %w", err))
	}
	return p.allowedOn(ctx, s, layout, "")
}

// allowedOn evaluates the policy on the image s, its repository read from
// src served on loopback for the time of the check, and its lookaside from
// directory lookaside ("": none).
func (p *Policy) allowedOn(ctx context.Context, s scoped, src archivereg.Source, lookaside string) error {
	srv, err := archivereg.Serve(src)
	if err != nil {
		return s.refuse(err)
	}
	defer func() { _ = srv.Close() }()
	sys, cleanup, err := loopbackSystem(s.named, srv.Addr(), srv.Prefix(), lookaside)
	if err != nil {
		return s.refuse(err)
	}
	defer cleanup()
	return p.allowed(ctx, s, sys)
}

// allowed evaluates the policy on the image s, read as sys says.
func (p *Policy) allowed(ctx context.Context, s scoped, sys *types.SystemContext) error {
	dref, err := docker.NewReference(s.named)
	if err != nil {
		return s.refuse(err)
	}
	pc, err := signature.NewPolicyContext(p.policy)
	if err != nil {
		return s.refuse(err)
	}
	defer func() { _ = pc.Destroy() }()
	is, err := dref.NewImageSource(ctx, sys)
	if err != nil {
		return s.refuse(fmt.Errorf("reading its signatures: %w", err))
	}
	defer func() { _ = is.Close() }()
	ok, err := pc.IsRunningImageAllowed(ctx, image.UnparsedInstance(is, nil))
	switch {
	case err != nil:
		return s.refuse(err)
	case !ok:
		return s.refuse(errors.New("not allowed"))
	}
	return nil
}

// loopbackSystem is the c/image context that reads named's repository
// from addr (plain HTTP) under prefix, with sigstore attachments, and
// nothing of the host's registries.conf, registries.d or credentials; its
// lookaside is the directory lookaside ("": an empty one). cleanup
// removes its files.
func loopbackSystem(named imgref.Named, addr, prefix, lookaside string) (*types.SystemContext, func(), error) {
	dir, err := os.MkdirTemp("", "podrun-verify-")
	if err != nil {
		return nil, nil, err
	}
	cleanup := func() { _ = os.RemoveAll(dir) }
	files := loopbackConfig(imgref.TrimNamed(named).Name(), addr, prefix+"/"+imgref.Path(named), filepath.Join(dir, "lookaside"))
	for name, data := range files {
		if err := os.MkdirAll(filepath.Join(dir, filepath.Dir(name)), 0o700); err != nil {
			cleanup()
			return nil, nil, err
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o600); err != nil {
			cleanup()
			return nil, nil, err
		}
	}
	for _, empty := range []string{"registries.conf.d", "lookaside"} {
		if err := os.Mkdir(filepath.Join(dir, empty), 0o700); err != nil {
			cleanup()
			return nil, nil, err
		}
	}
	if lookaside != "" {
		// c/image reads the lookaside of the physical repository,
		// prefix/PATH: prefix stands for lookaside's top.
		if err := os.Symlink(lookaside, filepath.Join(dir, "lookaside", prefix)); err != nil {
			cleanup()
			return nil, nil, err
		}
	}
	return &types.SystemContext{
		SystemRegistriesConfPath:    filepath.Join(dir, "registries.conf"),
		SystemRegistriesConfDirPath: filepath.Join(dir, "registries.conf.d"),
		RegistriesDirPath:           filepath.Join(dir, "registries.d"),
		AuthFilePath:                filepath.Join(dir, "auth.json"), // absent: no credentials
		BlobInfoCacheDir:            dir,
	}, cleanup, nil
}

// loopbackConfig are the files (by name under one directory) of
// loopbackSystem: the repository repo located at addr/path, insecure;
// sigstore attachments read from addr, and its lookaside the empty
// directory lookaside (else c/image reads its default one on the host,
// /var/lib/containers/sigstore: only what the archive carries counts).
func loopbackConfig(repo, addr, path, lookaside string) map[string]string {
	return map[string]string{
		"registries.conf":            fmt.Sprintf("unqualified-search-registries = []\n\n[[registry]]\nprefix = %q\nlocation = %q\ninsecure = true\nblocked = false\n", repo, addr+"/"+path),
		"registries.d/loopback.yaml": fmt.Sprintf("docker:\n  %q:\n    use-sigstore-attachments: true\n    lookaside: %q\n", addr, "file://"+lookaside),
	}
}
