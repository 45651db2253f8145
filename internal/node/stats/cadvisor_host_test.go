package stats

import (
	"reflect"
	"testing"
)

func TestBlockMounts(t *testing.T) {
	table := `22 1 254:1 / / rw,relatime shared:1 - ext4 /dev/vda1 rw
23 22 0:5 / /dev rw,nosuid shared:2 - devtmpfs udev rw,size=4k
24 22 254:1 /var/lib/x /mnt/with\040space rw,relatime shared:1 - ext4 /dev/vda1 rw
25 22 254:16 / /data rw,relatime - xfs /dev/vdb rw
26 22 0:40 / /run rw - tmpfs tmpfs rw
`
	got := blockMounts([]byte(table))
	want := []rootFilesystem{
		{Device: "/dev/vda1", MajorMinor: "254:1", Mountpoint: "/"},
		{Device: "/dev/vdb", MajorMinor: "254:16", Mountpoint: "/data"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("blockMounts = %+v, want %+v", got, want)
	}
	if got := blockMounts([]byte("not a mount table\n")); got != nil {
		t.Errorf("blockMounts(garbage) = %+v, want none", got)
	}

	// The mount point is unescaped (\040 is a space), as the kernel wrote it.
	got = blockMounts([]byte(`24 22 254:1 / /mnt/with\040space rw - ext4 /dev/vdc rw` + "\n"))
	if len(got) != 1 || got[0].Mountpoint != "/mnt/with space" {
		t.Errorf("escaped mount point: %+v", got)
	}
}
