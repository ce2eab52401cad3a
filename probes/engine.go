package probes

import (
	"context"
	"io"

	"github.com/podrun/podrun/engine"
)

// EngineExecer adapts an engine.Engine to Execer: the command's stdout and
// stderr both go to output.
type EngineExecer struct{ Engine engine.Engine }

// Exec runs args in the container's running task.
func (e EngineExecer) Exec(ctx context.Context, containerID string, args []string, output io.Writer) (int, error) {
	return e.Engine.Exec(ctx, containerID, engine.ExecSpec{Args: args, Stdout: output, Stderr: output})
}
