// Command input measures what reading a manifest costs podrun: peak
// resident memory and time of `podrun validate`, of `podrun up` up to its
// connection to containerd (which fails: nothing is run), and of the
// daemon's reading of its manifest directory (daemon.Sources.Scan, in a
// child process), for each input of a corpus it generates (corpus.go).
// It prints figures and asserts nothing: `make bench-input`.
//
//	go run ./bench/input [-podrun BIN] [-run REGEXP]
package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/podrun/podrun/daemon"
)

func main() {
	podrun := flag.String("podrun", "", "the podrun binary (default: built from this checkout)")
	only := flag.String("run", "", "only the inputs whose name matches this regular expression")
	scan := flag.String("scan", "", "(internal) read this directory as the daemon does, and exit")
	gen := flag.String("gen", "", "(internal) write the input of this name to the file named by the argument, and exit")
	flag.Parse()
	if *gen != "" {
		for _, in := range corpus {
			if in.name == *gen {
				if err := os.WriteFile(flag.Arg(0), in.make(), 0o644); err != nil {
					fmt.Fprintln(os.Stderr, "bench-input:", err)
					os.Exit(1)
				}
			}
		}
		return
	}
	if *scan != "" {
		_, _, problems := daemon.NewSources(*scan, "").Scan(context.Background(), nil)
		fmt.Fprintln(os.Stderr, problemsLine(len(problems)))
		return
	}
	if err := run(*podrun, *only); err != nil {
		fmt.Fprintln(os.Stderr, "bench-input:", err)
		os.Exit(1)
	}
}

func problemsLine(n int) string {
	if n == 0 {
		return "read"
	}
	return fmt.Sprintf("%d problem(s)", n)
}

func run(podrun, only string) error {
	match, err := regexp.Compile(only)
	if err != nil {
		return err
	}
	tmp, err := os.MkdirTemp("", "podrun-bench-input-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	if podrun == "" {
		podrun = filepath.Join(tmp, "podrun")
		build := exec.Command("go", "build", "-o", podrun, ".")
		build.Env = append(os.Environ(), "CGO_ENABLED=0")
		build.Stdout, build.Stderr = os.Stderr, os.Stderr
		if err := build.Run(); err != nil {
			return fmt.Errorf("building podrun: %w", err)
		}
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	fmt.Printf("%-22s %9s %8s | %-18s | %-18s | %-18s | %s\n", "input", "bytes", "goal MiB", "validate MiB  s", "up MiB  s", "daemon MiB  s", "validate says")
	for _, in := range corpus {
		if !match.MatchString(in.name) {
			continue
		}
		dir := filepath.Join(tmp, strings.TrimSuffix(in.name, filepath.Ext(in.name)))
		if err := os.Mkdir(dir, 0o755); err != nil {
			return err
		}
		// Made by a child: this process stays small, as the rusage of a
		// child it starts counts its memory (the exec happens from a copy of it).
		file := filepath.Join(dir, in.name)
		if out, err := exec.Command(self, "-gen", in.name, file).CombinedOutput(); err != nil {
			return fmt.Errorf("making %s: %w: %s", in.name, err, out)
		}
		st, err := os.Stat(file)
		if err != nil {
			return err
		}
		size := st.Size()
		goal := (10*size + 50<<20) >> 20
		v := measure(podrun, "validate", file)
		up := measure(podrun, "up", "--address", filepath.Join(tmp, "no-containerd.sock"), "--root", filepath.Join(tmp, "root"),
			"--run-dir", filepath.Join(tmp, "run"), "--log-dir", filepath.Join(tmp, "log"), "--timeout", "1s", file)
		d := measure(self, "-scan", dir)
		fmt.Printf("%-22s %9d %8d | %s | %s | %s | %s\n", in.name, size, goal, v, up, d, strings.ReplaceAll(v.says, file, in.name))
		os.RemoveAll(dir)
	}
	fmt.Println("\ngoal: peak RSS at most 10 times the input's size + 50 MiB (issue 35); `up` stops at its connection to containerd, which does not exist here (its time includes the attempt).")
	fmt.Println("inputs:")
	for _, in := range corpus {
		if match.MatchString(in.name) {
			fmt.Printf("  %-22s %s\n", in.name, in.what)
		}
	}
	return nil
}

// result is what one run of a command cost.
type result struct {
	rss     int64 // KiB
	elapsed time.Duration
	says    string
}

func (r result) String() string {
	return fmt.Sprintf("%7.1f %8.2f  ", float64(r.rss)/1024, r.elapsed.Seconds())
}

// measure runs a command under GNU time, which reports the command's own
// peak RSS: not a Go parent's rusage of it, as Go starts children with
// vfork and the kernel hands the parent's high-water mark to a child at
// exec (deps.sh installs GNU time).
func measure(bin string, args ...string) result {
	cmd := exec.Command("/usr/bin/time", append([]string{"-f", "%M", bin}, args...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	start := time.Now()
	_ = cmd.Run() // a refused input exits non-zero: that is a figure too
	r := result{elapsed: time.Since(start)}
	out := strings.Split(strings.TrimSpace(stderr.String()), "\n")
	r.rss, _ = strconv.ParseInt(strings.TrimSpace(out[len(out)-1]), 10, 64)
	r.says = out[0]
	if len(out) < 2 || strings.HasPrefix(r.says, "Command exited") {
		r.says = "valid"
	}
	return r
}
