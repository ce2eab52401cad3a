package e2e

// Registries: pulls from a registry with htpasswd auth (Debian's
// docker-registry on 127.0.0.1), with credentials from an imagePullSecret
// and from a Docker config file, and the Kubernetes reasons when they fail.

import (
	"bytes"
	"compress/gzip"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/containerd/containerd"
	"github.com/containerd/containerd/errdefs"
	"github.com/containerd/containerd/images"
	"github.com/containerd/containerd/remotes/docker"
	corev1 "k8s.io/api/core/v1"

	"github.com/podrun/podrun/internal/testimage"
)

const (
	registryUser = "rg-user"
	registryPass = "rg-pass-0123"
)

// testRegistry is a docker-registry the test started.
type testRegistry struct {
	Addr   string     // 127.0.0.1:PORT
	Access *CmdOutput // its access log (stdout)
	Log    *CmdOutput // its application log (stderr)
}

// startRegistry starts Debian's docker-registry on a free port of
// 127.0.0.1 with htpasswd auth (one user, made with apache2-utils'
// htpasswd -Bbn; none when user is "") and its storage in a temp dir, waits
// until it answers, and stops it by PID when the test ends.
func startRegistry(t *testing.T, user, pass string) testRegistry {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return startRegistryAt(t, addr, user, pass)
}

// startRegistryAt is startRegistry on a given 127.0.0.1:PORT (a test
// starts it where a pod's image already points).
func startRegistryAt(t *testing.T, addr, user, pass string) testRegistry {
	t.Helper()
	const bin = "/usr/bin/docker-registry"
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("%s is not installed (apt-get install docker-registry): %v", bin, err)
	}
	dir := t.TempDir()
	auth := ""
	if user != "" {
		htpasswd, err := exec.Command("/usr/bin/htpasswd", "-Bbn", user, pass).Output()
		if err != nil {
			t.Fatalf("htpasswd -Bbn (apt-get install apache2-utils): %v", err)
		}
		htpasswdFile := filepath.Join(dir, "htpasswd")
		if err := os.WriteFile(htpasswdFile, htpasswd, 0o600); err != nil {
			t.Fatal(err)
		}
		auth = fmt.Sprintf("auth:\n  htpasswd:\n    realm: podrun-test\n    path: %s\n", htpasswdFile)
	}
	config := filepath.Join(dir, "config.yml")
	err := os.WriteFile(config, []byte(fmt.Sprintf(`version: 0.1
log:
  level: info
storage:
  filesystem:
    rootdirectory: %s
  delete:
    enabled: true
http:
  addr: %s
%s`, filepath.Join(dir, "storage"), addr, auth)), 0o644)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "serve", config)
	reg := testRegistry{Addr: addr, Access: &CmdOutput{}, Log: &CmdOutput{}}
	cmd.Stdout, cmd.Stderr = reg.Access, reg.Log
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting %s: %v", bin, err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Logf("started docker-registry pid %d on %s (htpasswd auth user: %q)", cmd.Process.Pid, addr, user)
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
		t.Logf("docker-registry pid %d stopped (%v)", cmd.Process.Pid, cmd.ProcessState)
	})

	// Ready when /v2/ asks for credentials, and takes them (or, without
	// auth, answers).
	client := &http.Client{Timeout: 2 * time.Second}
	eventually(t, 20*time.Second, "docker-registry answering GET /v2/ as expected", func() (bool, string) {
		select {
		case <-exited:
			t.Fatalf("docker-registry exited at start (%v); log:\n%s", cmd.ProcessState, reg.Log.String())
		default:
		}
		err := checkRegistryAuth(client, addr, user, pass)
		return err == nil, fmt.Sprintf("%v; log:\n%s", err, reg.Log.String())
	})
	return reg
}

