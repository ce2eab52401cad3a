package daemon

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"net/http"
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
	URL string
	// Admission is applied to every pod read (see Options.Admission).
	Admission manifest.Options
	client    *http.Client
	state     map[string]*sourceState
}

// NewSources returns Sources for an absolute directory and an optional URL.
func NewSources(dir, url string) *Sources {
	return &Sources{Dir: dir, URL: url, client: &http.Client{Timeout: 10 * time.Second}, state: map[string]*sourceState{}}
}

// Owns reports whether a pod's source label names one of these sources.
func (s *Sources) Owns(source string) bool {
	return source != "" && (filepath.Dir(source) == s.Dir || (s.URL != "" && source == s.URL))
}

// IsManifest reports whether a directory entry is read as a manifest: .yaml,
// .yml or .json, not hidden, not an editor's temporary file.
func IsManifest(name string) bool {
	if strings.HasPrefix(name, ".") || strings.HasSuffix(name, "~") || strings.HasPrefix(name, "#") {
		return false
	}
	switch filepath.Ext(name) {
	case ".yaml", ".yml", ".json":
		return true
	}
	return false
}

// Scan reads every source. Files in settling are still being written: they
// keep their previous state. It returns the pods wanted (the first source by
// name wins a namespace/name), the sources that are broken, and the problems.
func (s *Sources) Scan(ctx context.Context, settling map[string]bool) (map[string]Want, map[string]bool, []Problem) {
	names, err := s.files()
	var problems []Problem
	if err != nil {
		problems = append(problems, Problem{Source: s.Dir, Msg: err.Error()})
	}
	present := map[string]bool{}
	for _, path := range names {
		present[path] = true
		if settling[path] {
			continue // still being written: keep what was known of it
		}
		data, err := os.ReadFile(path)
		s.update(path, data, err)
	}
	if s.URL != "" {
		present[s.URL] = true
		data, err := s.fetch(ctx)
		s.update(s.URL, data, err)
	}
	for path := range s.state {
		if !present[path] {
			delete(s.state, path) // the file is gone: its pods go too
		}
	}
	return s.collect(names, problems)
}

func (s *Sources) files() ([]string, error) {
	entries, err := os.ReadDir(s.Dir)
	if err != nil {
		return nil, fmt.Errorf("reading the manifest directory: %w", err)
	}
	var names []string
	for _, e := range entries {
		if e.Type().IsRegular() && IsManifest(e.Name()) {
			names = append(names, filepath.Join(s.Dir, e.Name()))
		}
	}
	sort.Strings(names)
	return names, nil
}

func (s *Sources) fetch(ctx context.Context) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.URL, nil)
	if err != nil {
		return nil, err
	}
	resp, err := s.client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", s.URL, resp.Status)
	}
	return io.ReadAll(io.LimitReader(resp.Body, 16<<20))
}

// update parses a source's content when it changed.
func (s *Sources) update(source string, data []byte, readErr error) {
	st := s.state[source]
	if st == nil {
		st = &sourceState{}
		s.state[source] = st
	}
	if readErr != nil {
		st.err = readErr
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
	order := files
	if s.URL != "" {
		order = append(append([]string{}, files...), s.URL)
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
		for _, p := range set.Pods {
			key := p.Namespace + "/" + p.Name
			if first, ok := wants[key]; ok {
				problems = append(problems, Problem{Source: source,
					Msg: fmt.Sprintf("pod %s is also defined in %s, which comes first and wins", key, first.Source)})
				continue
			}
			wants[key] = Want{Pod: p, Source: source}
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
