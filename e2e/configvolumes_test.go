package e2e

// End-to-end tests of ConfigMaps, Secrets and the config volumes
// (configMap, secret, projected, downwardAPI): the files, modes, contents
// and ..data layout a container sees, tmpfs for secrets, read-only mounts,
// in-place updates by `up` and by the daemon, --configmap files, and a
// missing reference refused before anything runs. Helpers are prefixed cv,
// pods named cv-*.

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// execScript runs a shell script in the first app container of pod default/pod
// and returns its stdout; it fails the test unless it exits 0.
func execScript(t *testing.T, pod, script string) string {
	t.Helper()
	return execIn(t, pod, "", "sh", "-c", script)
}

// lineSet returns the non-empty lines of s as a set.
func lineSet(s string) map[string]bool {
	out := map[string]bool{}
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			out[l] = true
		}
	}
	return out
}

// wantLines fails the test unless got has every line of want.
func wantLines(t *testing.T, what, got string, want ...string) {
	t.Helper()
	lines := lineSet(got)
	for _, w := range want {
		if !lines[w] {
			t.Errorf("%s: no line %q in:\n%s", what, w, got)
		}
	}
}

// configObjects are a ConfigMap and a Secret; level is the ConfigMap's level key.
func configObjects(level string) string {
	return `apiVersion: v1
kind: ConfigMap
metadata:
  name: cv-config
data:
  app.conf: "listen 80"
  level: ` + level + `
binaryData:
  blob: AAEC
---
apiVersion: v1
kind: Secret
metadata:
  name: cv-secret
data:
  user: YWRtaW4=
  password: b2xk
stringData:
  password: s3cret
`
}

const configVolumesPod = `apiVersion: v1
kind: Pod
metadata:
  name: cv-vols
  labels:
    app: cv
    tier: front
  annotations:
    example.com/owner: team-a
spec:
  terminationGracePeriodSeconds: 5
  volumes:
  - name: cm
    configMap:
      name: cv-config
      defaultMode: 0640
      items:
      - key: app.conf
        path: conf/app.conf
        mode: 0400
      - key: level
        path: level
  - name: sec
    secret:
      secretName: cv-secret
  - name: proj
    projected:
      defaultMode: 0444
      sources:
      - configMap:
          name: cv-config
          items:
          - key: level
            path: cm-level
      - secret:
          name: cv-secret
          items:
          - key: user
            path: sec/user
            mode: 0400
      - downwardAPI:
          items:
          - path: name
            fieldRef:
              fieldPath: metadata.name
  - name: dapi
    downwardAPI:
      items:
      - path: labels
        fieldRef:
          fieldPath: metadata.labels
      - path: annotations
        fieldRef:
          fieldPath: metadata.annotations
      - path: tier
        fieldRef:
          fieldPath: metadata.labels['tier']
        mode: 0600
  containers:
  - name: app
    image: IMAGE
    command: ["sh", "-c", "trap 'exit 0' TERM; while true; do sleep 0.1; done"]
    volumeMounts:
    - {name: cm, mountPath: /etc/cm}
    - {name: sec, mountPath: /etc/sec, readOnly: false}
    - {name: proj, mountPath: /etc/proj}
    - {name: dapi, mountPath: /etc/dapi}
    - {name: cm, mountPath: /etc/level-subpath, subPath: level}
`

func configVolumesPodYAML() string { return strings.ReplaceAll(configVolumesPod, "IMAGE", H.Image) }

// configVolumesListing prints, for every file of the volumes, "path mode content".
const configVolumesListing = `for f in /etc/cm/conf/app.conf /etc/cm/level /etc/sec/user /etc/sec/password /etc/proj/cm-level /etc/proj/sec/user /etc/proj/name /etc/dapi/tier; do
  echo "$f $(stat -L -c %a $f) $(cat $f)"
done`

