// Package trust decides whether an image may run under the node's signature
// policy, the containers-policy.json(5) that podman, CRI-O and skopeo read,
// with registries.d(5) telling where signatures are (sigstore attachments).
// The verification is go.podman.io/image/v5's signature package, as theirs;
// this package loads the policy failing closed (a file that does not parse,
// an unknown requirement, a key file that is missing), names the policy
// scope that applies to an image, and words a refusal as CRI-O does
// (SignatureValidationFailed).
package trust

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/distribution/reference"
	"go.podman.io/image/v5/docker/policyconfiguration"
	imgref "go.podman.io/image/v5/docker/reference"
	"go.podman.io/image/v5/signature"
	"go.podman.io/image/v5/types"

	"github.com/podrun/podrun/registry"
)

// DefaultPolicy is where podman, CRI-O and skopeo read the policy.
const DefaultPolicy = "/etc/containers/policy.json"

// Policy is a loaded signature policy.
type Policy struct {
	path          string
	policy        *signature.Policy
	registriesDir string
}

// Load reads the policy at path; with explicit false (the default
// location, not a flag), a missing file is no policy: nil, nil. Every
// other failure names the file and the field: nothing runs unverified.
// registriesDir is the registries.d(5) directory ("" for its default).
func Load(path string, explicit bool, registriesDir string) (*Policy, error) {
	data, err := readPolicy(path)
	return load(path, data, err, explicit, registriesDir)
}

// maxPolicySize bounds the policy file read.
const maxPolicySize = 4 << 20

// readPolicy reads the policy file, at most maxPolicySize bytes.
func readPolicy(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxPolicySize+1))
	if err == nil && len(data) > maxPolicySize {
		err = fmt.Errorf("%s: more than %d bytes", path, maxPolicySize)
	}
	return data, err
}

// load is Load of the file at path, read as data (or failing with err).
func load(path string, data []byte, err error, explicit bool, registriesDir string) (*Policy, error) {
	if errors.Is(err, os.ErrNotExist) && !explicit {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("signature policy: %w", err)
	}
	p, err := signature.NewPolicyFromBytes(data)
	if err != nil {
		return nil, fmt.Errorf("signature policy %s: %w", path, err)
	}
	for _, f := range keyFiles(p) {
		if _, err := os.Stat(f.Path); err != nil {
			return nil, fmt.Errorf("signature policy %s: %s: %w", path, f.Field, err)
		}
	}
	if registriesDir != "" {
		if _, err := os.Stat(registriesDir); err != nil {
			return nil, fmt.Errorf("registries.d: %w", err)
		}
	}
	return &Policy{path: path, policy: p, registriesDir: registriesDir}, nil
}

// Path is the policy's file.
func (p *Policy) Path() string { return p.path }

// Refusal is why the policy does not allow an image (the caller names
// the image).
type Refusal struct {
	Scope string // the policy scope that applied ("default" when none)
	Err   error  // why
}

func (r *Refusal) Error() string {
	return fmt.Sprintf("refused by the signature policy (scope %s): %v", r.Scope, r.Err)
}

func (r *Refusal) Unwrap() error { return r.Err }

// Verify checks the image ref (as the pod names it) at digest, the manifest
// the pull resolved, against the policy: its signatures are read from the
// registry for that digest (over plain HTTP when insecure, with cred when
// set), so the pod runs what was verified whatever the tag points at later.
// A refusal is a *Refusal.
func (p *Policy) Verify(ctx context.Context, ref, digest string, insecure bool, cred registry.Credential) error {
	s, err := p.scoped(ref, digest)
	if err != nil || !s.need {
		return err
	}
	sys := &types.SystemContext{RegistriesDirPath: p.registriesDir}
	if insecure {
		sys.DockerInsecureSkipTLSVerify = types.OptionalBoolTrue
	}
	if cred.Username != "" || cred.Password != "" {
		sys.DockerAuthConfig = &types.DockerAuthConfig{Username: cred.Username, Password: cred.Password}
	}
	return p.allowed(ctx, s, sys)
}

// AllowUnverified is nil when the policy lets ref (at digest) run without
// reading its signatures: its scope accepts anything. Else a *Refusal
// (an archive's image is then checked with VerifyArchive).
func (p *Policy) AllowUnverified(_ context.Context, ref, digest string) error {
	s, err := p.scoped(ref, digest)
	if err != nil || !s.need {
		return err
	}
	return s.refuse(errors.New("the policy asks for more than insecureAcceptAnything"))
}

// scoped is an image by digest with the policy scope that applies to it.
type scoped struct {
	named imgref.Canonical
	scope string
	need  bool // the scope asks for more than insecureAcceptAnything
}

func (p *Policy) scoped(ref, digest string) (scoped, error) {
	named, err := pinned(ref, digest)
	if err != nil {
		return scoped{}, fmt.Errorf("verifying %q: %w", ref, err)
	}
	scope, reqs := Scope(p.policy, named)
	return scoped{named: named, scope: scope, need: !acceptsAnything(reqs)}, nil
}

