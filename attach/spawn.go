package attach

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
)

// Keeper is a started keeper process, waiting for its commit.
type Keeper struct {
	cmd    *exec.Cmd
	commit *os.File
}

// Args are the arguments of exe's keeper command for cfg.
func (cfg Config) Args() []string {
	args := []string{"cri-io", "--dir", cfg.Dir, "--log", cfg.Log, "--address", cfg.Address, "--namespace", cfg.Namespace, "--id", cfg.ID}
	for _, f := range []struct {
		on   bool
		flag string
	}{{cfg.Stdin, "--stdin"}, {cfg.StdinOnce, "--stdin-once"}, {cfg.TTY, "--tty"}} {
		if f.on {
			args = append(args, f.flag)
		}
	}
	return args
}

// Start starts `exe cri-io` for cfg in a session of its own (a signal to
// podrun's terminal does not reach it) and returns once its FIFOs and
// socket are open. cfg.Dir must exist.
func Start(exe string, cfg Config) (*Keeper, error) {
	readyR, readyW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	defer readyR.Close()
	commitR, commitW, err := os.Pipe()
	if err != nil {
		readyW.Close()
		return nil, err
	}
	cmd := exec.Command(exe, cfg.Args()...)
	cmd.Dir = cfg.Dir
	cmd.ExtraFiles = []*os.File{readyW, commitR} // fds 3 and 4
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	err = cmd.Start()
	readyW.Close()
	commitR.Close()
	if err != nil {
		commitW.Close()
		return nil, fmt.Errorf("starting the stream keeper: %w", err)
	}
	k := &Keeper{cmd: cmd, commit: commitW}
	line, _ := bufio.NewReader(readyR).ReadString('\n')
	if line = strings.TrimSpace(line); line != "ok" {
		k.Abort()
		if line == "" {
			line = "exited"
		}
		return nil, fmt.Errorf("stream keeper: %s", line)
	}
	return k, nil
}

// Commit tells the keeper that its task was created: it serves from now
// until the container's output ends.
func (k *Keeper) Commit() error {
	_, err := k.commit.Write([]byte{'c'})
	return errors.Join(err, k.release())
}

// Abort ends a keeper whose task was not created.
func (k *Keeper) Abort() { _ = k.release() }

func (k *Keeper) release() error {
	err := k.commit.Close()
	go func() { _ = k.cmd.Wait() }() // reaped whenever it ends
	return err
}
