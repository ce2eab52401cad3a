// Package manifest turns Kubernetes manifests (YAML or JSON, files, directories
// or stdin) into defaulted, validated corev1 objects for podrun.
//
// The package is pure: bytes in, typed objects and field-path problems out. It
// never changes the host and never prints. Every problem names the file, the
// document and the field path, and all problems of an input come at once.
package manifest

import (
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"unicode"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
)

// Source says where a document came from.
type Source struct {
	File string // path as given by the user, or "-" for stdin
	Doc  int    // 1-based index of the document within the file; 0 when the whole file is concerned
}

// String renders the source as "pod.yaml (document 2)"; stdin is shown as
// "stdin", and a source without a document number as the file alone. A
// name that could pass for part of the message (a space, a quote, a
// control character: `a.yaml: spec`, a newline) is quoted, as kubectl
// quotes every file name.
func (s Source) String() string {
	name := s.File
	switch {
	case name == "-":
		name = "stdin"
	case strings.ContainsFunc(name, needsQuote):
		name = strconv.Quote(name)
	}
	if s.Doc == 0 {
		return name
	}
	return fmt.Sprintf("%s (document %d)", name, s.Doc)
}

// needsQuote is a character that makes a file name ambiguous in a message
// unless quoted.
func needsQuote(r rune) bool {
	return r == '"' || r == '\'' || r == '\\' || unicode.IsSpace(r) || !unicode.IsPrint(r)
}

// Origin names the source for labels and listings: "stdin", or the file's
// absolute path.
func (s Source) Origin() string {
	if s.File == "-" {
		return "stdin"
	}
	if strings.Contains(s.File, "://") {
		return s.File // a URL
	}
	if abs, err := filepath.Abs(s.File); err == nil {
		return abs
	}
	return s.File
}

// Pod is a defaulted, validated pod together with where it came from and its
// identity.
type Pod struct {
	*corev1.Pod // defaulted; metadata.uid is UID

	Source Source
	// Hash is the hex sha256 of the canonical JSON of the defaulted pod's
	// metadata (name, namespace, labels, annotations) and spec; see Identity.
	Hash string
	// UID is a deterministic UUID derived from namespace, name and Hash.
	UID string
	// PullSecrets are the Secrets named in spec.imagePullSecrets, found in
	// the same input (pullsecrets.go); they travel with the pod.
	PullSecrets []*corev1.Secret
	// ConfigMaps and Secrets are the objects of the pod's namespace that its
	// volumes, env and envFrom name, by name, found in the same input (for
	// the daemon, the same directory); they travel with the pod.
	ConfigMaps map[string]*corev1.ConfigMap
	Secrets    map[string]*corev1.Secret
	// Tokens are the service account tokens of its projected volumes'
	// serviceAccountToken sources, by TokenKey: only an API server's pods
	// have them (package kubepods requests them, and renews them as the
	// kubelet's token manager does, while the pod runs).
	Tokens map[string]*authenticationv1.TokenRequest
}

// TokenKey is the key in Pod.Tokens of the token written at path of
// volume.
func TokenKey(volume, path string) string { return volume + "/" + path }

// Key is the pod's namespace/name: what names it on the node.
func (p *Pod) Key() string { return p.Namespace + "/" + p.Name }

// Set is everything one Load or Parse call read.
type Set struct {
	Pods []*Pod
	// ConfigMaps and Secrets are the objects read, for the pods' references
	// (configrefs.go); a Secret's stringData is merged into its data.
	ConfigMaps []*corev1.ConfigMap
	Secrets    []*corev1.Secret
	// Notes say which objects were skipped: the kinds only a cluster uses
	// (skipped.go), one line each; and which files hold no pod (noPods).
	Notes []string
	// Warnings are what the API server would warn of in the objects read
	// ("pod.yaml (document 1): spec.containers[0].resources.limits[memory]:
	// fractional byte value ..."), one line each.
	Warnings []string
	// Workloads are the workload objects read, as "namespace/Kind/name"
	// (workloads.go): the pods of each are in Pods.
	Workloads []string
	// Jobs are the batch/v1 Jobs read (jobs.go); their pods are made as
	// they run, not listed in Pods.
	Jobs []*Job
	// CronJobs are the batch/v1 CronJobs read (cronjobs.go): the daemon
	// runs them.
	CronJobs []*CronJob
	// Rollouts are how each workload's pods are replaced, by the same
	// "namespace/Kind/name".
	Rollouts map[string]Rollout

	where map[any]where // of pods and Secrets, for Resolve's field paths
}

// Problem is one thing wrong with the input.
type Problem struct {
	Source Source
	Field  string // field path, e.g. "spec.containers[1].volumeMounts[0].name"; "" when the whole document is concerned
	Msg    string
	// More, on the last problem of a file that had too many, is how many
	// more were found and not listed (Msg says "and N more problems").
	More int
}

// String renders the problem as "pod.yaml (document 2): spec.containers[1].image: Required value".
func (p Problem) String() string {
	if p.Source == (Source{}) {
		return p.Msg
	}
	if p.Field == "" {
		return fmt.Sprintf("%s: %s", p.Source, p.Msg)
	}
	return fmt.Sprintf("%s: %s: %s", p.Source, p.Field, p.Msg)
}

// Problems is every problem found in an input.
type Problems []Problem

// Total is how many problems were found, those not listed included.
func (ps Problems) Total() int {
	n := 0
	for _, p := range ps {
		n += max(p.More, 1)
	}
	return n
}

