package registry

import (
	"encoding/base64"
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func b64(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }

func TestParseConfigJSON(t *testing.T) {
	data := `{
	  "auths": {
	    "https://index.docker.io/v1/": {"auth": "` + b64("hubuser:hub:pass") + `"},
	    "registry.example.com": {"username": "u", "password": "p", "email": "x@y"},
	    "both.example.com": {"auth": "` + b64("fromauth:a") + `", "username": "ignored", "password": "ignored"},
	    "helper.example.com": {}
	  },
	  "credsStore": "desktop",
	  "HttpHeaders": {"User-Agent": "x"}
	}`
	got, err := ParseConfigJSON([]byte(data))
	if err != nil {
		t.Fatal(err)
	}
	want := DockerConfig{
		"https://index.docker.io/v1/": {Username: "hubuser", Password: "hub:pass"},
		"registry.example.com":        {Username: "u", Password: "p"},
		"both.example.com":            {Username: "fromauth", Password: "a"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("ParseConfigJSON = %#v\nwant %#v", got, want)
	}
}

func TestParseErrors(t *testing.T) {
	for _, tc := range []struct {
		name, data, want string
		legacy           bool
	}{
		{name: "not json", data: `auths: {}`, want: "not a Docker config"},
		{name: "auth not base64", data: `{"auths": {"r.io": {"auth": "%%%"}}}`, want: `registry "r.io": auth is not base64`},
		{name: "auth without colon", data: `{"auths": {"r.io": {"auth": "` + b64("nocolon") + `"}}}`, want: `registry "r.io": auth must be base64 of "username:password"`},
		{name: "entry not an object", data: `{"auths": {"r.io": 3}}`, want: `registry "r.io"`},
		{name: "legacy not an object", data: `[]`, legacy: true, want: "not a .dockercfg"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var err error
			if tc.legacy {
				_, err = ParseDockercfg([]byte(tc.data))
			} else {
				_, err = ParseConfigJSON([]byte(tc.data))
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v; want it to contain %q", err, tc.want)
			}
		})
	}
	// Unpadded base64 is accepted, as some tools write it.
	cfg, err := ParseConfigJSON([]byte(`{"auths": {"r.io": {"auth": "` + strings.TrimRight(b64("a:bc"), "=") + `"}}}`))
	if err != nil || cfg["r.io"] != (Entry{Username: "a", Password: "bc"}) {
		t.Errorf("unpadded auth: %#v, %v", cfg, err)
	}
}

func TestFromSecret(t *testing.T) {
	dcj := `{"auths": {"r.io": {"username": "u", "password": "p"}}}`
	legacy := `{"r.io": {"auth": "` + b64("u:p") + `", "email": "e"}}`
	want := DockerConfig{"r.io": {Username: "u", Password: "p"}}
	for _, tc := range []struct {
		name    string
		secret  corev1.Secret
		wantErr string
	}{
		{name: "dockerconfigjson data", secret: corev1.Secret{Type: corev1.SecretTypeDockerConfigJson, Data: map[string][]byte{".dockerconfigjson": []byte(dcj)}}},
		{name: "dockerconfigjson stringData", secret: corev1.Secret{Type: corev1.SecretTypeDockerConfigJson, StringData: map[string]string{".dockerconfigjson": dcj}}},
		{name: "stringData wins", secret: corev1.Secret{Type: corev1.SecretTypeDockerConfigJson,
			Data: map[string][]byte{".dockerconfigjson": []byte("{")}, StringData: map[string]string{".dockerconfigjson": dcj}}},
		{name: "dockercfg", secret: corev1.Secret{Type: corev1.SecretTypeDockercfg, Data: map[string][]byte{".dockercfg": []byte(legacy)}}},
		{name: "wrong type", secret: corev1.Secret{Type: corev1.SecretTypeOpaque}, wantErr: `type "Opaque" is not kubernetes.io/dockerconfigjson or kubernetes.io/dockercfg`},
		{name: "missing key", secret: corev1.Secret{Type: corev1.SecretTypeDockerConfigJson, Data: map[string][]byte{".dockercfg": []byte(legacy)}}, wantErr: `no ".dockerconfigjson" key`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := FromSecret(&tc.secret)
			switch {
			case tc.wantErr != "":
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Errorf("err = %v; want %q", err, tc.wantErr)
				}
			case err != nil:
				t.Errorf("err = %v", err)
			case !reflect.DeepEqual(got, want):
				t.Errorf("got %#v, want %#v", got, want)
			}
		})
	}
}

// users returns the user names of credentials, in order.
func users(cs []Credential) []string {
	var out []string
	for _, c := range cs {
		out = append(out, c.Username)
	}
	return out
}

