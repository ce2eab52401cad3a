// podrun attach.

package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/urfave/cli/v2"
	"golang.org/x/term"
	corev1 "k8s.io/api/core/v1"

	"github.com/podrun/podrun/attach"
	"github.com/podrun/podrun/engine"
	"github.com/podrun/podrun/logs"
)

func attachCommand() *cli.Command {
	return &cli.Command{
		Name:  "attach",
		Usage: "attach to a running container's streams, like kubectl attach",
		Description: "Shows the container's output from now on; with -i, sends stdin to a container that has stdin: true.\n" +
			"With a terminal (tty: true), ctrl-p ctrl-q detaches; the container keeps running either way\n" +
			"(with stdinOnce, its stdin closes when the first attach ends).",
		ArgsUsage: "POD",
		Flags: []cli.Flag{
			namespaceFlag(),
			containerFlag(),
			&cli.BoolFlag{Name: "stdin", Aliases: []string{"i"}, Usage: "pass stdin to the container"},
			&cli.BoolFlag{Name: "tty", Aliases: []string{"t"}, Usage: "stdin is a terminal"},
		},
		Action: func(c *cli.Context) error {
			cfg, err := config(c)
			if err != nil {
				return err
			}
			h, p, name, err := podContainer(c)
			if err != nil {
				return err
			}
			defer h.Close()
			cur := p.Current(name)
			if cur == nil || cur.Task.State != engine.TaskRunning {
				return fmt.Errorf("container %q of pod %s/%s is not running", name, p.Namespace, p.Name)
			}
			spec := podContainerSpec(p.Pod, name)
			if spec == nil {
				return fmt.Errorf("container %q of pod %s/%s has no spec recorded", name, p.Namespace, p.Name)
			}
			tty := c.Bool("tty")
			switch {
			case tty && !spec.TTY:
				// kubectl's words and behaviour: go on without one.
				fmt.Fprintf(os.Stderr, "error: Unable to use a TTY - container %s did not allocate one\n", name)
				tty = false
			case !tty && spec.TTY:
				tty = true // the container's output is a terminal's
			}
			if c.Bool("stdin") && !spec.Stdin {
				return fmt.Errorf("container %q of pod %s/%s has no stdin to attach to (stdin: true in its spec)", name, p.Namespace, p.Name)
			}
			ctx, stop := signalContext(c)
			defer stop()
			if !spec.Stdin && !spec.TTY {
				// No keeper: the output is the log's, followed from now on.
				dir := h.LogDir(p, name)
				restart, err := logs.Latest(dir)
				if err != nil {
					return fmt.Errorf("container %q of pod %s/%s has no log yet: %w", name, p.Namespace, p.Name, err)
				}
				return logs.Copy(ctx, os.Stdout, dir, restart, logs.Options{Tail: 0, Follow: true})
			}
			o := attach.Options{Stdout: os.Stdout, Stderr: os.Stderr}
			if c.Bool("stdin") {
				o.Stdin = os.Stdin
				if tty {
					restore, err := rawTerminal(os.Stdin)
					if err != nil {
						return err
					}
					defer restore()
					o.Detach = attach.DetachKeys
					stopResize := forwardResize(ctx, h.Engine(), cur.ID, os.Stdin)
					defer stopResize()
				}
			}
			err = attach.Attach(ctx, filepath.Join(ioDir(cfg), cur.ID), o)
			switch {
			case errors.Is(err, attach.ErrNoKeeper):
				return fmt.Errorf("container %q of pod %s/%s: %w", name, p.Namespace, p.Name, err)
			case ctx.Err() != nil && c.Context.Err() == nil:
				return nil // SIGINT or SIGTERM: detached, the container runs on
			}
			return err
		},
	}
}

// forwardResize gives the container's terminal the size of f's, now and
// at each SIGWINCH, until stop.
func forwardResize(ctx context.Context, e engine.Engine, id string, f *os.File) (stop func()) {
	fd := int(f.Fd())
	if !term.IsTerminal(fd) {
		return func() {}
	}
	resize := func() {
		if w, h, err := term.GetSize(fd); err == nil && w > 0 && h > 0 {
			_ = e.Resize(ctx, id, uint32(w), uint32(h)) // a lost resize leaves the old size
		}
	}
	resize()
	winch := make(chan os.Signal, 1)
	signal.Notify(winch, syscall.SIGWINCH)
	done := make(chan struct{})
	go func() {
		for {
			select {
			case <-winch:
				resize()
			case <-done:
				return
			}
		}
	}()
	return func() {
		signal.Stop(winch)
		close(done)
	}
}

// podContainerSpec is the spec of the pod's app or init container name.
func podContainerSpec(pod *corev1.Pod, name string) *corev1.Container {
	if pod == nil {
		return nil
	}
	for _, list := range [][]corev1.Container{pod.Spec.Containers, pod.Spec.InitContainers} {
		for i := range list {
			if list[i].Name == name {
				return &list[i]
			}
		}
	}
	return nil
}
