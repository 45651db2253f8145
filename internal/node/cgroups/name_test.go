package cgroups

import (
	"reflect"
	"testing"
)

func TestNameSpellings(t *testing.T) {
	tests := []struct {
		name      string
		n         Name
		cgroupfs  string
		systemd   string
		systemdCP string
	}{
		{name: "root", n: Name{}, cgroupfs: "/", systemd: "/"},
		{name: "kubepods", n: Name{"kubepods"}, cgroupfs: "/kubepods", systemd: "/kubepods.slice"},
		{name: "burstable pod with dashes in its uid", n: Name{"kubepods", "burstable", "pod1234-5678"},
			cgroupfs: "/kubepods/burstable/pod1234-5678",
			systemd:  "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod1234_5678.slice"},
		{name: "guaranteed pod under a custom root", n: Name{"seed-a", "kubepods", "podx"},
			cgroupfs: "/seed-a/kubepods/podx",
			systemd:  "/seed_a.slice/seed_a-kubepods.slice/seed_a-kubepods-podx.slice"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.n.Cgroupfs(); got != tc.cgroupfs {
				t.Errorf("Cgroupfs = %q, want %q", got, tc.cgroupfs)
			}
			if got := tc.n.Systemd(); got != tc.systemd {
				t.Errorf("Systemd = %q, want %q", got, tc.systemd)
			}
			if got := ParseCgroupfs(tc.cgroupfs); !reflect.DeepEqual(got, tc.n) && !(len(got) == 0 && len(tc.n) == 0) {
				t.Errorf("ParseCgroupfs(%q) = %q, want %q", tc.cgroupfs, got, tc.n)
			}
			got, err := ParseSystemd(tc.systemd)
			if err != nil || (!reflect.DeepEqual(got, tc.n) && !(len(got) == 0 && len(tc.n) == 0)) {
				t.Errorf("ParseSystemd(%q) = %q, %v; want %q", tc.systemd, got, err, tc.n)
			}
			if got := DriverSystemd.CgroupParent(tc.n); got != tc.systemd {
				t.Errorf("systemd CgroupParent = %q", got)
			}
			if got := DriverCgroupfs.CgroupParent(tc.n); got != tc.cgroupfs {
				t.Errorf("cgroupfs CgroupParent = %q", got)
			}
		})
	}
}

func TestParseSystemdBaseAndErrors(t *testing.T) {
	got, err := ParseSystemd("kubepods-besteffort-podab_cd.slice")
	if err != nil || !reflect.DeepEqual(got, Name{"kubepods", "besteffort", "podab-cd"}) {
		t.Fatalf("got %q, %v", got, err)
	}
	for _, bad := range []string{"/kubepods.scope", "/a--b.slice", "/.slice"} {
		if _, err := ParseSystemd(bad); err == nil {
			t.Errorf("ParseSystemd(%q) accepted", bad)
		}
	}
	if got := ParseCgroupfs("seed-x/"); !reflect.DeepEqual(got, Name{"seed-x"}) {
		t.Errorf("ParseCgroupfs relative = %q", got)
	}
	n := Name{"a"}
	c1, c2 := n.Child("b"), n.Child("c")
	if c1.Cgroupfs() != "/a/b" || c2.Cgroupfs() != "/a/c" {
		t.Errorf("Child shares storage: %q %q", c1, c2)
	}
}
