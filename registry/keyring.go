package registry

import (
	"fmt"
	"net"
	"net/url"
	"path/filepath"
	"sort"
	"strings"

	"github.com/distribution/reference"
)

// Credential is a user name and password for a registry, with where it came
// from (for messages; never the secret itself).
type Credential struct {
	Username string
	Password string
	Source   string // e.g. `secret "default/regcred"` or a file path
}

// Keyring holds credentials from several sources and finds those that apply
// to an image, as the kubelet's BasicDockerKeyring and UnionDockerKeyring do:
// sources are searched in the order they were added (the pod's pull Secrets
// first, then the node's Docker config), and within a source the most
// specific key first.
type Keyring struct {
	groups []group
}

// group is one source's credentials: keys in reverse order, so that
// "quay.io/team" comes before "quay.io".
type group struct {
	index []string
	creds map[string][]Credential
}

// Add adds the credentials of one source. A key is a host (with wildcards:
// "*.example.com"), host:port, optionally with a scheme and a path prefix;
// "/v1/" and "/v2/" paths mean the whole registry, as for Docker Hub's
// "https://index.docker.io/v1/". Keys that are not URLs are skipped.
func (k *Keyring) Add(source string, cfg DockerConfig) {
	g := group{creds: map[string][]Credential{}}
	for _, loc := range sortedKeys(cfg) {
		key, ok := normalizeKey(loc)
		if !ok {
			continue
		}
		e := cfg[loc]
		if _, seen := g.creds[key]; !seen {
			g.index = append(g.index, key)
		}
		g.creds[key] = append(g.creds[key], Credential{Username: e.Username, Password: e.Password, Source: source})
	}
	if len(g.index) == 0 {
		return
	}
	sort.Sort(sort.Reverse(sort.StringSlice(g.index)))
	k.groups = append(k.groups, g)
}

// normalizeKey turns a config key into the kubelet's form: host[:port] and
// an optional path, without scheme.
func normalizeKey(loc string) (string, bool) {
	value := loc
	if !strings.HasPrefix(value, "https://") && !strings.HasPrefix(value, "http://") {
		value = "https://" + value
	}
	parsed, err := url.Parse(value)
	if err != nil || parsed.Host == "" {
		return "", false
	}
	path := parsed.Path
	if strings.HasPrefix(path, "/v2/") || strings.HasPrefix(path, "/v1/") {
		path = path[3:]
	}
	if path != "" && path != "/" {
		return parsed.Host + path, true
	}
	return parsed.Host, true
}

// defaultRegistryKey is the key Docker Hub credentials are stored under
// ("https://index.docker.io/v1/" normalized).
const defaultRegistryKey = "index.docker.io"

// Lookup returns the credentials that apply to an image reference, most
// specific first, each once. The kubelet tries them in this order and
// falls back to an anonymous pull when there are none.
func (k *Keyring) Lookup(image string) []Credential {
	repo, ok := repository(image)
	if !ok || k == nil {
		return nil
	}
	var out []Credential
	seen := map[Credential]bool{}
	add := func(cs []Credential) {
		for _, c := range cs {
			if !seen[c] {
				seen[c] = true
				out = append(out, c)
			}
		}
	}
	for _, g := range k.groups {
		found := false
		for _, key := range g.index {
			if matches(key, repo) {
				add(g.creds[key])
				found = true
			}
		}
		if !found && isDefaultRegistry(repo) {
			add(g.creds[defaultRegistryKey])
		}
	}
	return out
}

// repository is an image's normalized repository name without tag or
// digest: busybox:1 -> docker.io/library/busybox.
func repository(image string) (string, bool) {
	named, err := reference.ParseNormalizedNamed(image)
	if err != nil {
		return "", false
	}
	return named.Name(), true
}

// Domain returns the registry host of an image reference as written in
// normalized references ("docker.io" for Docker Hub images).
func Domain(image string) (string, error) {
	named, err := reference.ParseNormalizedNamed(image)
	if err != nil {
		return "", fmt.Errorf("invalid image reference %q: %w", image, err)
	}
	return reference.Domain(named), nil
}

// APIHost returns the host that serves a registry domain's API: Docker
// Hub's is registry-1.docker.io, every other registry serves its own.
func APIHost(domain string) string {
	if domain == "docker.io" {
		return "registry-1.docker.io"
	}
	return domain
}

// isDefaultRegistry reports whether a normalized repository is on Docker Hub.
func isDefaultRegistry(repo string) bool {
	first, _, _ := strings.Cut(repo, "/")
	return first == "docker.io" || first == "index.docker.io"
}

// matches reports whether a keyring key (host with optional wildcards,
// port, path prefix) applies to a repository, as the kubelet's URLsMatch:
// ports equal, the same number of host labels each matching its glob, and
// the key's path a prefix of the repository's.
func matches(key, repo string) bool {
	glob, err1 := url.Parse("https://" + key)
	target, err2 := url.Parse("https://" + repo)
	if err1 != nil || err2 != nil {
		return false
	}
	globParts, globPort := splitHost(glob.Host)
	targetParts, targetPort := splitHost(target.Host)
	if globPort != targetPort || len(globParts) != len(targetParts) {
		return false
	}
	if !strings.HasPrefix(target.Path, glob.Path) {
		return false
	}
	for i, g := range globParts {
		if ok, err := filepath.Match(g, targetParts[i]); err != nil || !ok {
			return false
		}
	}
	return true
}

func splitHost(hostport string) ([]string, string) {
	host, port, err := net.SplitHostPort(hostport)
	if err != nil {
		host, port = hostport, ""
	}
	return strings.Split(host, "."), port
}
