package e2e

// Signature policy (issue 38 item 1): images signed with sigstore keys by
// tools/sigsign (c/image's copy, as skopeo --sign-by-sigstore-private-key;
// sigstore attachments in Debian's docker-registry on 127.0.0.1) run under a containers-policy.json
// that asks for them; an unsigned image, one signed by another key and a
// tag moved after signing are refused with SignatureValidationFailed
// before any container of the pod exists.

import (
	"compress/gzip"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/podrun/podrun/internal/testimage"
)

// sigKeys is a sigstore key pair in files, as the signer and the policy
// read them.
type sigKeys struct {
	Private, Public, Passphrase string
}

// sigsign builds tools/sigsign (c/image's copy with sigstore signing, what
// skopeo --sign-by-sigstore-private-key does: Debian's skopeo is built
// with sigstore signing disabled) and returns its path.
func sigsign(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "sigsign")
	cmd := exec.Command("go", "build", "-tags", "containers_image_openpgp", "-o", bin, "./tools/sigsign")
	cmd.Dir = ".." // the module root (tests run in e2e/)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building sigsign: %v\n%s", err, out)
	}
	return bin
}

// newSigKeys generates a key pair with sigsign (c/image's generator: ECDSA
// P-256, the private key encrypted as cosign's).
func newSigKeys(t *testing.T, signer, dir, name string) sigKeys {
	t.Helper()
	if out, err := exec.Command(signer, "keys", dir, name).CombinedOutput(); err != nil {
		t.Fatalf("sigsign keys: %v\n%s", err, out)
	}
	return sigKeys{Private: filepath.Join(dir, name+".key"), Public: filepath.Join(dir, name+".pub"), Passphrase: filepath.Join(dir, name+".pass")}
}

// signedCopy copies src to dst (both in a loopback registry), signing dst
// with key, the signature stored as a sigstore attachment per registriesD.
func signedCopy(t *testing.T, signer, registriesD, src, dst string, key sigKeys) {
	t.Helper()
	cmd := exec.Command(signer, "copy", key.Private, key.Passphrase, registriesD, src, dst)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%v: %v\n%s", cmd.Args, err, out)
	}
	t.Logf("signed %s with %s", dst, key.Public)
}

// signaturePolicy writes registries.d (sigstore attachments for every
// registry) and a policy that trusts key for reg and rejects everything
// else.
func signaturePolicy(t *testing.T, dir string, reg testRegistry, key sigKeys) (registriesD, policy string) {
	t.Helper()
	registriesD = filepath.Join(dir, "registries.d")
	if err := os.MkdirAll(registriesD, 0o755); err != nil {
		t.Fatal(err)
	}
	files := map[string]string{
		filepath.Join(registriesD, "default.yaml"): "default-docker:\n  use-sigstore-attachments: true\n",
		filepath.Join(dir, "policy.json"): fmt.Sprintf(`{"default": [{"type": "reject"}],
 "transports": {"docker": {%q: [{"type": "sigstoreSigned", "keyPath": %q, "signedIdentity": {"type": "matchRepoDigestOrExact"}}]}}}`, reg.Addr, key.Public),
	}
	for p, data := range files {
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return registriesD, filepath.Join(dir, "policy.json")
}

// sigSetup is what the signature tests start from: a loopback registry,
// the signer, two key pairs, and a policy that trusts the first for the
// registry (registries.d reading sigstore attachments).
type sigSetup struct {
	reg                 testRegistry
	dir, signer         string
	trusted, other      sigKeys
	registriesD, policy string
}

func newSigSetup(t *testing.T) sigSetup {
	t.Helper()
	H.require(t)
	s := sigSetup{reg: startRegistry(t, "", ""), dir: t.TempDir(), signer: sigsign(t)}
	s.trusted, s.other = newSigKeys(t, s.signer, s.dir, "trusted"), newSigKeys(t, s.signer, s.dir, "other")
	s.registriesD, s.policy = signaturePolicy(t, s.dir, s.reg, s.trusted)
	return s
}

// deleteImagesOf deletes the images of repo (by tag or by digest).
func deleteImagesOf(t *testing.T, repo string) {
	t.Helper()
	c, ctx := H.Client(t)
	imgs, err := c.ImageService().List(ctx)
	if err != nil {
		t.Errorf("listing images: %v", err)
	}
	for _, img := range imgs {
		if strings.HasPrefix(img.Name, repo+":") || strings.HasPrefix(img.Name, repo+"@") {
			deleteImage(t, img.Name)
		}
	}
}

// saveArchive saves ref, with its signatures if the registry has them, as
// an OCI layout archive (sigsign save: the image and its attachment by tag).
func saveArchive(t *testing.T, signer, ref string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "archive.tar")
	cmd := exec.Command(signer, "save", ref, path)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v: %v\n%s", cmd.Args, err, out)
	}
	t.Logf("%s", out)
	return path
}

