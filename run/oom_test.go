package run

import (
	"context"
	"testing"

	"github.com/podrun/podrun/engine"
	"github.com/podrun/podrun/engine/fake"
	"github.com/podrun/podrun/labels"
	"github.com/podrun/podrun/status"
)

// TestExitRouterOOM: an OOM event marks the container's labels (also one
// nobody waits for) and the exit that follows is delivered as OOM-killed;
// an ordinary exit is not.
func TestExitRouterOOM(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	eng := fake.New()
	x := newExitRouter(ctx, eng)
	x.start()
	for _, id := range []string{"a", "b", "c"} {
		if err := eng.Create(ctx, engine.ContainerSpec{ID: id}); err != nil {
			t.Fatal(err)
		}
		if _, err := eng.Start(ctx, id, ""); err != nil {
			t.Fatal(err)
		}
	}
	cha, chc := x.register("a"), x.register("c")
	eng.OOMKill("a")
	if got := recvExit(t, cha); got.Code != fake.CodeKilled || !got.OOMKilled {
		t.Errorf("OOM-killed exit delivered as %+v", got)
	}
	eng.OOMKill("b") // nobody waits for b
	eng.Exit("c", 1)
	if got := recvExit(t, chc); got.Code != 1 || got.OOMKilled {
		t.Errorf("ordinary exit delivered as %+v", got)
	}
	// c's exit came after b's OOM event on the one stream: b is labelled.
	ctrs, err := eng.List(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range ctrs {
		want := map[string]string{"a": status.ReasonOOMKilled, "b": status.ReasonOOMKilled, "c": ""}[c.ID]
		if got := c.Labels[labels.Reason]; got != want {
			t.Errorf("container %s: reason label %q, want %q", c.ID, got, want)
		}
	}
}
