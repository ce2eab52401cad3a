package e2e

// Inputs: what podrun does with bad input (nothing), runtime failures (a
// rollback with a clear reason), images (import, list, pull from a local
// registry), the CLI's output formats and exit codes, and pods of the same
// name in different namespaces.

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/podrun/podrun/internal/testimage"
)

// longRunningCommand is a command that runs until SIGTERM and exits 0 on it
// (sleep as PID 1 would ignore SIGTERM and make every down wait the grace period).
const longRunningCommand = `["sh", "-c", "trap 'exit 0' TERM; sleep 3600 & wait"]`

// longRunningPod is a one-container pod that runs until stopped.
func longRunningPod(namespace, name, image string) string {
	ns := ""
	if namespace != "" {
		ns = "\n  namespace: " + namespace
	}
	return fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: %s%s
spec:
  terminationGracePeriodSeconds: 5
  containers:
  - name: main
    image: %s
    imagePullPolicy: IfNotPresent
    command: %s
`, name, ns, image, longRunningCommand)
}

// containerIDsOfPodName returns the IDs of the containers in the suite's namespace
// labelled with the pod name (any pod namespace).
func containerIDsOfPodName(t *testing.T, podName string) []string {
	t.Helper()
	c, ctx := H.Client(t)
	ctrs, err := c.Containers(ctx, fmt.Sprintf(`labels."io.podrun.pod.name"==%q`, podName))
	if err != nil {
		t.Fatalf("listing containers of pod %s: %v", podName, err)
	}
	var ids []string
	for _, ctr := range ctrs {
		ids = append(ids, ctr.ID())
	}
	sort.Strings(ids)
	return ids
}

// checkNothingCreated fails the test if any of the pods has containers,
// or a task, network namespace or pod directory appeared since before.
func checkNothingCreated(t *testing.T, before hostState, pods ...string) {
	t.Helper()
	for _, name := range pods {
		if ids := containerIDsOfPodName(t, name); len(ids) > 0 {
			t.Errorf("pod %s: containers exist in namespace %s: %v", name, H.Namespace, ids)
		}
	}
	checkNothingLeft(t, before, "the call")
}

// downAndCheckOnCleanup takes the pods down when the test ends, whatever happened.
func downAndCheckOnCleanup(t *testing.T, targets ...string) {
	t.Helper()
	t.Cleanup(func() {
		if _, _, code := H.Podrun(t, "", append([]string{"down", "--grace-period", "2"}, targets...)...); code != 0 {
			t.Errorf("cleanup: podrun down %v: exit %d", targets, code)
		}
		for _, tg := range targets {
			name := tg
			if _, n, ok := strings.Cut(tg, "/"); ok {
				name = n
			}
			if ids := containerIDsOfPodName(t, name); len(ids) > 0 {
				t.Errorf("cleanup: containers of pod %s remain after down: %v", tg, ids)
			}
		}
	})
}

// inputFile is a file the test writes.
type inputFile struct {
	name, content string
}

// writeTempFiles writes files into a fresh temp dir and returns the dir and
// the files' paths.
func writeTempFiles(t *testing.T, files ...inputFile) (string, []string) {
	t.Helper()
	dir := t.TempDir()
	var paths []string
	for _, f := range files {
		p := filepath.Join(dir, f.name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(f.content), 0o644); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p)
	}
	return dir, paths
}

// wantProblem is one problem line podrun must print.
type wantProblem struct {
	file  string // path as given on the command line ("stdin" for -)
	doc   int    // 0: the problem concerns the whole file
	field string // field path; "" for none
	msg   string // substring of the message after the field path
	// lines, when set, is the range the "line N:" at the start of the
	// message must fall in (syntax errors).
	lines [2]int
}

func (p wantProblem) prefix() string {
	s := p.file
	if p.doc > 0 {
		s += fmt.Sprintf(" (document %d)", p.doc)
	}
	s += ": "
	if p.field != "" {
		s += p.field + ": "
	}
	return s
}

var (
	problemSummaryRE = regexp.MustCompile(`^podrun: (\d+) problem\(s\); nothing was changed$`)
	problemLineRE    = regexp.MustCompile(`^line (\d+): `)
)

// problemLines checks stderr of a call that found problems: one line per
// problem and the summary line counting them. It returns the problem lines.
func problemLines(t *testing.T, stderr string) []string {
	t.Helper()
	lines := strings.Split(strings.TrimRight(stderr, "\n"), "\n")
	if len(lines) < 2 {
		t.Errorf("stderr has %d lines; want the problems and a summary line:\n%s", len(lines), stderr)
		return lines
	}
	problems, summary := lines[:len(lines)-1], lines[len(lines)-1]
	m := problemSummaryRE.FindStringSubmatch(summary)
	if m == nil {
		t.Errorf("last stderr line is %q; want \"podrun: N problem(s); nothing was changed\"", summary)
	} else if n, _ := strconv.Atoi(m[1]); n != len(problems) {
		t.Errorf("summary counts %d problems, stderr has %d problem lines", n, len(problems))
	}
	return problems
}

// matchProblems checks that lines are exactly the wanted problems, one
// line each (in any order).
func matchProblems(t *testing.T, lines []string, want []wantProblem) {
	t.Helper()
	if len(lines) != len(want) {
		t.Errorf("got %d problem lines, want %d:\n%s", len(lines), len(want), strings.Join(lines, "\n"))
	}
	used := make([]bool, len(lines))
	for _, w := range want {
		found := false
		for i, l := range lines {
			if used[i] {
				continue
			}
			rest, ok := strings.CutPrefix(l, w.prefix())
			if !ok || !strings.Contains(rest, w.msg) {
				continue
			}
			if w.lines != [2]int{} {
				m := problemLineRE.FindStringSubmatch(rest)
				if m == nil {
					continue
				}
				n, _ := strconv.Atoi(m[1])
				if n < w.lines[0] || n > w.lines[1] {
					t.Errorf("problem %q names line %d; the bad line is in %d..%d (within the file)", l, n, w.lines[0], w.lines[1])
				}
			}
			used[i], found = true, true
			break
		}
		if !found {
			t.Errorf("no problem line starts with %q and contains %q; got:\n%s", w.prefix(), w.msg, strings.Join(lines, "\n"))
		}
	}
}

// validPodDoc is a valid manifest document (used beside invalid ones, to
// show that a valid pod of a rejected input is not run either).
func validPodDoc(name string) string {
	return longRunningPod("", name, H.Image)
}

// TestInputsBadInputNeverHalfHappens: `podrun up` with invalid input exits 2,
// prints one line per problem (file, document, field path) and creates
// nothing; `podrun validate` prints the same problems.
func TestInputsBadInputNeverHalfHappens(t *testing.T) {
	H.require(t)
	type badCase struct {
		name  string
		files []inputFile
		// dir: pass the directory rather than the files.
		dir  bool
		pods []string // pods the input names; none may exist afterwards
		// want is built from the paths of the files (and the dir).
		want func(dir string, paths []string) []wantProblem
	}
	cases := []badCase{
		{
			name: "yaml syntax error in the second document",
			files: []inputFile{{"pods.yaml", `# The first document is valid; the second has a syntax error on line 13.
apiVersion: v1
kind: Pod
metadata:
  name: in-syntax-first
spec:
  containers:
  - name: main
    image: podrun.test/busybox:1
---
apiVersion: v1
kind: Pod
metadata: name: in-syntax-second
spec:
  containers:
  - name: main
    image: podrun.test/busybox:1
`}},
			pods: []string{"in-syntax-first", "in-syntax-second"},
			want: func(_ string, p []string) []wantProblem {
				return []wantProblem{{file: p[0], doc: 2, msg: "line 13: yaml: mapping values are not allowed", lines: [2]int{13, 13}}}
			},
		},
		{
			name: "yaml tab indentation in the second document",
			files: []inputFile{{"pods.yaml", validPodDoc("in-tab-first") + "---\n" + `apiVersion: v1
kind: Pod
metadata:
  name: in-tab-second
spec:
  containers:
  - name: main
` + "\timage: podrun.test/busybox:1\n"}},
			pods: []string{"in-tab-first", "in-tab-second"},
			want: func(_ string, p []string) []wantProblem {
				// validPodDoc is 11 lines, the separator line 12, the tab line 20.
				return []wantProblem{{file: p[0], doc: 2, msg: "line 20: yaml: found a tab character", lines: [2]int{20, 20}}}
			},
		},
		{
			// The quote opens on line 20 of a 21-line file: the line named must be in the file.
			name: "yaml unterminated quote in the last document",
			files: []inputFile{{"pods.yaml", validPodDoc("in-quote-first") + "---\n" + `apiVersion: v1
kind: Pod
metadata:
  name: in-quote-second
spec:
  containers:
  - name: main
    image: "podrun.test/busybox:1
  restartPolicy: Never
`}},
			pods: []string{"in-quote-first", "in-quote-second"},
			want: func(_ string, p []string) []wantProblem {
				return []wantProblem{{file: p[0], doc: 2, msg: "yaml: found unexpected end of stream", lines: [2]int{20, 21}}}
			},
		},
		{
			name: "unknown field",
			files: []inputFile{{"pod.yaml", `apiVersion: v1
kind: Pod
metadata:
  name: in-unknown-field
spec:
  containers:
  - name: main
    image: podrun.test/busybox:1
    imagePullPolicyy: Never
`}},
			pods: []string{"in-unknown-field"},
			want: func(_ string, p []string) []wantProblem {
				return []wantProblem{{file: p[0], doc: 1, field: "spec.containers[0].imagePullPolicyy", msg: "unknown field"}}
			},
		},
		{
			name: "unknown kind",
			files: []inputFile{{"deploy.yaml", validPodDoc("in-kind-pod") + `---
apiVersion: apps/v1
kind: Deploymnet
metadata:
  name: in-kind-deploy
spec:
  replicas: 1
`}},
			pods: []string{"in-kind-pod", "in-kind-deploy"},
			want: func(_ string, p []string) []wantProblem {
				return []wantProblem{{file: p[0], doc: 2, msg: `kind "Deploymnet" of apiVersion "apps/v1" is not supported`}}
			},
		},
		{
			name:  "empty file",
			files: []inputFile{{"empty.yaml", ""}},
			want: func(_ string, p []string) []wantProblem {
				return []wantProblem{{file: p[0], msg: "no Kubernetes objects found"}}
			},
		},
		{
			// Neither a subdirectory nor a dotfile is read.
			name: "directory with no manifests",
			files: []inputFile{
				{"README.txt", "not a manifest\n"},
				{".hidden.yaml", validPodDoc("in-dir-hidden")},
				{"sub/pod.yaml", validPodDoc("in-dir-sub")},
			},
			dir:  true,
			pods: []string{"in-dir-hidden", "in-dir-sub"},
			want: func(dir string, _ []string) []wantProblem {
				return []wantProblem{{file: dir, msg: "no Kubernetes objects found: the directory has no .yaml, .yml or .json file"}}
			},
		},
		{
			name: "missing image",
			files: []inputFile{{"pod.yaml", `apiVersion: v1
kind: Pod
metadata:
  name: in-missing-image
spec:
  containers:
  - name: main
    image: podrun.test/busybox:1
  - name: side
`}},
			pods: []string{"in-missing-image"},
			want: func(_ string, p []string) []wantProblem {
				return []wantProblem{{file: p[0], doc: 1, field: "spec.containers[1].image", msg: "Required value"}}
			},
		},
		{
			name: "duplicate container names",
			files: []inputFile{{"pod.yaml", `apiVersion: v1
kind: Pod
metadata:
  name: in-dup-containers
spec:
  initContainers:
  - name: main
    image: podrun.test/busybox:1
  containers:
  - name: web
    image: podrun.test/busybox:1
  - name: main
    image: podrun.test/busybox:1
`}},
			pods: []string{"in-dup-containers"},
			want: func(_ string, p []string) []wantProblem {
				return []wantProblem{{file: p[0], doc: 1, field: "spec.containers[1].name", msg: `Duplicate value: "main"`}}
			},
		},
		{
			name: "duplicate volume names",
			files: []inputFile{{"pod.yaml", `apiVersion: v1
kind: Pod
metadata:
  name: in-dup-volumes
spec:
  volumes:
  - name: data
    emptyDir: {}
  - name: data
    emptyDir: {medium: Memory}
  containers:
  - name: main
    image: podrun.test/busybox:1
`}},
			pods: []string{"in-dup-volumes"},
			want: func(_ string, p []string) []wantProblem {
				return []wantProblem{{file: p[0], doc: 1, field: "spec.volumes[1].name", msg: `Duplicate value: "data"`}}
			},
		},
		{
			name: "invalid pod name",
			files: []inputFile{{"pod.yaml", `apiVersion: v1
kind: Pod
metadata:
  name: In_Valid
spec:
  containers:
  - name: main
    image: podrun.test/busybox:1
`}},
			pods: []string{"In_Valid", "in_valid"},
			want: func(_ string, p []string) []wantProblem {
				return []wantProblem{{file: p[0], doc: 1, field: "metadata.name", msg: `Invalid value: "In_Valid": a lowercase RFC 1123 subdomain`}}
			},
		},
		{
			name: "volumeMount naming no volume",
			files: []inputFile{{"pod.yaml", `apiVersion: v1
kind: Pod
metadata:
  name: in-no-volume
spec:
  volumes:
  - name: data
    emptyDir: {}
  containers:
  - name: main
    image: podrun.test/busybox:1
    volumeMounts:
    - {name: data, mountPath: /data}
    - {name: cache, mountPath: /cache}
`}},
			pods: []string{"in-no-volume"},
			want: func(_ string, p []string) []wantProblem {
				return []wantProblem{{file: p[0], doc: 1, field: "spec.containers[0].volumeMounts[1].name", msg: `Not found: "cache"`}}
			},
		},
		{
			name: "hostPath with backsteps",
			files: []inputFile{{"pod.yaml", `apiVersion: v1
kind: Pod
metadata:
  name: in-backsteps
spec:
  volumes:
  - name: data
    hostPath:
      path: /srv/data/../../etc
      type: DirectoryOrCreate
  containers:
  - name: main
    image: podrun.test/busybox:1
    volumeMounts:
    - {name: data, mountPath: /data}
`}},
			pods: []string{"in-backsteps"},
			want: func(_ string, p []string) []wantProblem {
				return []wantProblem{{file: p[0], doc: 1, field: "spec.volumes[0].hostPath.path", msg: `Invalid value: "/srv/data/../../etc": must not contain '..'`}}
			},
		},
		{
			name: "same namespace/name in two files",
			files: []inputFile{
				{"a.yaml", validPodDoc("in-dup-pod")},
				{"b.yaml", longRunningPod("default", "in-dup-pod", H.Image)},
			},
			pods: []string{"in-dup-pod"},
			want: func(_ string, p []string) []wantProblem {
				return []wantProblem{{file: p[1], doc: 1, msg: fmt.Sprintf(`duplicate pod "default/in-dup-pod": also defined in %s (document 1)`, p[0])}}
			},
		},
		{
			name: "unsupported field",
			files: []inputFile{{"pod.yaml", `apiVersion: v1
kind: Pod
metadata:
  name: in-probe
spec:
  containers:
  - name: main
    image: podrun.test/busybox:1
    volumeDevices:
    - {name: raw, devicePath: /dev/xvda}
`}},
			pods: []string{"in-probe"},
			want: func(_ string, p []string) []wantProblem {
				return []wantProblem{{file: p[0], doc: 1, field: "spec.containers[0].volumeDevices", msg: "field not supported by podrun yet"}}
			},
		},
		{
			name: "several problems in one file",
			files: []inputFile{{"many.yaml", `apiVersion: v1
kind: Pod
metadata:
  name: In_Many
spec:
  volumes:
  - name: data
    emptyDir: {}
  - name: data
    hostPath: {path: /srv/../etc}
  containers:
  - name: main
    image: podrun.test/busybox:1
    imagePullPolicyy: Never
    volumeDevices:
    - {name: raw, devicePath: /dev/xvda}
    volumeMounts:
    - {name: cache, mountPath: /cache}
  - name: main
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: in-many-deploy}
---
apiVersion: v1
kind: Pod
metadata:
  name: in-many-valid
