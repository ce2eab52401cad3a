package sandbox

import (
	"context"
	"os/exec"
	"strconv"
	"testing"
	"time"
)

// TestWaitPlugins: DEL waits while a plugin of the pod's ADD still runs
// (its podrun killed), and only for that pod's.
func TestWaitPlugins(t *testing.T) {
	id := "waitplugins-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	other := exec.Command("sleep", "30")
	other.Env = []string{"CNI_COMMAND=ADD", "CNI_CONTAINERID=" + id + "-other"}
	plugin := exec.Command("sleep", "1")
	plugin.Env = []string{"CNI_COMMAND=ADD", "CNI_CONTAINERID=" + id, "CNI_IFNAME=eth0"}
	for _, c := range []*exec.Cmd{other, plugin} {
		if err := c.Start(); err != nil {
			t.Skipf("cannot start sleep: %v", err)
		}
	}
	defer func() { _ = other.Process.Kill(); _ = other.Wait() }()
	exited := make(chan struct{})
	go func() { _ = plugin.Wait(); close(exited) }()
	// Its environment shows once it has run a moment, as a plugin's has.
	for deadline := time.Now().Add(time.Second); !adding([]byte("\x00CNI_CONTAINERID=" + id + "\x00")); {
		if time.Now().After(deadline) {
			t.Fatal("the plugin's environment never showed")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := waitPlugins(context.Background(), id); err != nil {
		t.Fatal(err)
	}
	select {
	case <-exited:
	case <-time.After(time.Second):
		t.Error("waitPlugins returned while the plugin still ran")
	}
	start := time.Now()
	if err := waitPlugins(context.Background(), id+"-none"); err != nil || time.Since(start) > 200*time.Millisecond {
		t.Errorf("waitPlugins without a plugin: %v after %v", err, time.Since(start))
	}
}
