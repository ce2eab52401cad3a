// Command mkimage writes an OCI image archive built offline from the host's
// static busybox, ready for `podrun image import` or `ctr images import`:
//
//	go run ./tools/mkimage -o busybox.tar -ref podrun.local/busybox:latest
package main

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/podrun/podrun/internal/testimage"
)

// listFlag collects a repeatable string flag.
type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, ",") }
func (l *listFlag) Set(v string) error { *l = append(*l, v); return nil }

func main() {
	var (
		out     = flag.String("o", "", "output archive path (\"-\" for stdout)")
		ref     = flag.String("ref", "podrun.local/busybox:latest", "image reference stored in the archive")
		busybox = flag.String("busybox", testimage.DefaultBusybox, "path of a static busybox binary")
		cmd     = flag.String("cmd", "", "image command, split on spaces (default: sh)")
		files   listFlag
	)
	flag.Var(&files, "file", "extra file `HOSTPATH:IMAGEPATH` (repeatable); the host file's mode is kept")
	flag.Usage = func() {
		fmt.Fprintf(flag.CommandLine.Output(), "usage: %s -o FILE [-ref REF] [-busybox PATH] [-cmd CMD] [-file HOST:IMAGE]...\n", filepath.Base(os.Args[0]))
		flag.PrintDefaults()
	}
	flag.Parse()
	if *out == "" || flag.NArg() > 0 {
		flag.Usage()
		os.Exit(2)
	}

	cfg := testimage.Config{Ref: *ref, Busybox: *busybox, Cmd: strings.Fields(*cmd)}
	for _, spec := range files {
		f, err := readFile(spec)
		if err != nil {
			fail(err)
		}
		cfg.Files = append(cfg.Files, f)
	}
	if err := write(*out, cfg); err != nil {
		fail(err)
	}
}

func readFile(spec string) (testimage.File, error) {
	host, image, ok := strings.Cut(spec, ":")
	if !ok || host == "" || !strings.HasPrefix(image, "/") {
		return testimage.File{}, fmt.Errorf("-file %q: want HOSTPATH:/IMAGE/PATH", spec)
	}
	st, err := os.Stat(host)
	if err != nil {
		return testimage.File{}, fmt.Errorf("-file %q: %w", spec, err)
	}
	if !st.Mode().IsRegular() {
		return testimage.File{}, fmt.Errorf("-file %q: not a regular file", spec)
	}
	data, err := os.ReadFile(host)
	if err != nil {
		return testimage.File{}, fmt.Errorf("-file %q: %w", spec, err)
	}
	return testimage.File{Path: image, Mode: st.Mode().Perm(), Data: data}, nil
}

// write builds the archive into a temp file next to path and renames it into
// place, so a failed run leaves no partial archive behind.
func write(path string, cfg testimage.Config) (err error) {
	if path == "-" {
		w := bufio.NewWriter(os.Stdout)
		if err := testimage.WriteOCIArchive(w, cfg); err != nil {
			return err
		}
		return w.Flush()
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return fmt.Errorf("creating archive: %w", err)
	}
	defer func() {
		if err != nil {
			_ = os.Remove(tmp.Name())
		}
	}()
	w := bufio.NewWriter(tmp)
	if err := testimage.WriteOCIArchive(w, cfg); err != nil {
		_ = tmp.Close()
		return err
	}
	if err := errors.Join(w.Flush(), tmp.Chmod(0o644), tmp.Close()); err != nil {
		return fmt.Errorf("writing archive: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("writing archive: %w", err)
	}
	return nil
}

func fail(err error) {
	fmt.Fprintf(os.Stderr, "mkimage: %v\n", err)
	os.Exit(1)
}