spec:
  containers:
  - name: main
    image: podrun.test/busybox:1
`}},
			pods: []string{"In_Many", "in-many-deploy", "in-many-valid"},
			want: func(_ string, p []string) []wantProblem {
				f := p[0]
				return []wantProblem{
					{file: f, doc: 1, field: "metadata.name", msg: `Invalid value: "In_Many"`},
					{file: f, doc: 1, field: "spec.volumes[1].name", msg: `Duplicate value: "data"`},
					{file: f, doc: 1, field: "spec.volumes[1].hostPath.path", msg: "must not contain '..'"},
					{file: f, doc: 1, field: "spec.containers[0].imagePullPolicyy", msg: "unknown field"},
					{file: f, doc: 1, field: "spec.containers[0].volumeDevices", msg: "field not supported by podrun yet"},
					{file: f, doc: 1, field: "spec.containers[0].volumeMounts[0].name", msg: `Not found: "cache"`},
					{file: f, doc: 1, field: "spec.containers[1].name", msg: `Duplicate value: "main"`},
					{file: f, doc: 1, field: "spec.containers[1].image", msg: "Required value"},
					{file: f, doc: 2, field: "spec.template", msg: "Required value"},
				}
			},
		},
	}

	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir, paths := writeTempFiles(t, tc.files...)
			args := paths
			if tc.dir {
				args = []string{dir}
			}
			want := tc.want(dir, paths)
			// In case podrun did run something, take it down when the test ends.
			if len(tc.pods) > 0 {
				downAndCheckOnCleanup(t, tc.pods...)
			}
			before := captureHostState(t)

			stdout, stderr, code := H.Podrun(t, "", append([]string{"up", "--timeout", "1m"}, args...)...)
			if code != 2 {
				t.Errorf("podrun up: exit %d, want 2", code)
			}
			if stdout != "" {
				t.Errorf("podrun up printed on stdout for invalid input:\n%s", stdout)
			}
			upLines := problemLines(t, stderr)
			matchProblems(t, upLines, want)
			checkNothingCreated(t, before, tc.pods...)

			stdout, stderr, code = H.Podrun(t, "", append([]string{"validate"}, args...)...)
			if code != 2 {
				t.Errorf("podrun validate: exit %d, want 2", code)
			}
			if stdout != "" {
				t.Errorf("podrun validate printed on stdout for invalid input:\n%s", stdout)
			}
			valLines := problemLines(t, stderr)
			if strings.Join(valLines, "\n") != strings.Join(upLines, "\n") {
				t.Errorf("validate and up print different problems:\n--- up:\n%s\n--- validate:\n%s",
					strings.Join(upLines, "\n"), strings.Join(valLines, "\n"))
			}
			checkNothingCreated(t, before, tc.pods...)
		})
	}

	t.Run("validate valid file", func(t *testing.T) {
		_, paths := writeTempFiles(t, inputFile{"pod.yaml", validPodDoc("in-valid") + "---\n" + longRunningPod("team-v", "in-valid", H.Image)})
		before := captureHostState(t)
		stdout, stderr, code := H.Podrun(t, "", "validate", paths[0])
		if code != 0 {
			t.Fatalf("podrun validate of a valid file: exit %d; stderr:\n%s", code, stderr)
		}
		want := fmt.Sprintf("pod/default/in-valid valid (%s (document 1))\npod/team-v/in-valid valid (%s (document 2))\n", paths[0], paths[0])
		if stdout != want {
			t.Errorf("stdout:\n%s\nwant:\n%s", stdout, want)
		}
		checkNothingCreated(t, before, "in-valid")
	})

	t.Run("stdin valid", func(t *testing.T) {
		downAndCheckOnCleanup(t, "in-stdin")
		stdout, stderr, code := H.Podrun(t, validPodDoc("in-stdin"), "up", "--timeout", "2m", "-")
		if code != 0 {
			t.Fatalf("podrun up - : exit %d; stderr:\n%s", code, stderr)
		}
		if want := "pod/default/in-stdin created (Running)\n"; stdout != want {
			t.Errorf("stdout %q, want %q", stdout, want)
		}
		ids := containerIDsOfPodName(t, "in-stdin")
		if len(ids) != 2 { // the sandbox and main
			t.Errorf("pod in-stdin has containers %v; want the sandbox and main", ids)
		}
		// labels.Source documents "stdin" (not "-") for a pod read from stdin.
		c, ctx := H.Client(t)
		for _, id := range ids {
			ctr, err := c.LoadContainer(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			l, err := ctr.Labels(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if l["io.podrun.source"] != "stdin" {
				t.Errorf("container %s: label io.podrun.source=%q; labels.Source documents \"stdin\" for a pod read from stdin", id, l["io.podrun.source"])
			}
		}
		stdout, _, code = H.Podrun(t, "", "down", "--grace-period", "2", "in-stdin")
		if code != 0 || stdout != "pod/default/in-stdin deleted\n" {
			t.Errorf("podrun down in-stdin: exit %d, stdout %q", code, stdout)
		}
	})

	t.Run("stdin invalid", func(t *testing.T) {
		downAndCheckOnCleanup(t, "in-stdin-bad")
		bad := `apiVersion: v1
