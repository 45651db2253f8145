package nodestatus

import (
	"errors"
	"maps"
	"reflect"
	"strings"
	"testing"
	"testing/fstest"
)

func fakeHost(files fstest.MapFS) Host {
	return Host{
		FS:            files,
		KernelRelease: func() (string, error) { return "6.1.0-18-amd64", nil },
		FSCapacity: func(p string) (int64, error) {
			if p != "/var/lib/kubelet" {
				return 0, errors.New("unexpected path " + p)
			}
			return 50 * gi, nil
		},
		NumCPU: func() int { return 2 },
	}
}

func file(s string) *fstest.MapFile { return &fstest.MapFile{Data: []byte(s)} }

func fullMachine() fstest.MapFS {
	return fstest.MapFS{
		"etc/machine-id":                 file("abc123\n"),
		"sys/class/dmi/id/product_uuid":  file("UUID-1\n"),
		"proc/sys/kernel/random/boot_id": file("boot-xyz\n"),
		"etc/os-release":                 file("NAME=\"Debian GNU/Linux\"\nPRETTY_NAME=\"Debian GNU/Linux 12 (bookworm)\"\nID=debian\n"),
		"sys/devices/system/cpu/online":  file("0-3,6,8-9\n"),
		"proc/meminfo":                   file("MemTotal:       16303916 kB\nMemFree:         1000 kB\nSwapTotal:       2097148 kB\n"),
		"sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages":    file("256\n"),
		"sys/kernel/mm/hugepages/hugepages-1048576kB/nr_hugepages": file("0\n"),
	}
}

func TestMachineInfo(t *testing.T) {
	tests := []struct {
		name    string
		edit    func(fstest.MapFS)
		check   func(*testing.T, MachineInfo)
		wantErr string
	}{
		{name: "everything present", edit: func(fstest.MapFS) {},
			check: func(t *testing.T, m MachineInfo) {
				want := MachineInfo{
					MachineID: "abc123", SystemUUID: "UUID-1", BootID: "boot-xyz",
					KernelVersion: "6.1.0-18-amd64", OSImage: "Debian GNU/Linux 12 (bookworm)",
					OperatingSystem: m.OperatingSystem, Architecture: m.Architecture,
					NumCPU: 7, MemoryCapacity: 16303916 * 1024, SwapCapacity: 2097148 * 1024,
					HugePages:                map[string]int64{"2Mi": 256 * 2 * mi, "1Gi": 0},
					EphemeralStorageCapacity: 50 * gi,
				}
				if !maps.Equal(m.HugePages, want.HugePages) {
					t.Errorf("huge pages = %v, want %v", m.HugePages, want.HugePages)
				}
				m.HugePages, want.HugePages = nil, nil
				if !reflect.DeepEqual(m, want) {
					t.Errorf("machine = %+v\nwant      %+v", m, want)
				}
			}},
		{name: "dbus machine ID, no DMI, no os-release, no CPU list, no huge pages",
			edit: func(fs fstest.MapFS) {
				delete(fs, "etc/machine-id")
				fs["var/lib/dbus/machine-id"] = file("dbus-id")
				delete(fs, "sys/class/dmi/id/product_uuid")
				delete(fs, "etc/os-release")
				delete(fs, "sys/devices/system/cpu/online")
				delete(fs, "sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages")
				delete(fs, "sys/kernel/mm/hugepages/hugepages-1048576kB/nr_hugepages")
			},
			check: func(t *testing.T, m MachineInfo) {
				if m.MachineID != "dbus-id" || m.SystemUUID != "" || m.OSImage != "Linux" || m.NumCPU != 2 || len(m.HugePages) != 0 {
					t.Errorf("machine = %+v", m)
				}
			}},
		{name: "os-release from /usr/lib, unquoted",
			edit: func(fs fstest.MapFS) {
				delete(fs, "etc/os-release")
				fs["usr/lib/os-release"] = file("PRETTY_NAME=Flatcar\n")
			},
			check: func(t *testing.T, m MachineInfo) {
				if m.OSImage != "Flatcar" {
					t.Errorf("os image = %q", m.OSImage)
				}
			}},
		{name: "no meminfo is an error, the rest still read",
			edit: func(fs fstest.MapFS) { delete(fs, "proc/meminfo") },
			check: func(t *testing.T, m MachineInfo) {
				if m.BootID != "boot-xyz" || m.EphemeralStorageCapacity != 50*gi {
					t.Errorf("machine = %+v", m)
				}
			},
			wantErr: "/proc/meminfo"},
		{name: "no boot ID is an error",
			edit:    func(fs fstest.MapFS) { delete(fs, "proc/sys/kernel/random/boot_id") },
			wantErr: "boot ID"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			files := fullMachine()
			tc.edit(files)
			m, err := fakeHost(files).MachineInfo("/var/lib/kubelet")
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("unexpected error: %v", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("error = %v, want one mentioning %q", err, tc.wantErr)
			}
			if tc.check != nil {
				tc.check(t, m)
			}
		})
	}
}

func TestMachineInfoFailingProbes(t *testing.T) {
	h := fakeHost(fullMachine())
	h.KernelRelease = func() (string, error) { return "", errors.New("no uname") }
	h.FSCapacity = func(string) (int64, error) { return 0, errors.New("no statfs") }
	_, err := h.MachineInfo("/var/lib/kubelet")
	if err == nil || !strings.Contains(err.Error(), "no uname") || !strings.Contains(err.Error(), "no statfs") {
		t.Fatalf("error = %v, want both failures", err)
	}
}

func TestCountCPUList(t *testing.T) {
	tests := []struct {
		in   string
		want int
		err  bool
	}{
		{in: "0", want: 1},
		{in: "0-7\n", want: 8},
		{in: "0-3,6,8-9", want: 7},
		{in: "3-1", err: true},
		{in: "x", err: true},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			got, err := countCPUList(tc.in)
			if (err != nil) != tc.err || got != tc.want {
				t.Errorf("countCPUList(%q) = %d, %v", tc.in, got, err)
			}
		})
	}
}

func TestReadMachineInfoLocal(t *testing.T) {
	m, err := ReadMachineInfo(t.TempDir())
	if err != nil {
		t.Fatalf("ReadMachineInfo: %v", err)
	}
	if m.NumCPU < 1 || m.MemoryCapacity <= 0 || m.EphemeralStorageCapacity <= 0 || m.BootID == "" || m.KernelVersion == "" {
		t.Errorf("machine = %+v", m)
	}
}