// refuse is the image's refusal for err.
func (s scoped) refuse(err error) error { return &Refusal{Scope: s.scope, Err: err} }

// pinned is ref by digest, in c/image's reference type.
func pinned(ref, digest string) (imgref.Canonical, error) {
	named, err := reference.ParseNormalizedNamed(ref)
	if err != nil {
		return nil, err
	}
	n, err := imgref.ParseNormalizedNamed(reference.TrimNamed(named).String() + "@" + digest)
	if err != nil {
		return nil, err
	}
	c, ok := n.(imgref.Canonical)
	if !ok {
		return nil, fmt.Errorf("%s: not a digest reference", n)
	}
	return c, nil
}

// Scope is the policy scope of transport "docker" that applies to named,
// as c/image chooses it: the exact reference, then each namespace from the
// repository up to the host, then the transport's "" scope; else "default".
// reqs are its requirements.
func Scope(p *signature.Policy, named imgref.Named) (scope string, reqs signature.PolicyRequirements) {
	scopes := p.Transports["docker"]
	candidates := []string{}
	if id, err := policyconfiguration.DockerReferenceIdentity(named); err == nil {
		candidates = append(candidates, id)
	}
	candidates = append(candidates, policyconfiguration.DockerReferenceNamespaces(named)...)
	for _, c := range candidates {
		if r, ok := scopes[c]; ok {
			return fmt.Sprintf("docker:%q", c), r
		}
	}
	if r, ok := scopes[""]; ok {
		return `docker:""`, r
	}
	return "default", p.Default
}

// acceptsAnything reports whether reqs are all insecureAcceptAnything: no
// signature needs reading then.
func acceptsAnything(reqs signature.PolicyRequirements) bool {
	for _, r := range reqs {
		if requirementType(r) != "insecureAcceptAnything" {
			return false
		}
	}
	return len(reqs) > 0
}

// requirementType is r's "type" (the requirement types are c/image's
// private ones: read through their JSON form).
func requirementType(r signature.PolicyRequirement) string {
	var t struct {
		Type string `json:"type"`
	}
	data, err := json.Marshal(r)
	if err != nil || json.Unmarshal(data, &t) != nil {
		return ""
	}
	return t.Type
}

// keyFile is a file a requirement names, with where.
type keyFile struct {
	Field string // e.g. transports.docker["example.com"][0].keyPath
	Path  string
}

// keyFiles lists the files p's requirements read (keys, Fulcio CA, Rekor
// keys, PKI roots): c/image reads them only when an image is verified,
// podrun checks they are there when it starts.
func keyFiles(p *signature.Policy) []keyFile {
	var out []keyFile
	add := func(where string, reqs signature.PolicyRequirements) {
		for i, r := range reqs {
			out = append(out, requirementFiles(fmt.Sprintf("%s[%d]", where, i), r)...)
		}
	}
	add("default", p.Default)
	for _, t := range sortedKeys(p.Transports) {
		for _, s := range sortedKeys(p.Transports[t]) {
			add(fmt.Sprintf("transports.%s[%q]", t, s), p.Transports[t][s])
		}
	}
	return out
}

// requirementFiles are the files one requirement names (its JSON form:
// the requirement types are c/image's private ones).
func requirementFiles(where string, r signature.PolicyRequirement) []keyFile {
	data, err := json.Marshal(r)
	if err != nil {
		return nil
	}
	var f struct {
		KeyPath             string   `json:"keyPath"`
		KeyPaths            []string `json:"keyPaths"`
		RekorPublicKeyPath  string   `json:"rekorPublicKeyPath"`
		RekorPublicKeyPaths []string `json:"rekorPublicKeyPaths"`
		Fulcio              struct {
			CAPath string `json:"caPath"`
		} `json:"fulcio"`
		PKI struct {
			CARootsPath         string `json:"caRootsPath"`
			CAIntermediatesPath string `json:"caIntermediatesPath"`
		} `json:"pki"`
	}
	if json.Unmarshal(data, &f) != nil {
		return nil
	}
	var out []keyFile
	one := func(field, path string) {
		if path != "" {
			out = append(out, keyFile{Field: where + "." + field, Path: path})
		}
	}
	many := func(field string, paths []string) {
		for i, path := range paths {
			one(fmt.Sprintf("%s[%d]", field, i), path)
		}
	}
	one("keyPath", f.KeyPath)
	many("keyPaths", f.KeyPaths)
	one("rekorPublicKeyPath", f.RekorPublicKeyPath)
	many("rekorPublicKeyPaths", f.RekorPublicKeyPaths)
	one("fulcio.caPath", f.Fulcio.CAPath)
	one("pki.caRootsPath", f.PKI.CARootsPath)
	one("pki.caIntermediatesPath", f.PKI.CAIntermediatesPath)
	return out
}