kind: Pod
metadata:
  name: in-stdin-bad
spec:
  containers:
  - name: main
`
		want := []wantProblem{{file: "stdin", doc: 1, field: "spec.containers[0].image", msg: "Required value"}}
		before := captureHostState(t)
		for _, cmd := range []string{"up", "validate"} {
			stdout, stderr, code := H.Podrun(t, bad, cmd, "-")
			if code != 2 {
				t.Errorf("podrun %s - : exit %d, want 2", cmd, code)
			}
			if stdout != "" {
				t.Errorf("podrun %s - printed on stdout: %q", cmd, stdout)
			}
			matchProblems(t, problemLines(t, stderr), want)
		}
		checkNothingCreated(t, before, "in-stdin-bad")
	})
}

// TestInputsRuntimeFailuresRollBack: a step that fails at run time makes
// `podrun up` exit 1 with the pod, the step and the cause, and leaves
// nothing of the pod behind.
func TestInputsRuntimeFailuresRollBack(t *testing.T) {
	H.require(t)
	regular := filepath.Join(t.TempDir(), "regular-file")
	if err := os.WriteFile(regular, []byte("keep me\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, pod, manifest, step string
		want                      []string
	}{
		{
			name: "hostPath Directory is a regular file", pod: "in-fail-hostpath", step: "volumes",
			manifest: fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: in-fail-hostpath
spec:
  volumes:
  - name: data
    hostPath:
      path: %s
      type: Directory
  containers:
  - name: main
    image: %s
    command: %s
    volumeMounts:
    - {name: data, mountPath: /data}
`, regular, H.Image, longRunningCommand),
			want: []string{regular + " is not a directory", `volume "data"`},
		},
		{
			name: "image absent with imagePullPolicy Never", pod: "in-fail-never", step: "images",
			manifest: `apiVersion: v1
kind: Pod
metadata:
  name: in-fail-never
spec:
  containers:
  - name: main
    image: podrun.test/in-does-not-exist:1
    imagePullPolicy: Never
`,
			want: []string{"ErrImageNeverPull", "podrun.test/in-does-not-exist:1", "podrun image import"},
		},
		{
			name: "command not found", pod: "in-fail-command", step: "container/main",
			manifest: fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: in-fail-command
spec:
  terminationGracePeriodSeconds: 2
  containers:
  - name: main
    image: %s
    command: ["in-no-such-command", "--flag"]
`, H.Image),
			want: []string{"in-no-such-command"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			downAndCheckOnCleanup(t, tc.pod)
			path := H.WriteManifest(t, "pod.yaml", tc.manifest)
			before := captureHostState(t)
			stdout, stderr, code := H.Podrun(t, "", "up", "--timeout", "2m", path)
			if code != 1 {
				t.Errorf("podrun up: exit %d, want 1", code)
			}
			if strings.Contains(stdout, "created") {
				t.Errorf("podrun up reported the failed pod as created:\n%s", stdout)
			}
			var final string
			for _, l := range strings.Split(stderr, "\n") {
				if strings.HasPrefix(l, "podrun: ") {
					final = l
				}
			}
			if want := fmt.Sprintf("podrun: pod default/%s: step %s: ", tc.pod, tc.step); !strings.HasPrefix(final, want) {
				t.Errorf("the error line is %q; want it to start with %q", final, want)
			}
			for _, w := range tc.want {
				if !strings.Contains(final, w) {
					t.Errorf("the error line %q does not contain %q", final, w)
				}
			}
			if strings.Contains(stderr, "(undo:") {
				t.Errorf("the rollback itself failed:\n%s", stderr)
			}
			checkNothingCreated(t, before, tc.pod)
			if b, err := os.ReadFile(regular); err != nil || string(b) != "keep me\n" {
				t.Errorf("the user's file %s was touched by the rollback: %q, %v", regular, b, err)
			}
			stdout, _, code = H.Podrun(t, "", "ps", "-a", "-o", "name")
			if code != 0 || strings.Contains(stdout, "pod/"+tc.pod+"\n") {
				t.Errorf("podrun ps -a after the rollback: exit %d, lists the pod:\n%s", code, stdout)
			}
		})
	}
}

// imageRecord is an item of `podrun image ls -o json`.
type imageRecord struct {
	Ref    string
	Digest string
	Size   int64
}

// TestInputsImages: import and list an image; pull one from a local registry
// and run a pod with imagePullPolicy Always.
func TestInputsImages(t *testing.T) {
	H.require(t)

	t.Run("import and ls", func(t *testing.T) {
		const ref = "podrun.test/in-extra:1"
		t.Cleanup(func() { deleteImage(t, ref) })
		archive := filepath.Join(t.TempDir(), "extra.tar")
		f, err := os.Create(archive)
		if err != nil {
			t.Fatal(err)
		}
		w := bufio.NewWriter(f)
		err = testimage.WriteOCIArchive(w, testimage.Config{Ref: ref, Files: []testimage.File{{Path: "/in-extra.txt", Data: []byte("extra image content\n")}}})
		if err == nil {
			err = w.Flush()
		}
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			t.Fatalf("building the archive: %v", err)
		}

		stdout, stderr, code := H.Podrun(t, "", "image", "import", archive)
		if code != 0 {
			t.Fatalf("podrun image import: exit %d; stderr:\n%s", code, stderr)
		}
		ref0, digest, _ := strings.Cut(strings.TrimSpace(stdout), "\t")
		if ref0 != ref || !strings.HasPrefix(digest, "sha256:") {
			t.Fatalf("podrun image import printed %q; want %q, a tab and its digest", stdout, ref)
		}

		stdout, _, code = H.Podrun(t, "", "image", "ls")
		if code != 0 {
			t.Fatalf("podrun image ls: exit %d", code)
		}
		lines := strings.Split(strings.TrimSpace(stdout), "\n")
		if f := strings.Fields(lines[0]); len(f) < 3 || f[0] != "REF" || f[1] != "DIGEST" || f[2] != "SIZE" {
			t.Errorf("podrun image ls header is %q; want REF DIGEST SIZE", lines[0])
		}
		listed := false
		for _, l := range lines[1:] {
			if f := strings.Fields(l); len(f) >= 2 && f[0] == ref && f[1] == digest {
				listed = true
			}
		}
		if !listed {
			t.Errorf("podrun image ls does not list %s %s:\n%s", ref, digest, stdout)
		}

		for _, format := range []string{"json", "yaml"} {
			stdout, _, code = H.Podrun(t, "", "image", "ls", "-o", format)
			if code != 0 {
				t.Fatalf("podrun image ls -o %s: exit %d", format, code)
			}
			var imgs []imageRecord
			if format == "json" {
				err = json.Unmarshal([]byte(stdout), &imgs)
			} else {
				err = yaml.Unmarshal([]byte(stdout), &imgs)
			}
			if err != nil {
				t.Fatalf("podrun image ls -o %s does not parse: %v\n%s", format, err, stdout)
			}
			var got *imageRecord
			for i := range imgs {
				if imgs[i].Ref == ref {
					got = &imgs[i]
				}
			}
			switch {
			case got == nil:
				t.Errorf("podrun image ls -o %s does not list %s", format, ref)
			case got.Digest != digest || got.Size <= 0:
				t.Errorf("podrun image ls -o %s: %+v; want digest %s and a size", format, *got, digest)
			}
		}

		// The imported image runs, with the file it was built with.
		downAndCheckOnCleanup(t, "in-extra")
		manifest := fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: in-extra
spec:
  restartPolicy: Never
  containers:
  - name: main
    image: %s
    imagePullPolicy: Never
    command: ["cat", "/in-extra.txt"]
`, ref)
		stdout, stderr, code = H.Podrun(t, "", "up", "--wait=completion", "--timeout", "2m", H.WriteManifest(t, "extra.yaml", manifest))
		if code != 0 || stdout != "pod/default/in-extra created (Succeeded)\n" {
			t.Fatalf("podrun up of a pod on the imported image: exit %d, stdout %q; stderr:\n%s", code, stdout, stderr)
		}
		logs, _ := filepath.Glob(filepath.Join(H.LogDir, "default_in-extra_*", "main", "0.log"))
		if len(logs) != 1 {
			t.Fatalf("log files of in-extra/main: %v", logs)
		}
		if b, err := os.ReadFile(logs[0]); err != nil || !strings.Contains(string(b), " stdout F extra image content") {
			t.Errorf("log %s: %q, %v; want the file's content", logs[0], b, err)
		}
	})

	t.Run("pull from a local registry", func(t *testing.T) {
		reg := startRegistry(t, "", "")
		ref := reg.Addr + "/in-busybox:1"
		digest := pushImage(t, reg, H.Image, ref, "", "")

		// Requests for the repository's manifests in the registry's access log.
		manifestRequests := func() int {
			return strings.Count(reg.Access.String(), " /v2/in-busybox/manifests/")
		}
		n := manifestRequests()
		stdout, stderr, code := H.Podrun(t, "", "image", "pull", ref)
		if code != 0 {
			t.Fatalf("podrun image pull %s: exit %d; stderr:\n%s\nregistry access log:\n%s", ref, code, stderr, reg.Access.String())
		}
		if want := ref + "\t" + digest + "\n"; stdout != want {
			t.Errorf("podrun image pull printed %q; want %q", stdout, want)
		}
		c, ctx := H.Client(t)
		if img, err := c.GetImage(ctx, ref); err != nil {
			t.Errorf("after podrun image pull, %s is not in containerd: %v", ref, err)
		} else if img.Target().Digest.String() != digest {
			t.Errorf("pulled %s has digest %s, pushed %s", ref, img.Target().Digest, digest)
		}

		if manifestRequests() <= n {
			t.Errorf("podrun image pull did not ask the registry for the manifest; registry access log:\n%s", reg.Access.String())
		}

		// imagePullPolicy Always asks the registry again.
		n = manifestRequests()
		downAndCheckOnCleanup(t, "in-pulled")
		manifest := registryPod("in-pulled", ref, "", "", "", "")
		stdout, stderr, code = H.Podrun(t, "", "up", "--timeout", "2m", H.WriteManifest(t, "pulled.yaml", manifest))
		if code != 0 || stdout != "pod/default/in-pulled created (Running)\n" {
			t.Fatalf("podrun up of a pod with imagePullPolicy Always: exit %d, stdout %q; stderr:\n%s", code, stdout, stderr)
		}
		if manifestRequests() <= n {
			t.Errorf("imagePullPolicy Always did not ask the registry for the manifest; registry access log:\n%s", reg.Access.String())
		}
		if ids := containerIDsOfPodName(t, "in-pulled"); len(ids) != 2 {
			t.Errorf("pod in-pulled has containers %v; want the sandbox and main", ids)
		}
	})
}

