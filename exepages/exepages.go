// Package exepages gives back the resident pages of the running binary's
// code and read-only data. One podrun binary holds every command, and a
// process's start (the initialisation of each of its ~670 packages) and
// its first work touch far more of it than a long-lived process doing one
// small job (the stream keeper, the daemon between re-scans) uses again.
// Those pages are clean copies of the file: dropped from the process, they
// stay in the page cache, and what is used again is mapped again on its
// next use (a minor fault). Nothing written is touched: only mappings of
// the executable without write permission.
package exepages

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// Drop drops the resident pages of the executable's read-only mappings and
// returns how many bytes of mappings it went over.
func Drop() (int64, error) {
	exe, err := os.Readlink("/proc/self/exe")
	if err != nil {
		return 0, err
	}
	f, err := os.Open("/proc/self/maps")
	if err != nil {
		return 0, err
	}
	defer f.Close()
	var total int64
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		start, end, ok := readOnlyOf(sc.Text(), exe)
		if !ok {
			continue
		}
		if _, _, e := unix.Syscall(unix.SYS_MADVISE, start, end-start, unix.MADV_DONTNEED); e != 0 {
			return total, fmt.Errorf("madvise %x-%x: %w", start, end, e)
		}
		total += int64(end - start)
	}
	return total, sc.Err()
}

// readOnlyOf parses a line of /proc/self/maps ("start-end perms offset dev
// inode path") and reports the range of a mapping of exe that is not
// writable.
func readOnlyOf(line, exe string) (start, end uintptr, ok bool) {
	f := strings.Fields(line)
	if len(f) < 6 || strings.Join(f[5:], " ") != exe || strings.Contains(f[1], "w") || f[1][3] != 'p' {
		return 0, 0, false
	}
	a, b, found := strings.Cut(f[0], "-")
	if !found {
		return 0, 0, false
	}
	s, err1 := strconv.ParseUint(a, 16, 64)
	e, err2 := strconv.ParseUint(b, 16, 64)
	if err1 != nil || err2 != nil || e <= s {
		return 0, 0, false
	}
	return uintptr(s), uintptr(e), true
}
