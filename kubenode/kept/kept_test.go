package kept

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/podrun/podrun/manifest"
)

var t0 = time.Date(2026, 11, 29, 16, 0, 0, 0, time.UTC)

func openStore(t *testing.T, dir string, c Cluster, o Options) *Store {
	t.Helper()
	o.Dir, o.Cluster = dir, c
	if o.Clock == nil {
		o.Clock = clocktesting.NewFakePassiveClock(t0)
	}
	s, err := Open(o)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func save(t *testing.T, s *Store, p Pod) {
	t.Helper()
	if err := s.Save(p); err != nil {
		t.Fatal(err)
	}
}

func load(t *testing.T, s *Store) ([]Pod, []*Problem) {
	t.Helper()
	pods, problems, err := s.Load()
	if err != nil {
		t.Fatal(err)
	}
	return pods, problems
}

func keys(pods []Pod) []string {
	var out []string
	for _, p := range pods {
		out = append(out, p.Key()+"@"+string(p.Pod.UID))
	}
	return out
}

func entries(t *testing.T, dir string) []string {
	t.Helper()
	des, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, de := range des {
		out = append(out, de.Name())
	}
	return out
}

func mode(t *testing.T, path string) os.FileMode {
	t.Helper()
	st, err := os.Lstat(path)
	if err != nil {
		t.Fatal(err)
	}
	return st.Mode().Perm()
}

// TestSaveLoad: a pod kept with its objects and tokens comes back as it
// was, from files root's alone, under the cluster it came from.
func TestSaveLoad(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "kept")
	s := openStore(t, dir, clusterA, Options{})
	exp := metav1.NewTime(t0.Add(time.Hour))
	web := Pod{
		Pod:        testPod("u1", "web"),
		ConfigMaps: map[string]*corev1.ConfigMap{"conf": {ObjectMeta: metav1.ObjectMeta{Name: "conf", ResourceVersion: "7"}, Data: map[string]string{"a": "1"}}},
		Secrets:    map[string]*corev1.Secret{"pass": {ObjectMeta: metav1.ObjectMeta{Name: "pass"}, Data: map[string][]byte{"p": []byte("s3cret")}}},
		Tokens: map[string]*authenticationv1.TokenRequest{"kube-api-access/token": {
			Spec:   authenticationv1.TokenRequestSpec{Audiences: []string{"https://kubernetes.default.svc"}},
			Status: authenticationv1.TokenRequestStatus{Token: "eyJ...", ExpirationTimestamp: exp}}},
	}
	web.Pod.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "kube-controller-manager"}}
	save(t, s, web)
	if web.Pod.ManagedFields == nil {
		t.Error("Save changed the caller's pod")
	}
	save(t, s, Pod{Pod: testPod("u2", "api")})

	pods, problems := load(t, openStore(t, dir, clusterA, Options{}))
	if len(problems) != 0 {
		t.Fatalf("problems: %v", problems)
	}
	if got, want := keys(pods), []string{"default/api@u2", "default/web@u1"}; !slices.Equal(got, want) {
		t.Fatalf("loaded %v, want %v", got, want)
	}
	got := pods[1]
	if got.Pod.ResourceVersion != "100" || got.Pod.Spec.Containers[0].Image != "busybox:1" ||
		got.ConfigMaps["conf"].Data["a"] != "1" || got.ConfigMaps["conf"].ResourceVersion != "7" ||
		string(got.Secrets["pass"].Data["p"]) != "s3cret" ||
		got.Tokens["kube-api-access/token"].Status.Token != "eyJ..." || !got.Tokens["kube-api-access/token"].Status.ExpirationTimestamp.Equal(&exp) ||
		!got.Saved.Equal(t0) || got.Pod.ManagedFields != nil {
		t.Errorf("loaded %+v", got)
	}
	for path, want := range map[string]os.FileMode{dir: 0o700, filepath.Join(dir, "pods"): 0o700, filepath.Join(dir, "aside"): 0o700, filepath.Join(dir, "pods", "u1.json"): 0o600} {
		if m := mode(t, path); m != want {
			t.Errorf("%s: mode %04o, want %04o", path, m, want)
		}
	}
	if got := entries(t, filepath.Join(dir, "pods")); !slices.Equal(got, []string{"u1.json", "u2.json"}) {
		t.Errorf("pods/ holds %v", got)
	}
}

