package logs

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// RemoveAttempts removes the log files of the attempts of a container that
// remove selects, from the container's log directory dir: <n>.log and its
// rotated files (<n>.log.<anything>), as the kubelet removes a container's
// log with the container. Reading dir is the cost: the attempts kept, and
// their rotated files, are all it holds once older ones go at each restart.
func RemoveAttempts(dir string, remove func(n int) bool) error {
	ents, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	var errs []error
	for _, e := range ents {
		n, ok := attemptOf(e.Name())
		if !ok || e.IsDir() || !remove(n) {
			continue
		}
		if err := os.Remove(filepath.Join(dir, e.Name())); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// attemptOf parses "<n>.log" and "<n>.log.<suffix>" (a rotated file).
func attemptOf(name string) (int, bool) {
	digits, rest, ok := strings.Cut(name, ".log")
	if !ok || (rest != "" && rest[0] != '.') {
		return 0, false
	}
	if digits == "" || strings.Trim(digits, "0123456789") != "" {
		return 0, false
	}
	n, err := strconv.Atoi(digits)
	return n, err == nil
}
