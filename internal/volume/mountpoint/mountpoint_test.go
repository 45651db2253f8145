package mountpoint

import "testing"

// The root is always mounted; a directory below it on the same filesystem
// (or a missing path) is not a mount point.
func TestIsMountPoint(t *testing.T) {
	for path, want := range map[string]bool{
		"/":                   true,
		"/proc":               true,
		"/proc/":              true,
		t.TempDir() + "/x":    false,
		"/nonexistent/at/all": false,
	} {
		got, err := IsMountPoint(path)
		if err != nil || got != want {
			t.Errorf("IsMountPoint(%q) = %v, %v; want %v", path, got, err, want)
		}
	}
}