// Error renders one line per problem.
func (ps Problems) Error() string {
	lines := make([]string, len(ps))
	for i, p := range ps {
		lines[i] = p.String()
	}
	return strings.Join(lines, "\n")
}

// reader accumulates the objects and problems of one Load or Parse call.
type reader struct {
	opts     Options // policy.go
	set      Set
	problems Problems
	names    []named       // of every object read, for checkDuplicates
	where    map[any]where // of pods and Secrets, for checkPullSecrets and Resolve
	// unresolved leaves the pods' references to ConfigMaps and Secrets to a
	// later Resolve (configrefs.go).
	unresolved bool
	dropped    map[string]int // problems over MaxProblems, by file (limits.go)
	skipped    []string       // the kind of each object skipped (skipped.go)
	// expanded is how much JSON the file being read has converted to
	// (read.go), -1 once past expandLimit.
	expanded, expandLimit int
	// reading is the file being read, since the index of its first
	// problem in problems: past MaxProblems, its problems are only counted
	// (in dropped) as they are found, not kept until its end.
	reading string
	since   int
}

// result checks the set as a whole and returns it, or the problems.
func (r *reader) result() (*Set, error) {
	r.checkDuplicates()
	r.checkPullSecrets() // pullsecrets.go
	r.mergeStringData()  // configrefs.go
	r.set.where = r.where
	set := &r.set
	if !r.unresolved {
		var problems Problems
		set, problems = resolve(set) // configrefs.go
		r.problems = append(r.problems, problems...)
	}
	if len(r.problems) > 0 {
		r.problems = limitProblems(r.problems, r.dropped)
		return nil, append(r.problems, droppedProblems(r.dropped)...)
	}
	return set, nil
}

// named is the namespace/name of an object and where it was read.
type named struct {
	kind, key string
	src       Source
}

// checkDuplicates records a problem for each object of a kind whose
// namespace/name was already read, naming where it was read first.
func (r *reader) checkDuplicates() {
	first := map[string]Source{}
	for _, n := range r.names {
		id := n.kind + " " + n.key
		if src, ok := first[id]; ok {
			r.problem(n.src, "", fmt.Sprintf("duplicate %s %q: also defined in %s", n.kind, n.key, src))
			continue
		}
		first[id] = n.src
	}
}

func (r *reader) problem(src Source, field, msg string) {
	if r.full(src) {
		r.dropped[src.File]++
		return
	}
	r.problems = append(r.problems, Problem{Source: src, Field: field, Msg: msg})
}

// full reports whether the file being read, src's, has MaxProblems
// problems: the next is counted, not kept (a pod of 25,000 empty
// containers has 50,000, which took 50 MiB).
func (r *reader) full(src Source) bool {
	return src.File == r.reading && r.reading != "" && len(r.problems)-r.since >= MaxProblems
}

// parse splits data into documents and reads each one. Past MaxProblems
// of the file, its problems are only counted.
func (r *reader) parse(file string, data []byte) {
	if limit := r.opts.maxFileSize(); int64(len(data)) > limit {
		r.problem(Source{File: file}, "", (&TooLargeError{Limit: limit}).Error())
		return
	}
	objects, skipped, first := len(r.names), len(r.skipped), len(r.problems)
	r.reading, r.since = file, first
	defer func() { r.reading = "" }()
	r.expanded, r.expandLimit = 0, r.opts.expandedLimit(len(data))
	docs, problems := splitDocuments(file, data)
	r.problems = append(r.problems, limitProblems(problems, r.dropped)...)
	if r.fileTooDense(file, len(data), docs) { // values.go
		return
	}
	for i := range docs {
		r.readDocument(docs[i])
		docs[i] = document{} // done with its bytes
		r.problems = append(r.problems[:first], limitProblems(r.problems[first:], r.dropped)...)
	}
	if len(r.problems) == first && r.dropped[file] == 0 {
		r.noPods(file, r.names[objects:], r.skipped[skipped:])
	}
	// Syntax errors are found while splitting: put the file's problems in
	// document order.
	own := r.problems[first:]
	sort.SliceStable(own, func(i, j int) bool { return own[i].Source.Doc < own[j].Source.Doc })
}

// noObjects is the problem of an input that holds no object at all.
const noObjects = "no Kubernetes objects found"

// configKinds are the kinds of named objects that make no pod.
var configKinds = map[string]string{"configmap": "ConfigMap", "secret": "Secret"}

// noPods says what a file without problems holds when it has no pod to
// run: nothing at all is a problem; only ConfigMaps, Secrets and kinds a
// node skips is a note (a bundle keeps its Services and ConfigMaps in
// files of their own), whatever those kinds are.
func (r *reader) noPods(file string, names []named, skipped []string) {
	kinds := map[string]int{}
	for _, n := range names {
		if configKinds[n.kind] == "" {
			return // a pod, a workload, a Job or a CronJob
		}
		kinds[configKinds[n.kind]]++
	}
	for _, k := range skipped {
		kinds[k]++
	}
	if len(kinds) == 0 {
		r.problem(Source{File: file}, "", noObjects)
		return
	}
	var held []string
	for _, k := range slices.Sorted(maps.Keys(kinds)) {
		held = append(held, fmt.Sprintf("%d %s", kinds[k], k))
	}
	r.set.Notes = append(r.set.Notes, fmt.Sprintf("%s: no pod in this file, only %s", Source{File: file}, strings.Join(held, ", ")))
}
