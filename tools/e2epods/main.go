// Command e2epods writes out the Pod manifests of the e2e suite that a
// standalone kubelet can run as static pods too, one file per pod, for the
// kubelet oracle (`make kubelet-diff`, bench/kubelet-diff.sh). It reads the
// suite's Go sources without running them: every string expression made of
// literals, the suite's image (H.Image), package constants, fmt.Sprintf,
// strings.Replace and the suite's one-statement helpers (admissionPod(name, extra))
// that holds a Pod document (Extract). What it leaves out it lists on stderr,
// one line per pod with the reason (Select).
//
//	go run ./tools/e2epods -src e2e -o DIR [-image REF]... [-absent REF]...
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// listFlag collects a repeatable string flag.
type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, ",") }
func (l *listFlag) Set(v string) error { *l = append(*l, v); return nil }

func main() {
	var (
		src    = flag.String("src", "e2e", "directory of the e2e suite's *_test.go files")
		out    = flag.String("o", "", "directory to write NAME.yaml into (created)")
		suite  = flag.String("suite-image", "podrun.test/busybox:1", "what H.Image stands for")
		images listFlag
		absent listFlag
	)
	flag.Var(&images, "image", "an image the oracle has as an archive besides -suite-image (repeatable)")
	flag.Var(&absent, "absent", "an image a test names to see its pull fail: its pods are kept, both sides fail to pull it (repeatable)")
	flag.Parse()
	if *out == "" || flag.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "usage: %s -o DIR [-src DIR] [-suite-image REF] [-image REF]... [-absent REF]...\n", filepath.Base(os.Args[0]))
		os.Exit(2)
	}
	files, err := filepath.Glob(filepath.Join(*src, "*_test.go"))
	if err != nil || len(files) == 0 {
		fail(fmt.Errorf("no *_test.go under %s", *src))
	}
	sources := map[string][]byte{}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			fail(err)
		}
		sources[filepath.Base(f)] = data
	}
	found, err := Extract(sources, Env{"H.Image": *suite})
	if err != nil {
		fail(err)
	}
	known := append(append([]string{*suite}, images...), absent...)
	kept, skipped := Select(found, known)
	if err := os.MkdirAll(*out, 0o755); err != nil {
		fail(err)
	}
	for _, k := range kept {
		body := fmt.Sprintf("# from %s\n%s", k.Where, k.YAML)
		if err := os.WriteFile(filepath.Join(*out, k.Name+".yaml"), []byte(body), 0o644); err != nil {
			fail(err)
		}
	}
	for _, s := range skipped {
		fmt.Fprintf(os.Stderr, "skipped %s (%s): %s\n", s.Name, s.Where, s.Reason)
	}
	fmt.Fprintf(os.Stderr, "e2epods: %d pods written to %s, %d skipped\n", len(kept), *out, len(skipped))
}

func fail(err error) {
	fmt.Fprintf(os.Stderr, "e2epods: %v\n", err)
	os.Exit(1)
}
