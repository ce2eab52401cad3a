package volumes

import (
	"bufio"
	"bytes"
	"fmt"
	"strings"

	pathrs "github.com/cyphar/filepath-securejoin/pathrs-lite"

	"github.com/podrun/podrun/untrusted"
)

// MaxEnvFile bounds an env file (fileKeyRef): a container writes it.
const MaxEnvFile = 64 << 10

// ReadEnvFile reads the env file at rel inside the volume directory root,
// as the kubelet reads a fileKeyRef's: opened inside root by descriptor
// (symlinks never lead out of it), a regular file (untrusted.Reopen: a
// FIFO or device there is never opened) of at most MaxEnvFile bytes,
// KEY=VALUE lines (blank lines and # comments skipped). A missing file is
// an error wrapping os.ErrNotExist.
func ReadEnvFile(root, rel string) (map[string]string, error) {
	h, err := pathrs.OpenInRoot(root, rel)
	if err != nil {
		return nil, err
	}
	defer h.Close()
	f, err := untrusted.Reopen(h)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := untrusted.ReadAll(f, MaxEnvFile)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", rel, err)
	}
	return parseEnvFile(data)
}

// parseEnvFile reads KEY=VALUE lines; blank lines and lines starting with
// # are skipped; the value is the rest of the line as written.
func parseEnvFile(data []byte) (map[string]string, error) {
	out := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 4096), MaxEnvFile)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok || strings.TrimSpace(k) == "" {
			return nil, fmt.Errorf("line %d is not KEY=VALUE", n)
		}
		out[strings.TrimSpace(k)] = v
	}
	return out, sc.Err()
}
