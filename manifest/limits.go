package manifest

import (
	"fmt"
	"io"
	"sort"
)

// DefaultMaxFileSize is the largest manifest read by default: 10 MiB, the
// kubelet's limit on a static pod URL's body.
const DefaultMaxFileSize = 10 << 20

// MaxProblems is how many problems are reported for one file; the rest are
// counted ("and N more problems"), so that a broken file of any size gives
// a readable answer in bounded memory.
const MaxProblems = 100

// MaxDocuments is how many objects one file may hold (documents, and the
// items of a List): reading is bounded in time as well as in size.
const MaxDocuments = 1000

// tooManyDocuments is the problem of a file over MaxDocuments.
var tooManyDocuments = fmt.Sprintf("holds more than %d objects; split it into several files", MaxDocuments)

// MaxObjectSize is the largest object (a Pod, ConfigMap or Secret, in its
// JSON form) read: what a cluster's etcd accepts (--max-request-bytes,
// 1.5 MiB), so no object a cluster could hold is refused.
const MaxObjectSize = 3 << 19

// TooLargeError is an input over the size limit.
type TooLargeError struct{ Limit int64 }

func (e *TooLargeError) Error() string {
	return fmt.Sprintf("larger than the limit of %s (--max-manifest-size)", byteSize(e.Limit))
}

// byteSize prints a byte count the way the flag takes it.
func byteSize(n int64) string {
	switch {
	case n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}

// ReadAll reads r to its end, or fails with a TooLargeError as soon as it
// has more than limit bytes (DefaultMaxFileSize when limit is 0): nothing
// over the limit is ever held in memory.
func ReadAll(r io.Reader, limit int64) ([]byte, error) {
	if limit <= 0 {
		limit = DefaultMaxFileSize
	}
	data, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > limit {
		return nil, &TooLargeError{Limit: limit}
	}
	return data, nil
}

// maxFileSize is the limit of these options.
func (o Options) maxFileSize() int64 {
	if o.MaxFileSize > 0 {
		return o.MaxFileSize
	}
	return DefaultMaxFileSize
}

// limitProblems keeps the first MaxProblems problems of each file of ps,
// in order, and adds how many it dropped of each to dropped.
func limitProblems(ps Problems, dropped map[string]int) Problems {
	perFile := map[string]int{}
	out := ps[:0]
	for _, p := range ps {
		if perFile[p.Source.File]++; perFile[p.Source.File] > MaxProblems {
			dropped[p.Source.File]++
			continue
		}
		out = append(out, p)
	}
	clear(ps[len(out):]) // let the dropped ones go
	return out
}

// droppedProblems is one "and N more problems" line per file that had
// more than MaxProblems, in file order.
func droppedProblems(dropped map[string]int) Problems {
	files := make([]string, 0, len(dropped))
	for f := range dropped {
		files = append(files, f)
	}
	sort.Strings(files)
	var out Problems
	for _, f := range files {
		out = append(out, Problem{Source: Source{File: f}, Msg: fmt.Sprintf("and %d more problems", dropped[f]), More: dropped[f]})
	}
	return out
}
