package supervisor

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/podrun/podrun/engine"
	"github.com/podrun/podrun/engine/fake"
	"github.com/podrun/podrun/labels"
	"github.com/podrun/podrun/status"
)

// waitTimeout bounds every real-time wait of these tests.
const waitTimeout = 20 * time.Second

// countCalls counts the engine calls that are exactly call.
func countCalls(calls []string, call string) int {
	n := 0
	for _, c := range calls {
		if c == call {
			n++
		}
	}
	return n
}

// TestExitRouterDeliversOnce: an exit that both the event stream and the
// check after start see is delivered exactly once; an exit that happened
// before anyone listened is delivered by check.
func TestExitRouterDeliversOnce(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	eng := fake.New()
	x := NewExits(ctx, eng)
	x.start()
	mk := func(id string) {
		t.Helper()
		if err := eng.Create(ctx, engine.ContainerSpec{ID: id}); err != nil {
			t.Fatal(err)
		}
		if _, err := eng.Start(ctx, id, ""); err != nil {
			t.Fatal(err)
		}
	}

	t.Run("stream and check race", func(t *testing.T) {
		mk("a")
		ch := x.Register("a")
		eng.Exit("a", 3)
		x.Check(ctx, "a") // the task is stopped already
		got := recvExit(t, ch)
		if got.Code != 3 {
			t.Errorf("got %+v", got)
		}
		x.Check(ctx, "a")
		x.reconcile(ctx)
		select {
		case e := <-ch:
			t.Errorf("second delivery %+v", e)
		case <-time.After(50 * time.Millisecond):
		}
	})

	t.Run("exit before subscription", func(t *testing.T) {
		// A router whose stream has not seen the exit: only check can deliver it.
		idleCtx, stop := context.WithCancel(ctx)
		stop() // never subscribes
		idle := NewExits(idleCtx, eng)
		mk("b")
		ch := idle.Register("b")
		eng.Exit("b", 4)
		idle.Check(ctx, "b")
		if got := recvExit(t, ch); got.Code != 4 {
			t.Errorf("got %+v", got)
		}
		idle.Check(ctx, "b")
		idle.reconcile(ctx)
		select {
		case e := <-ch:
			t.Errorf("second delivery %+v", e)
		default:
		}
	})

	t.Run("running task is not delivered by check", func(t *testing.T) {
		mk("c")
		ch := x.Register("c")
		x.Check(ctx, "c")
		select {
		case e := <-ch:
			t.Fatalf("delivered a running task: %+v", e)
		default:
		}
		x.Unregister("c")
		eng.Exit("c", 1)
		select {
		case e := <-ch:
			t.Errorf("delivered after unregister: %+v", e)
		case <-time.After(50 * time.Millisecond):
		}
	})
}

func recvExit(t *testing.T, ch <-chan engine.Exit) engine.Exit {
	t.Helper()
	select {
	case e := <-ch:
		return e
	case <-time.After(waitTimeout):
		t.Fatal("no exit delivered")
	}
	return engine.Exit{}
}

// TestExitRouterResubscribes: after the event stream breaks (containerd
// restarting), the router subscribes again and delivers the exits it
// missed meanwhile; later exits come through the new stream.
func TestExitRouterResubscribes(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	eng := fake.New()
	x := NewExits(ctx, eng)
	x.start()
	for _, id := range []string{"a", "b"} {
		if err := eng.Create(ctx, engine.ContainerSpec{ID: id}); err != nil {
			t.Fatal(err)
		}
		if _, err := eng.Start(ctx, id, ""); err != nil {
			t.Fatal(err)
		}
	}
	cha := x.Register("a")
	eng.BreakExits(errors.New("containerd restarted"))
	eng.Exit("a", 5) // missed: no stream
	if got := recvExit(t, cha); got.Code != 5 {
		t.Errorf("missed exit reconciled as %+v", got)
	}
	if n := countCalls(eng.Calls(), "Exits"); n != 2 {
		t.Errorf("Exits called %d times, want 2", n)
	}
	chb := x.Register("b")
	eng.Exit("b", 6)
	if got := recvExit(t, chb); got.Code != 6 {
		t.Errorf("exit through the new stream: %+v", got)
	}
}

// TestExitRouterOOM: an OOM event marks the container's labels (also one
// nobody waits for) and the exit that follows is delivered as OOM-killed;
// an ordinary exit is not.
func TestExitRouterOOM(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	eng := fake.New()
	x := NewExits(ctx, eng)
	x.start()
	for _, id := range []string{"a", "b", "c"} {
		if err := eng.Create(ctx, engine.ContainerSpec{ID: id}); err != nil {
			t.Fatal(err)
		}
		if _, err := eng.Start(ctx, id, ""); err != nil {
			t.Fatal(err)
		}
	}
	cha, chc := x.Register("a"), x.Register("c")
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