func TestKeyringMatching(t *testing.T) {
	var k Keyring
	k.Add("config", DockerConfig{
		"https://index.docker.io/v1/":   {Username: "hub"},
		"registry.example.com":          {Username: "host"},
		"https://registry.example.com/": {Username: "host"}, // same key: one credential
		"registry.example.com/team":     {Username: "team"},
		"http://localhost:5000":         {Username: "local5000"},
		"127.0.0.1:5000/v2/":            {Username: "loop5000"},
		"*.corp.example":                {Username: "wild"},
		"quay.io/coreos":                {Username: "coreos"},
		"::not a url":                   {Username: "skipped"},
	})
	for _, tc := range []struct {
		image string
		want  []string
	}{
		{"busybox", []string{"hub"}},
		{"docker.io/library/busybox:1", []string{"hub"}},
		{"index.docker.io/team/app", []string{"hub"}},
		{"registry.example.com/app:1", []string{"host"}},
		{"registry.example.com/team/app", []string{"team", "host"}}, // most specific first
		{"registry.example.com:443/app", nil},                       // the port must match
		{"sub.registry.example.com/app", nil},                       // as must the number of labels
		{"localhost:5000/app", []string{"local5000"}},               // the scheme does not matter
		{"localhost/app", nil},
		{"127.0.0.1:5000/x/y@sha256:" + strings.Repeat("a", 64), []string{"loop5000"}}, // /v2/ is the whole registry
		{"build.corp.example/app", []string{"wild"}},
		{"a.b.corp.example/app", nil}, // * is one label
		{"quay.io/coreos/etcd", []string{"coreos"}},
		{"quay.io/other/etcd", nil},
		{"Not A Ref", nil},
	} {
		if got := users(k.Lookup(tc.image)); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("Lookup(%q) = %q, want %q", tc.image, got, tc.want)
		}
	}
}

func TestKeyringSourcesInOrder(t *testing.T) {
	var k Keyring
	k.Add(`secret "default/a"`, DockerConfig{"r.io": {Username: "a", Password: "1"}})
	k.Add(`secret "default/b"`, DockerConfig{"r.io/app": {Username: "b", Password: "2"}, "r.io": {Username: "a", Password: "1"}})
	k.Add("/root/.docker/config.json", DockerConfig{"r.io": {Username: "node", Password: "3"}})
	k.Add("empty", DockerConfig{})
	got := k.Lookup("r.io/app:1")
	want := []Credential{
		{Username: "a", Password: "1", Source: `secret "default/a"`},
		{Username: "b", Password: "2", Source: `secret "default/b"`},
		{Username: "a", Password: "1", Source: `secret "default/b"`},
		{Username: "node", Password: "3", Source: "/root/.docker/config.json"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Lookup = %+v\nwant %+v", got, want)
	}
	// Docker Hub credentials under "docker.io" match directly.
	var hub Keyring
	hub.Add("f", DockerConfig{"docker.io": {Username: "d"}})
	if got := users(hub.Lookup("nginx")); !reflect.DeepEqual(got, []string{"d"}) {
		t.Errorf("docker.io key: %q", got)
	}
}

func TestDomainAndAPIHost(t *testing.T) {
	for image, want := range map[string]string{
		"busybox":                  "docker.io",
		"127.0.0.1:5000/app:1":     "127.0.0.1:5000",
		"registry.example.com/a/b": "registry.example.com",
		"localhost/app":            "localhost",
	} {
		if got, err := Domain(image); err != nil || got != want {
			t.Errorf("Domain(%q) = %q, %v; want %q", image, got, err, want)
		}
	}
	if _, err := Domain("Not A Ref"); err == nil {
		t.Error("Domain of an invalid reference: no error")
	}
	if APIHost("docker.io") != "registry-1.docker.io" || APIHost("r.io:5000") != "r.io:5000" {
		t.Error("APIHost")
	}
}

func TestInsecure(t *testing.T) {
	for _, tc := range []struct{ in, want, err string }{
		{in: "registry.lan:5000", want: "registry.lan:5000"},
		{in: "Registry.LAN", want: "registry.lan"},
		{in: "10.0.0.5:80", want: "10.0.0.5:80"},
		{in: "[fd00::1]:5000", want: "[fd00::1]:5000"},
		{in: "http://registry.lan", err: "no scheme"},
		{in: "registry.lan/team", err: "no path"},
		{in: "registry.lan:http", err: "bad port"},
		{in: "registry.lan:0", err: "bad port"},
		{in: "", err: "empty"},
	} {
		got, err := ParseInsecure(tc.in)
		switch {
		case tc.err != "":
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("ParseInsecure(%q) = %q, %v; want error %q", tc.in, got, err, tc.err)
			}
		case err != nil || got != tc.want:
			t.Errorf("ParseInsecure(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
	list := []string{"registry.lan:5000", "other.lan", "[fd00::1]:5000"}
	for host, want := range map[string]bool{
		"registry.lan:5000": true,
		"REGISTRY.lan:5000": true,
		"registry.lan":      false,
		"registry.lan:5001": false,
		"other.lan":         true,
		"other.lan:8443":    true,
		"[fd00::1]:5000":    true,
		"elsewhere:5000":    false,
	} {
		if got := IsInsecure(list, host); got != want {
			t.Errorf("IsInsecure(%q) = %v, want %v", host, got, want)
		}
	}
	for host, want := range map[string]bool{
		"localhost": true, "localhost:5000": true, "127.0.0.1:5000": true, "127.1.2.3": true,
		"[::1]:5000": true, "::1": true, "10.0.0.1:5000": false, "registry.lan": false, "localhost.example.com": false,
	} {
		if got := IsLocalhost(host); got != want {
			t.Errorf("IsLocalhost(%q) = %v, want %v", host, got, want)
		}
	}
}
