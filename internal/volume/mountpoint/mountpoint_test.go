package mountpoint

import (
	"reflect"
	"testing"
)

func TestParse(t *testing.T) {
	info := `22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw
35 22 8:1 /srv/data /var/lib/kubelet/pods/u/volumes/kubernetes.io~csi/pv\0401/mount rw - ext4 /dev/sda1 rw
36 22 0:30 / /tmp/a\134b rw - tmpfs tmpfs rw
`
	want := []string{"/", "/var/lib/kubelet/pods/u/volumes/kubernetes.io~csi/pv 1/mount", `/tmp/a\b`}
	if got := Parse(info); !reflect.DeepEqual(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestHasMountBelow(t *testing.T) {
	mounts := []string{"/", "/var/lib/kubelet/pods/u1/volumes/x/mount"}
	for dir, want := range map[string]bool{
		"/var/lib/kubelet/pods/u1":                 true,
		"/var/lib/kubelet/pods/u1/volumes/x/mount": true,
		"/var/lib/kubelet/pods/u2":                 false,
		"/var/lib/kubelet/pods/u":                  false,
	} {
		if got := HasMountBelow(mounts, dir); got != want {
			t.Errorf("HasMountBelow(%q) = %v, want %v", dir, got, want)
		}
	}
}