// parsePodList parses `ps -o json|yaml` output into a PodList.
func parsePodList(t *testing.T, out, format string) corev1.PodList {
	t.Helper()
	var list corev1.PodList
	var err error
	if format == "json" {
		err = json.Unmarshal([]byte(out), &list)
	} else {
		err = yaml.UnmarshalStrict([]byte(out), &list)
	}
	if err != nil {
		t.Fatalf("podrun ps -o %s does not parse as a PodList: %v\n%s", format, err, out)
	}
	if list.Kind != "List" || list.APIVersion != "v1" {
		t.Errorf("podrun ps -o %s: kind %q apiVersion %q; want a v1 List", format, list.Kind, list.APIVersion)
	}
	return list
}

func findPod(list corev1.PodList, namespace, name string) *corev1.Pod {
	for i := range list.Items {
		if list.Items[i].Namespace == namespace && list.Items[i].Name == name {
			return &list.Items[i]
		}
	}
	return nil
}

// checkRunningPod checks the status of a running pod as ps prints it.
func checkRunningPod(t *testing.T, pod *corev1.Pod, containers ...string) {
	t.Helper()
	key := pod.Namespace + "/" + pod.Name
	if pod.Kind != "Pod" || pod.APIVersion != "v1" {
		t.Errorf("%s: kind %q apiVersion %q; want v1 Pod", key, pod.Kind, pod.APIVersion)
	}
	st := pod.Status
	if st.Phase != corev1.PodRunning {
		t.Errorf("%s: status.phase %q, want Running", key, st.Phase)
	}
	_, podNet, _ := net.ParseCIDR("10.85.0.0/16") // podrun's default network
	if ip := net.ParseIP(st.PodIP); ip == nil || !podNet.Contains(ip) {
		t.Errorf("%s: status.podIP %q; want an address of podrun's network 10.85.0.0/16", key, st.PodIP)
	}
	if len(st.ContainerStatuses) != len(containers) {
		t.Errorf("%s: %d containerStatuses, want %d (%v)", key, len(st.ContainerStatuses), len(containers), containers)
	}
	for _, name := range containers {
		var cs *corev1.ContainerStatus
		for i := range st.ContainerStatuses {
			if st.ContainerStatuses[i].Name == name {
				cs = &st.ContainerStatuses[i]
			}
		}
		switch {
		case cs == nil:
			t.Errorf("%s: no containerStatus for %q", key, name)
		case !cs.Ready || cs.State.Running == nil:
			t.Errorf("%s: container %q: ready %v, state %+v; want ready and running", key, name, cs.Ready, cs.State)
		}
	}
}

