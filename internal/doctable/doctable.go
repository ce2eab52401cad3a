// Package doctable reads a table of podrun's Markdown documentation, so
// that tests can hold the docs to what podrun does (the README's exit
// codes).
package doctable

import (
	"fmt"
	"strings"
)

// Rows returns the cells of each body row of the first table after the
// heading line (e.g. "## Exit codes"): not its header row nor the
// separator, the cells trimmed.
func Rows(markdown, heading string) ([][]string, error) {
	lines := strings.Split(markdown, "\n")
	start := -1
	for i, l := range lines {
		if strings.TrimSpace(l) == heading {
			start = i + 1
			break
		}
	}
	if start < 0 {
		return nil, fmt.Errorf("no heading %q", heading)
	}
	var rows [][]string
	inTable := false
	for _, l := range lines[start:] {
		l = strings.TrimSpace(l)
		switch {
		case strings.HasPrefix(l, "#"):
			if inTable || rows != nil {
				return rows, nil
			}
			return nil, fmt.Errorf("no table under %q", heading)
		case strings.HasPrefix(l, "|"):
			if !inTable { // the header row, then the separator
				inTable = true
				continue
			}
			if strings.Trim(l, "|-: ") == "" {
				continue
			}
			cells := strings.Split(strings.Trim(l, "|"), "|")
			for i := range cells {
				cells[i] = strings.TrimSpace(cells[i])
			}
			rows = append(rows, cells)
		case inTable:
			return rows, nil
		}
	}
	if !inTable {
		return nil, fmt.Errorf("no table under %q", heading)
	}
	return rows, nil
}
