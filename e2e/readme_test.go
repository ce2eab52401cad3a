package e2e

// The README's quick start, run from the README itself, so that it cannot
// drift from what podrun does.

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/distribution/reference"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

// quickStartMarker precedes each fenced block of the README's quick start that is
// part of the script TestReadmeQuickStart runs.
const quickStartMarker = "<!-- quick start: e2e/readme_test.go runs the next block -->"

// quickStartSubcommands are the commands the quick start must show, in this order.
var quickStartSubcommands = []string{"validate", "up", "ps", "logs", "exec", "down"}

// quickStartScript returns the commands of the marked blocks under the README's
// "## Quick start" heading, in order: one per line, a line ending in `\`
// joined with the next, a here-document with its body.
func quickStartScript(readme string) ([]string, error) {
	start := strings.Index(readme, "\n## Quick start\n")
	if start < 0 {
		return nil, fmt.Errorf("no \"## Quick start\" heading")
	}
	section := readme[start+1:]
	if end := strings.Index(section[len("## Quick start\n"):], "\n## "); end >= 0 {
		section = section[:len("## Quick start\n")+end]
	}
	var lines []string
	for rest, found := section, false; ; {
		_, rest, found = strings.Cut(rest, quickStartMarker+"\n")
		if !found {
			break
		}
		if !strings.HasPrefix(rest, "```sh\n") {
			return nil, fmt.Errorf("%q is not followed by a ```sh block", quickStartMarker)
		}
		block, after, closed := strings.Cut(rest[len("```sh\n"):], "```\n")
		if !closed {
			return nil, fmt.Errorf("a quick-start block is not closed")
		}
		lines = append(lines, strings.Split(strings.TrimSuffix(block, "\n"), "\n")...)
		rest = after
	}
	if len(lines) == 0 {
		return nil, fmt.Errorf("no block marked %q under the quick-start heading", quickStartMarker)
	}
	heredoc := regexp.MustCompile(`<<-?\s*['"]?([A-Za-z_]+)['"]?`)
	var cmds []string
	for i := 0; i < len(lines); i++ {
		line := lines[i]
		if t := strings.TrimSpace(line); t == "" || strings.HasPrefix(t, "#") {
			continue
		}
		for strings.HasSuffix(line, `\`) && i+1 < len(lines) {
			i++
			line += "\n" + lines[i]
		}
		if m := heredoc.FindStringSubmatch(line); m != nil {
			for i++; i < len(lines) && lines[i] != m[1]; i++ {
				line += "\n" + lines[i]
			}
			if i == len(lines) {
				return nil, fmt.Errorf("here-document %s is not closed", m[1])
			}
			line += "\n" + m[1]
		}
		cmds = append(cmds, line)
	}
	return cmds, nil
}

func TestQuickStartScript(t *testing.T) {
	readme := "# x\n\n## Quick start\n\ntext\n\n```sh\nnot this\n```\n\n" + quickStartMarker + "\n```sh\n" +
		"cat > pod.yaml <<'EOF'\nkind: Pod\n\nmetadata: {name: a}\nEOF\n\n# a comment\npodrun up \\\n  pod.yaml   # waits\n```\n\n" +
		quickStartMarker + "\n```sh\npodrun ps\n```\n\n## Next\n\n" + quickStartMarker + "\n```sh\nnot this either\n```\n"
	got, err := quickStartScript(readme)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"cat > pod.yaml <<'EOF'\nkind: Pod\n\nmetadata: {name: a}\nEOF", "podrun up \\\n  pod.yaml   # waits", "podrun ps"}
	if !slices.Equal(got, want) {
		t.Errorf("quickStartScript = %q, want %q", got, want)
	}
	for _, bad := range []string{"# x\n", "x\n## Quick start\n\n```sh\npodrun ps\n```\n", "x\n## Quick start\n" + quickStartMarker + "\n```sh\ncat <<EOF\nx\n```\n"} {
		if cmds, err := quickStartScript(bad); err == nil {
			t.Errorf("quickStartScript(%q) = %q, want an error", bad, cmds)
		}
	}
}

// shellQuote quotes s for the shell.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// quickStartSubcommand is the podrun command a quick-start line runs ("" if none).
func quickStartSubcommand(cmd string) string {
	m := regexp.MustCompile(`(?:^|[\s;&|(])podrun\s+(?:--?[a-z-]+(?:=\S+)?\s+)*([a-z]+)`).FindStringSubmatch(cmd)
	if m == nil {
		return ""
	}
	return m[1]
}

// TestReadmeQuickStart runs the README's quick start (the blocks marked
// with quickStartMarker under "## Quick start") command by command in a fresh
// directory, with `podrun` the suite's binary and global flags. The images
// its manifests name, on a public registry, are served by a local
// docker-registry on 127.0.0.1 as that registry's mirror (hosts.toml in
// --hosts-dir): no traffic leaves loopback. Every command must exit 0; it
// must validate, up, ps (the pods Running), logs and exec (some output),
// and down (the pods gone).
func TestReadmeQuickStart(t *testing.T) {
	H.require(t)
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	cmds, err := quickStartScript(string(readme))
	if err != nil {
		t.Fatalf("README.md: %v", err)
	}
	var subs []string
	for _, c := range cmds {
		if s := quickStartSubcommand(c); s != "" && !slices.Contains(subs, s) {
			subs = append(subs, s)
		}
	}
	if !slices.Equal(subs, quickStartSubcommands) {
		t.Fatalf("README.md's quick start runs podrun %q, want %q in this order:\n%s", subs, quickStartSubcommands, strings.Join(cmds, "\n"))
	}

	dir := t.TempDir()
	hostsDir := t.TempDir()
	podrun := []string{H.Bin}
	podrun = append(podrun, H.globalArgs()...)
	podrun = append(podrun, "--hosts-dir", hostsDir)
	for i, a := range podrun {
		podrun[i] = shellQuote(a)
	}
	prelude := "set -o pipefail\npodrun() { " + strings.Join(podrun, " ") + ` "$@"; }` + "\nsudo() { \"$@\"; }\n"

	var pods, manifests []string // the quick start's pods and the mirror's paths of their images
	var reg testRegistry
	run := func(cmd string) (string, string, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		c := exec.CommandContext(ctx, "bash", "-c", prelude+cmd)
		c.Dir = dir
		c.Env = append(os.Environ(), "HOME="+dir)
		c.WaitDelay = 5 * time.Second
		var stdout, stderr CmdOutput
		c.Stdout, c.Stderr = &stdout, &stderr
		err := c.Run()
		t.Logf("$ %s\n[%v]\n--- stdout:\n%s--- stderr:\n%s", cmd, err, e2eClip(stdout.String()), e2eClip(stderr.String()))
		return stdout.String(), stderr.String(), err
	}
	for _, cmd := range cmds {
		sub := quickStartSubcommand(cmd)
		if sub == "up" && pods == nil {
			pods, manifests, reg = serveQuickStartImages(t, dir, hostsDir)
		}
		// What the command must show; ps, logs and exec may be asked
		// again for a few seconds (output reaches the log a moment after
		// it is written).
		check := func(stdout string) string {
			switch sub {
			case "ps":
				for _, p := range pods {
					if !regexp.MustCompile(`(?m)^\S+\s+` + regexp.QuoteMeta(p) + `\s.*\bRunning\b`).MatchString(stdout) {
						return fmt.Sprintf("pod %s is not listed Running", p)
					}
				}
			case "logs", "exec":
				if strings.TrimSpace(stdout) == "" {
					return "no output"
				}
			}
			return ""
		}
		deadline := time.Now().Add(15 * time.Second)
		for {
			stdout, _, err := run(cmd)
			problem := check(stdout)
			if err != nil {
				problem = err.Error()
			}
			if problem == "" {
				break
			}
			if !slices.Contains([]string{"ps", "logs", "exec"}, sub) || time.Now().After(deadline) {
				t.Fatalf("README.md's quick start: %s: %s", cmd, problem)
			}
			time.Sleep(500 * time.Millisecond)
		}
		if sub == "up" {
			for _, path := range manifests {
				if !strings.Contains(reg.Access.String()+reg.Log.String(), path) {
					t.Errorf("the mirror on %s was not asked for %s; its log:\n%s", reg.Addr, path, e2eClip(reg.Log.String()))
				}
			}
		}
	}
	for _, p := range listPods(t) {
		if slices.Contains(pods, e2eFileName(p)) {
			t.Errorf("pod %s is still there after the quick start's down (%s)", p.Name, p.Status.Phase)
		}
	}
}

// serveQuickStartImages reads the pods of the manifests the quick start wrote in
// dir, pushes the suite's busybox image to a local registry under the name
// of each image they use, and points each image's registry at it in
// hostsDir. It returns the pods' names and the paths the registry serves
// the images' manifests at; when the test ends the pods are
// taken down (should the quick start have failed before its down) and the
// pulled images removed.
func serveQuickStartImages(t *testing.T, dir, hostsDir string) (pods, manifests []string, reg testRegistry) {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if len(files) == 0 {
		t.Fatalf("the quick start wrote no *.yaml before its first up")
	}
	var images []string
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, doc := range strings.Split(string(b), "\n---\n") {
			var pod corev1.Pod
			if err := yaml.Unmarshal([]byte(doc), &pod); err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			if pod.Kind != "Pod" {
				t.Fatalf("%s: a %q: the quick start's manifests are Pods", f, pod.Kind)
			}
			pods = append(pods, pod.Name)
			for _, c := range slices.Concat(pod.Spec.InitContainers, pod.Spec.Containers) {
				if !slices.Contains(images, c.Image) {
					images = append(images, c.Image)
				}
			}
		}
	}
	reg = startRegistry(t, "", "")
	for _, img := range images {
		named, err := reference.ParseDockerRef(img)
		if err != nil {
			t.Fatalf("image %q: %v", img, err)
		}
		tagged, ok := named.(reference.Tagged)
		if !ok || tagged.Tag() == "latest" {
			t.Fatalf("image %q: the quick start should name a tag other than latest", img)
		}
		t.Cleanup(func() { deleteImage(t, named.String()) })
		pushImage(t, reg, H.Image, reg.Addr+"/"+reference.Path(named)+":"+tagged.Tag(), "", "")
		manifests = append(manifests, "/v2/"+reference.Path(named)+"/manifests/"+tagged.Tag())
		domain := reference.Domain(named)
		if err := os.MkdirAll(filepath.Join(hostsDir, domain), 0o755); err != nil {
			t.Fatal(err)
		}
		toml := fmt.Sprintf("server = \"http://%s\"\n\n[host.\"http://%s\"]\n  capabilities = [\"pull\", \"resolve\"]\n", reg.Addr, reg.Addr)
		if err := os.WriteFile(filepath.Join(hostsDir, domain, "hosts.toml"), []byte(toml), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	downOnCleanup(t, files...)
	return pods, manifests, reg
}
