// Package keeper is the node's stream keeper, `podrun cri-io`: one process
// for every container of a run directory, as containerd's CRI copies the
// logs of every container inside containerd (a process per container, as
// podrun had, costs more than the container's shim). The shim connects
// each container's stdout and stderr (and its stdin, with one) to FIFOs in
// the container's directory under the io directory; the keeper reads them
// into the container's CRI log, holds its stdin and serves `podrun attach`
// on a socket there.
//
// The keeper holds no state of its own: the container directories are its
// state. A keeper started after one was killed takes every directory again,
// and what the containers wrote meanwhile waits in the FIFOs (the shim
// holds both of their ends), so nothing written after the kill is lost; a
// container only waits once its FIFO is full. Any podrun that starts a
// container starts a keeper when none answers; the keeper ends once it has
// had no container for a few seconds.
package keeper

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// The files of a container's directory, and of the io directory.
const (
	StdinFile  = "stdin"
	StdoutFile = "stdout"
	StderrFile = "stderr"
	SocketFile = "attach.sock" // with stdin or a terminal: `podrun attach`
	configFile = "config.json"
	// committedFile says the container's task was created: its output
	// ends when the runtime's writers are gone (Client.Commit).
	committedFile = "committed"

	controlSocket = "keeper.sock" // the keeper's, in the io directory
	lockFile      = "keeper.lock" // held by the keeper; holds its pid
	logFile       = "keeper.log"  // the keeper's own messages
)

// Config is what the keeper needs to know of a container, written in its
// directory by whoever starts the container.
type Config struct {
	ID        string `json:"id"`
	Log       string `json:"log"`      // the container's CRI log file
	MaxSize   int64  `json:"maxSize"`  // its rotation (logs.Rotation)
	MaxFiles  int    `json:"maxFiles"` //
	Stdin     bool   `json:"stdin,omitempty"`
	StdinOnce bool   `json:"stdinOnce,omitempty"`
	TTY       bool   `json:"tty,omitempty"`
	// The container's runtime: with stdinOnce, the shim's own end of the
	// stdin FIFO is closed through it (containerd's CloseIO).
	Address   string `json:"address,omitempty"`
	Namespace string `json:"namespace,omitempty"`
}

// attachable reports whether the container's streams are served to
// `podrun attach` (a container with stdin or a terminal; the output of
// any other is followed in its log).
func (c Config) attachable() bool { return c.Stdin || c.TTY }

// maxConfig bounds a container's config file.
const maxConfig = 64 << 10

// validID reports whether id can name a container's directory.
func validID(id string) bool {
	return id != "" && len(id) <= 200 && !strings.HasPrefix(id, ".") &&
		strings.Trim(id, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.") == ""
}

// errNotContainer is a directory that is not a container's as podrun
// makes them: no config, or one that is not a config, or names another
// container. An error reading the config (a file descriptor short, EIO)
// says nothing of the directory, and is not one.
var errNotContainer = errors.New("not a container's directory")

// readConfig reads container id's config from its directory under dir
// (root's, made by podrun; read without following a link).
func readConfig(dir, id string) (Config, error) {
	path := filepath.Join(dir, id, configFile)
	b, err := readConfigFile(path)
	if err != nil {
		return Config{}, err
	}
	var c Config
	if err := json.Unmarshal(b, &c); err != nil {
		return Config{}, fmt.Errorf("%s: %w: %w", path, errNotContainer, err)
	}
	if c.ID != id {
		return Config{}, fmt.Errorf("%s: %w: the config names another container", path, errNotContainer)
	}
	return c, nil
}

// readConfigFile reads a config file: no file, a link, or anything but a
// regular file up to maxConfig bytes is errNotContainer; the rest are
// errors reading it. A test makes it fail.
var readConfigFile = func(path string) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK, 0)
	if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ELOOP) || errors.Is(err, unix.ENOTDIR) {
		return nil, fmt.Errorf("%w: %w", errNotContainer, err)
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() || st.Size() > maxConfig {
		return nil, fmt.Errorf("%s: %w: not a config file", path, errNotContainer)
	}
	b, err := io.ReadAll(io.LimitReader(f, maxConfig+1))
	if err == nil && len(b) > maxConfig {
		return nil, fmt.Errorf("%s: %w: not a config file", path, errNotContainer)
	}
	return b, err
}