// TestConfigVolumes: the files, modes and contents Kubernetes would give a
// container from ConfigMap, Secret (data + stringData), projected and
// downwardAPI volumes; the atomic writer's ..data layout; secret and
// projected volumes on tmpfs, all of them read-only; then `up` of the same
// pod with a changed ConfigMap leaves the pod unchanged and updates the
// files in the running container (not the subPath mount, as on Kubernetes).
func TestConfigVolumes(t *testing.T) {
	H.require(t)
	file, stdout := mustRunUp(t, "cv-vols", configVolumesPodYAML()+"---\n"+configObjects("debug"), "--wait", "running")
	if !strings.Contains(stdout, "pod/default/cv-vols created") {
		t.Errorf("up stdout = %q, want created", stdout)
	}
	pod := podNamed(t, "cv-vols")

	wantLines(t, "files", execScript(t, "cv-vols", configVolumesListing),
		"/etc/cm/conf/app.conf 400 listen 80",
		"/etc/cm/level 640 debug",
		"/etc/sec/user 644 admin",
		"/etc/sec/password 644 s3cret", // stringData wins over data
		"/etc/proj/cm-level 444 debug",
		"/etc/proj/sec/user 400 admin",
		"/etc/proj/name 444 cv-vols",
		"/etc/dapi/tier 600 front",
	)
	if got := execScript(t, "cv-vols", "cat /etc/dapi/labels; echo; cat /etc/dapi/annotations"); got != "app=\"cv\"\ntier=\"front\"\nexample.com/owner=\"team-a\"" {
		t.Errorf("downwardAPI labels and annotations files:\n%q\nwant the kubelet's key=\"value\" lines", got)
	}

	// The layout: only the listed keys, as symlinks into ..data, which
	// points at one timestamped directory.
	layout := execScript(t, "cv-vols", `cd /etc/cm && ls -A && echo "data -> $(readlink ..data)" && echo "conf -> $(readlink conf)" && echo "level -> $(readlink level)"`)
	ts := regexp.MustCompile(`(?m)^data -> (\.\.\d{4}_\d{2}_\d{2}_\d{2}_\d{2}_\d{2}\.\d+)$`).FindStringSubmatch(layout)
	if ts == nil {
		t.Fatalf("/etc/cm: ..data is not a link to a timestamped directory:\n%s", layout)
	}
	wantLines(t, "/etc/cm layout", layout, ts[1], "..data", "conf", "level", "conf -> ..data/conf", "level -> ..data/level")
	if n := len(lineSet(layout)); n != 4+3 {
		t.Errorf("/etc/cm holds other entries than %s, ..data, conf and level:\n%s", ts[1], layout)
	}
	if got := execScript(t, "cv-vols", "ls -A /etc/sec | sort | tr '\\n' ' '"); !regexp.MustCompile(`^\.\.\d{4}_\S+ \.\.data password user $`).MatchString(got) {
		t.Errorf("/etc/sec holds %q, want a timestamped dir, ..data, password and user", got)
	}

	// tmpfs for secret and projected, the disk for configMap and
	// downwardAPI; every one read-only whatever volumeMounts says.
	mounts := execScript(t, "cv-vols", "grep -E ' /etc/(cm|sec|proj|dapi) ' /proc/mounts")
	for mp, tmpfs := range map[string]bool{"/etc/cm": false, "/etc/sec": true, "/etc/proj": true, "/etc/dapi": false} {
		line := lineWith(mounts, " "+mp+" ")
		fields := strings.Fields(line)
		if len(fields) < 4 {
			t.Errorf("%s is not in /proc/mounts:\n%s", mp, mounts)
			continue
		}
		if (fields[2] == "tmpfs") != tmpfs {
			t.Errorf("%s is on %s, want tmpfs %v", mp, fields[2], tmpfs)
		}
		if !strings.HasPrefix(fields[3], "ro,") {
			t.Errorf("%s is mounted %s, want read-only", mp, fields[3])
		}
	}
	if got := execScript(t, "cv-vols", "touch /etc/sec/x 2>&1 || echo refused"); !strings.Contains(got, "Read-only file system") {
		t.Errorf("a write into the secret volume: %q, want Read-only file system", got)
	}
	// On the host too, the secret never reaches the disk.
	secDir := filepath.Join(H.Root, "pods", string(pod.UID), "volumes", "kubernetes.io~secret", "sec")
	if m := mountPointsMatching(t, func(m mountEntry) bool { return m.point == secDir && m.fstype == "tmpfs" }); len(m) != 1 {
		t.Errorf("host mounts at %s: %v, want one tmpfs", secDir, m)
	}

	// The ConfigMap changes: the pod is unchanged and its files follow.
	if err := os.WriteFile(file, []byte(configVolumesPodYAML()+"---\n"+configObjects("info")), 0o644); err != nil {
		t.Fatal(err)
	}
	stdout, stderr, code := H.Podrun(t, "", "up", "--wait", "running", file)
	if code != 0 || !strings.Contains(stdout, "pod/default/cv-vols unchanged") {
		t.Fatalf("up with a changed ConfigMap: exit %d, stdout %q, want unchanged; stderr:\n%s", code, stdout, stderr)
	}
	wantLines(t, "files after the update", execScript(t, "cv-vols", configVolumesListing+"; echo subpath $(cat /etc/level-subpath)"),
		"/etc/cm/level 640 info", "/etc/proj/cm-level 444 info", "/etc/cm/conf/app.conf 400 listen 80",
		"subpath debug") // a subPath mount keeps the file it was given, as on Kubernetes
	if layout := execScript(t, "cv-vols", "ls -A /etc/cm"); strings.Contains(layout, ts[1]) || len(lineSet(layout)) != 4 {
		t.Errorf("/etc/cm after the update: %q; want a new timestamped dir and the old one removed", layout)
	}
	after := podNamed(t, "cv-vols")
	if after.UID != pod.UID {
		t.Errorf("the pod's UID changed %s -> %s", pod.UID, after.UID)
	}
	if cs := mustContainerStatus(t, after, "app"); cs.RestartCount != 0 || cs.State.Running == nil {
		t.Errorf("container app: restartCount %d, running %v; want 0 and running", cs.RestartCount, cs.State.Running != nil)
	}
}

