package hostinfo

import (
	"errors"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

const (
	mi = int64(1 << 20)
	gi = int64(1 << 30)
)

// writeTree writes files (host paths → content) below root.
func writeTree(t *testing.T, root string, files map[string]string) {
	t.Helper()
	for p, content := range files {
		full := filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func fakeHost(t *testing.T, files map[string]string) Host {
	root := t.TempDir()
	writeTree(t, root, files)
	return Host{
		Root:          root,
		KernelRelease: func() (string, error) { return "6.1.0-18-amd64", nil },
		FSCapacity: func(p string) (int64, error) {
			if p != "/var/lib/kubelet" {
				return 0, errors.New("unexpected path " + p)
			}
			return 50 * gi, nil
		},
		FSType: func(string) (int64, error) { return 0, errors.New("no statfs") },
		NumCPU: func() int { return 2 },
	}
}

func fullMachine() map[string]string {
	return map[string]string{
		"etc/machine-id":                                           "abc123\n",
		"sys/class/dmi/id/product_uuid":                            "UUID-1\n",
		"proc/sys/kernel/random/boot_id":                           "boot-xyz\n",
		"proc/sys/kernel/pid_max":                                  "4194304\n",
		"proc/sys/kernel/threads-max":                              "126000\n",
		"etc/os-release":                                           "NAME=\"Debian GNU/Linux\"\nPRETTY_NAME=\"Debian GNU/Linux 12 (bookworm)\"\nID=debian\n",
		"sys/devices/system/cpu/online":                            "0-3,6,8-9\n",
		"proc/meminfo":                                             "MemTotal:       16303916 kB\nMemFree:         1000 kB\nSwapTotal:       2097148 kB\n",
		"sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages":    "256\n",
		"sys/kernel/mm/hugepages/hugepages-1048576kB/nr_hugepages": "0\n",
	}
}

func TestMachine(t *testing.T) {
	tests := []struct {
		name    string
		edit    func(map[string]string)
		check   func(*testing.T, Machine)
		wantErr string
	}{
		{name: "everything present", edit: func(map[string]string) {},
			check: func(t *testing.T, m Machine) {
				want := Machine{
					MachineID: "abc123", SystemUUID: "UUID-1", BootID: "boot-xyz",
					KernelVersion: "6.1.0-18-amd64", OSImage: "Debian GNU/Linux 12 (bookworm)",
					OperatingSystem: m.OperatingSystem, Architecture: m.Architecture,
					NumCPU: 7, MemoryCapacity: 16303916 * 1024, SwapCapacity: 2097148 * 1024,
					HugePages:                map[string]int64{"2Mi": 256 * 2 * mi, "1Gi": 0},
					EphemeralStorageCapacity: 50 * gi, MaxPIDs: 126000,
				}
				if !maps.Equal(m.HugePages, want.HugePages) {
					t.Errorf("huge pages = %v, want %v", m.HugePages, want.HugePages)
				}
				m.HugePages, want.HugePages = nil, nil
				if !reflect.DeepEqual(m, want) {
					t.Errorf("machine = %+v\nwant      %+v", m, want)
				}
			}},
		{name: "dbus machine ID, no DMI, no os-release, no CPU list, no huge pages, no pid limits",
			edit: func(fs map[string]string) {
				delete(fs, "etc/machine-id")
				fs["var/lib/dbus/machine-id"] = "dbus-id"
				delete(fs, "sys/class/dmi/id/product_uuid")
				delete(fs, "etc/os-release")
				delete(fs, "sys/devices/system/cpu/online")
				delete(fs, "sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages")
				delete(fs, "sys/kernel/mm/hugepages/hugepages-1048576kB/nr_hugepages")
				delete(fs, "proc/sys/kernel/pid_max")
				delete(fs, "proc/sys/kernel/threads-max")
			},
			check: func(t *testing.T, m Machine) {
				if m.MachineID != "dbus-id" || m.SystemUUID != "" || m.OSImage != "Linux" || m.NumCPU != 2 || len(m.HugePages) != 0 || m.MaxPIDs != 0 {
					t.Errorf("machine = %+v", m)
				}
			}},
		{name: "os-release from /usr/lib, unquoted",
			edit: func(fs map[string]string) {
				delete(fs, "etc/os-release")
				fs["usr/lib/os-release"] = "PRETTY_NAME=Flatcar\n"
			},
			check: func(t *testing.T, m Machine) {
				if m.OSImage != "Flatcar" {
					t.Errorf("os image = %q", m.OSImage)
				}
			}},
		{name: "a CPU list that does not parse falls back to NumCPU",
			edit: func(fs map[string]string) { fs["sys/devices/system/cpu/online"] = "3-1\n" },
			check: func(t *testing.T, m Machine) {
				if m.NumCPU != 2 {
					t.Errorf("cpus = %d, want the fallback 2", m.NumCPU)
				}
			}},
		{name: "pid_max alone", edit: func(fs map[string]string) { delete(fs, "proc/sys/kernel/threads-max") },
			check: func(t *testing.T, m Machine) {
				if m.MaxPIDs != 4194304 {
					t.Errorf("max pids = %d", m.MaxPIDs)
				}
			}},
		{name: "no meminfo is an error, the rest still read",
			edit: func(fs map[string]string) { delete(fs, "proc/meminfo") },
			check: func(t *testing.T, m Machine) {
				if m.BootID != "boot-xyz" || m.EphemeralStorageCapacity != 50*gi {
					t.Errorf("machine = %+v", m)
				}
			},
			wantErr: "/proc/meminfo"},
		{name: "meminfo without MemTotal is an error",
			edit:    func(fs map[string]string) { fs["proc/meminfo"] = "MemFree: 1000 kB\n" },
			wantErr: "no MemTotal"},
		{name: "no boot ID is an error",
			edit:    func(fs map[string]string) { delete(fs, "proc/sys/kernel/random/boot_id") },
			wantErr: "boot ID"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			files := fullMachine()
			tc.edit(files)
			m, err := fakeHost(t, files).Machine("/var/lib/kubelet")
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

func TestMachineFailingProbes(t *testing.T) {
	h := fakeHost(t, fullMachine())
	h.KernelRelease = func() (string, error) { return "", errors.New("no uname") }
	h.FSCapacity = func(string) (int64, error) { return 0, errors.New("no statfs") }
	_, err := h.Machine("/var/lib/kubelet")
	if err == nil || !strings.Contains(err.Error(), "no uname") || !strings.Contains(err.Error(), "no statfs") {
		t.Fatalf("error = %v, want both failures", err)
	}
}

// The real machine: whatever it is, the required facts are there.
func TestLocalMachine(t *testing.T) {
	m, err := LocalHost().Machine(t.TempDir())
	if err != nil {
		t.Fatalf("Machine: %v", err)
	}
	if m.NumCPU < 1 || m.MemoryCapacity <= 0 || m.EphemeralStorageCapacity <= 0 || m.BootID == "" || m.KernelVersion == "" || m.MaxPIDs <= 0 {
		t.Errorf("machine = %+v", m)
	}
}
