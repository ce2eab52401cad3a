package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestSignaturePolicyFollowsItsFile: the daemon reads its policy file
// again when it changes, with no restart. A pod whose image is signed by a
// key the policy does not trust waits (SignatureValidationFailed); the
// policy is changed (by rename, as a configuration tool writes it) to
// trust that key, and the pod runs at the image back-off's next try. The
// policy is then broken: a new pod is refused naming the file and the
// field, and the running pod is untouched.
func TestSignaturePolicyFollowsItsFile(t *testing.T) {
	s := newSigSetup(t)
	reg, dir, signer, trusted, other, registriesD, policy := s.reg, s.dir, s.signer, s.trusted, s.other, s.registriesD, s.policy
	src := reg.Addr + "/sig-live-src:1"
	pushImage(t, reg, H.Image, src, "", "")
	ref := reg.Addr + "/sig-live:1"
	signedCopy(t, signer, registriesD, src, ref, other)
	t.Cleanup(func() { deleteImagesOf(t, reg.Addr+"/sig-live") })

	const name = "sig-live"
	mdir := t.TempDir()
	downOnCleanup(t, name)
	writeInPlace(t, mdir, name+".yaml", strings.Replace(daemonPod{name: name}.yaml(), "image: "+H.Image, "image: "+ref, 1))
	d := startDaemon(t, mdir, []string{"PODRUN_SIGNATURE_POLICY=" + policy, "PODRUN_REGISTRIES_D=" + registriesD}, "--resync", "1s", "--settle", "100ms")
	waitDaemonLog(t, d, "SignatureValidationFailed", 30*time.Second)
	if ctrs := podContainers(t, name); len(ctrs) > 0 {
		t.Fatalf("%d containers of the refused pod exist", len(ctrs))
	}

	// The policy now trusts the other key: written beside, then renamed.
	replacePolicy := func(data string) {
		t.Helper()
		next := filepath.Join(dir, "policy.json.next")
		if err := os.WriteFile(next, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(next, policy); err != nil {
			t.Fatal(err)
		}
	}
	old, err := os.ReadFile(policy)
	if err != nil {
		t.Fatal(err)
	}
	replacePolicy(strings.Replace(string(old), trusted.Public, other.Public, 1))
	changed := time.Now()
	pods := waitPodsRunning(t, 60*time.Second, nil, name)
	t.Logf("Running %v after the policy changed (the image back-off's next try)", time.Since(changed).Round(100*time.Millisecond))
	uid, tasks := pods[name].UID, podTasks(t, name)

	// A policy that no longer loads: nothing new is verified against it.
	replacePolicy(`{"default": [{"type": "trustMeNow"}]}`)
	const fresh = "sig-live-new"
	downOnCleanup(t, fresh)
	writeInPlace(t, mdir, fresh+".yaml", strings.Replace(daemonPod{name: fresh}.yaml(), "image: "+H.Image, "image: "+src, 1))
	eventually(t, 30*time.Second, "podrun status of "+fresh+" refused naming the policy file", func() (bool, string) {
		stdout, stderr, _ := H.Podrun(t, "", "status", fresh)
		return strings.Contains(stdout, "SignatureValidationFailed") && strings.Contains(stdout, policy) && strings.Contains(stdout, "trustMeNow"), stdout + stderr
	})
	if ctrs := podContainers(t, fresh); len(ctrs) > 0 {
		t.Errorf("%d containers of the pod refused under a broken policy exist", len(ctrs))
	}
	if p := podsByName(t)[name]; p.UID != uid || !allRunning(p) {
		t.Errorf("under the broken policy: %s is %s %s, want still Running as %s", name, p.UID, p.Status.Phase, uid)
	}
	checkSameTasks(t, name, tasks)
}