// TestConfigVolumesConfigMapFlag: --configmap FILE supplies the objects on
// up and validate; a Pod in such a file is bad input.
func TestConfigVolumesConfigMapFlag(t *testing.T) {
	H.require(t)
	objects := H.WriteManifest(t, "objects.yaml", configObjects("flag"))
	podYAML := `apiVersion: v1
kind: Pod
metadata:
  name: cv-flag
spec:
  terminationGracePeriodSeconds: 5
  volumes:
  - name: cm
    configMap:
      name: cv-config
  containers:
  - name: app
    image: ` + H.Image + `
    command: ["sh", "-c", "trap 'exit 0' TERM; while true; do sleep 0.1; done"]
    volumeMounts:
    - {name: cm, mountPath: /etc/cm}
    env:
    - name: CV_PASSWORD
      valueFrom:
        secretKeyRef: {name: cv-secret, key: password}
`
	podFile := H.WriteManifest(t, "cv-flag.yaml", podYAML)
	if stdout, stderr, code := H.Podrun(t, "", "validate", "--configmap", objects, podFile); code != 0 || !strings.Contains(stdout, "pod/default/cv-flag valid") {
		t.Errorf("validate --configmap: exit %d, stdout %q; stderr:\n%s", code, stdout, stderr)
	}
	if _, stderr, code := H.Podrun(t, "", "validate", podFile); code != 2 || !strings.Contains(stderr, `spec.volumes[0].configMap.name: ConfigMap "cv-config" not found`) {
		t.Errorf("validate without --configmap: exit %d, want 2 and the missing ConfigMap; stderr:\n%s", code, stderr)
	}
	if _, stderr, code := H.Podrun(t, "", "validate", "--configmap", podFile, "--configmap", objects, podFile); code != 2 ||
		!strings.Contains(stderr, "a --configmap file holds ConfigMap and Secret objects only, not a Pod") {
		t.Errorf("validate --configmap with a pod in it: exit %d, want 2; stderr:\n%s", code, stderr)
	}

	downOnCleanup(t, podFile)
	stdout, stderr, code := H.Podrun(t, "", "up", "--wait", "running", "--configmap", objects, podFile)
	if code != 0 || !strings.Contains(stdout, "pod/default/cv-flag created") {
		t.Fatalf("up --configmap: exit %d, stdout %q; stderr:\n%s", code, stdout, stderr)
	}
	wantLines(t, "files", execScript(t, "cv-flag", `echo "level $(cat /etc/cm/level)"; ls /etc/cm | tr '\n' ' '; echo`),
		"level flag", "app.conf blob level")
}

