// Command flockhold holds flock(2) on a file until another file appears,
// for podrun's end-to-end tests of the update lock (Debian's busybox has
// no flock applet). It is built static (CGO_ENABLED=0) so it can be added
// to a busybox image.
//
//	flockhold /lock/updates.lock /lock/go
package main

import (
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"
)

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: flockhold LOCKFILE RELEASEFILE")
		os.Exit(2)
	}
	term := make(chan os.Signal, 1)
	signal.Notify(term, syscall.SIGTERM) // PID 1 ignores what it does not handle
	f, err := os.OpenFile(os.Args[1], os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Println("holding", os.Args[1])
	tick := time.NewTicker(100 * time.Millisecond)
	held := true
	for {
		select {
		case <-term:
			os.Exit(0)
		case <-tick.C:
		}
		if _, err := os.Stat(os.Args[2]); held && err == nil {
			if err := syscall.Flock(int(f.Fd()), syscall.LOCK_UN); err != nil {
				fmt.Fprintln(os.Stderr, err)
				os.Exit(1)
			}
			fmt.Println("let go of", os.Args[1])
			held = false
		}
	}
}
