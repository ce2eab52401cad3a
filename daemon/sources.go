package daemon

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/podrun/podrun/manifest"
)

// Problem is a source that could not be applied, or a pod it defines that
// another source already defines.
type Problem struct {
	Source string `json:"source"`
	Msg    string `json:"message"`
}

// sourceState is what the daemon remembers of one source.
type sourceState struct {
	sum  [32]byte      // of the content last parsed
	good *manifest.Set // the last content that parsed, nil when none did
	err  error         // what is wrong with the current content
}

// Sources reads the manifest directory and URL, keeping the last good
// content of each source so that a broken write never tears anything down.
type Sources struct {
	Dir string // absolute
	// URL is the manifest URL (credentials and all), used only to fetch;
	// everywhere else (logs, status, pod labels) it is named by URLName.
	URL string
	// URLHeaderFile holds HTTP headers sent with every fetch of URL
	// ("Authorization: Bearer ...", one per line), read at each fetch.
	URLHeaderFile string
	// Admission is applied to every pod read (see Options.Admission).
	Admission manifest.Options
	// API is the source label of the pods bound to the node by the API
	// server (Options.Cluster), "" without one.
	API    string
	client *http.Client
	state  map[string]*sourceState
	// jobs and cronJobs are those of the last Scan (Jobs).
	jobs     []*manifest.Job
	cronJobs []*manifest.CronJob
}

// Jobs are the Jobs and CronJobs the sources defined at the last Scan (of
// the sources that resolve).
func (s *Sources) Jobs() ([]*manifest.Job, []*manifest.CronJob) { return s.jobs, s.cronJobs }

// NewSources returns Sources for an absolute directory and an optional URL.
func NewSources(dir, url string) *Sources {
	return &Sources{Dir: dir, URL: url, client: &http.Client{Timeout: 10 * time.Second, CheckRedirect: sameOrigin},
		state: map[string]*sourceState{}}
}

// URLName is how the URL source is named: the URL with its credentials
// and query values redacted ("" without a URL).
func (s *Sources) URLName() string { return RedactURL(s.URL) }

// Owns reports whether a pod's source label names one of these sources (a
// pod labelled by an older podrun with the URL unredacted included).
func (s *Sources) Owns(source string) bool {
	return source != "" && (filepath.Dir(source) == s.Dir || (s.URL != "" && (source == s.URLName() || source == s.URL)) || source == s.API)
}

// Want is a pod some source asks for.
type Want struct {
	Pod    *manifest.Pod
	Source string // the file (absolute path) or URL it comes from
	// ProgressDeadline is its Deployment's progressDeadlineSeconds, if any.
	ProgressDeadline *int32
}

// Scan reads every source. Files in settling are still being written: they
// keep their previous state. It returns the pods wanted (the first source by
// name wins a namespace/name), the sources that are broken, and the problems.
func (s *Sources) Scan(ctx context.Context, settling map[string]bool) (map[string]Want, map[string]bool, []Problem) {
	dir, names, err := s.files()
	if dir != nil {
		defer dir.Close()
	}
	var problems []Problem
	if err != nil {
		// An untrusted or unreadable directory changes nothing: every file
		// known keeps its last good content, none is taken as removed.
		problems = append(problems, Problem{Source: s.Dir, Msg: err.Error()})
		for path := range s.state {
			if path != s.URLName() {
				names = append(names, path)
			}
		}
		sort.Strings(names)
	}
	dirErr := err
	present := map[string]bool{}
	for _, path := range names {
		present[path] = true
		if settling[path] || dirErr != nil {
			continue // still being written (or not trusted): keep what was known of it
		}
		data, err := s.readFile(dir, path)
		s.update(path, data, err)
	}
	if s.URL != "" {
		present[s.URLName()] = true
		data, err := s.fetch(ctx)
		s.update(s.URLName(), data, err)
	}
	for path := range s.state {
		if !present[path] {
			delete(s.state, path) // the file is gone: its pods go too
		}
	}
	wants, broken, problems := s.collect(names, problems)
	if dirErr != nil {
		for _, path := range names {
			broken[path] = true
		}
	}
	return wants, broken, problems
}