// TestConfigVolumesMissingReference: a reference to a missing ConfigMap,
// Secret or key is bad input (exit 2) naming the field, and nothing is
// created.
func TestConfigVolumesMissingReference(t *testing.T) {
	H.require(t)
	before := captureHostState(t)
	_, _, stderr, code := runUp(t, "cv-missing", `apiVersion: v1
kind: Pod
metadata:
  name: cv-missing
spec:
  volumes:
  - name: cm
    configMap:
      name: cv-nope
  - name: opt
    secret:
      secretName: cv-nope
      optional: true
  - name: key
    configMap:
      name: cv-there
      items:
      - {key: absent, path: a}
  containers:
  - name: app
    image: `+H.Image+`
    volumeMounts:
    - {name: cm, mountPath: /etc/cm}
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: cv-there
data:
  present: "1"
`)
	if code != 2 {
		t.Errorf("up: exit %d, want 2", code)
	}
	for _, want := range []string{
		`cv-missing.yaml (document 1): spec.volumes[0].configMap.name: ConfigMap "cv-nope" not found in namespace "default"`,
		`cv-missing.yaml (document 1): spec.volumes[2].configMap.items[0].key: ConfigMap "cv-there" has no key "absent"`,
	} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
	if strings.Contains(stderr, "spec.volumes[1]") {
		t.Errorf("an optional missing Secret was reported:\n%s", stderr)
	}
	for _, p := range listPods(t) {
		if p.Name == "cv-missing" {
			t.Errorf("pod cv-missing exists after a refused up: %+v", p.Status)
		}
	}
	checkNothingLeft(t, before, "a refused up")
}

// TestConfigVolumesDaemon: the daemon resolves a pod's ConfigMap from
// another file of its directory, and when that file changes it updates the
// volume in place: same pod, no restart.
func TestConfigVolumesDaemon(t *testing.T) {
	H.require(t)
	dir := t.TempDir()
	downOnCleanup(t, "cv-daemon")
	writeByRename(t, dir, "cv-daemon.yaml", `apiVersion: v1
kind: Pod
metadata:
  name: cv-daemon
spec:
  terminationGracePeriodSeconds: 5
  volumes:
  - name: cm
    configMap:
      name: cv-config
  containers:
  - name: app
    image: `+H.Image+`
    command: ["sh", "-c", "trap 'exit 0' TERM; while true; do sleep 0.1; done"]
    env:
    - name: LEVEL
      valueFrom:
        configMapKeyRef: {name: cv-config, key: level}
    volumeMounts:
    - {name: cm, mountPath: /etc/cm}
`)
	writeByRename(t, dir, "objects.yaml", configObjects("one"))
	d := startDaemon(t, dir, nil, "--resync", "1m")
	pod := waitPodsRunning(t, 60*time.Second, nil, "cv-daemon")["cv-daemon"]
	if got := execScript(t, "cv-daemon", "cat /etc/cm/level"); got != "one" {
		t.Fatalf("level = %q, want one", got)
	}

	start := time.Now()
	writeByRename(t, dir, "objects.yaml", configObjects("two"))
	eventually(t, 30*time.Second, "the ConfigMap's new value in the container", func() (bool, string) {
		got, _ := podrunQuiet(t, "exec", "cv-daemon", "--", "cat", "/etc/cm/level")
		return got == "two", "level = " + got
	})
	t.Logf("objects.yaml changed -> file updated in the container after %v", time.Since(start).Round(time.Millisecond))
	after := podsByName(t)["cv-daemon"]
	if after.UID != pod.UID || totalRestarts(after) != 0 {
		t.Errorf("after the ConfigMap change: UID %s -> %s, restarts %d; want the same pod, no restart", pod.UID, after.UID, totalRestarts(after))
	}
	if !strings.Contains(d.stderr(), "config volumes updated: cm") {
		t.Errorf("the daemon did not log the update")
	}

	// The running container's env keeps the value it started with; the
	// container's next start reads the new one, as the kubelet's would.
	if got := execScript(t, "cv-daemon", "echo $LEVEL"); got != "one\n" {
		t.Errorf("LEVEL in the running container = %q, want one (env does not change under a running container)", got)
	}
	execScript(t, "cv-daemon", "kill 1") // the trap exits 0; restartPolicy Always restarts it (at once: its first restart)
	eventually(t, 30*time.Second, "the restarted container", func() (bool, string) {
		p := podsByName(t)["cv-daemon"]
		return totalRestarts(p) == 1 && allRunning(p), fmt.Sprintf("restarts %d running %v", totalRestarts(p), allRunning(p))
	})
	if got := execScript(t, "cv-daemon", "echo $LEVEL"); got != "two\n" {
		t.Errorf("LEVEL after the restart = %q, want two (the ConfigMap of the time of the start)", got)
	}

	// Without its ConfigMap the pod's file is broken: the pod keeps running.
	if err := os.Remove(filepath.Join(dir, "objects.yaml")); err != nil {
		t.Fatal(err)
	}
	waitDaemonSyncs(t, d, 1, 30*time.Second)
	st, _ := readDaemonStatus()
	found := false
	for _, p := range st.Problems {
		found = found || strings.Contains(p.Message, `ConfigMap "cv-config" not found`)
	}
	if !found {
		t.Errorf("daemon status problems %+v, want the missing ConfigMap", st.Problems)
	}
	if p := podsByName(t)["cv-daemon"]; p.UID != pod.UID || !allRunning(p) {
		t.Errorf("cv-daemon after its ConfigMap's file was removed: UID %s running %v; want it kept as last applied", p.UID, allRunning(p))
	}
}

