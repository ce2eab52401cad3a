package probes

// Initial is the state a probe of this kind stands for before its worker's
// first determination: a container is not ready until its readiness probe
// succeeds, and is alive until its liveness probe fails. A startup probe
// gates the others; treat the container as not started until its startup
// worker reports Success.
func Initial(k Kind) Result {
	if k == Readiness {
		return Failure
	}
	return Success
}

// State is the thresholded state: Unknown before the first determination
// (see Initial), then the last reported Success or Failure.
func (w *Worker) State() Result {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.state
}

// Last is the outcome of the last attempt (zero before the first), for
// status display; it includes attempts that could not be run.
func (w *Worker) Last() Outcome {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.last
}