// files opens the manifest directory, once it and every directory above
// it are trusted (openDir), and lists its manifest files.
func (s *Sources) files() (*os.File, []string, error) {
	d, err := openDir(s.Dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil, fmt.Errorf("reading the manifest directory: %w", err)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("the manifest directory is not trusted, nothing in it is applied: %w", err)
	}
	files, _, err := manifest.ManifestFiles(d) // as `podrun validate DIR` reads a directory
	if err != nil {
		d.Close()
		return nil, nil, fmt.Errorf("reading the manifest directory: %w", err)
	}
	names := make([]string, len(files))
	for i, name := range files {
		names[i] = filepath.Join(s.Dir, name)
	}
	return d, names, nil
}

// readFile reads a manifest file of the directory dir the way sshd's
// StrictModes reads a key file: relative to the directory checked, never
// through a symlink, never blocking on a FIFO or device swapped in (only a
// regular file is opened), only when root or the daemon's user owns it and
// nobody else can write it (openTrusted), and never more than the size
// limit.
func (s *Sources) readFile(dir *os.File, path string) ([]byte, error) {
	f, err := openTrusted(dir, filepath.Base(path)) // trust.go
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if st.Size() > s.Admission.MaxFileSize && s.Admission.MaxFileSize > 0 {
		return nil, &manifest.TooLargeError{Limit: s.Admission.MaxFileSize}
	}
	return manifest.ReadAll(f, s.Admission.MaxFileSize)
}

// maxHeaderFile bounds --manifest-url-header-file.
const maxHeaderFile = 64 << 10

// fetch GETs the URL, with the header file's headers, and reads its body
// up to the size limit: a larger body is an error (the last good content
// stays), never content cut short.
func (s *Sources) fetch(ctx context.Context) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.URL, nil)
	if err != nil {
		return nil, errors.New("invalid URL") // the error would print the URL
	}
	if s.URLHeaderFile != "" {
		if err := s.addHeaders(req); err != nil {
			return nil, err
		}
	}
	resp, err := s.client.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // it names the URL, with its credentials
		}
		return nil, fmt.Errorf("GET %s: %w", s.URLName(), err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", s.URLName(), resp.Status)
	}
	if resp.ContentLength > 0 && s.Admission.MaxFileSize > 0 && resp.ContentLength > s.Admission.MaxFileSize {
		return nil, fmt.Errorf("GET %s: %w", s.URLName(), &manifest.TooLargeError{Limit: s.Admission.MaxFileSize})
	}
	data, err := manifest.ReadAll(resp.Body, s.Admission.MaxFileSize)
	if err != nil {
		return nil, fmt.Errorf("GET %s: %w", s.URLName(), err)
	}
	return data, nil
}

// addHeaders adds the header file's "Name: value" lines (blank lines and
// # comments skipped) to req. The file must be as trusted as a manifest.
func (s *Sources) addHeaders(req *http.Request) error {
	f, err := openTrusted(nil, s.URLHeaderFile)
	if err != nil {
		return fmt.Errorf("--manifest-url-header-file %s: %w", s.URLHeaderFile, err)
	}
	defer f.Close()
	data, err := manifest.ReadAll(f, maxHeaderFile)
	if err != nil {
		return fmt.Errorf("--manifest-url-header-file %s: %w", s.URLHeaderFile, err)
	}
	for i, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		name, value, ok := strings.Cut(line, ":")
		if name = strings.TrimSpace(name); !ok || name == "" || strings.ContainsAny(name, " \t") {
			return fmt.Errorf("--manifest-url-header-file %s: line %d: want \"Name: value\"", s.URLHeaderFile, i+1)
		}
		req.Header.Add(name, strings.TrimSpace(value))
	}
	return nil
}