// TestCrashBetweenWriteAndRename: a crash after the new file is written
// but before its rename leaves the old file standing and a temporary
// file, which the next Load ignores and removes.
func TestCrashBetweenWriteAndRename(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir, clusterA, Options{})
	save(t, s, Pod{Pod: testPod("u1", "web")})

	v2 := testPod("u1", "web")
	v2.Spec.Containers[0].Image = "busybox:2"
	s.fs.rename = func(int, string, int, string) error { panic("power cut") }
	func() {
		defer func() {
			if recover() == nil {
				t.Fatal("no crash")
			}
		}()
		_ = s.Save(Pod{Pod: v2})
	}()
	left := entries(t, filepath.Join(dir, "pods"))
	if len(left) != 2 || !isTemp(left[0]) || left[1] != "u1.json" {
		t.Fatalf("after the crash pods/ holds %v, want a temporary file and u1.json", left)
	}

	pods, problems := load(t, openStore(t, dir, clusterA, Options{}))
	if len(problems) != 0 {
		t.Errorf("problems: %v", problems)
	}
	if len(pods) != 1 || pods[0].Pod.Spec.Containers[0].Image != "busybox:1" {
		t.Errorf("loaded %+v, want the version before the crash", pods)
	}
	if got := entries(t, filepath.Join(dir, "pods")); !slices.Equal(got, []string{"u1.json"}) {
		t.Errorf("after Load pods/ holds %v, want the temporary file removed", got)
	}
}

// TestFailedRenameLeavesNothing: a write that fails removes its temporary
// file, and the old version stands.
func TestFailedRenameLeavesNothing(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir, clusterA, Options{})
	save(t, s, Pod{Pod: testPod("u1", "web")})
	v2 := testPod("u1", "web")
	v2.Spec.Containers[0].Image = "busybox:2"
	s.fs.rename = func(int, string, int, string) error { return syscall.EIO }
	if err := s.Save(Pod{Pod: v2}); !errors.Is(err, syscall.EIO) || !strings.Contains(err.Error(), "keeping pod default/web: rename ") {
		t.Errorf("Save = %v", err)
	}
	if got := entries(t, filepath.Join(dir, "pods")); !slices.Equal(got, []string{"u1.json"}) {
		t.Errorf("pods/ holds %v", got)
	}
	pods, _ := load(t, s)
	if len(pods) != 1 || pods[0].Pod.Spec.Containers[0].Image != "busybox:1" {
		t.Errorf("loaded %+v", pods)
	}
}