// TestInputsCLI: ps output formats, down by name, exit codes of usage and
// runtime errors, version.
func TestInputsCLI(t *testing.T) {
	H.require(t)
	downAndCheckOnCleanup(t, "in-cli", "in-cli-ns/in-cli-other")
	manifest := fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: in-cli
spec:
  terminationGracePeriodSeconds: 5
  containers:
  - name: main
    image: %[1]s
    command: %[2]s
  - name: side
    image: %[1]s
    command: %[2]s
---
`, H.Image, longRunningCommand) + longRunningPod("in-cli-ns", "in-cli-other", H.Image)
	path := H.WriteManifest(t, "cli.yaml", manifest)
	stdout, stderr, code := H.Podrun(t, "", "up", "--timeout", "2m", path)
	if code != 0 {
		t.Fatalf("podrun up: exit %d; stderr:\n%s", code, stderr)
	}
	for _, want := range []string{"pod/default/in-cli created (Running)\n", "pod/in-cli-ns/in-cli-other created (Running)\n"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("podrun up stdout %q lacks %q", stdout, want)
		}
	}

	var uid string
	for _, format := range []string{"json", "yaml"} {
		t.Run("ps -o "+format, func(t *testing.T) {
			stdout, stderr, code := H.Podrun(t, "", "ps", "-o", format)
			if code != 0 {
				t.Fatalf("podrun ps -o %s: exit %d; stderr:\n%s", format, code, stderr)
			}
			list := parsePodList(t, stdout, format)
			pod := findPod(list, "default", "in-cli")
			if pod == nil {
				t.Fatalf("podrun ps -o %s does not list default/in-cli:\n%s", format, stdout)
			}
			checkRunningPod(t, pod, "main", "side")
			if len(pod.Spec.Containers) != 2 || pod.Spec.Containers[0].Image != H.Image {
				t.Errorf("default/in-cli: spec.containers %+v; want the applied manifest", pod.Spec.Containers)
			}
			if pod.UID == "" {
				t.Errorf("default/in-cli: no metadata.uid")
			}
			uid = string(pod.UID)
			if other := findPod(list, "in-cli-ns", "in-cli-other"); other == nil {
				t.Errorf("podrun ps -o %s does not list in-cli-ns/in-cli-other", format)
			} else {
				checkRunningPod(t, other, "main")
			}
		})
	}

	t.Run("ps table", func(t *testing.T) {
		stdout, _, code := H.Podrun(t, "", "ps", "-o", "wide")
		if code != 0 {
			t.Fatalf("podrun ps -o wide: exit %d", code)
		}
		lines := strings.Split(strings.TrimSpace(stdout), "\n")
		if want := []string{"NAMESPACE", "NAME", "READY", "STATUS", "RESTARTS", "AGE", "IP", "SOURCE", "UID", "OWNER"}; strings.Join(strings.Fields(lines[0]), " ") != strings.Join(want, " ") {
			t.Errorf("header %q, want %v", lines[0], want)
		}
		found := false
		for _, l := range lines[1:] {
			f := strings.Fields(l)
			if len(f) == 10 && f[0] == "default" && f[1] == "in-cli" {
				found = true
				if f[2] != "2/2" || f[3] != "Running" || f[4] != "0" || f[7] != path || f[8] != uid || f[9] != "<none>" {
					t.Errorf("row %q; want READY 2/2, STATUS Running, RESTARTS 0, UID %s, SOURCE %s, OWNER <none>", l, uid, path)
				}
			}
		}
		if !found {
			t.Errorf("podrun ps -o wide has no row for default/in-cli:\n%s", stdout)
		}
	})

	t.Run("ps -o name", func(t *testing.T) {
		stdout, _, code := H.Podrun(t, "", "ps", "-o", "name")
		if code != 0 {
			t.Fatalf("podrun ps -o name: exit %d", code)
		}
		lines := strings.Split(strings.TrimSpace(stdout), "\n")
		has := func(s string) bool {
			for _, l := range lines {
				if l == s {
					return true
				}
			}
			return false
		}
		if !has("pod/in-cli") || !has("pod/in-cli-other") {
			t.Errorf("podrun ps -o name lacks pod/in-cli or pod/in-cli-other:\n%s", stdout)
		}
	})

	t.Run("ps unknown output", func(t *testing.T) {
		stdout, stderr, code := H.Podrun(t, "", "ps", "-o", "bogus")
		if code != 2 {
			t.Errorf("podrun ps -o bogus: exit %d, want 2", code)
		}
		if !strings.Contains(stderr, `"bogus"`) {
			t.Errorf("stderr does not name the format: %q", stderr)
		}
		if stdout != "" {
			t.Errorf("podrun ps -o bogus printed %q", stdout)
		}
	})

	t.Run("down NAME and NAMESPACE/NAME", func(t *testing.T) {
		before := len(containerIDsOfPodName(t, "in-cli"))
		if before != 3 {
			t.Errorf("pod in-cli has %d containers before down, want 3 (sandbox, main, side)", before)
		}
		stdout, stderr, code := H.Podrun(t, "", "down", "in-cli")
		if code != 0 || stdout != "pod/default/in-cli deleted\n" {
			t.Errorf("podrun down in-cli: exit %d, stdout %q; stderr:\n%s", code, stdout, stderr)
		}
		if ids := containerIDsOfPodName(t, "in-cli"); len(ids) != 0 {
			t.Errorf("containers of in-cli remain after down: %v", ids)
		}
		if ids := containerIDsOfPodName(t, "in-cli-other"); len(ids) != 2 {
			t.Errorf("down in-cli touched in-cli-ns/in-cli-other: its containers are %v", ids)
		}
		stdout, stderr, code = H.Podrun(t, "", "down", "in-cli-ns/in-cli-other")
		if code != 0 || stdout != "pod/in-cli-ns/in-cli-other deleted\n" {
			t.Errorf("podrun down in-cli-ns/in-cli-other: exit %d, stdout %q; stderr:\n%s", code, stdout, stderr)
		}
		if ids := containerIDsOfPodName(t, "in-cli-other"); len(ids) != 0 {
			t.Errorf("containers of in-cli-other remain after down: %v", ids)
		}
		if uid != "" {
			if _, err := os.Stat(filepath.Join(H.Root, "pods", uid)); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("the pod directory of in-cli remains after down: %v", err)
			}
			if _, err := os.Lstat("/run/netns/podrun-" + uid); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("the netns of in-cli remains after down: %v", err)
			}
		}
		stdout, _, code = H.Podrun(t, "", "ps", "-a", "-o", "name")
		if code != 0 || strings.Contains(stdout, "pod/in-cli\n") || strings.Contains(stdout, "pod/in-cli-other\n") {
			t.Errorf("podrun ps -a after down: exit %d:\n%s", code, stdout)
		}
	})

	t.Run("down of a pod that does not exist", func(t *testing.T) {
		stdout, stderr, code := H.Podrun(t, "", "down", "in-nope", "in-nope-ns/in-nope")
		if code != 0 {
			t.Errorf("podrun down of missing pods: exit %d, want 0; stderr:\n%s", code, stderr)
		}
		for _, want := range []string{"pod/default/in-nope not found", "pod/in-nope-ns/in-nope not found"} {
			if !strings.Contains(stdout, want) {
				t.Errorf("stdout %q lacks %q", stdout, want)
			}
		}
	})

	t.Run("unreachable containerd", func(t *testing.T) {
		const addr = "/nonexistent/socket"
		// The harness passes --address first; the later one wins.
		stdout, stderr, code := H.Podrun(t, "", "--address", addr, "ps")
		if code != 3 {
			t.Errorf("podrun --address %s ps: exit %d, want 3", addr, code)
		}
		if !strings.Contains(stderr, addr) {
			t.Errorf("stderr does not name the address %s:\n%s", addr, stderr)
		}
		if stdout != "" {
			t.Errorf("stdout %q, want nothing", stdout)
		}
	})

	t.Run("unknown flag", func(t *testing.T) {
		for _, args := range [][]string{{"ps", "--in-bogus"}, {"--in-bogus", "ps"}, {"up", "--in-bogus", path}} {
			_, stderr, code := H.Podrun(t, "", args...)
			if code != 2 {
				t.Errorf("podrun %v: exit %d, want 2", args, code)
			}
			if !strings.Contains(stderr, "in-bogus") {
				t.Errorf("podrun %v: stderr does not name the flag:\n%s", args, stderr)
			}
		}
		if ids := containerIDsOfPodName(t, "in-cli"); len(ids) != 0 {
			t.Errorf("up with an unknown flag created containers: %v", ids)
		}
	})

	t.Run("version", func(t *testing.T) {
		stdout, stderr, code := H.Podrun(t, "", "version")
		if code != 0 {
			t.Fatalf("podrun version: exit %d; stderr:\n%s", code, stderr)
		}
		if !strings.HasPrefix(stdout, "podrun ") || !strings.Contains(stdout, "containerd client v") {
			t.Errorf("podrun version printed %q; want \"podrun VERSION (..., containerd client vX.Y.Z)\"", stdout)
		}
	})
}

// TestInputsNamespaces: pods of the same name in two namespaces run side by
// side, are listed, re-applied and taken down independently.
func TestInputsNamespaces(t *testing.T) {
	H.require(t)
	downAndCheckOnCleanup(t, "team-a/in-twin", "default/in-twin")
	path := H.WriteManifest(t, "twins.yaml", longRunningPod("team-a", "in-twin", H.Image)+"---\n"+longRunningPod("", "in-twin", H.Image))
	stdout, stderr, code := H.Podrun(t, "", "up", "--timeout", "2m", path)
	if code != 0 {
		t.Fatalf("podrun up: exit %d; stderr:\n%s", code, stderr)
	}
	for _, want := range []string{"pod/team-a/in-twin created (Running)\n", "pod/default/in-twin created (Running)\n"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("podrun up stdout %q lacks %q", stdout, want)
		}
	}

	stdout, _, code = H.Podrun(t, "", "ps")
	if code != 0 {
		t.Fatalf("podrun ps: exit %d", code)
	}
	rows := map[string]bool{}
	for _, l := range strings.Split(stdout, "\n") {
		if f := strings.Fields(l); len(f) >= 4 && f[1] == "in-twin" {
			rows[f[0]] = true
			if f[2] != "1/1" || f[3] != "Running" {
				t.Errorf("ps row %q; want READY 1/1, STATUS Running", l)
			}
		}
	}
	if !rows["team-a"] || !rows["default"] || len(rows) != 2 {
		t.Errorf("podrun ps rows for in-twin are in namespaces %v; want team-a and default:\n%s", rows, stdout)
	}

	stdout, _, code = H.Podrun(t, "", "ps", "-o", "json")
	if code != 0 {
		t.Fatalf("podrun ps -o json: exit %d", code)
	}
	list := parsePodList(t, stdout, "json")
	a, d := findPod(list, "team-a", "in-twin"), findPod(list, "default", "in-twin")
	if a == nil || d == nil {
		t.Fatalf("podrun ps -o json lacks team-a/in-twin or default/in-twin:\n%s", stdout)
	}
	checkRunningPod(t, a, "main")
	checkRunningPod(t, d, "main")
	if a.UID == d.UID {
		t.Errorf("both pods have UID %s", a.UID)
	}
	if a.Status.PodIP == d.Status.PodIP {
		t.Errorf("both pods have IP %s", a.Status.PodIP)
	}

	// containerd: a sandbox and main for each, labelled with its namespace.
	c, ctx := H.Client(t)
	perNS := map[string]int{}
	for _, id := range containerIDsOfPodName(t, "in-twin") {
		ctr, err := c.LoadContainer(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		l, err := ctr.Labels(ctx)
		if err != nil {
			t.Fatal(err)
		}
		perNS[l["io.podrun.pod.namespace"]]++
	}
	if perNS["team-a"] != 2 || perNS["default"] != 2 || len(perNS) != 2 {
		t.Errorf("containers of in-twin per pod namespace: %v; want 2 in team-a and 2 in default", perNS)
	}

	// Applying the same file again changes nothing.
	stdout, stderr, code = H.Podrun(t, "", "up", "--timeout", "2m", path)
	if code != 0 {
		t.Fatalf("podrun up (again): exit %d; stderr:\n%s", code, stderr)
	}
	for _, want := range []string{"pod/team-a/in-twin unchanged (Running)\n", "pod/default/in-twin unchanged (Running)\n"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("podrun up (again) stdout %q lacks %q", stdout, want)
		}
	}

	// Taking one down leaves the other.
	stdout, stderr, code = H.Podrun(t, "", "down", "team-a/in-twin")
	if code != 0 || stdout != "pod/team-a/in-twin deleted\n" {
		t.Errorf("podrun down team-a/in-twin: exit %d, stdout %q; stderr:\n%s", code, stdout, stderr)
	}
	stdout, _, _ = H.Podrun(t, "", "ps", "-o", "json")
	list = parsePodList(t, stdout, "json")
	if findPod(list, "team-a", "in-twin") != nil {
		t.Errorf("team-a/in-twin still listed after its down")
	}
	if p := findPod(list, "default", "in-twin"); p == nil {
		t.Errorf("default/in-twin is gone after down team-a/in-twin")
	} else {
		checkRunningPod(t, p, "main")
		if p.UID != d.UID {
			t.Errorf("default/in-twin has UID %s, was %s", p.UID, d.UID)
		}
	}
	if _, err := os.Stat(filepath.Join(H.Root, "pods", string(a.UID))); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("team-a/in-twin's pod directory remains: %v", err)
	}
	if _, err := os.Stat(filepath.Join(H.Root, "pods", string(d.UID))); err != nil {
		t.Errorf("default/in-twin's pod directory: %v", err)
	}
}