// checkRegistryAuth checks that GET /v2/ is 401 without credentials and 200 with
// them; with no user, that it is 200.
func checkRegistryAuth(client *http.Client, addr, user, pass string) error {
	tries := []bool{false, true}
	if user == "" {
		tries = []bool{false}
	}
	for _, withAuth := range tries {
		req, err := http.NewRequest(http.MethodGet, "http://"+addr+"/v2/", nil)
		if err != nil {
			return err
		}
		want := http.StatusUnauthorized
		if user == "" {
			want = http.StatusOK
		}
		if withAuth {
			req.SetBasicAuth(user, pass)
			want = http.StatusOK
		}
		resp, err := client.Do(req)
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			return fmt.Errorf("GET /v2/ (credentials: %v): status %s, want %d", withAuth, resp.Status, want)
		}
	}
	return nil
}

// pushImage tags the local image from as ref (unless it is ref), pushes it
// with the credentials (containerd's client, plain HTTP) and deletes the
// local tag, so that only the registry has ref. The tag is deleted again
// when the test ends (podrun pulls it back). It returns the pushed digest.
func pushImage(t *testing.T, reg testRegistry, from, ref, user, pass string) string {
	t.Helper()
	c, ctx := H.Client(t)
	t.Cleanup(func() { deleteImage(t, ref) })
	src, err := c.GetImage(ctx, from)
	if err != nil {
		t.Fatalf("loading %s: %v", from, err)
	}
	if from != ref {
		if _, err := c.ImageService().Create(ctx, images.Image{Name: ref, Target: src.Target()}); err != nil {
			t.Fatalf("tagging %s as %s: %v", from, ref, err)
		}
	}
	authorizer := docker.NewDockerAuthorizer(docker.WithAuthCreds(func(string) (string, string, error) { return user, pass, nil }))
	resolver := docker.NewResolver(docker.ResolverOptions{
		Hosts: docker.ConfigureDefaultRegistries(docker.WithPlainHTTP(docker.MatchAllHosts), docker.WithAuthorizer(authorizer)),
	})
	if err := c.Push(ctx, ref, src.Target(), containerd.WithResolver(resolver)); err != nil {
		t.Fatalf("pushing %s: %v\nregistry log:\n%s", ref, err, reg.Log.String())
	}
	deleteImage(t, ref)
	if _, err := c.GetImage(ctx, ref); !errdefs.IsNotFound(err) {
		t.Fatalf("the local tag %s is still there after deleting it: %v", ref, err)
	}
	return src.Target().Digest.String()
}

// deleteImage removes an image record from containerd (the garbage
// collector then removes what only it referenced).
func deleteImage(t *testing.T, ref string) {
	t.Helper()
	c, ctx := H.Client(t)
	if err := c.ImageService().Delete(ctx, ref, images.SynchronousDelete()); err != nil && !errdefs.IsNotFound(err) {
		t.Errorf("deleting image %s: %v", ref, err)
	}
}

// hasImage reports whether containerd has ref.
func hasImage(t *testing.T, ref string) bool {
	t.Helper()
	c, ctx := H.Client(t)
	_, err := c.GetImage(ctx, ref)
	return err == nil
}