// sameOrigin follows a redirect only to the same scheme and host (so
// neither a header nor the content's trust moves elsewhere), 10 at most.
func sameOrigin(req *http.Request, via []*http.Request) error {
	first := via[0].URL
	if req.URL.Scheme != first.Scheme || req.URL.Host != first.Host {
		return fmt.Errorf("redirect to another scheme or host (%s://%s) refused", req.URL.Scheme, req.URL.Host)
	}
	if len(via) >= 10 {
		return errors.New("stopped after 10 redirects")
	}
	return nil
}

// RedactURL is a URL fit to print: its userinfo and the values of its
// query replaced by "REDACTED".
func RedactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(invalid URL)"
	}
	if u.User != nil {
		u.User = url.User("REDACTED")
	}
	if u.RawQuery != "" {
		q := u.Query()
		for k := range q {
			q[k] = []string{"REDACTED"}
		}
		u.RawQuery = q.Encode()
	}
	return u.String()
}

// CheckURL refuses a manifest URL that is not https (unless insecure
// allows plain http).
func CheckURL(raw string, insecure bool) error {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return fmt.Errorf("%s is not an http(s) URL", RedactURL(raw))
	}
	switch {
	case u.Scheme == "https":
		return nil
	case u.Scheme == "http" && insecure:
		return nil
	case u.Scheme == "http":
		return fmt.Errorf("%s is plain http: anyone on the way could run pods here; use https, or --insecure-manifest-url", RedactURL(raw))
	}
	return fmt.Errorf("%s: scheme %q is not http or https", RedactURL(raw), u.Scheme)
}

// update parses a source's content when it changed.
func (s *Sources) update(source string, data []byte, readErr error) {
	st := s.state[source]
	if st == nil {
		st = &sourceState{}
		s.state[source] = st
	}
	if readErr != nil {
		st.err, st.sum = readErr, [32]byte{} // read again in full once readable
		return
	}
	sum := sha256.Sum256(data)
	if sum == st.sum && (st.good != nil || st.err != nil) {
		return
	}
	st.sum = sum
	// References to ConfigMaps and Secrets are resolved over every source
	// (collect): a pod may use the objects of another file.
	set, err := s.Admission.ParseUnresolved(source, data)
	if err != nil {
		st.err = err
		return
	}
	st.good, st.err = set, nil
}

func (s *Sources) collect(files []string, problems []Problem) (map[string]Want, map[string]bool, []Problem) {
	wants := map[string]Want{}
	broken := map[string]bool{}
	s.jobs, s.cronJobs = nil, nil
	order := files
	if s.URL != "" {
		order = append(append([]string{}, files...), s.URLName())
	}
	var all []*manifest.Set // the objects of every source, first by name first
	for _, source := range order {
		if st := s.state[source]; st != nil && st.good != nil {
			all = append(all, st.good)
		}
	}
	for _, source := range order {
		st := s.state[source]
		if st == nil {
			continue
		}
		if st.err != nil {
			broken[source] = true
			problems = append(problems, Problem{Source: source, Msg: problemText(st.err)})
		}
		if st.good == nil {
			continue
		}
		set, err := manifest.Resolve(st.good, all...)
		if err != nil {
			// A reference no source satisfies any more: the source's pods
			// keep running as last applied.
			broken[source] = true
			problems = append(problems, Problem{Source: source, Msg: problemText(err)})
			continue
		}
		s.jobs = append(s.jobs, set.Jobs...)
		s.cronJobs = append(s.cronJobs, set.CronJobs...)
		for _, p := range set.Pods {
			key := p.Key()
			if first, ok := wants[key]; ok {
				problems = append(problems, Problem{Source: source,
					Msg: fmt.Sprintf("pod %s is also defined in %s, which comes first and wins", key, first.Source)})
				continue
			}
			wants[key] = Want{Pod: p, Source: source,
				ProgressDeadline: set.Rollouts[p.Namespace+"/"+manifest.Workload(p.Pod)].ProgressDeadline}
		}
	}
	return wants, broken, problems
}

// problemText is a source's error, one line per problem.
func problemText(err error) string {
	var ps manifest.Problems
	if errors.As(err, &ps) {
		return ps.Error()
	}
	return err.Error()
}
