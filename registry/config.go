// Package registry finds the credentials podrun pulls images with, the way
// the kubelet's credential keyring does, and says which registries are
// reached over plain HTTP. It is pure: bytes in, credentials out; it never
// reads files, talks to a registry or prints.
//
// Credentials come from image pull Secrets (kubernetes.io/dockerconfigjson
// and the legacy kubernetes.io/dockercfg) and from a Docker config file
// (~/.docker/config.json). Both map a registry key — a host, host:port, with
// or without a scheme and a path — to a user name and password.
package registry

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// Entry is one registry's credentials in a Docker config.
type Entry struct {
	Username string
	Password string
}

// DockerConfig maps a registry key ("registry.example.com",
// "https://index.docker.io/v1/", "localhost:5000/team") to its credentials.
type DockerConfig map[string]Entry

// rawEntry is an entry as Docker and kubectl write it: "auth" is
// base64("user:password") and wins over username and password, as in the
// kubelet. Other fields (email, identitytoken, registrytoken) are ignored.
type rawEntry struct {
	Auth     string `json:"auth"`
	Username string `json:"username"`
	Password string `json:"password"`
}

// ParseConfigJSON reads the "auths" of a Docker config file
// (~/.docker/config.json) or of the .dockerconfigjson key of a
// kubernetes.io/dockerconfigjson Secret. Entries without credentials (Docker
// writes `"host": {}` when a credential helper holds them) are skipped;
// credential helpers (credsStore, credHelpers) are not run.
func ParseConfigJSON(data []byte) (DockerConfig, error) {
	var doc struct {
		Auths map[string]json.RawMessage `json:"auths"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("not a Docker config (JSON with \"auths\"): %w", err)
	}
	return parseEntries(doc.Auths)
}

// ParseDockercfg reads the legacy ~/.dockercfg format, the .dockercfg key of
// a kubernetes.io/dockercfg Secret: the entries without the "auths" wrapper.
func ParseDockercfg(data []byte) (DockerConfig, error) {
	var entries map[string]json.RawMessage
	if err := json.Unmarshal(data, &entries); err != nil {
		return nil, fmt.Errorf("not a .dockercfg (a JSON object of registries): %w", err)
	}
	return parseEntries(entries)
}

func parseEntries(raw map[string]json.RawMessage) (DockerConfig, error) {
	cfg := DockerConfig{}
	var errs []error
	for _, key := range sortedKeys(raw) {
		var r rawEntry
		if err := json.Unmarshal(raw[key], &r); err != nil {
			errs = append(errs, fmt.Errorf("registry %q: %w", key, err))
			continue
		}
		e := Entry{Username: r.Username, Password: r.Password}
		if r.Auth != "" {
			user, pass, err := decodeAuth(r.Auth)
			if err != nil {
				errs = append(errs, fmt.Errorf("registry %q: %w", key, err))
				continue
			}
			e = Entry{Username: user, Password: pass}
		}
		if e.Username == "" && e.Password == "" {
			continue
		}
		cfg[key] = e
	}
	return cfg, errors.Join(errs...)
}

// decodeAuth splits an "auth" field, base64("user:password").
func decodeAuth(field string) (user, pass string, err error) {
	field = strings.TrimSpace(field)
	decoded, err := base64.StdEncoding.DecodeString(field)
	if err != nil {
		decoded, err = base64.RawStdEncoding.DecodeString(strings.TrimRight(field, "="))
	}
	if err != nil {
		return "", "", fmt.Errorf("auth is not base64: %w", err)
	}
	user, pass, ok := strings.Cut(string(decoded), ":")
	if !ok {
		return "", "", errors.New("auth must be base64 of \"username:password\"")
	}
	return user, pass, nil
}

// Secret types and keys of image pull Secrets.
const (
	TypeDockerConfigJSON = string(corev1.SecretTypeDockerConfigJson) // kubernetes.io/dockerconfigjson
	TypeDockercfg        = string(corev1.SecretTypeDockercfg)        // kubernetes.io/dockercfg
)

// IsPullSecretType reports whether a Secret of this type can be an image pull secret.
func IsPullSecretType(t corev1.SecretType) bool {
	return t == corev1.SecretTypeDockerConfigJson || t == corev1.SecretTypeDockercfg
}

// SecretKey is the data key that holds the credentials of a pull Secret type.
func SecretKey(t corev1.SecretType) string {
	if t == corev1.SecretTypeDockercfg {
		return corev1.DockerConfigKey // .dockercfg
	}
	return corev1.DockerConfigJsonKey // .dockerconfigjson
}

// FromSecret reads the credentials of a kubernetes.io/dockerconfigjson or
// kubernetes.io/dockercfg Secret. stringData wins over data, as the API
// server merges it.
func FromSecret(s *corev1.Secret) (DockerConfig, error) {
	if !IsPullSecretType(s.Type) {
		return nil, fmt.Errorf("type %q is not %s or %s", s.Type, TypeDockerConfigJSON, TypeDockercfg)
	}
	key := SecretKey(s.Type)
	data, ok := s.Data[key]
	if v, set := s.StringData[key]; set {
		data, ok = []byte(v), true
	}
	if !ok {
		return nil, fmt.Errorf("no %q key (required by type %s)", key, s.Type)
	}
	if s.Type == corev1.SecretTypeDockercfg {
		return ParseDockercfg(data)
	}
	return ParseConfigJSON(data)
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