// writeDockerConfig writes a Docker config file with the given "auths" entry
// for host (none when user is "") and returns its path.
func writeDockerConfig(t *testing.T, host, user, pass string) string {
	t.Helper()
	auths := "{}"
	if user != "" {
		auths = fmt.Sprintf(`{%q: {"auth": %q}}`, host, base64.StdEncoding.EncodeToString([]byte(user+":"+pass)))
	}
	p := filepath.Join(t.TempDir(), "config.json")
	if err := os.WriteFile(p, []byte(`{"auths": `+auths+`}`), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// registryPod is a pod on image with imagePullPolicy Always, with an optional
// image pull secret (a kubernetes.io/dockerconfigjson Secret in the same
// file) for registry host.
func registryPod(name, image, secret, host, user, pass string) string {
	pod := fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: %s
spec:
  terminationGracePeriodSeconds: 5
  containers:
  - name: main
    image: %s
    imagePullPolicy: Always
    command: ["sh", "-c", "trap 'exit 0' TERM; sleep 3600 & wait"]
`, name, image)
	if secret == "" {
		return pod
	}
	dockerconfig := fmt.Sprintf(`{"auths":{"http://%s":{"username":%q,"password":%q}}}`, host, user, pass)
	return pod + fmt.Sprintf(`  imagePullSecrets:
  - name: %s
---
apiVersion: v1
kind: Secret
metadata:
  name: %s
type: kubernetes.io/dockerconfigjson
data:
  .dockerconfigjson: %s
`, secret, secret, base64.StdEncoding.EncodeToString([]byte(dockerconfig)))
}

// TestRegistryAuth: a registry with htpasswd auth refuses an anonymous pull
// (ErrImagePull with the registry's 401) and wrong credentials; the pod runs
// with an imagePullSecret; `podrun image pull` takes --registry-config.
func TestRegistryAuth(t *testing.T) {
	H.require(t)
	reg := startRegistry(t, registryUser, registryPass)
	ref := reg.Addr + "/rg-busybox:1"
	digest := pushImage(t, reg, H.Image, ref, registryUser, registryPass)
	// An empty Docker config, so that root's own ~/.docker/config.json plays no part.
	noCreds := writeDockerConfig(t, "", "", "")

	t.Run("without credentials", func(t *testing.T) {
		downAndCheckOnCleanup(t, "rg-anon")
		path := H.WriteManifest(t, "anon.yaml", registryPod("rg-anon", ref, "", "", "", ""))
		stdout, stderr, code := H.Podrun(t, "", "--registry-config", noCreds, "up", "--timeout", "2m", path)
		if code != 1 || stdout != "" {
			t.Fatalf("podrun up without credentials: exit %d, stdout %q; want exit 1 and nothing on stdout; stderr:\n%s", code, stdout, stderr)
		}
		for _, want := range []string{"ErrImagePull", ref, "401 Unauthorized", "podrun has no credentials for " + reg.Addr} {
			if !strings.Contains(stderr, want) {
				t.Errorf("stderr does not say %q:\n%s", want, stderr)
			}
		}
		if hasImage(t, ref) {
			t.Errorf("%s is in containerd after a refused pull", ref)
		}
		stdout, stderr, code = H.Podrun(t, "", "--registry-config", noCreds, "image", "pull", ref)
		if code != 1 || stdout != "" || !strings.Contains(stderr, "ErrImagePull") || !strings.Contains(stderr, "401 Unauthorized") {
			t.Errorf("podrun image pull without credentials: exit %d, stdout %q, stderr:\n%s\nwant exit 1, ErrImagePull and 401 Unauthorized", code, stdout, stderr)
		}
	})

	t.Run("wrong password in the imagePullSecret", func(t *testing.T) {
		downAndCheckOnCleanup(t, "rg-wrong")
		path := H.WriteManifest(t, "wrong.yaml", registryPod("rg-wrong", ref, "rg-wrong-cred", reg.Addr, registryUser, "not-the-password"))
		stdout, stderr, code := H.Podrun(t, "", "--registry-config", noCreds, "up", "--timeout", "2m", path)
		if code != 1 || stdout != "" {
			t.Fatalf("podrun up with a wrong password: exit %d, stdout %q; want exit 1; stderr:\n%s", code, stdout, stderr)
		}
		for _, want := range []string{"ErrImagePull", "401 Unauthorized",
			fmt.Sprintf(`the registry refused the credentials of user %q from secret "default/rg-wrong-cred"`, registryUser)} {
			if !strings.Contains(stderr, want) {
				t.Errorf("stderr does not say %q:\n%s", want, stderr)
			}
		}
		if strings.Contains(stderr, "not-the-password") {
			t.Errorf("stderr shows the password:\n%s", stderr)
		}
	})

	t.Run("with an imagePullSecret", func(t *testing.T) {
		downAndCheckOnCleanup(t, "rg-secret")
		path := H.WriteManifest(t, "secret.yaml", registryPod("rg-secret", ref, "rg-cred", reg.Addr, registryUser, registryPass))
		stdout, stderr, code := H.Podrun(t, "", "--registry-config", noCreds, "up", "--timeout", "2m", path)
		if code != 0 || stdout != "pod/default/rg-secret created (Running)\n" {
			t.Fatalf("podrun up with an imagePullSecret: exit %d, stdout %q; stderr:\n%s\nregistry log:\n%s", code, stdout, stderr, reg.Log.String())
		}
		c, ctx := H.Client(t)
		if img, err := c.GetImage(ctx, ref); err != nil || img.Target().Digest.String() != digest {
			t.Errorf("after up, %s in containerd: %v; want digest %s", ref, err, digest)
		}
		if !strings.Contains(reg.Log.String(), fmt.Sprintf("auth.user.name=%q", registryUser)) &&
			!strings.Contains(reg.Log.String(), "auth.user.name="+registryUser) {
			t.Errorf("the registry's log shows no request authenticated as %s:\n%s", registryUser, reg.Log.String())
		}
	})

	t.Run("image pull with --registry-config", func(t *testing.T) {
		deleteImage(t, ref)
		cfg := writeDockerConfig(t, reg.Addr, registryUser, registryPass)
		stdout, stderr, code := H.Podrun(t, "", "--registry-config", cfg, "image", "pull", ref)
		if want := ref + "\t" + digest + "\n"; code != 0 || stdout != want {
			t.Fatalf("podrun image pull with --registry-config: exit %d, stdout %q, want %q; stderr:\n%s", code, stdout, want, stderr)
		}
		if strings.Contains(stderr, "pulling ") {
			t.Errorf("progress was shown on a stderr that is not a terminal:\n%q", stderr)
		}
		if !hasImage(t, ref) {
			t.Errorf("%s is not in containerd after podrun image pull", ref)
		}
		// The same file through the environment.
		deleteImage(t, ref)
		cmd := exec.Command(H.Bin, append(H.globalArgs(), "image", "pull", ref)...)
		cmd.Env = append(os.Environ(), "PODRUN_REGISTRY_CONFIG="+cfg)
		if out, err := cmd.CombinedOutput(); err != nil || !strings.HasPrefix(string(out), ref+"\t") {
			t.Errorf("PODRUN_REGISTRY_CONFIG=%s podrun image pull: %v\n%s", cfg, err, out)
		}
	})

	t.Run("progress on a terminal", func(t *testing.T) {
		// An image of its own, with a 2 MiB layer that only the registry has.
		ref := reg.Addr + "/rg-progress:1"
		noise := make([]byte, 2<<20)
		if _, err := rand.Read(noise); err != nil {
			t.Fatal(err)
		}
		H.ImportImage(t, testimage.Config{Ref: ref, Files: []testimage.File{{Path: "/rg-noise.bin", Data: noise}}})
		digest := pushImage(t, reg, ref, ref, registryUser, registryPass)
		cfg := writeDockerConfig(t, reg.Addr, registryUser, registryPass)
		args := append(H.globalArgs(), "--registry-config", cfg, "image", "pull", ref)
		quoted := []string{"'" + H.Bin + "'"}
		for _, a := range args {
			quoted = append(quoted, "'"+a+"'")
		}
		// script(1) runs podrun on a pseudo-terminal: stdout and stderr are both the terminal.
		out, err := exec.Command("script", "-qec", strings.Join(quoted, " "), "/dev/null").CombinedOutput()
		t.Logf("podrun image pull on a terminal: %v\n%q", err, out)
		if err != nil {
			t.Fatalf("podrun image pull on a terminal: %v\n%s", err, out)
		}
		for _, want := range []string{"\r\x1b[Kpulling " + ref + ": ", " MiB (100%)\r\x1b[K", ref + "\t" + digest} {
			if !strings.Contains(string(out), want) {
				t.Errorf("the terminal did not show %q:\n%q", want, out)
			}
		}
	})

	t.Run("an explicit --registry-config must exist", func(t *testing.T) {
		missing := filepath.Join(t.TempDir(), "missing.json")
		_, stderr, code := H.Podrun(t, "", "--registry-config", missing, "image", "pull", ref)
		if code != 1 || !strings.Contains(stderr, missing) {
			t.Errorf("podrun image pull with a missing --registry-config: exit %d; stderr:\n%s\nwant exit 1 naming the file", code, stderr)
		}
	})
}

// TestRegistryInputs: manifest and flag problems about registries are
// invalid input (exit 2) and name the field or flag.
func TestRegistryInputs(t *testing.T) {
	H.require(t)
	path := H.WriteManifest(t, "missing-secret.yaml", registryPod("rg-missing", "127.0.0.1:1/rg:1", "", "", "", "")+
		"  imagePullSecrets:\n  - name: rg-nowhere\n")
	_, stderr, code := H.Podrun(t, "", "validate", path)
	if code != 2 || !strings.Contains(stderr, `spec.imagePullSecrets[0].name: Secret "rg-nowhere" not found in namespace "default"`) {
		t.Errorf("podrun validate of a pod naming a missing secret: exit %d; stderr:\n%s", code, stderr)
	}
	_, stderr, code = H.Podrun(t, "", "--insecure-registry", "http://registry.lan", "image", "pull", "registry.lan/x:1")
	if code != 2 || !strings.Contains(stderr, "--insecure-registry") {
		t.Errorf("podrun with --insecure-registry http://registry.lan: exit %d; stderr:\n%s\nwant exit 2 naming the flag", code, stderr)
	}
	_, stderr, code = H.Podrun(t, "", "image", "pull", "Not/A Ref")
	if code != 2 || !strings.Contains(stderr, "InvalidImageName") {
		t.Errorf("podrun image pull of an invalid reference: exit %d; stderr:\n%s\nwant exit 2 and InvalidImageName", code, stderr)
	}
}

// TestRegistryMirror: a hosts.toml under --hosts-dir points docker.io at a
// registry on 127.0.0.1 (as an air-gapped device's containerd would be set
// up): a pod with `image: rg-mirror` (no tag: pulled every time) is pulled
// from it and runs; with that registry stopped, the pod fails with
// ErrImagePull naming it, and nothing public is ever asked.
func TestRegistryMirror(t *testing.T) {
	H.require(t)
	hostsDir := t.TempDir()
	pod := func(name string) string {
		return fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: %s}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: app
    image: rg-mirror
    command: ["sh", "-c", "trap 'exit 0' TERM; while true; do sleep 0.1; done"]
`, name)
	}
	t.Cleanup(func() { deleteImage(t, "docker.io/library/rg-mirror:latest") })
	var addr string
	t.Run("served", func(t *testing.T) {
		reg := startRegistry(t, "", "")
		addr = reg.Addr
		pushImage(t, reg, H.Image, reg.Addr+"/library/rg-mirror:latest", "", "")
		if err := os.MkdirAll(filepath.Join(hostsDir, "docker.io"), 0o755); err != nil {
			t.Fatal(err)
		}
		toml := fmt.Sprintf("server = \"http://%s\"\n\n[host.\"http://%s\"]\n  capabilities = [\"pull\", \"resolve\"]\n", reg.Addr, reg.Addr)
		if err := os.WriteFile(filepath.Join(hostsDir, "docker.io", "hosts.toml"), []byte(toml), 0o644); err != nil {
			t.Fatal(err)
		}
		file := H.WriteManifest(t, "rg-mirror.yaml", pod("rg-mirror"))
		downOnCleanup(t, file)
		if out, stderr, code := H.Podrun(t, "", "--hosts-dir", hostsDir, "up", "--wait=running", file); code != 0 || !strings.Contains(out, "created (Running)") {
			t.Fatalf("up through the mirror: exit %d, %q\n%s", code, out, stderr)
		}
		if !strings.Contains(reg.Access.String()+reg.Log.String(), "/v2/library/rg-mirror/manifests/latest") {
			t.Errorf("the registry was not asked for library/rg-mirror; its log:\n%s", e2eClip(reg.Log.String()))
		}
		pod := podNamed(t, "rg-mirror")
		if img := pod.Status.ContainerStatuses[0].Image; img != "docker.io/library/rg-mirror:latest" {
			t.Errorf("status image %q", img)
		}
	})
	// The registry is stopped now.
	file := H.WriteManifest(t, "rg-mirror-down.yaml", pod("rg-mirror-down"))
	downOnCleanup(t, file)
	_, stderr, code := H.Podrun(t, "", "--hosts-dir", hostsDir, "up", "--timeout", "5s", file)
	if code != 1 || !strings.Contains(stderr, "ErrImagePull") || !strings.Contains(stderr, addr) {
		t.Errorf("up with the mirror stopped: exit %d; want 1, ErrImagePull and %s\n%s", code, addr, stderr)
	}
}