// TestDamagedSetAside: each damaged file is reported with its path and
// moved to aside/ unchanged; the other pods' files load.
func TestDamagedSetAside(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir, clusterA, Options{MaxFileSize: 64 << 10})
	save(t, s, Pod{Pod: testPod("good", "good")})
	save(t, s, Pod{Pod: testPod("flip", "flip")})
	pods := filepath.Join(dir, "pods")
	good, err := os.ReadFile(filepath.Join(pods, "good.json"))
	if err != nil {
		t.Fatal(err)
	}
	flip, err := os.ReadFile(filepath.Join(pods, "flip.json"))
	if err != nil {
		t.Fatal(err)
	}
	bad := map[string][]byte{
		"trunc.json": good[:len(good)-40],
		"empty.json": nil,
		"json.json":  []byte(`{"format": 1, "sha256": "`),
		"flip.json":  []byte(strings.Replace(string(flip), "busybox:1", "busybox:7", 1)),
		"newer.json": []byte(`{"format": 2, "sha256": "", "record": {}}`),
		"big.json":   []byte(strings.Repeat(" ", 64<<10+1)),
		"other.json": good, // the file of pod "good" under another name
	}
	for name, data := range bad {
		if err := os.WriteFile(filepath.Join(pods, name), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(filepath.Join(pods, "dir.json"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("good.json", filepath.Join(pods, "link.json")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(pods, "notes.txt"), []byte("mine"), 0o600); err != nil {
		t.Fatal(err)
	}

	got, problems := load(t, openStore(t, dir, clusterA, Options{MaxFileSize: 64 << 10}))
	if k := keys(got); !slices.Equal(k, []string{"default/good@good"}) {
		t.Errorf("loaded %v", k)
	}
	want := map[string]string{
		"trunc.json": "is damaged (unexpected end of JSON input): not run; kept aside as " + filepath.Join(dir, "aside", "trunc.json.damaged.20261129T160000Z"),
		"empty.json": "is damaged (unexpected end of JSON input)",
		"json.json":  "is damaged",
		"flip.json":  "is damaged (its checksum does not match: not what podrun wrote)",
		"newer.json": "is in format 2, of a newer podrun (this one reads format 1): not run; kept aside as " + filepath.Join(dir, "aside", "newer.json.format.20261129T160000Z"),
		"big.json":   "is damaged (larger than the limit of 65536 bytes)",
		"other.json": "is damaged (it holds no pod of UID other)",
		"dir.json":   "is not trusted (not a regular file: it is a directory): not run; kept aside as",
		"link.json":  "is not trusted (not a regular file: it is a symbolic link)",
		"notes.txt":  "is not a kept pod's file (UID.json): not read",
	}
	if len(problems) != len(want) {
		t.Errorf("%d problems, want %d: %v", len(problems), len(want), problems)
	}
	for _, p := range problems {
		name := filepath.Base(p.Path)
		msg := p.Error()
		if !strings.HasPrefix(msg, "kept state "+filepath.Join(pods, name)+" ") || !strings.Contains(msg, want[name]) {
			t.Errorf("%s: %q, want %q", name, msg, want[name])
		}
		if name == "notes.txt" {
			continue
		}
		if p.Aside == "" || filepath.Dir(p.Aside) != filepath.Join(dir, "aside") {
			t.Errorf("%s: kept aside as %q", name, p.Aside)
			continue
		}
		if data, ok := bad[name]; ok {
			if kept, err := os.ReadFile(p.Aside); err != nil || string(kept) != string(data) {
				t.Errorf("%s: aside as %s: %q, %v: not the file as it was", name, p.Aside, kept, err)
			}
		}
	}
	if got := entries(t, pods); !slices.Equal(got, []string{"good.json", "notes.txt"}) {
		t.Errorf("pods/ holds %v", got)
	}
	if got := entries(t, filepath.Join(dir, "aside")); len(got) != 9 {
		t.Errorf("aside/ holds %v", got)
	}
	// Loaded again: nothing more to say, the good pod still there.
	if got, problems := load(t, openStore(t, dir, clusterA, Options{})); len(got) != 1 || len(problems) != 1 {
		t.Errorf("second Load: %v, %v", keys(got), problems)
	}
}

// TestOtherClusterRefused: the kept state of another cluster (or under
// another node name) is never run: refused naming the file and both
// clusters, left as it is while the API server has not answered (the
// kubeconfig may be the one in error), and kept aside as it was once it
// answered (Reconcile); the state of this cluster is kept from then on.
func TestOtherClusterRefused(t *testing.T) {
	dir := t.TempDir()
	save(t, openStore(t, dir, clusterA, Options{}), Pod{Pod: testPod("u1", "web")})
	path := filepath.Join(dir, "pods", "u1.json")
	before, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	s := openStore(t, dir, clusterB, Options{})
	pods, problems := load(t, s)
	if len(pods) != 0 || len(problems) != 1 {
		t.Fatalf("loaded %v, problems %v", keys(pods), problems)
	}
	refused := "kept state " + path + ` is of another cluster: kept for node "vm" of https://10.0.0.1:6443 (CA sha256 aaaaaaaaaaaa), and this is node "vm" of https://10.0.0.2:6443 (CA sha256 bbbbbbbbbbbb): not run`
	if got, want := problems[0].Error(), refused+"; left in place until this cluster's API server answers (the kubeconfig may be what is wrong), then set aside"; got != want {
		t.Errorf("problem:\n%s\nwant\n%s", got, want)
	}
	if after, err := os.ReadFile(path); err != nil || string(after) != string(before) || len(entries(t, filepath.Join(dir, "aside"))) != 0 {
		t.Errorf("before the API answered: %v, changed: %v, aside/ %v", err, string(after) != string(before), entries(t, filepath.Join(dir, "aside")))
	}
	// Loaded again (a restart, the API server still away): the same.
	if pods, problems := load(t, openStore(t, dir, clusterB, Options{})); len(pods) != 0 || len(problems) != 1 || problems[0].Aside != "" {
		t.Errorf("loaded again: %v, problems %v", keys(pods), problems)
	}
	// The API server answers: set aside, said once.
	removed, aside, err := s.Reconcile(nil)
	if err != nil || len(removed) != 0 || len(aside) != 1 {
		t.Fatalf("Reconcile = %v, %v, %v", removed, aside, err)
	}
	asidePath := filepath.Join(dir, "aside", "u1.json.other-cluster.20261129T160000Z")
	if got, want := aside[0].Error(), refused+"; kept aside as "+asidePath; got != want {
		t.Errorf("problem:\n%s\nwant\n%s", got, want)
	}
	if after, err := os.ReadFile(asidePath); err != nil || string(after) != string(before) {
		t.Errorf("kept aside: %v, changed: %v", err, string(after) != string(before))
	}
	if _, aside, err := s.Reconcile(nil); err != nil || len(aside) != 0 {
		t.Errorf("Reconcile again: %v, %v", aside, err)
	}
	// The same pod, as cluster B has it, is kept anew.
	save(t, s, Pod{Pod: testPod("u1", "web")})
	if pods, problems := load(t, openStore(t, dir, clusterB, Options{})); len(pods) != 1 || len(problems) != 0 {
		t.Errorf("loaded %v, problems %v", keys(pods), problems)
	}
}

// TestNotTrusted: a directory others may write is not read at all (and
// nothing in it moved); a file others may write, or of another user, is
// kept aside; one others may only read is made 0600 and loads.
func TestNotTrusted(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir, clusterA, Options{})
	for _, uid := range []string{"a", "b", "c"} {
		save(t, s, Pod{Pod: testPod(uid, "p-"+uid)})
	}
	pods := filepath.Join(dir, "pods")

	if err := os.Chmod(pods, 0o777); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Load(); err == nil || !strings.Contains(err.Error(), "kept state: "+pods+" is writable by its group or by others (mode 0777)") {
		t.Errorf("Load of a world-writable directory: %v", err)
	}
	if err := s.Save(Pod{Pod: testPod("d", "p-d")}); err == nil {
		t.Error("Save into a world-writable directory succeeded")
	}
	if _, err := Open(Options{Dir: dir, Cluster: clusterA}); err == nil {
		t.Error("Open of a world-writable directory succeeded")
	}
	if got := entries(t, pods); !slices.Equal(got, []string{"a.json", "b.json", "c.json"}) {
		t.Errorf("pods/ holds %v", got)
	}
	if err := os.Chmod(pods, 0o755); err != nil { // readable by others: made 0700
		t.Fatal(err)
	}

	if err := os.Chmod(filepath.Join(pods, "a.json"), 0o666); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(filepath.Join(pods, "b.json"), 0o644); err != nil {
		t.Fatal(err)
	}
	wantProblems := 1
	if os.Getuid() == 0 {
		if err := os.Chown(filepath.Join(pods, "c.json"), 65534, 65534); err != nil {
			t.Fatal(err)
		}
		wantProblems = 2
	}
	got, problems := load(t, s)
	if len(problems) != wantProblems {
		t.Fatalf("problems %v", problems)
	}
	if msg := problems[0].Error(); !strings.Contains(msg, "a.json is not trusted (writable by its group or by others (mode 0666): chmod go-w): not run; kept aside as ") {
		t.Errorf("problem: %s", msg)
	}
	if wantProblems == 2 {
		if msg := problems[1].Error(); !strings.Contains(msg, "c.json is not trusted (owned by uid 65534, neither root nor the daemon's user)") {
			t.Errorf("problem: %s", msg)
		}
	}
	if k := keys(got); len(k) == 0 || k[0] != "default/p-b@b" {
		t.Errorf("loaded %v", k)
	}
	if m := mode(t, filepath.Join(pods, "b.json")); m != 0o600 {
		t.Errorf("b.json: mode %04o, want 0600", m)
	}
	if m := mode(t, pods); m != 0o700 {
		t.Errorf("pods/: mode %04o, want 0700", m)
	}
}

// TestReconcile: a re-list drops the kept pods the API no longer has,
// and only them.
func TestReconcile(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir, clusterA, Options{})
	for _, uid := range []string{"a", "b", "c"} {
		save(t, s, Pod{Pod: testPod(uid, "p-"+uid)})
	}
	if err := os.WriteFile(filepath.Join(dir, "pods", "notes.txt"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	removed, _, err := s.Reconcile([]*corev1.Pod{testPod("b", "p-b"), testPod("z", "p-z")})
	if err != nil || !slices.Equal(removed, []types.UID{"a", "c"}) {
		t.Fatalf("Reconcile = %v, %v", removed, err)
	}
	if got := entries(t, filepath.Join(dir, "pods")); !slices.Equal(got, []string{"b.json", "notes.txt"}) {
		t.Errorf("pods/ holds %v", got)
	}
	// A removed pod's slot is free again (MaxPods counts what is kept).
	s2 := openStore(t, t.TempDir(), clusterA, Options{MaxPods: 1})
	save(t, s2, Pod{Pod: testPod("a", "p-a")})
	if _, _, err := s2.Reconcile(nil); err != nil {
		t.Fatal(err)
	}
	save(t, s2, Pod{Pod: testPod("b", "p-b")})
	if err := s.Remove("b"); err != nil {
		t.Fatal(err)
	}
	if err := s.Remove("b"); err != nil {
		t.Errorf("Remove of a pod not kept: %v", err)
	}
	if pods, _ := load(t, s); len(pods) != 0 {
		t.Errorf("loaded %v", keys(pods))
	}
}

// TestBounds: a pod over the size limit, or one more than MaxPods, is
// refused by Save with nothing written; Load reads at most MaxPods.
func TestBounds(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir, clusterA, Options{MaxPods: 2, MaxFileSize: 8 << 10})
	save(t, s, Pod{Pod: testPod("a", "p-a")})
	big := Pod{Pod: testPod("b", "p-b"), ConfigMaps: map[string]*corev1.ConfigMap{"c": {Data: map[string]string{"k": strings.Repeat("x", 8<<10)}}}}
	if err := s.Save(big); err == nil || !strings.Contains(err.Error(), "keeping pod default/p-b: its kept copy (") || !strings.Contains(err.Error(), "larger than the limit of 8192 bytes") {
		t.Errorf("Save of a big pod: %v", err)
	}
	save(t, s, Pod{Pod: testPod("b", "p-b")})
	if err := s.Save(Pod{Pod: testPod("c", "p-c")}); !errors.Is(err, ErrTooMany) {
		t.Errorf("Save of a third pod: %v", err)
	}
	save(t, s, Pod{Pod: testPod("a", "p-a-renamed")}) // a pod kept already is updated
	if got := entries(t, filepath.Join(dir, "pods")); !slices.Equal(got, []string{"a.json", "b.json"}) {
		t.Errorf("pods/ holds %v", got)
	}
	if err := s.Save(Pod{Pod: testPod("../x", "p")}); err == nil {
		t.Error("a UID that is no file name kept")
	}

	// Kept by a node with more max-pods: the first two are run.
	wide := openStore(t, dir, clusterA, Options{MaxPods: 3})
	save(t, wide, Pod{Pod: testPod("c", "p-c")})
	narrow := openStore(t, dir, clusterA, Options{MaxPods: 2})
	pods, problems := load(t, narrow)
	if err := narrow.Save(Pod{Pod: testPod("d", "p-d")}); !errors.Is(err, ErrTooMany) {
		t.Errorf("Save of a pod beyond those kept and not run: %v", err)
	}
	if k := keys(pods); !slices.Equal(k, []string{"default/p-a-renamed@a", "default/p-b@b"}) || len(problems) != 1 ||
		!strings.Contains(problems[0].Error(), "c.json is beyond the node's 2 pods (max-pods): not run") {
		t.Errorf("loaded %v, %v", k, problems)
	}
	if got := entries(t, filepath.Join(dir, "pods")); len(got) != 3 {
		t.Errorf("pods/ holds %v: a pod beyond max-pods is left in place", got)
	}
}

// TestStatusOnlyChangeNotWritten: a status update is no write to the
// device; a change of what a reboot needs is.
func TestStatusOnlyChangeNotWritten(t *testing.T) {
	dir := t.TempDir()
	clk := clocktesting.NewFakePassiveClock(t0)
	s := openStore(t, dir, clusterA, Options{Clock: clk})
	p := testPod("a", "web")
	save(t, s, Pod{Pod: p})
	path := filepath.Join(dir, "pods", "a.json")
	inode := func() uint64 {
		st, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		return st.Sys().(*syscall.Stat_t).Ino
	}
	first := inode()
	clk.SetTime(t0.Add(time.Minute))
	p = p.DeepCopy()
	p.ResourceVersion = "101"
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
	save(t, s, Pod{Pod: p})
	if inode() != first {
		t.Error("a status update was written")
	}
	p = p.DeepCopy()
	p.Status.Phase = corev1.PodSucceeded
	save(t, s, Pod{Pod: p})
	if inode() == first {
		t.Error("the phase reached was not written")
	}
	pods, _ := load(t, openStore(t, dir, clusterA, Options{}))
	if len(pods) != 1 || pods[0].Pod.Status.Phase != corev1.PodSucceeded || !pods[0].Saved.Equal(t0.Add(time.Minute)) {
		t.Errorf("loaded %+v", pods)
	}
	// A new Store (a restarted daemon) reads what is kept before its
	// first Save, even without a Load: the same pod is not written again.
	second := inode()
	s2 := openStore(t, dir, clusterA, Options{})
	save(t, s2, Pod{Pod: p})
	if inode() != second {
		t.Error("the same pod written again after a restart")
	}
}

// TestSaveAndReconcileBeforeLoad: a Save or a Reconcile before any Load
// reads the directory first, so a file of another cluster is set aside,
// never overwritten or forgotten; the next Load says so.
func TestSaveAndReconcileBeforeLoad(t *testing.T) {
	for _, first := range []string{"Save", "Reconcile"} {
		dir := t.TempDir()
		save(t, openStore(t, dir, clusterA, Options{}), Pod{Pod: testPod("u1", "web")})
		s := openStore(t, dir, clusterB, Options{})
		switch first {
		case "Save":
			save(t, s, Pod{Pod: testPod("u2", "api")})
		case "Reconcile":
			if removed, _, err := s.Reconcile(nil); err != nil || len(removed) != 0 {
				t.Errorf("Reconcile = %v, %v", removed, err)
			}
		}
		if got := entries(t, filepath.Join(dir, "aside")); len(got) != 1 || !strings.HasPrefix(got[0], "u1.json.other-cluster.") {
			t.Errorf("%s first: aside/ holds %v", first, got)
		}
		_, problems := load(t, s)
		if len(problems) != 1 || !strings.Contains(problems[0].Error(), "u1.json is of another cluster") {
			t.Errorf("%s first: problems %v", first, problems)
		}
		if _, problems := load(t, s); len(problems) != 0 {
			t.Errorf("%s first: problems again %v", first, problems)
		}
	}
}

// TestSupersededCopy: two kept copies of one namespace/name (a crash
// between keeping the new pod and forgetting the old): the later stands,
// the other is left for the re-list.
func TestSupersededCopy(t *testing.T) {
	dir := t.TempDir()
	clk := clocktesting.NewFakePassiveClock(t0)
	s := openStore(t, dir, clusterA, Options{Clock: clk})
	save(t, s, Pod{Pod: testPod("old", "web-0")})
	clk.SetTime(t0.Add(time.Second))
	save(t, s, Pod{Pod: testPod("new", "web-0")})
	pods, problems := load(t, s)
	if k := keys(pods); !slices.Equal(k, []string{"default/web-0@new"}) || len(problems) != 1 ||
		!strings.Contains(problems[0].Error(), "old.json is pod default/web-0, kept again since under another UID: not run") || problems[0].Aside != "" {
		t.Errorf("loaded %v, %v", k, problems)
	}
}

func TestClusterOf(t *testing.T) {
	ca := caPEM(t, "kubernetes")
	file := filepath.Join(t.TempDir(), "ca.crt")
	if err := os.WriteFile(file, ca, 0o600); err != nil {
		t.Fatal(err)
	}
	inline, err := ClusterOf(&rest.Config{Host: "https://127.0.0.1:6443", TLSClientConfig: rest.TLSClientConfig{CAData: ca}}, "vm")
	if err != nil {
		t.Fatal(err)
	}
	fromFile, err := ClusterOf(&rest.Config{Host: "https://127.0.0.1:6443/", TLSClientConfig: rest.TLSClientConfig{CAFile: file}}, "vm")
	if err != nil || fromFile != inline || inline.CA == "" {
		t.Errorf("ClusterOf: %+v (%v) vs %+v", fromFile, err, inline)
	}
	if _, err := ClusterOf(&rest.Config{Host: "https://x", TLSClientConfig: rest.TLSClientConfig{CAFile: file + ".missing"}}, "vm"); err == nil {
		t.Error("a missing CA file")
	}
}

// TestNewObjects: the objects the API source read for a pod, kept and
// loaded, are the same set again, sorted by name.
func TestNewObjects(t *testing.T) {
	cm := func(name string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}}
	}
	secret := func(name string) *corev1.Secret { return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name}} }
	set := &manifest.Set{ConfigMaps: []*corev1.ConfigMap{cm("b"), cm("a")}, Secrets: []*corev1.Secret{secret("pull"), secret("db")}}
	dir := t.TempDir()
	s := openStore(t, dir, clusterA, Options{})
	save(t, s, New(testPod("u1", "web"), set))
	save(t, s, New(testPod("u2", "bare"), nil))
	pods, _ := load(t, openStore(t, dir, clusterA, Options{}))
	if len(pods) != 2 {
		t.Fatalf("loaded %v", keys(pods))
	}
	names := func(s *manifest.Set) (out []string) {
		for _, c := range s.ConfigMaps {
			out = append(out, "cm/"+c.Name)
		}
		for _, x := range s.Secrets {
			out = append(out, "secret/"+x.Name)
		}
		return out
	}
	if got, want := names(pods[1].Objects()), []string{"cm/a", "cm/b", "secret/db", "secret/pull"}; !slices.Equal(got, want) {
		t.Errorf("objects %v, want %v", got, want)
	}
	if got := names(pods[0].Objects()); len(got) != 0 || pods[0].ConfigMaps != nil || pods[0].Secrets != nil {
		t.Errorf("a pod without objects has %v", got)
	}
}