func gzipString(t *testing.T, data []byte) string {
	t.Helper()
	var b strings.Builder
	zw := gzip.NewWriter(&b)
	if _, err := zw.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// imagesOf are the names of the images whose name starts with prefix.
func imagesOf(t *testing.T, prefix string) []string {
	t.Helper()
	c, ctx := H.Client(t)
	imgs, err := c.ImageService().List(ctx)
	if err != nil {
		t.Fatalf("listing images: %v", err)
	}
	var out []string
	for _, img := range imgs {
		if strings.HasPrefix(img.Name, prefix) {
			out = append(out, img.Name)
		}
	}
	return out
}

// TestSignaturePolicy: a signed image runs by its digest; an unsigned one,
// one signed by another key and a tag moved after it was signed are
// refused before any container of the pod exists, with the reason, the
// image, the policy scope and why; a policy that does not load refuses to
// pull at all.
func TestSignaturePolicy(t *testing.T) {
	s := newSigSetup(t)
	reg, dir, signer, trusted, other, registriesD, policy := s.reg, s.dir, s.signer, s.trusted, s.other, s.registriesD, s.policy
	flags := []string{"--signature-policy", policy, "--registries-d", registriesD}

	src := reg.Addr + "/sig-src:1"
	pushImage(t, reg, H.Image, src, "", "")
	signedCopy(t, signer, registriesD, src, reg.Addr+"/sig-signed:1", trusted)
	signedCopy(t, signer, registriesD, src, reg.Addr+"/sig-other:1", other)
	signedCopy(t, signer, registriesD, src, reg.Addr+"/sig-moved:1", trusted)
	moved := H.ImportImage(t, testimage.Config{Ref: "podrun.test/sig-moved:2", Files: []testimage.File{{Path: "/moved", Data: []byte("not what was signed")}}})
	pushImage(t, reg, moved, reg.Addr+"/sig-moved:1", "", "") // the tag now names an unsigned image
	deleteImage(t, moved)

	t.Run("signed runs by its digest", func(t *testing.T) {
		ref := reg.Addr + "/sig-signed:1"
		t.Cleanup(func() { deleteImage(t, ref) })
		downAndCheckOnCleanup(t, "sig-signed")
		path := H.WriteManifest(t, "signed.yaml", registryPod("sig-signed", ref, "", "", "", ""))
		stdout, stderr, code := H.Podrun(t, "", append(flags, "up", "--timeout", "2m", path)...)
		if code != 0 || stdout != "pod/default/sig-signed created (Running)\n" {
			t.Fatalf("podrun up of a signed image: exit %d, stdout %q; stderr:\n%s\nregistry log:\n%s", code, stdout, stderr, reg.Log.String())
		}
		_, ctx := H.Client(t)
		pinned := 0
		for _, ctr := range podContainers(t, "sig-signed") {
			info, err := ctr.Info(ctx)
			if err != nil {
				t.Fatal(err)
			}
			switch {
			case strings.HasPrefix(info.Image, reg.Addr+"/sig-signed@sha256:"):
				pinned++
				t.Cleanup(func() { deleteImage(t, info.Image) })
			case strings.Contains(info.Image, "sig-signed"):
				t.Errorf("container %s runs image %q, not the verified digest", ctr.ID(), info.Image)
			}
		}
		if pinned != 1 {
			t.Errorf("%d containers run %s by its digest, want 1", pinned, ref)
		}
	})

	for _, tc := range []struct{ name, repo, why string }{
		{"unsigned", "sig-src:1", "signature"},
		{"signed by another key", "sig-other:1", "signature"},
		{"tag moved after signing", "sig-moved:1", "signature"},
	} {
		t.Run(tc.name+" is refused", func(t *testing.T) {
			ref := reg.Addr + "/" + tc.repo
			pod := "sig-" + strings.ReplaceAll(strings.Split(tc.repo, ":")[0], "sig-", "r")
			downAndCheckOnCleanup(t, pod)
			path := H.WriteManifest(t, pod+".yaml", registryPod(pod, ref, "", "", "", ""))
			stdout, stderr, code := H.Podrun(t, "", append(flags, "up", "--timeout", "2m", path)...)
			if code != 1 || stdout != "" {
				t.Fatalf("podrun up of %s: exit %d, stdout %q; want exit 1; stderr:\n%s", tc.name, code, stdout, stderr)
			}
			for _, want := range []string{"SignatureValidationFailed", ref, fmt.Sprintf("scope docker:%q", reg.Addr), tc.why} {
				if !strings.Contains(stderr, want) {
					t.Errorf("stderr does not say %q:\n%s", want, stderr)
				}
			}
			if ctrs := podContainers(t, pod); len(ctrs) > 0 {
				t.Errorf("%d containers of the refused pod exist", len(ctrs))
			}
			if hasImage(t, ref) {
				t.Errorf("the refused %s is in containerd: a later IfNotPresent would run it", ref)
			}
		})
	}

	t.Run("image import is refused", func(t *testing.T) {
		ref := reg.Addr + "/sig-archive:1"
		archive := filepath.Join(t.TempDir(), "archive.tar")
		if err := e2eWriteArchive(archive, testimage.Config{Ref: ref}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { deleteImage(t, ref) })
		stdout, stderr, code := H.Podrun(t, "", append(flags, "image", "import", archive)...)
		if code == 0 || stdout != "" {
			t.Fatalf("podrun image import under a policy asking for signatures: exit %d, stdout %q; stderr:\n%s", code, stdout, stderr)
		}
		for _, want := range []string{"SignatureValidationFailed", ref, fmt.Sprintf("scope docker:%q", reg.Addr)} {
			if !strings.Contains(stderr, want) {
				t.Errorf("stderr does not say %q:\n%s", want, stderr)
			}
		}
		if hasImage(t, ref) {
			t.Errorf("the refused %s is in containerd", ref)
		}
	})

	// Archives carrying their signatures (sigstore attachments in the OCI
	// layout, tagged as a registry holds them): saved from the registry by
	// sigsign, imported from a file and from stdin (gzip), each by a fresh
	// podrun; a pod whose image is never pulled runs the verified digest.
	t.Run("a signed archive imports and runs by its digest", func(t *testing.T) {
		ref := reg.Addr + "/sig-signed:1"
		archive := saveArchive(t, signer, ref)
		t.Cleanup(func() { deleteImagesOf(t, reg.Addr+"/sig-signed") })
		data, err := os.ReadFile(archive)
		if err != nil {
			t.Fatal(err)
		}
		for _, input := range []struct{ name, stdin, arg string }{{"a file", "", archive}, {"stdin, gzip", gzipString(t, data), "-"}} {
			deleteImagesOf(t, reg.Addr+"/sig-signed")
			stdout, stderr, code := H.Podrun(t, input.stdin, append(flags, "image", "import", input.arg)...)
			if code != 0 || !strings.HasPrefix(stdout, ref+"\tsha256:") || strings.Count(stdout, "\n") != 1 {
				t.Fatalf("podrun image import of a signed archive from %s: exit %d, stdout %q (want %s and its digest, alone); stderr:\n%s", input.name, code, stdout, ref, stderr)
			}
			if n := len(imagesOf(t, reg.Addr+"/sig-signed@sha256:")); n != 1 {
				t.Errorf("imported from %s: %d images by digest, want 1 (the verified image)", input.name, n)
			}
			if sigs := imagesOf(t, ""); slices.ContainsFunc(sigs, func(name string) bool { return strings.HasSuffix(name, ".sig") }) {
				t.Errorf("the signature attachment was kept as an image: %q", sigs)
			}
		}
		downAndCheckOnCleanup(t, "sig-archive")
		pod := strings.Replace(registryPod("sig-archive", ref, "", "", "", ""), "imagePullPolicy: Always", "imagePullPolicy: Never", 1)
		path := H.WriteManifest(t, "sig-archive.yaml", pod)
		stdout, stderr, code := H.Podrun(t, "", append(flags, "up", "--timeout", "2m", path)...)
		if code != 0 || stdout != "pod/default/sig-archive created (Running)\n" {
			t.Fatalf("podrun up of the imported signed image (imagePullPolicy Never): exit %d, stdout %q; stderr:\n%s", code, stdout, stderr)
		}
		_, ctx := H.Client(t)
		for _, ctr := range podContainers(t, "sig-archive") {
			info, err := ctr.Info(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(info.Image, "sig-signed") && !strings.HasPrefix(info.Image, reg.Addr+"/sig-signed@sha256:") {
				t.Errorf("container %s runs image %q, not the verified digest", ctr.ID(), info.Image)
			}
		}
	})

	for _, tc := range []struct{ name, repo, why string }{
		{"unsigned", "sig-src", "no signature exists"},
		{"signed by another key", "sig-other", "signature"},
	} {
		t.Run("an archive "+tc.name+" is refused", func(t *testing.T) {
			ref := reg.Addr + "/" + tc.repo + ":1"
			archive := saveArchive(t, signer, ref)
			t.Cleanup(func() { deleteImagesOf(t, reg.Addr+"/"+tc.repo) })
			stdout, stderr, code := H.Podrun(t, "", append(flags, "image", "import", archive)...)
			if code == 0 || stdout != "" {
				t.Fatalf("podrun image import of an archive %s: exit %d, stdout %q; stderr:\n%s", tc.name, code, stdout, stderr)
			}
			for _, want := range []string{"SignatureValidationFailed", ref, fmt.Sprintf("scope docker:%q", reg.Addr), tc.why} {
				if !strings.Contains(stderr, want) {
					t.Errorf("stderr does not say %q:\n%s", want, stderr)
				}
			}
			if left := imagesOf(t, reg.Addr+"/"+tc.repo); len(left) > 0 {
				t.Errorf("the refused archive left images: %q", left)
			}
		})
	}

	// The daemon's images directory: an unsigned archive dropped in is
	// refused (the problem logged, nothing imported), a signed one imported
	// and the pod waiting on it (imagePullPolicy Never) starts.
	t.Run("the images directory verifies archives", func(t *testing.T) {
		const name = "sig-airgap"
		signed, unsigned := reg.Addr+"/sig-signed:1", reg.Addr+"/sig-src:1"
		mdir, idir := t.TempDir(), t.TempDir()
		t.Cleanup(func() {
			deleteImagesOf(t, reg.Addr+"/sig-signed")
			deleteImagesOf(t, reg.Addr+"/sig-src")
		})
		downOnCleanup(t, name)
		writeInPlace(t, mdir, name+".yaml", strings.Replace(registryPod(name, signed, "", "", "", ""), "imagePullPolicy: Always", "imagePullPolicy: Never", 1))
		d := startDaemon(t, mdir, []string{"PODRUN_SIGNATURE_POLICY=" + policy, "PODRUN_REGISTRIES_D=" + registriesD}, "--resync", "1s", "--settle", "100ms", "--images-dir", idir)
		drop := func(ref, file string) {
			data, err := os.ReadFile(saveArchive(t, signer, ref))
			if err != nil {
				t.Fatal(err)
			}
			writeByRename(t, idir, file, string(data))
		}
		drop(unsigned, "unsigned.tar")
		waitDaemonLog(t, d, "A signature was required, but no signature exists", 30*time.Second)
		if left := imagesOf(t, reg.Addr+"/sig-src"); len(left) > 0 {
			t.Errorf("the refused archive left images: %q", left)
		}
		drop(signed, "signed.tar")
		waitPodsRunning(t, 60*time.Second, nil, name)
		_, ctx := H.Client(t)
		for _, ctr := range podContainers(t, name) {
			info, err := ctr.Info(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(info.Image, "sig-signed") && !strings.HasPrefix(info.Image, reg.Addr+"/sig-signed@sha256:") {
				t.Errorf("container %s runs image %q, not the verified digest", ctr.ID(), info.Image)
			}
		}
	})

	// Figures, not checks: the time of `podrun image import` of the signed
	// archive under a policy that accepts anything (nothing read) and under
	// the verifying one (the archive served on loopback, c/image reading its
	// signatures), each run by a fresh podrun, best of 5 alternating.
	t.Run("time of an archive import", func(t *testing.T) {
		accept := filepath.Join(dir, "accept-all.json")
		if err := os.WriteFile(accept, []byte(`{"default": [{"type": "insecureAcceptAnything"}]}`), 0o644); err != nil {
			t.Fatal(err)
		}
		archive := saveArchive(t, signer, reg.Addr+"/sig-signed:1")
		t.Cleanup(func() { deleteImagesOf(t, reg.Addr+"/sig-signed") })
		best := map[string]time.Duration{}
		for range 5 {
			for _, p := range []string{accept, policy} {
				deleteImagesOf(t, reg.Addr+"/sig-signed")
				start := time.Now()
				if _, stderr, code := H.Podrun(t, "", "--signature-policy", p, "--registries-d", registriesD, "image", "import", archive); code != 0 {
					t.Fatalf("podrun image import under %s: exit %d; stderr:\n%s", p, code, stderr)
				}
				if d := time.Since(start); best[p] == 0 || d < best[p] {
					best[p] = d
				}
			}
		}
		fi, err := os.Stat(archive)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("podrun image import of a %d-byte archive, best of 5: %v accepting anything, %v verifying its signatures", fi.Size(), best[accept].Round(time.Millisecond), best[policy].Round(time.Millisecond))
	})

	// Figures, not checks: the peak RSS of `podrun image pull` of the
	// signed image, verified, and under a policy that accepts anything.
	t.Run("memory of a verification", func(t *testing.T) {
		accept := filepath.Join(dir, "accept.json")
		if err := os.WriteFile(accept, []byte(`{"default": [{"type": "insecureAcceptAnything"}]}`), 0o644); err != nil {
			t.Fatal(err)
		}
		ref := reg.Addr + "/sig-signed:1"
		for _, p := range []string{accept, policy, accept, policy} {
			c := exec.Command("/usr/bin/time", append([]string{"-f", "%M", H.Bin}, append(H.globalArgs(), "--signature-policy", p, "--registries-d", registriesD, "image", "pull", ref)...)...)
			out, err := c.CombinedOutput()
			lines := strings.Split(strings.TrimSpace(string(out)), "\n")
			t.Logf("podrun image pull under %s: max RSS %s KiB (%v)", filepath.Base(p), lines[len(lines)-1], err)
			deleteImagesOf(t, reg.Addr+"/sig-signed")
		}
	})

	t.Run("the daemon keeps the running pod on a refused update", func(t *testing.T) {
		const name = "sig-daemon"
		mdir := t.TempDir()
		t.Cleanup(func() { deleteImagesOf(t, reg.Addr+"/sig-signed") })
		downOnCleanup(t, name)
		pod := func(value, image string) string {
			return strings.Replace(daemonPod{name: name, value: value}.yaml(), "image: "+H.Image, "image: "+image, 1)
		}
		writeInPlace(t, mdir, name+".yaml", pod("v1", reg.Addr+"/sig-signed:1"))
		d := startDaemon(t, mdir, []string{"PODRUN_SIGNATURE_POLICY=" + policy, "PODRUN_REGISTRIES_D=" + registriesD}, "--resync", "1s", "--settle", "100ms")
		pods := waitPodsRunning(t, 60*time.Second, nil, name)
		uid, tasks := pods[name].UID, podTasks(t, name)

		writeByRename(t, mdir, name+".yaml", pod("v2", reg.Addr+"/sig-other:1"))
		waitDaemonLog(t, d, "SignatureValidationFailed", 30*time.Second)
		waitDaemonSyncs(t, d, 3, 30*time.Second)
		if p := podsByName(t)[name]; p.UID != uid || !allRunning(p) {
			t.Errorf("with the new image refused: %s is %s %s, want still Running as %s", name, p.UID, p.Status.Phase, uid)
		}
		checkSameTasks(t, name, tasks)
		if hasImage(t, reg.Addr+"/sig-other:1") {
			t.Errorf("the refused image is in containerd")
		}

		// A new pod on a refused image: Pending, the reason in its status.
		const fresh = "sig-daemon-new"
		downOnCleanup(t, fresh)
		writeInPlace(t, mdir, fresh+".yaml", strings.Replace(daemonPod{name: fresh}.yaml(), "image: "+H.Image, "image: "+reg.Addr+"/sig-moved:1", 1))
		eventually(t, 30*time.Second, "podrun status of "+fresh+" saying SignatureValidationFailed", func() (bool, string) {
			stdout, stderr, _ := H.Podrun(t, "", "status", fresh)
			return strings.Contains(stdout, "SignatureValidationFailed") && strings.Contains(stdout, "phase: Pending"), stdout + stderr
		})
		if ctrs := podContainers(t, fresh); len(ctrs) > 0 {
			t.Errorf("%d containers of the refused pod exist", len(ctrs))
		}
	})

	t.Run("signatures come through the pull's mirror", func(t *testing.T) {
		// The pods name the images at 127.0.0.1:1, where nothing answers:
		// its hosts.toml sends the pull to the suite's registry, and the
		// signatures must come the same way.
		const gone = "127.0.0.1:1"
		hostsDir := t.TempDir()
		if err := os.MkdirAll(filepath.Join(hostsDir, gone), 0o755); err != nil {
			t.Fatal(err)
		}
		toml := fmt.Sprintf("server = \"http://%s\"\n\n[host.\"http://%s\"]\n  capabilities = [\"pull\", \"resolve\"]\n", reg.Addr, reg.Addr)
		if err := os.WriteFile(filepath.Join(hostsDir, gone, "hosts.toml"), []byte(toml), 0o644); err != nil {
			t.Fatal(err)
		}
		// Signed as the suite's registry names it: remapped.
		mirrored := filepath.Join(t.TempDir(), "policy.json")
		if err := os.WriteFile(mirrored, fmt.Appendf(nil, `{"default": [{"type": "reject"}],
 "transports": {"docker": {%q: [{"type": "sigstoreSigned", "keyPath": %q, "signedIdentity": {"type": "remapIdentity", "prefix": %q, "signedPrefix": %q}}]}}}`,
			gone, trusted.Public, gone, reg.Addr), 0o644); err != nil {
			t.Fatal(err)
		}
		mflags := []string{"--signature-policy", mirrored, "--registries-d", registriesD, "--hosts-dir", hostsDir}
		t.Cleanup(func() { deleteImagesOf(t, gone+"/sig-signed"); deleteImagesOf(t, gone+"/sig-src") })

		sigReads := func() int {
			return strings.Count(reg.Access.String()+reg.Log.String(), "/sig-signed/manifests/sha256-")
		}
		before := sigReads()
		ref := gone + "/sig-signed:1"
		downAndCheckOnCleanup(t, "sig-mirrored")
		path := H.WriteManifest(t, "mirrored.yaml", registryPod("sig-mirrored", ref, "", "", "", ""))
		stdout, stderr, code := H.Podrun(t, "", append(mflags, "up", "--timeout", "2m", path)...)
		if code != 0 || stdout != "pod/default/sig-mirrored created (Running)\n" {
			t.Fatalf("podrun up of a signed image through a mirror: exit %d, stdout %q; stderr:\n%s\nregistry log:\n%s", code, stdout, stderr, e2eClip(reg.Log.String()))
		}
		if sigReads() <= before {
			t.Errorf("the registry was not asked for the signature attachment; its log:\n%s", e2eClip(reg.Log.String()))
		}

		unsigned := gone + "/sig-src:1"
		downAndCheckOnCleanup(t, "sig-mirrored-unsigned")
		path = H.WriteManifest(t, "mirrored-unsigned.yaml", registryPod("sig-mirrored-unsigned", unsigned, "", "", "", ""))
		stdout, stderr, code = H.Podrun(t, "", append(mflags, "up", "--timeout", "2m", path)...)
		if code != 1 || stdout != "" {
			t.Fatalf("podrun up of an unsigned image through a mirror: exit %d, stdout %q; want exit 1; stderr:\n%s", code, stdout, stderr)
		}
		for _, want := range []string{"SignatureValidationFailed", unsigned, fmt.Sprintf("scope docker:%q", gone), "no signature exists"} {
			if !strings.Contains(stderr, want) {
				t.Errorf("stderr does not say %q:\n%s", want, stderr)
			}
		}
		if hasImage(t, unsigned) {
			t.Errorf("the refused %s is in containerd", unsigned)
		}
	})

	t.Run("a policy that does not load refuses to pull", func(t *testing.T) {
		bad := filepath.Join(dir, "bad.json")
		for _, tc := range []struct{ data, want string }{
			{`{"default": [`, bad},
			{`{"default": [{"type": "trustMe"}]}`, "trustMe"},
			{fmt.Sprintf(`{"default": [{"type": "sigstoreSigned", "keyPath": %q}]}`, filepath.Join(dir, "absent.pub")), "default[0].keyPath"},
		} {
			if err := os.WriteFile(bad, []byte(tc.data), 0o644); err != nil {
				t.Fatal(err)
			}
			ref := reg.Addr + "/sig-signed:1"
			stdout, stderr, code := H.Podrun(t, "", "--signature-policy", bad, "image", "pull", ref)
			if code == 0 || stdout != "" || !strings.Contains(stderr, bad) || !strings.Contains(stderr, tc.want) {
				t.Errorf("podrun image pull under %s: exit %d, stdout %q, stderr:\n%s\nwant a failure naming %s and %q", tc.data, code, stdout, stderr, bad, tc.want)
			}
			if hasImage(t, ref) {
				t.Errorf("%s was pulled under a policy that does not load", ref)
				deleteImage(t, ref)
			}
		}
	})
}
