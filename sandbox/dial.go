package sandbox

import (
	"context"
	"fmt"
	"net"

	"github.com/vishvananda/netns"
)

// DialInNetNS connects to address over network from inside the network
// namespace at path (a pod's), as containerd's CRI port-forward does: the
// socket is made in that namespace and stays there; the calling
// goroutine's thread never does.
func DialInNetNS(ctx context.Context, path, network, address string) (net.Conn, error) {
	var conn net.Conn
	err := onLockedThread(func() error {
		ns, err := netns.GetFromPath(path)
		if err != nil {
			return fmt.Errorf("opening network namespace %s: %w", path, err)
		}
		defer ns.Close()
		if err := netns.Set(ns); err != nil {
			return fmt.Errorf("entering network namespace %s: %w", path, err)
		}
		var d net.Dialer
		conn, err = d.DialContext(ctx, network, address)
		return err
	})
	return conn, err
}