// TestDaemonImagesDir: with no registry at all, a gzip'd image archive
// dropped into the daemon's --images-dir while it runs is imported, and the
// pod waiting on that image starts.
func TestDaemonImagesDir(t *testing.T) {
	H.require(t)
	const ref = "podrun.test/rg-airgap:1"
	t.Cleanup(func() { deleteImage(t, ref) })
	dir, images := t.TempDir(), t.TempDir()
	downOnCleanup(t, "rg-airgap")
	writeInPlace(t, dir, "rg-airgap.yaml", `apiVersion: v1
kind: Pod
metadata: {name: rg-airgap}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: app
    image: `+ref+`
    imagePullPolicy: Never
    command: ["sh", "-c", "trap 'exit 0' TERM; while true; do sleep 0.1; done"]
`)
	d := startDaemon(t, dir, nil, "--resync", "2s", "--settle", "200ms", "--images-dir", images)
	waitDaemonSynced(t, d, 60*time.Second)
	if p, ok := podsByName(t)["rg-airgap"]; ok && allRunning(p) {
		t.Fatal("rg-airgap runs before its image is there")
	}
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if err := testimage.WriteOCIArchive(zw, testimage.Config{Ref: ref}); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	tmp := filepath.Join(images, ".rg-airgap.tar.gz.part")
	if err := os.WriteFile(tmp, buf.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := os.Rename(tmp, filepath.Join(images, "rg-airgap.tar.gz")); err != nil {
		t.Fatal(err)
	}
	waitPodsRunning(t, 60*time.Second, nil, "rg-airgap")
	t.Logf("rg-airgap Running %v after its archive was dropped in", time.Since(start).Round(time.Millisecond))
	waitDaemonLog(t, d, "imported image archive", 5*time.Second)
}

// TestDaemonPullBeforeReplace: a manifest edited to an image that cannot
// be pulled (its registry on 127.0.0.1 is down) keeps the running pod, its
// UID and its tasks; the next good edit replaces it.
func TestDaemonPullBeforeReplace(t *testing.T) {
	H.require(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	down := l.Addr().String() // nothing listens there once closed
	l.Close()
	dir := t.TempDir()
	downOnCleanup(t, "rg-pbk")
	writeInPlace(t, dir, "rg-pbk.yaml", daemonPod{name: "rg-pbk", value: "v1"}.yaml())
	d := startDaemon(t, dir, nil, "--resync", "1s", "--settle", "100ms")
	pods := waitPodsRunning(t, 60*time.Second, nil, "rg-pbk")
	uid, tasks := pods["rg-pbk"].UID, podTasks(t, "rg-pbk")

	bad := strings.Replace(daemonPod{name: "rg-pbk", value: "v2"}.yaml(), "image: "+H.Image, "image: "+down+"/rg-pbk:1", 1)
	writeByRename(t, dir, "rg-pbk.yaml", bad)
	waitDaemonLog(t, d, "keeping the running pod until the new one's image is present", 30*time.Second)
	waitDaemonSyncs(t, d, 3, 30*time.Second)
	if p := podsByName(t)["rg-pbk"]; p.UID != uid || !allRunning(p) {
		t.Errorf("with the new image unpullable: rg-pbk is %s %s, want still Running as %s", p.UID, p.Status.Phase, uid)
	}
	checkSameTasks(t, "rg-pbk", tasks)

	writeByRename(t, dir, "rg-pbk.yaml", daemonPod{name: "rg-pbk", value: "v3"}.yaml())
	pods = waitPodsRunning(t, 60*time.Second, func(p corev1.Pod) bool { return valueEnv(p) == "v3" }, "rg-pbk")
	if pods["rg-pbk"].UID == uid {
		t.Error("the good edit did not replace the pod")
	}
}
