package doctable

import (
	"reflect"
	"testing"
)

func TestRows(t *testing.T) {
	md := "# Title\n\n## Exit codes\n\nSome words.\n\n| code | meaning |\n|---|---|\n| 0 | success |\n| 2 | usage, two words |\n\nAfter.\n\n| x | y |\n|---|---|\n| 9 | other |\n"
	rows, err := Rows(md, "## Exit codes")
	want := [][]string{{"0", "success"}, {"2", "usage, two words"}}
	if err != nil || !reflect.DeepEqual(rows, want) {
		t.Errorf("Rows = %q, %v; want %q", rows, err, want)
	}
	if _, err := Rows(md, "## Missing"); err == nil {
		t.Error("a missing heading: no error")
	}
	if _, err := Rows("## Exit codes\n\nno table\n\n## Next\n| a |\n|---|\n| 1 |\n", "## Exit codes"); err == nil {
		t.Error("a heading without a table: no error")
	}
}
