package mountpoint

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Parse returns the mount points listed in mountinfo text, unescaped
// (the kernel writes space, tab, newline and backslash as \ooo).
func Parse(mountinfo string) []string {
	var out []string
	for _, line := range strings.Split(mountinfo, "\n") {
		f := strings.Fields(line)
		if len(f) > 4 {
			out = append(out, unescape(f[4]))
		}
	}
	return out
}

func unescape(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// List returns the mount points of this mount namespace (nil when the
// table cannot be read).
func List() []string {
	data, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return nil
	}
	return Parse(string(data))
}

// IsMountPoint reports whether path is a mount point.
func IsMountPoint(path string) (bool, error) {
	data, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return false, err
	}
	path = filepath.Clean(path)
	for _, m := range Parse(string(data)) {
		if m == path {
			return true, nil
		}
	}
	return false, nil
}

// HasMountBelow reports whether dir or anything below it is in mounts.
func HasMountBelow(mounts []string, dir string) bool {
	dir = filepath.Clean(dir)
	for _, m := range mounts {
		if m == dir || strings.HasPrefix(m, dir+"/") {
			return true
		}
	}
	return false
}
