package hostinfo

import (
	"reflect"
	"testing"
)

func TestMeminfo(t *testing.T) {
	h := fakeHost(t, map[string]string{"proc/meminfo": "MemTotal: 2048 kB\nMemFree: 1024 kB\nSwapTotal: 0 kB\nSwapFree: 0 kB\n" +
		"Inactive(file): 100 kB\nAnonPages: 200 kB\nHugePages_Total: 4\n"})
	got, err := h.Meminfo()
	if err != nil {
		t.Fatal(err)
	}
	if got.MemTotal != 2048*1024 || got.MemFree != 1024*1024 || got.SwapTotal != 0 ||
		got.InactiveFile == nil || *got.InactiveFile != 100*1024 || got.AnonPages == nil || *got.AnonPages != 200*1024 {
		t.Errorf("memory = %+v", got)
	}
	h = fakeHost(t, map[string]string{"proc/meminfo": "MemTotal: 2048 kB\n"})
	if got, err := h.Meminfo(); err != nil || got.InactiveFile != nil || got.AnonPages != nil {
		t.Errorf("sparse meminfo = %+v, %v; want absent fields nil", got, err)
	}
}

func TestProcessCgroups(t *testing.T) {
	cases := []struct {
		name, file string
		want       map[string]string
	}{
		{name: "v1 with joined controllers and a named hierarchy",
			file: "12:memory:/kubepods/pod1\n4:cpu,cpuacct:/kubepods/pod1\n1:name=systemd:/system.slice\n",
			want: map[string]string{"memory": "/kubepods/pod1", "cpu": "/kubepods/pod1", "cpuacct": "/kubepods/pod1", "name=systemd": "/system.slice"}},
		{name: "v2", file: "0::/system.slice/containerd.service\n", want: map[string]string{"": "/system.slice/containerd.service"}},
	}
	for _, tc := range cases {
		h := fakeHost(t, map[string]string{"proc/42/cgroup": tc.file})
		got, err := h.ProcessCgroups(42)
		if err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: got %v, %v; want %v", tc.name, got, err, tc.want)
		}
	}
	if _, err := fakeHost(t, nil).ProcessCgroups(42); err == nil {
		t.Error("a missing process gave no error")
	}
}

func TestSwapOn(t *testing.T) {
	header := "Filename\t\t\t\tType\t\tSize\t\tUsed\t\tPriority\n"
	cases := []struct {
		name  string
		files map[string]string
		want  int
	}{
		{name: "no swaps file", files: nil, want: 0},
		{name: "header only", files: map[string]string{"proc/swaps": header}, want: 0},
		{name: "one device", files: map[string]string{"proc/swaps": header + "/dev/sda2 partition 1000 0 -2\n"}, want: 2},
	}
	for _, tc := range cases {
		lines, err := fakeHost(t, tc.files).SwapOn()
		if err != nil || len(lines) != tc.want {
			t.Errorf("%s: lines %q, %v; want %d lines", tc.name, lines, err, tc.want)
		}
	}
}
