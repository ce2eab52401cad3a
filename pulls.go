package main

// Registry settings and the progress line of pulls.

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/clock"

	"github.com/podrun/podrun/console"
	"github.com/podrun/podrun/daemon"
	"github.com/podrun/podrun/images"
	"github.com/podrun/podrun/pullnet"
	"github.com/podrun/podrun/registry"
)

// defaultRegistryConfig is where Docker keeps credentials:
// $DOCKER_CONFIG/config.json, else ~/.docker/config.json.
func defaultRegistryConfig() string {
	if dir := os.Getenv("DOCKER_CONFIG"); dir != "" {
		return filepath.Join(dir, "config.json")
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return ""
	}
	return filepath.Join(home, ".docker", "config.json")
}

// insecureRegistries checks the --insecure-registry values.
func insecureRegistries(values []string) ([]string, error) {
	var out []string
	for _, v := range values {
		host, err := registry.ParseInsecure(strings.TrimSpace(v))
		if err != nil {
			return nil, usageError{err.Error()}
		}
		out = append(out, host)
	}
	return out, nil
}

// pullLink is the link of this podrun's pulls, from
// --image-pull-progress-deadline and --pull-rate.
func pullLink(deadline time.Duration, rate string) (*pullnet.Link, error) {
	if deadline < 0 {
		return nil, usageError{fmt.Sprintf("--image-pull-progress-deadline %v: want 0 (never) or more", deadline)}
	}
	perSecond, err := pullRate(rate)
	if err != nil {
		return nil, err
	}
	return pullnet.NewLink(clock.RealClock{}, deadline, perSecond), nil
}

// pullRate parses --pull-rate: bytes per second, a quantity of at least 1
// (512Ki, 2Mi, 1M), a B after it allowed as people write it (2MiB, 1MB,
// 500B); "" is no cap (0).
func pullRate(rate string) (int64, error) {
	if rate == "" {
		return 0, nil
	}
	q, err := resource.ParseQuantity(strings.TrimSuffix(rate, "B"))
	if err != nil || q.Cmp(*resource.NewQuantity(1, resource.DecimalSI)) < 0 {
		return 0, usageError{fmt.Sprintf("--pull-rate %q: want bytes per second, a quantity of at least 1 (512Ki, 2MiB, 1M)", rate)}
	}
	return q.Value(), nil
}

// console is podrun's stderr: progress and event lines, and on a terminal
// the progress line of pulls, under one lock.
var stderr = console.New(os.Stderr)

// daemonPulls is the board of the daemon's pulls under way: its status
// file and /metrics show them.
var daemonPulls = daemon.NewPulls(clock.RealClock{})

// pullProgress returns where the pulls of command tell their progress:
// the daemon's board for the daemon (its log gets no progress line), the
// progress line when stderr is a terminal, and nothing otherwise (logs and
// pipes get no progress).
func pullProgress(command string) images.Progress {
	switch {
	case command == "daemon":
		return daemonPulls
	case !stderr.Terminal():
		return nil
	}
	return stderr
}
