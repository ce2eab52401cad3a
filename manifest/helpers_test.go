package manifest

import "io"

// Load is Options.Load with the zero Options (no admission rules).
func Load(paths []string, stdin io.Reader) (*Set, error) { return Options{}.Load(paths, stdin) }

// Parse reads one stream of bytes already read, named file in problems, as
// Load reads a file.
func Parse(file string, data []byte) (*Set, error) { return Options{}.Parse(file, data) }

// Parse is the package's Parse with these options.
func (o Options) Parse(file string, data []byte) (*Set, error) { return o.readData(false, file, data) }