// TestConfigVolumesFSGroup: with fsGroup, config volume files get group
// read and the group (the kubelet's SetVolumeOwnership for read-only volume
// kinds), so that a non-root user of the group reads a 0400 secret.
func TestConfigVolumesFSGroup(t *testing.T) {
	H.require(t)
	mustRunUp(t, "cv-fsgroup", `apiVersion: v1
kind: Pod
metadata:
  name: cv-fsgroup
spec:
  terminationGracePeriodSeconds: 5
  securityContext:
    runAsUser: 1000
    fsGroup: 2000
  volumes:
  - name: sec
    secret:
      secretName: cv-secret
      defaultMode: 0400
  - name: cm
    configMap:
      name: cv-config
      items:
      - {key: level, path: level, mode: 0600}
  containers:
  - name: app
    image: `+H.Image+`
    command: ["sh", "-c", "trap 'exit 0' TERM; while true; do sleep 0.1; done"]
    volumeMounts:
    - {name: sec, mountPath: /etc/sec}
    - {name: cm, mountPath: /etc/cm}
---
`+configObjects("fs"), "--wait", "running")
	wantLines(t, "files", execScript(t, "cv-fsgroup", `id -u
stat -L -c '%n %a %u %g' /etc/sec/user /etc/cm/level /etc/sec/..data
cat /etc/sec/user; echo; cat /etc/cm/level; echo`),
		"1000",
		"/etc/sec/user 440 0 2000",
		"/etc/cm/level 640 0 2000",
		"/etc/sec/..data 2755 0 2000",
		"admin", "fs")
}

// TestConfigVolumesRollback: a pod that fails after its volumes were set up
// (its image is missing and may not be pulled) is rolled back without
// leaving its secret and projected tmpfs mounts or its directory.
func TestConfigVolumesRollback(t *testing.T) {
	H.require(t)
	before := captureHostState(t)
	_, _, stderr, code := runUp(t, "cv-rollback", `apiVersion: v1
kind: Pod
metadata:
  name: cv-rollback
spec:
  volumes:
  - name: sec
    secret:
      secretName: cv-secret
  - name: proj
    projected:
      sources:
      - secret: {name: cv-secret}
  containers:
  - name: app
    image: podrun.test/cv-absent:1
    imagePullPolicy: Never
    volumeMounts:
    - {name: sec, mountPath: /etc/sec}
    - {name: proj, mountPath: /etc/proj}
---
`+configObjects("x"))
	if code != 1 || !strings.Contains(stderr, "ErrImageNeverPull") {
		t.Errorf("up: exit %d, want 1 with ErrImageNeverPull; stderr:\n%s", code, stderr)
	}
	pods := filepath.Join(H.Root, "pods") + "/"
	if m := mountPointsMatching(t, func(m mountEntry) bool { return strings.HasPrefix(m.point, pods) }); len(m) > 0 {
		t.Errorf("mounts left under %s after the rollback: %v", pods, m)
	}
	checkNothingLeft(t, before, "the rollback")
}