// TestRelativeDir: a relative directory is named whole in messages.
func TestRelativeDir(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	s := openStore(t, "kept", clusterA, Options{})
	if err := os.WriteFile(filepath.Join(dir, "kept", "pods", "u1.json"), []byte("{"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, problems := load(t, s)
	if len(problems) != 1 || problems[0].Path != filepath.Join(dir, "kept", "pods", "u1.json") ||
		!strings.HasPrefix(problems[0].Aside, filepath.Join(dir, "kept", "aside")+"/") {
		t.Errorf("problems %v", problems)
	}
}

// TestConcurrent: Save, Load and Reconcile from several goroutines (run
// with -race).
func TestConcurrent(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir, clusterA, Options{})
	done := make(chan error)
	for g := range 4 {
		go func() {
			var err error
			for i := range 5 {
				uid := string(rune('a'+g)) + string(rune('0'+i))
				if err = s.Save(Pod{Pod: testPod(uid, "p-"+uid)}); err != nil {
					break
				}
				if _, _, err = s.Load(); err != nil {
					break
				}
			}
			done <- err
		}()
	}
	for range 4 {
		if err := <-done; err != nil {
			t.Error(err)
		}
	}
	if removed, _, err := s.Reconcile([]*corev1.Pod{testPod("a0", "p-a0")}); err != nil || len(removed) != 19 {
		t.Errorf("Reconcile removed %d, %v", len(removed), err)
	}
	if got := entries(t, filepath.Join(dir, "pods")); !slices.Equal(got, []string{"a0.json"}) {
		t.Errorf("pods/ holds %v", got)
	}
}
